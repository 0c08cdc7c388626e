/**
 * A real flowstore server (127.0.0.1, port 0) in its own process for the http workload, on the store URL it
 * is given (lmdb:<dir>, postgres://…, redis…), opened as `flowstore serve --data <data dir>` opens it
 * (cli/serve.ts `serveStoreOptions`: its keys in the data directory and the work it runs beside the
 * requests: the notification follower, the feed repair, webhook delivery, the transparency log's appender).
 * Builds its data with the Workflow commands, lets the background take it in, then tells the parent (IPC)
 * its port; answers {usage} requests (shared.ts serveParent) once the background has taken in what the
 * requests before wrote, so the CPU time it reports holds that work. Exits when the parent disconnects.
 *   argv: <store url> <data dir> [nocache]
 * The data directory holds serve's key files (for an LMDB store, its own directory: serve's layout); two
 * processes over one store share it. With `nocache` it serves the data another server process already
 * built in the same store (LMDB is multi-process; the others are servers), with the list page cache off.
 * FLOWSTORE_BENCH_BACKGROUND=0 opens the store without serve's background work (an ablation, for
 * bench/profile/http-ab.ts `--root "DIR?FLOWSTORE_BENCH_BACKGROUND=0"`).
 */
import { openFlowstore } from "../../src/compose/index.js";
import { Metrics } from "../../src/http/metrics.js";
import { buildServer } from "../../src/http/server.js";
import { createLogger } from "../../src/http/logging.js";
import { serveOptionsOf, serveStoreOptions } from "../../src/cli/serve.js";
import { SYSTEM } from "../../src/access/actor.js";
import { loadFlowstore } from "../peers/flowstore.js";
import { httpTree, ROOT_PASSWORD, SECRET, serveParent } from "./shared.js";

const [url, dataDir] = [process.argv[2]!, process.argv[3]!];
const nocache = process.argv[4] === "nocache";
const background = process.env.FLOWSTORE_BENCH_BACKGROUND !== "0";
const metrics = new Metrics();
// The clock stands still while the tree is loaded: the creates run 256 at a time and those assigned to
// someone else than the creator take longer (the assignee's lookups), so with a running clock they would
// be stamped later than items created after them. With one creation time, ties go by id, the tree's order,
// which every peer's creation times follow.
let loading: number | undefined = Date.now();
const clock = () => loading ?? Date.now();
// Background errors and warnings are the operator's to read; nothing else is logged.
const served = background ? serveStoreOptions(await serveOptionsOf(["--data", dataDir]), createLogger({ level: "warn" })) : {};
const flowstore = await openFlowstore(url, { ...served, pageCache: !nocache, instrument: (kv) => metrics.wrap(kv), clock });
const app = await buildServer(flowstore, { tokenSecret: SECRET, logger: false, metrics, closeStore: true });
const t0 = performance.now();
if (!nocache) {
  await app.flowstore.identity.ensureRoot(ROOT_PASSWORD);
  // the reader (mary) needs a login: a user with the password the parent uses; she is in `managers`, the
  // group the tree's loader grants project creation to (a grant names an identity that exists)
  await app.flowstore.identity.createUser(SYSTEM, { id: "mary", displayName: "Mary", password: ROOT_PASSWORD });
  // the tree's assignees (an assignee must be a user or group that exists)
  for (const id of ["tom", "jane"]) await app.flowstore.identity.createUser(SYSTEM, { id, displayName: id, password: ROOT_PASSWORD });
  await app.flowstore.identity.createGroup(SYSTEM, { id: "managers", displayName: "Managers", members: ["mary"] });
  await loadFlowstore(app.flowstore.workflow, httpTree());
}
// What the load wrote is in the inboxes and the transparency log before the first request (serve, too,
// catches the log up before it listens).
await flowstore.settle();
loading = undefined;
const loadSec = (performance.now() - t0) / 1000;
await serveParent(
  app,
  () => undefined,
  { loadSec },
  () => flowstore.settle(),
);
