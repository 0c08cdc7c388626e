/**
 * kv on Redis (`--store redis…`): the storage contract against raw ioredis commands of the same shape on
 * the same server, in the same run, rounds interleaved. The raw side writes a key as the contract does
 * (ZADD to the ordered set + HSET of the value + HINCRBY of a sequence, pipelined, not atomic) and reads
 * with HGET / HMGET / ZRANGEBYLEX + HMGET, with keys already encoded: the strictest baseline.
 */
import { Cluster, Redis } from "ioredis";
import type { BenchContext } from "../harness.js";
import type { KvStore, Op } from "../../src/kv/contract.js";
import { parseRedisUrl } from "../../src/kv/redis/connect.js";
import { encode } from "../../src/kv/tuple.js";

const VALUE_BYTES = 256;
const SCAN_KEYS = 10_000;
const WRITERS = 50;

export const REDIS_DESCRIPTION =
  "storage contract vs raw ioredis commands on the same Redis: put (1 and 50 writers), get, getMany, 10,000-key scan";

export async function runKvRedis(ctx: BenchContext): Promise<void> {
  const url = ctx.storeUrl!;
  const target = parseRedisUrl(url);
  const store: KvStore = await ctx.openStore();
  const raw: Redis | Cluster = target.cluster
    ? new Cluster(target.nodes)
    : new Redis({ ...target.nodes[0]!, db: target.db });
  const value = Buffer.alloc(VALUE_BYTES, 0x61);
  const stored = Buffer.concat([Buffer.from("1:"), value]); // what the contract stores: "<version>:<value>"
  const P = ["bench", `kv-${Date.now()}`];
  const tag = `bench-raw-${Date.now()}`;
  const rk = `{${tag}}:k`;
  const rv = `{${tag}}:v`;
  const rm = `{${tag}}:m`;
  const rawPut = (key: Buffer) => raw.pipeline().zadd(rk, 0, key).hset(rv, key, stored).hincrby(rm, "s", 1).exec();
  try {
    for (let i = 0; i < SCAN_KEYS; i += 1000) {
      const batch: Op[] = [];
      const pipe = raw.pipeline();
      for (let j = i; j < i + 1000; j++) {
        batch.push({ type: "put", key: ["item", j], value });
        pipe.zadd(rk, 0, encode(["item", j])).hset(rv, encode(["item", j]), stored);
      }
      await store.commit(P, batch);
      await pipe.exec();
    }

    let n = 0;
    const single = Math.max(50, Math.round(300 * ctx.scale));
    await ctx.compare({
      ops: single,
      goal: 1.5,
      reference: {
        name: "put, 1 writer (raw ZADD+HSET+HINCRBY pipeline)",
        round: async () => {
          for (let i = 0; i < single; i++) await rawPut(encode(["w", n++]));
        },
      },
      subject: {
        name: "put, 1 writer (contract commit)",
        round: async () => {
          for (let i = 0; i < single; i++) await store.commit(P, [{ type: "put", key: ["w", n++], value }]);
        },
      },
    });

    const perWriter = Math.max(4, Math.round(20 * ctx.scale));
    const concurrently = (one: () => Promise<unknown>) =>
      Promise.all(
        Array.from({ length: WRITERS }, async () => {
          for (let i = 0; i < perWriter; i++) await one();
        }),
      ).then(() => {});
    await ctx.compare({
      ops: WRITERS * perWriter,
      goal: 1.5,
      reference: {
        name: `put, ${WRITERS} writers (raw pipeline)`,
        round: () => concurrently(() => rawPut(encode(["c", n++]))),
      },
      subject: {
        name: `put, ${WRITERS} writers (contract commit)`,
        round: () => concurrently(() => store.commit(P, [{ type: "put", key: ["c", n++], value }])),
      },
    });

    const gets = Math.round(5_000 * ctx.scale);
    const order = Array.from({ length: gets }, (_, i) => (i * 7919) % SCAN_KEYS);
    const rawKeys = order.map((i) => encode(["item", i]));
    await ctx.compare({
      ops: gets,
      goal: 1.5,
      reference: {
        name: "get (raw HGET)",
        round: async () => {
          for (const k of rawKeys) if (!(await raw.hgetBuffer(rv, k))) throw new Error("missing");
        },
      },
      subject: {
        name: "get (contract)",
        round: async () => {
          for (const i of order) if (!(await store.get(P, ["item", i]))) throw new Error("missing");
        },
      },
    });

    const many = 100;
    const calls = Math.max(10, Math.round(100 * ctx.scale));
    const slice = <T>(xs: T[], c: number) => xs.slice((c * many) % (gets - many), ((c * many) % (gets - many)) + many);
    const manyRaw = Array.from({ length: calls }, (_, c) => slice(rawKeys, c));
    const manyKeys = Array.from({ length: calls }, (_, c) => slice(order, c).map((i) => ["item", i]));
    await ctx.compare({
      ops: calls,
      goal: 1.5,
      reference: {
        name: "getMany ×100 (raw HMGET)",
        round: async () => {
          for (const ks of manyRaw) if ((await raw.hmgetBuffer(rv, ...ks)).length !== many) throw new Error("short");
        },
      },
      subject: {
        name: "getMany ×100 (contract)",
        round: async () => {
          for (const ks of manyKeys) if ((await store.getMany(P, ks)).length !== many) throw new Error("short");
        },
      },
    });

    const scans = Math.max(2, Math.round(3 * ctx.scale));
    const lo = Buffer.concat([Buffer.from("["), encode(["item"])]);
    const hi = Buffer.concat([Buffer.from("("), encode(["item"]), Buffer.from([0xff])]);
    await ctx.compare({
      ops: scans,
      goal: 1.5,
      rounds: 15,
      reference: {
        name: "scan 10,000 keys (raw ZRANGEBYLEX + HMGET)",
        round: async () => {
          for (let s = 0; s < scans; s++) {
            const keys = await raw.zrangebylexBuffer(rk, lo, hi, "LIMIT", 0, SCAN_KEYS + 1);
            const values = await raw.hmgetBuffer(rv, ...keys);
            if (values.length !== SCAN_KEYS) throw new Error(`raw scan read ${values.length}`);
          }
        },
      },
      subject: {
        name: "scan 10,000 keys (contract)",
        round: async () => {
          for (let s = 0; s < scans; s++) {
            const page = await store.scan(P, { prefix: ["item"], limit: SCAN_KEYS });
            if (page.entries.length !== SCAN_KEYS) throw new Error(`scan read ${page.entries.length}`);
          }
        },
      },
    });
    ctx.note(
      `Values are ${VALUE_BYTES} bytes. Store under test: ${url.replace(/\/\/[^@/]*@/, "//…@")}; the raw side is a ` +
        `plain ioredis ${target.cluster ? "Cluster" : "Redis"} client on the same server(s), default options. ` +
        "Acknowledged when Redis answers (no waitReplicas); durability is the server's appendfsync (the bench's own " +
        "servers: appendonly yes, appendfsync everysec).",
    );
    ctx.note(
      "What the contract does beyond the raw commands: a commit is one Lua script (EVALSHA) that evaluates the " +
        "batch's checks, bumps the partition's commit sequence and writes, atomically; a raw pipeline is not atomic. " +
        "A scan of more than 256 keys reads keys then values, each in MULTI with the commit sequence (a consistency " +
        "check the raw side does not make); every read splits the stored version from the value and builds Entry objects.",
    );
  } finally {
    await raw.del(rk, rv, rm).catch(() => undefined);
    raw.disconnect();
  }
}
