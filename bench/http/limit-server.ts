/**
 * The "limit" prototype of issue 18, kept as a throwaway: what the hardware allows for the list of 1,000
 * behind the same front door. Fastify, the bearer JWT verified on each request (jose, HS256, the same
 * secret as the other servers), then one lmdb-js range read of the subproject's stored JSON values (its
 * own loader wrote each workflowitem's public JSON as flowstore serves it to its creator, allowedIntents
 * included, keyed in effective order) joined into the answer. No user record, no permission check, no
 * envelope, no order index: the floor under any list path.
 * Its own process; 127.0.0.1, port 0; exits when the parent disconnects.   argv: <dir>
 */
import Fastify from "fastify";
import { pageJson } from "../../src/resources/model/page-json.js";
import { workflowSchema } from "../../src/workflow/schema.js";
import { durably, openDb, pad } from "../peers/lmdb-streams.js";
import { createdAtOf, effectiveOrderOf, newItemJson } from "../peers/peer.js";
import { httpTree, P, serveParent, verifyBearer } from "./shared.js";

/** Stored with each value, so the answer has the shape and size of flowstore's (which computes them per caller). */
const INTENTS = workflowSchema.type("workflowitem").intents.all;
const db = openDb(process.argv[2]!);
const base = Date.now();
await durably(db, () => {
  for (const s of httpTree().projects.find((p) => p.id === P)!.subprojects) {
    const created = new Map(s.items.map((it, i) => [it.id, createdAtOf(base, i)]));
    effectiveOrderOf(s.ordering, s.items, (it) => it.id).forEach((it, i) => {
      const { id, ...data } = it.data;
      const item = newItemJson(id, { ...data, workflowitemType: "general" }, created.get(id)!);
      db.putSync(`${s.id}\0${pad(i)}`, Buffer.from(JSON.stringify({ ...item, allowedIntents: INTENTS })));
    });
  }
});

const app = Fastify({ logger: false });
verifyBearer(app);
app.get<{ Params: { s: string }; Querystring: { limit?: string } }>(`/api/v1/projects/${P}/subprojects/:s/workflowitems`, async (request, reply) => {
  const limit = Math.min(Number(request.query.limit ?? 100), 1000);
  const items: Buffer[] = [];
  for (const { value } of db.getRange({ start: `${request.params.s}\0`, end: `${request.params.s}\0\uffff`, limit })) items.push(value);
  return reply.type("application/json; charset=utf-8").send(pageJson(items, null));
});
await serveParent(app, () => db.close());
