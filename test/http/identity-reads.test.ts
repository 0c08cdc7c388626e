/**
 * The identity decision a request reuses, proved through the server as composed (openFlowstore's fence,
 * epoch view and metrics wrappers over the backend): on a backend that reads the identity partition's
 * commit sequence synchronously, a second request with the same token reads none of the identity
 * records again until that partition changes; a change (here a logout of the session) is seen at once.
 * Each wrapper must pass `partitionVersionSync` through for this to hold.
 */
import { afterEach, expect, it } from "vitest";
import { PARTITION } from "../../src/identity/records.js";
import type { KvStore, Partition } from "../../src/kv/contract.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { MemoryKv } from "../../src/kv/memory.js";
import { makeTempDirSync, removeTempDirSync } from "../support/temp-dir.js";
import { raw, startServer, type Running } from "./harness.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

/** `kv` with its reads of the identity partition counted (a read of its commit sequence is not one). */
function counted(kv: KvStore): { kv: KvStore; reads: () => number } {
  let reads = 0;
  const same = (p: Partition) => p.length === PARTITION.length && p.every((x, i) => x === PARTITION[i]);
  const proxy = new Proxy(kv, {
    get(target, name, receiver) {
      const v = Reflect.get(target, name, receiver);
      if (typeof v !== "function") return v;
      if (name === "get" || name === "getSync" || name === "getMany") {
        return (partition: Partition, ...rest: unknown[]) => {
          if (same(partition)) reads++;
          return v.call(target, partition, ...rest);
        };
      }
      return v.bind(target);
    },
  });
  return { kv: proxy, reads: () => reads };
}

for (const [name, open] of [
  ["memory", () => new MemoryKv()],
  [
    "lmdb",
    () => {
      const dir = makeTempDirSync("identity-reads");
      const kv = LmdbKv.open(dir);
      cleanup.push(() => removeTempDirSync(dir));
      return kv;
    },
  ],
] as const) {
  it(`${name}: a token's identity records are read once while the identity partition stands still, and again once it moved`, async () => {
    const base = open();
    cleanup.push(() => base.close());
    const { kv, reads } = counted(base);
    const s: Running = await startServer(kv);
    cleanup.push(() => s.close());
    await s.root.users.create({ id: "ann", displayName: "Ann", password: "ann password" });
    const login = await raw(s.base, "POST", "/api/v1/auth/token", {
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "ann", password: "ann password" }),
    });
    expect(login.status).toBe(200);
    const auth = { headers: { authorization: `Bearer ${login.body.token}` } };
    const me = async () => {
      const before = reads();
      const answer = await raw(s.base, "GET", "/api/v1/me", auth);
      return { status: answer.status, reads: reads() - before };
    };
    expect((await me()).status).toBe(200);
    // the same token again: no identity record read (the decision stands while the sequence does)
    expect(await me()).toEqual({ status: 200, reads: 0 });
    expect(await me()).toEqual({ status: 200, reads: 0 });
    // the session logged out: the partition moved, the records are read again and the token refused
    expect((await raw(s.base, "POST", "/api/v1/auth/logout", auth)).status).toBeLessThan(300);
    const after = await me();
    expect(after.status).toBe(401);
    expect(after.reads).toBeGreaterThan(0);
  });
}
