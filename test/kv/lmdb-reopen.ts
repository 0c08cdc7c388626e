/**
 * A child process for test/kv/lmdb.test.ts: opens the LMDB store in argv[2], starts a commit and, while
 * lmdb-js's write thread holds LMDB's write lock waiting for that commit's callback to run on this
 * thread, opens the same directory a second time; then finishes the commit, reads through both handles
 * and prints "ok". (Two lmdb-js environments on one directory deadlocked here: the second open's
 * synchronous write transaction waited on the lock the first one's write thread held.)
 */
import { LmdbKv } from "../../src/kv/lmdb.js";

const dir = process.argv[2]!;
const a = LmdbKv.open(dir);
await a.commit(["p"], [{ type: "put", key: ["seed"], value: Buffer.from("s") }]);
const committed = a.commit(["p"], [{ type: "put", key: ["k"], value: Buffer.from("v") }]);
// let lmdb-js hand the commit to its write thread, then keep this thread busy while that thread takes the lock
await new Promise((resolve) => setImmediate(resolve));
const until = Date.now() + 300;
while (Date.now() < until);
const b = LmdbKv.open(dir);
await committed;
const read = [(await a.get(["p"], ["k"]))?.value.toString(), (await b.get(["p"], ["k"]))?.value.toString()];
await b.close();
// the first handle still serves after the second one is closed
await a.commit(["p"], [{ type: "put", key: ["after"], value: Buffer.from("a") }]);
read.push((await a.get(["p"], ["after"]))?.value.toString());
await a.close();
process.stdout.write(`${read.join(",") === "v,v,a" ? "ok" : `wrong: ${read.join(",")}`}\n`);
