/**
 * A child process for sweep.test.ts: opens the LMDB store in argv[2] and deletes the space argv[3] as
 * user "gov". It reports, through the store's change feed, every event the delete commits: the space's
 * `space.deleted` (the delete is committed, the sweep starts) and one `space.child_swept` per provider
 * or tenant partition swept. The parent kills it with SIGKILL mid-sweep.
 */
import { LmdbKv } from "../../src/kv/lmdb.js";
import { userActor } from "../../src/access/actor.js";
import { ResourceStore } from "../../src/resources/store.js";
import { tenancySchema } from "../../src/tenancy/schema.js";

const [dir, space] = [process.argv[2]!, process.argv[3]!];
const say = (line: Record<string, unknown>) => process.stdout.write(JSON.stringify(line) + "\n");

const kv = LmdbKv.open(dir);
const store = new ResourceStore(kv, tenancySchema);
store.onChange((partition, events) => {
  for (const e of events) say({ a: "event", partition, type: e.type, id: e.payload.id ?? null });
});
say({ a: "ready" });
await store.lifecycle.delete(userActor("gov"), { type: "space", ids: [space] });
await kv.close();
say({ a: "done" });
