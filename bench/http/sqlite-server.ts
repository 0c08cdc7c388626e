/**
 * The peer of the http workload: a straightforward Fastify + better-sqlite3 server, as a normal engineer
 * would write it: verify the bearer JWT (jose), SELECT the rows (normalized schema of bench/peers/sqlite.ts,
 * permissions applied in the query), build an object per row and let Fastify serialize the answer. Durable
 * like flowstore: the file is in WAL mode with synchronous=FULL (openSqlite), so a create (the row, its
 * permission rows, its event) or an update (the row, its event) is one transaction on disk when answered.
 * Lists page with a keyset cursor over the effective order (ordering first, then creation time, then id);
 * a reorder replaces the positions and records its event in one transaction.
 * Its own process; 127.0.0.1, port 0; exits when the parent disconnects.   argv: <dir>
 */
import { randomUUID } from "node:crypto";
import Fastify from "fastify";
import { join } from "node:path";
import { viewersOf } from "../peers/peer.js";
import { itemOf, ITEM_COLUMNS, loadSqlite, openSqlite, reorderer, updater, UPDATE_INTENT, VIEW_INTENTS, type ItemRow } from "../peers/sqlite.js";
import { httpTree, serveParent, userOf, verifyBearer } from "./shared.js";

const db = openSqlite(join(process.argv[2]!, "peer.db"));
if (db.pragma("synchronous", { simple: true }) !== 2) throw new Error("the SQLite peer must run with synchronous=FULL");
loadSqlite(db, httpTree());
const visible = `EXISTS (SELECT 1 FROM workflowitem_permission p WHERE p.project_id = w.project_id AND p.subproject_id = w.subproject_id AND p.item_id = w.id
  AND p.intent IN ('workflowitem.list', 'workflowitem.viewDetails') AND p.identity = ?) AS visible`;
const ORDER = "position IS NULL, IFNULL(position, -1), created_at, id";
const listed = `SELECT ${ITEM_COLUMNS}, position, ${visible} FROM workflowitem w WHERE project_id = ? AND subproject_id = ?`;
const firstPage = db.prepare(`${listed} ORDER BY ${ORDER} LIMIT ?`);
const nextPage = db.prepare(`${listed} AND (${ORDER}) > (?, ?, ?, ?) ORDER BY ${ORDER} LIMIT ?`);
const get = db.prepare(`SELECT ${ITEM_COLUMNS}, ${visible} FROM workflowitem w WHERE project_id = ? AND subproject_id = ? AND id = ?`);
const holds = db.prepare("SELECT 1 FROM workflowitem_permission WHERE project_id = ? AND subproject_id = ? AND item_id = ? AND intent = ? AND identity = ?");

type Listed = ItemRow & { position: number | null };
/** The cursor: the last row's sort key, [position is null, position, created_at, id]. */
const cursorOf = (r: Listed) => Buffer.from(JSON.stringify([r.position === null ? 1 : 0, r.position ?? -1, r.created_at, r.id])).toString("base64url");

const app = Fastify({ logger: false });
verifyBearer(app);
app.get<{ Params: { p: string; s: string }; Querystring: { limit?: string; cursor?: string } }>("/api/v1/projects/:p/subprojects/:s/workflowitems", async (request, reply) => {
  const { p, s } = request.params;
  const limit = Math.min(Number(request.query.limit ?? 100), 1000);
  let after: unknown[] | undefined;
  if (request.query.cursor) {
    try {
      after = JSON.parse(Buffer.from(request.query.cursor, "base64url").toString("utf8")) as unknown[];
    } catch {
      return reply.code(400).send({ title: "invalid cursor" });
    }
  }
  const rows = (after ? nextPage.all(userOf(request), p, s, ...after, limit + 1) : firstPage.all(userOf(request), p, s, limit + 1)) as Listed[];
  const more = rows.length > limit;
  if (more) rows.pop();
  return { items: rows.map(itemOf), nextCursor: more ? cursorOf(rows.at(-1)!) : null };
});
app.get<{ Params: { p: string; s: string; w: string } }>("/api/v1/projects/:p/subprojects/:s/workflowitems/:w", async (request, reply) => {
  const row = get.get(userOf(request), request.params.p, request.params.s, request.params.w) as ItemRow | undefined;
  if (!row || !row.visible) return reply.code(404).send({ title: "not found" });
  return itemOf(row);
});
const insW = db.prepare(
  `INSERT INTO workflowitem (project_id, subproject_id, ${ITEM_COLUMNS}, position) VALUES (?, ?, ?, ?, NULL, 'open', ?, ?, NULL, NULL, NULL, NULL, ?, ?, ?, 1, NULL)`,
);
const insPerm = db.prepare("INSERT INTO workflowitem_permission VALUES (?, ?, ?, ?, ?)");
const insE = db.prepare("INSERT INTO event (project_id, subproject_id, item_id, at, actor, type, payload) VALUES (?, ?, ?, ?, ?, 'workflowitem.created', ?)");
const create = db.transaction((p: string, s: string, user: string, input: { id?: string; displayName: string; amountType: string }) => {
  const at = new Date().toISOString();
  const body = { ...input, id: input.id ?? randomUUID() };
  insW.run(p, s, body.id, body.displayName, user, body.amountType, at, user, at);
  for (const who of viewersOf(user)) for (const intent of VIEW_INTENTS) insPerm.run(p, s, body.id, intent, who);
  insPerm.run(p, s, body.id, UPDATE_INTENT, user);
  insE.run(p, s, body.id, at, user, JSON.stringify(body));
  return get.get(user, p, s, body.id) as ItemRow;
});
app.post<{ Params: { p: string; s: string }; Body: { id?: string; displayName: string; amountType: string } }>(
  "/api/v1/projects/:p/subprojects/:s/workflowitems",
  async (request, reply) => {
    return reply.code(201).send(itemOf(create(request.params.p, request.params.s, userOf(request), request.body)));
  },
);
const updateDescription = updater(db);
/** One transaction: the caller's update permission, the row and its event; undefined when not permitted. */
const update = db.transaction((p: string, s: string, w: string, user: string, patch: { description: string }) => {
  if (!holds.get(p, s, w, UPDATE_INTENT, user)) return undefined;
  updateDescription(p, s, w, patch);
  return get.get(user, p, s, w) as ItemRow;
});
app.patch<{ Params: { p: string; s: string; w: string }; Body: { description: string } }>("/api/v1/projects/:p/subprojects/:s/workflowitems/:w", async (request, reply) => {
  const { p, s, w } = request.params;
  if (typeof request.body?.description !== "string") return reply.code(400).send({ title: "description must be a string" });
  const row = update(p, s, w, userOf(request), { description: request.body.description });
  if (!row) return reply.code(404).send({ title: "not found" });
  return itemOf(row);
});
const reorder = db.transaction(reorderer(db));
app.put<{ Params: { p: string; s: string }; Body: { ordering: string[] } }>("/api/v1/projects/:p/subprojects/:s/workflowitem-ordering", async (request, reply) => {
  const { ordering } = request.body ?? {};
  if (!Array.isArray(ordering) || !ordering.every((id) => typeof id === "string")) return reply.code(400).send({ title: "ordering must be an array of ids" });
  try {
    reorder(request.params.p, request.params.s, ordering);
  } catch (e) {
    return reply.code(409).send({ title: (e as Error).message });
  }
  return { ordering };
});
await serveParent(app, () => db.close());
