/**
 * The peer of the http workload: a straightforward Fastify + better-sqlite3 server, as a normal engineer
 * would write it: verify the bearer JWT (jose), SELECT the rows (normalized schema of bench/peers/sqlite.ts,
 * permissions applied in the query), build an object per row and let Fastify serialize the answer; a create
 * is one transaction (the row, its permission rows, its event) on the durable file (WAL, synchronous=FULL).
 * Its own process; 127.0.0.1, port 0; exits when the parent disconnects.   argv: <dir>
 */
import { randomUUID } from "node:crypto";
import Fastify from "fastify";
import { jwtVerify } from "jose";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { viewersOf } from "../peers/peer.js";
import { itemOf, ITEM_COLUMNS, loadSqlite, openSqlite, VIEW_INTENTS, type ItemRow } from "../peers/sqlite.js";
import { httpTree, SECRET } from "./shared.js";

const db = openSqlite(join(process.argv[2]!, "peer.db"));
loadSqlite(db, httpTree());
const visible = `EXISTS (SELECT 1 FROM workflowitem_permission p WHERE p.project_id = w.project_id AND p.subproject_id = w.subproject_id AND p.item_id = w.id
  AND p.intent IN ('workflowitem.list', 'workflowitem.viewDetails') AND p.identity = ?) AS visible`;
const list = db.prepare(`SELECT ${ITEM_COLUMNS}, ${visible} FROM workflowitem w WHERE project_id = ? AND subproject_id = ? ORDER BY position IS NULL, position, created_at, id LIMIT ?`);
const get = db.prepare(`SELECT ${ITEM_COLUMNS}, ${visible} FROM workflowitem w WHERE project_id = ? AND subproject_id = ? AND id = ?`);

const app = Fastify({ logger: false });
app.addHook("onRequest", async (request, reply) => {
  const m = /^Bearer (.+)$/.exec(request.headers.authorization ?? "");
  if (!m) return reply.code(401).send({ title: "unauthorized" });
  try {
    const { payload } = await jwtVerify(m[1]!, SECRET);
    (request as unknown as { user: string }).user = String(payload.sub);
  } catch {
    return reply.code(401).send({ title: "unauthorized" });
  }
});
app.get<{ Params: { p: string; s: string }; Querystring: { limit?: string } }>("/api/v1/projects/:p/subprojects/:s/workflowitems", async (request) => {
  const user = (request as unknown as { user: string }).user;
  const rows = list.all(user, request.params.p, request.params.s, Math.min(Number(request.query.limit ?? 100), 1000)) as ItemRow[];
  return { items: rows.map(itemOf), nextCursor: null };
});
app.get<{ Params: { p: string; s: string; w: string } }>("/api/v1/projects/:p/subprojects/:s/workflowitems/:w", async (request, reply) => {
  const user = (request as unknown as { user: string }).user;
  const row = get.get(user, request.params.p, request.params.s, request.params.w) as ItemRow | undefined;
  if (!row || !row.visible) return reply.code(404).send({ title: "not found" });
  return itemOf(row);
});
const insW = db.prepare(`INSERT INTO workflowitem (project_id, subproject_id, ${ITEM_COLUMNS}, position) VALUES (?, ?, ?, ?, NULL, 'open', ?, ?, NULL, NULL, NULL, NULL, ?, ?, ?, 1, NULL)`);
const insPerm = db.prepare("INSERT INTO workflowitem_permission VALUES (?, ?, ?, ?, ?)");
const insE = db.prepare("INSERT INTO event (project_id, subproject_id, item_id, at, actor, type, payload) VALUES (?, ?, ?, ?, ?, 'workflowitem.created', ?)");
const create = db.transaction((p: string, s: string, user: string, input: { id?: string; displayName: string; amountType: string }) => {
  const at = new Date().toISOString();
  const body = { ...input, id: input.id ?? randomUUID() };
  insW.run(p, s, body.id, body.displayName, user, body.amountType, at, user, at);
  for (const who of viewersOf(user)) for (const intent of VIEW_INTENTS) insPerm.run(p, s, body.id, intent, who);
  insE.run(p, s, body.id, at, user, JSON.stringify(body));
  return get.get(user, p, s, body.id) as ItemRow;
});
app.post<{ Params: { p: string; s: string }; Body: { id?: string; displayName: string; amountType: string } }>("/api/v1/projects/:p/subprojects/:s/workflowitems", async (request, reply) => {
  const user = (request as unknown as { user: string }).user;
  return reply.code(201).send(itemOf(create(request.params.p, request.params.s, user, request.body)));
});
await app.listen({ host: "127.0.0.1", port: 0 });
process.on("message", (m: { type: string }) => {
  if (m.type === "rss") process.send!({ type: "rss", rss: process.memoryUsage().rss });
});
process.on("disconnect", () => void app.close().then(() => db.close()).finally(() => process.exit(0)));
process.send!({ type: "ready", port: (app.server.address() as AddressInfo).port, rss: process.memoryUsage().rss });
