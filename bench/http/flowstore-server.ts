/**
 * A real flowstore server (LMDB, 127.0.0.1, port 0) in its own process for the http workload. Builds
 * its data with the Workflow commands, then tells the parent (IPC) its port; answers {rss} requests.
 * Exits when the parent disconnects.   argv: <lmdb dir>
 */
import { buildServer } from "../../src/http/server.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import type { AddressInfo } from "node:net";
import { SYSTEM } from "../../src/resources/actor.js";
import { loadFlowstore } from "../peers/flowstore.js";
import { httpTree, ROOT_PASSWORD, SECRET } from "./shared.js";

const kv = LmdbKv.open(process.argv[2]!);
const app = await buildServer({ kv, tokenSecret: SECRET, logger: false });
await app.flowstore.identity.ensureRoot(ROOT_PASSWORD);
const t0 = performance.now();
await loadFlowstore(app.flowstore.workflow, httpTree());
const loadSec = (performance.now() - t0) / 1000;
// the readers (mary) need a login: a user with the password the parent uses
await app.flowstore.identity.createUser(SYSTEM, { id: "mary", displayName: "Mary", password: ROOT_PASSWORD });
await app.listen({ host: "127.0.0.1", port: 0 });
process.on("message", (m: { type: string }) => {
  if (m.type === "rss") process.send!({ type: "rss", rss: process.memoryUsage().rss });
});
process.on("disconnect", () => void app.close().then(() => kv.close()).finally(() => process.exit(0)));
process.send!({ type: "ready", port: (app.server.address() as AddressInfo).port, loadSec, rss: process.memoryUsage().rss });
