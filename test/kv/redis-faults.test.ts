/**
 * Faults on real redis-server processes of this file's own (the shared ones stay healthy): a cluster
 * master killed with SIGKILL under write load, a standalone server killed and restarted with its AOF, and
 * a Redis that is not there at all. Bounded in count and time; no timing assertions.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UnavailableError } from "../../src/errors.js";
import { scanAll } from "../../src/kv/contract.js";
import { openRedisKv } from "../../src/kv/redis/connect.js";
import type { RedisKv } from "../../src/kv/redis/store.js";
import { eventually, pause } from "../support/eventually.js";
import { freePort } from "../support/ports.js";
import { makeRedisDir, redisBinariesForTests, removeDir, startCluster, startStandalone, type RedisBinaries } from "../setup/redis-servers.js";

const bin = redisBinariesForTests();

describe.runIf(bin)("redis faults", () => {
  const b = bin as RedisBinaries;
  let dir: string;
  beforeAll(async () => {
    dir = await makeRedisDir("faults");
  });
  afterAll(async () => {
    await removeDir(dir);
  });

  it("answers UnavailableError, without hanging or crashing, when Redis is not there", async () => {
    const port = await freePort();
    for (const url of [`redis://127.0.0.1:${port}`, `redis-cluster://127.0.0.1:${port}`]) {
      const kv = openRedisKv(url, { timeoutMs: 3000 });
      try {
        await expect(kv.get(["p", "x"], ["k"])).rejects.toBeInstanceOf(UnavailableError);
        await expect(kv.commit(["p", "x"], [{ type: "put", key: ["k"], value: Buffer.from("v") }])).rejects.toThrow(UnavailableError);
        await expect(kv.listPartitions("p")).rejects.toBeInstanceOf(UnavailableError);
        await expect(kv.scan(["p", "x"])).rejects.toHaveProperty("status", 503);
      } finally {
        await kv.close();
      }
    }
  });

  it("reconnects after a standalone Redis with AOF (appendfsync always) is killed and restarted", async () => {
    const server = await startStandalone(b, dir, { appendonly: true, appendfsync: "always" });
    const kv = openRedisKv(server.url, { namespace: "restart", timeoutMs: 3000 });
    try {
      for (let i = 0; i < 50; i++) {
        await kv.commit(["doc", `d${i % 5}`], [{ type: "put", key: ["n", i], value: Buffer.from(`v${i}`) }]);
      }
      await server.kill();
      await expect(kv.get(["doc", "d0"], ["n", 0])).rejects.toBeInstanceOf(UnavailableError);
      await server.start();
      // The same store object serves again once its connection is back; nothing acknowledged is lost.
      const first = await eventually(() => kv.get(["doc", "d0"], ["n", 0]), { what: "the store to serve again after the restart", intervalMs: 250 });
      expect(first?.value.toString()).toBe("v0");
      for (let d = 0; d < 5; d++) {
        const keys = [];
        for await (const e of scanAll(kv, ["doc", `d${d}`])) keys.push(e.key[1]);
        expect(keys).toEqual(Array.from({ length: 10 }, (_, j) => d + 5 * j));
      }
      expect((await kv.listPartitions("doc")).partitions).toHaveLength(5);
      const next = await kv.commit(["doc", "d0"], [{ type: "put", key: ["n", 50], value: Buffer.from("v50") }]);
      expect(next.version).toBe(11);
    } finally {
      await kv.close();
      await server.stop();
    }
  });

  it("refuses a whole batch when Redis is out of memory, never a part of it", async () => {
    const server = await startStandalone(b, dir, { appendonly: false });
    const kv = openRedisKv(server.url, { namespace: "oom", timeoutMs: 5000 });
    const admin = server.client();
    try {
      await kv.commit(["doc", "d"], [{ type: "put", key: ["first"], value: Buffer.from("1") }]);
      const used = Number(/used_memory:(\d+)/.exec(await admin.info("memory"))?.[1]);
      await admin.config("SET", "maxmemory-policy", "noeviction");
      await admin.config("SET", "maxmemory", String(used + 256 * 1024));
      const ops = Array.from({ length: 20 }, (_, i) => ({
        type: "put" as const,
        key: ["big", i],
        value: Buffer.alloc(100 * 1024, i),
      }));
      await expect(kv.commit(["doc", "d"], ops)).rejects.toThrow(/OOM/);
      expect((await kv.scan(["doc", "d"])).entries.map((e) => e.key)).toEqual([["first"]]);
      await admin.config("SET", "maxmemory", "0");
      expect((await kv.commit(["doc", "d"], ops)).version).toBe(2);
      expect((await kv.scan(["doc", "d"], { prefix: ["big"] })).entries).toHaveLength(20);
    } finally {
      admin.disconnect();
      await kv.close();
      await server.stop();
    }
  });

  it("serves again after a cluster master is SIGKILLed under load: no acknowledged write lost, no half batch", async () => {
    const cluster = await startCluster(b, dir, { clusterNodeTimeoutMs: 1000, appendfsync: "everysec" });
    const kv = openRedisKv(cluster.url, {
      namespace: "failover",
      waitReplicas: 1,
      waitTimeoutMs: 1000,
      timeoutMs: 5000,
    }) as RedisKv;
    const PARTITIONS = 24;
    const BATCH = 5;
    const acked = new Map<number, number>(); // batch id -> partition number
    const failures: Error[] = [];
    let nextBatch = 0;
    let stop = false;
    const writer = async (): Promise<void> => {
      while (!stop) {
        const id = nextBatch++;
        const p = id % PARTITIONS;
        const ops = Array.from({ length: BATCH }, (_, j) => ({
          type: "put" as const,
          key: ["b", id, j],
          value: Buffer.from(`batch ${id}`),
        }));
        try {
          await kv.commit(["load", `p${p}`], ops);
          acked.set(id, p);
        } catch (err) {
          // Unacknowledged: may or may not be applied, but never half. Anything but 503 is a bug.
          expect(err).toBeInstanceOf(UnavailableError);
          failures.push(err as Error);
          await pause(50); // the writer's back-off, pacing the load
        }
      }
    };
    try {
      const writers = Array.from({ length: 4 }, () => writer());
      await eventually(() => acked.size >= 100, { what: "100 acknowledged batches before the kill" });
      const [victim] = await cluster.masters();
      await victim!.kill();
      const ackedAtKill = acked.size;
      // Failover: the victim's replica is promoted. Its old master comes back as a replica of it, so
      // writes waiting for one replica can be acknowledged again on every slot.
      await eventually(async () => (await cluster.masters()).length === 3 && (await cluster.isHealthy(3)), {
        what: "the victim's replica to be promoted (3 masters, cluster healthy)",
        timeoutMs: 60_000,
        intervalMs: 250,
      });
      const ackedAfterFailover = acked.size;
      await victim!.start();
      await cluster.waitHealthy(3, 60_000);
      expect(await cluster.masters()).not.toContain(victim);
      const ackedAfterHeal = acked.size;
      await eventually(() => acked.size >= ackedAfterHeal + 200, { what: "200 more batches acknowledged after the heal", timeoutMs: 60_000, intervalMs: 250 });
      stop = true;
      await Promise.all(writers);
      expect(acked.size).toBeGreaterThan(ackedAtKill);

      // Every acknowledged batch is whole; every batch present is whole (never half applied).
      const seen = new Map<number, number>();
      for (let p = 0; p < PARTITIONS; p++) {
        for await (const e of scanAll(kv, ["load", `p${p}`], { limit: 500 })) {
          const id = e.key[1] as number;
          expect(e.value.toString()).toBe(`batch ${id}`);
          seen.set(id, (seen.get(id) ?? 0) + 1);
        }
      }
      const missing = [...acked.keys()].filter((id) => seen.get(id) !== BATCH);
      expect(missing).toEqual([]);
      const half = [...seen].filter(([, n]) => n !== BATCH);
      expect(half).toEqual([]);
      const listed = [];
      for await (const p of (async function* () {
        yield* (await kv.listPartitions("load")).partitions;
      })())
        listed.push(p);
      expect(listed).toHaveLength(PARTITIONS);
      console.log(
        `failover: ${acked.size} batches acknowledged (${ackedAtKill} before the kill, ${ackedAfterFailover} when the ` +
          `replica was promoted), ${failures.length} refused ` +
          `with 503, ${seen.size} present`,
      );
    } finally {
      stop = true;
      await kv.close();
      await cluster.stop();
    }
  });
});
