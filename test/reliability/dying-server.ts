/**
 * A child process for notify-kill.test.ts: the real server (buildServer over openFlowstore) on the LMDB
 * store in argv[2], listening on argv[3], with the token secret the parent gives (FLOWSTORE_JWT_SECRET).
 * When the parent writes "hold\n" on stdin, every later commit to the ledger and the feed partitions
 * never returns and the child prints {"held": partition} instead: the process stands between a commit
 * of a project's partition and its anchors, where the parent kills it with SIGKILL.
 * Lines: {"ready": port} | {"holding": true} | {"held": kind}.
 */
import { openFlowstore } from "../../src/compose/index.js";
import { buildServer } from "../../src/http/server.js";
import type { KvStore } from "../../src/kv/contract.js";

const [dir, port] = [process.argv[2]!, Number(process.argv[3])];
const say = (line: Record<string, unknown>) => process.stdout.write(JSON.stringify(line) + "\n");
let holding = false;

/**
 * The store with its anchors held, and without `commitAcross`: on LMDB a write is ONE commit (issue 25),
 * so there is no gap between a partition's commit and its ledger and feed entries to kill in. Without it the
 * writer keeps the protocol of one commit per partition that Redis and PostgreSQL use, whose gap the feed
 * repair closes: that repair is what this test proves.
 */
function holdAnchors(kv: KvStore): KvStore {
  const commit = kv.commit.bind(kv);
  const held: KvStore["commit"] = (partition, ops) => {
    if (holding && (partition[0] === "feed" || partition[0] === "ledger")) {
      say({ held: partition[0] });
      return new Promise(() => {});
    }
    return commit(partition, ops);
  };
  return new Proxy(kv, {
    get(target, name, receiver) {
      if (name === "commitAcross") return undefined;
      if (name === "commit") return held;
      const value = Reflect.get(target, name, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

const flowstore = await openFlowstore(`lmdb:${dir}`, { instrument: holdAnchors, notifications: { follow: true } });
const app = await buildServer(flowstore, { tokenSecret: new TextEncoder().encode(process.env.FLOWSTORE_JWT_SECRET!), logger: false });
await app.flowstore.identity.ensureRoot(process.env.FLOWSTORE_ROOT_PASSWORD);
await app.listen({ host: "127.0.0.1", port });
process.stdin.setEncoding("utf8");
process.stdin.on("data", (d: string) => {
  if (d.includes("hold")) {
    holding = true;
    say({ holding: true });
  }
});
say({ ready: port });
