/**
 * Redis behind Sentinel, on servers of this file's own: a master, one replica and three sentinels (quorum
 * 2), all on free loopback ports. The master is SIGKILLed under write load with `waitReplicas=1`; the store
 * (one object, never reopened) follows the promoted replica by itself, answers only UnavailableError (503)
 * while it switches, loses no acknowledged write, and acknowledges writes again once the old master is
 * back as the new master's replica. Bounded in count and time; no timing assertions.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UnavailableError } from "../../src/errors.js";
import { scanAll } from "../../src/kv/contract.js";
import { openRedisKv, parseRedisUrl } from "../../src/kv/redis/connect.js";
import { eventually, pause } from "../support/eventually.js";
import { makeRedisDir, redisBinariesForTests, removeDir, startStandalone, type RedisServer, type RedisBinaries } from "../setup/redis-servers.js";

const bin = redisBinariesForTests();

const MASTER = "flowstore-master";
/** Sentinel's decisions take seconds: wait up to 30 s for each step. */
const settled = <T>(step: () => Promise<T>, what?: string) => eventually(step, { what, timeoutMs: 30_000, intervalMs: 250 });

/** What the sentinel on `s` says of the master: its port, how many replicas and other sentinels it knows. */
async function sentinelView(s: RedisServer): Promise<{ port: number; replicas: number; sentinels: number }> {
  const c = s.client();
  try {
    const fields = (await c.call("SENTINEL", "MASTER", MASTER)) as string[];
    const get = (name: string): number => Number(fields[fields.indexOf(name) + 1]);
    return { port: get("port"), replicas: get("num-slaves"), sentinels: get("num-other-sentinels") };
  } finally {
    c.disconnect();
  }
}

describe.runIf(bin)("redis sentinel", () => {
  const b = bin as RedisBinaries;
  let dir: string;
  const servers: RedisServer[] = [];
  beforeAll(async () => {
    dir = await makeRedisDir("sentinel");
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await removeDir(dir);
  });

  it("parses redis-sentinel:// URLs: sentinels, master name, options", () => {
    const t = parseRedisUrl("redis-sentinel://u:p%40ss@10.0.0.1:26379,10.0.0.2/mymaster?waitReplicas=1&namespace=fs");
    expect(t).toMatchObject({
      cluster: false,
      sentinel: "mymaster",
      nodes: [
        { host: "10.0.0.1", port: 26379 },
        { host: "10.0.0.2", port: 26379 },
      ],
      username: "u",
      password: "p@ss",
      options: { waitReplicas: 1, namespace: "fs" },
    });
    expect(() => parseRedisUrl("redis-sentinel://10.0.0.1:26379")).toThrow(/master name/);
    expect(() => parseRedisUrl("redis-sentinel://10.0.0.1:26379/")).toThrow(/master name/);
    expect(() => parseRedisUrl("redis://10.0.0.1:6379/mymaster")).toThrow(/database number/);
  });

  it("fails over by itself when the master is SIGKILLed under load: no acknowledged write lost, 503s only, recovers", async () => {
    const master = await startStandalone(b, dir, { appendonly: true, appendfsync: "everysec" });
    servers.push(master);
    const replica = await startStandalone(b, dir, { appendonly: true, replicaOf: { host: "127.0.0.1", port: master.port } });
    servers.push(replica);
    const sentinel = { masterName: MASTER, host: "127.0.0.1", port: master.port, quorum: 2, downAfterMs: 1000, failoverTimeoutMs: 5000 };
    const sentinels: RedisServer[] = [];
    for (let i = 0; i < 3; i++) sentinels.push(await startStandalone(b, dir, { sentinel }));
    servers.push(...sentinels);
    // A failover needs every sentinel to know the replica and the two other sentinels.
    await settled(async () => {
      for (const s of sentinels) {
        const view = await sentinelView(s);
        if (view.replicas < 1 || view.sentinels < 2) throw new Error(`sentinel ${s.port} does not know everything yet`);
      }
    });

    const url = `redis-sentinel://${sentinels.map((s) => `127.0.0.1:${s.port}`).join(",")}/${MASTER}`;
    const kv = openRedisKv(url, { namespace: "sentinel", waitReplicas: 1, waitTimeoutMs: 1000, timeoutMs: 4000 });
    expect(kv.backend).toBe("redis-sentinel");
    const acked = new Map<string, number>(); // "writer:n" -> acknowledged version
    const failures: Error[] = [];
    let stop = false;
    const writer = async (w: number): Promise<void> => {
      for (let n = 0; !stop && n < 100_000; n++) {
        try {
          const { version } = await kv.commit(["load", `w${w}`], [{ type: "put", key: ["n", n], value: Buffer.from(`${w}:${n}`) }]);
          acked.set(`${w}:${n}`, version);
        } catch (err) {
          // Unacknowledged (applied or not); anything but the "unavailable" class (503 over HTTP) is a bug.
          expect(err).toBeInstanceOf(UnavailableError);
          expect(err).toHaveProperty("status", 503);
          failures.push(err as Error);
          await pause(50); // the writer's back-off, pacing the load
        }
      }
    };
    try {
      const writers = Array.from({ length: 4 }, (_, w) => writer(w));
      await settled(async () => {
        if (acked.size < 200) throw new Error("load not under way yet");
      });
      await master.kill();
      const ackedAtKill = acked.size;

      // The sentinels promote the replica; the same store object reads from it without being told.
      await settled(async () => {
        for (const s of sentinels) if ((await sentinelView(s)).port !== replica.port) throw new Error("no failover yet");
      });
      await settled(() => kv.get(["load", "w0"], ["n", 0]));
      const failuresBeforeRecovery = failures.length;

      // The old master comes back; the sentinels make it the new master's replica, so writes waiting for
      // one replica are acknowledged again.
      await master.start();
      const ackedBeforeRecovery = acked.size;
      await eventually(() => acked.size >= ackedBeforeRecovery + 200, { what: "200 more writes acknowledged after the old master's return", timeoutMs: 60_000, intervalMs: 250 });
      stop = true;
      await Promise.all(writers);

      expect(failuresBeforeRecovery).toBeGreaterThan(0); // the switch was seen, as 503s
      // Every acknowledged write is on the promoted master at the version it was acknowledged with.
      const stored = new Map<string, number>();
      for (let w = 0; w < 4; w++) {
        for await (const e of scanAll(kv, ["load", `w${w}`], { limit: 500 })) {
          expect(e.value.toString()).toBe(`${w}:${e.key[1]}`);
          stored.set(`${w}:${e.key[1]}`, e.version);
        }
      }
      const lost = [...acked].filter(([k, v]) => stored.get(k) !== v);
      expect(lost).toEqual([]);
      console.log(`sentinel failover: ${acked.size} writes acknowledged (${ackedAtKill} before the kill), ` + `${failures.length} refused with 503, ${stored.size} present`);
    } finally {
      stop = true;
      await kv.close();
    }
  });
});
