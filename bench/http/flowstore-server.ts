/**
 * A real flowstore server (127.0.0.1, port 0) in its own process for the http workload, on the store URL it
 * is given (lmdb:<dir>, postgres://…, redis…). Builds its data with the Workflow commands, then tells the
 * parent (IPC) its port; answers {rss} requests. Exits when the parent disconnects.
 *   argv: <store url> [nocache]
 * With `nocache` it serves the data another server process already built in the same store (LMDB is
 * multi-process; the others are servers), with the list page cache turned off.
 */
import { openFlowstore } from "../../src/flowstore/index.js";
import { Metrics } from "../../src/http/metrics.js";
import { buildServer } from "../../src/http/server.js";
import type { AddressInfo } from "node:net";
import { SYSTEM } from "../../src/access/actor.js";
import { loadFlowstore } from "../peers/flowstore.js";
import { httpTree, ROOT_PASSWORD, SECRET } from "./shared.js";

const nocache = process.argv[3] === "nocache";
const metrics = new Metrics();
const flowstore = await openFlowstore(process.argv[2]!, { pageCache: !nocache, instrument: (kv) => metrics.wrap(kv) });
const app = await buildServer(flowstore, { tokenSecret: SECRET, logger: false, metrics, closeStore: true });
const t0 = performance.now();
if (!nocache) {
  await app.flowstore.identity.ensureRoot(ROOT_PASSWORD);
  // the reader (mary) needs a login: a user with the password the parent uses; she is in `managers`, the
  // group the tree's loader grants project creation to (a grant names an identity that exists)
  await app.flowstore.identity.createUser(SYSTEM, { id: "mary", displayName: "Mary", password: ROOT_PASSWORD });
  await app.flowstore.identity.createGroup(SYSTEM, { id: "managers", displayName: "Managers", members: ["mary"] });
  await loadFlowstore(app.flowstore.workflow, httpTree());
}
const loadSec = (performance.now() - t0) / 1000;
await app.listen({ host: "127.0.0.1", port: 0 });
process.on("message", (m: { type: string }) => {
  if (m.type === "rss") process.send!({ type: "rss", rss: process.memoryUsage().rss });
});
process.on("disconnect", () => void app.close().finally(() => process.exit(0)));
process.send!({ type: "ready", port: (app.server.address() as AddressInfo).port, loadSec, rss: process.memoryUsage().rss });
