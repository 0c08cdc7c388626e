/**
 * kv: the storage contract against the backend's own client on the same data, in the same run, rounds
 * interleaved: durable put (1 and 50 writers), get, getMany ×100 and a 10,000-key scan. The raw side
 * gets its keys already encoded (the strictest baseline: the contract's side includes encoding tuples,
 * validation and building Entry objects).
 *
 *   npm run bench -- kv                          LMDB: raw lmdb-js calls on a second directory, same options
 *   npm run bench -- kv --store redis[-cluster]  Redis: raw ioredis commands of the same shape, same server
 *   npm run bench -- kv --store postgres         PostgreSQL: raw pg queries of the same rows, same database
 *
 * One workload, three baselines: the contract's side and the row order are shared, each baseline brings
 * its raw rounds, its row names and its notes (results land in kv.json, kv-redis.json, kv-redis-cluster.json,
 * kv-postgres.json).
 */
import { Cluster, Redis } from "ioredis";
import { open } from "lmdb";
import pg from "pg";
import type { BenchContext, Workload } from "../harness.js";
import type { Key, KvStore, Op, Partition } from "../../src/kv/contract.js";
import { lmdbOpenOptions } from "../../src/kv/lmdb.js";
import { parsePostgresUrl } from "../../src/kv/postgres/index.js";
import { parseRedisUrl } from "../../src/kv/redis/connect.js";
import { encode, encodeNested } from "../../src/kv/tuple.js";

const VALUE_BYTES = 256;
const SCAN_KEYS = 10_000;
const WRITERS = 50;
const MANY = 100;
const PRELOAD_BATCH = 1000;

const LMDB_DESCRIPTION = "storage contract vs raw lmdb-js: durable put (1 and 50 writers), get, getMany, 10,000-key scan";
const REDIS_DESCRIPTION = "storage contract vs raw ioredis commands on the same Redis: put (1 and 50 writers), get, getMany, 10,000-key scan";
const POSTGRES_DESCRIPTION = "storage contract vs raw pg queries of the same rows: durable put (1 and 50 writers), get, getMany, 10,000-key scan";

const isRedisUrl = (url: string | undefined): boolean => /^redis(-cluster)?:\/\//.test(url ?? "");
const isPostgresUrl = (url: string | undefined): boolean => /^postgres(ql)?:\/\//.test(url ?? "");

type Round = () => Promise<void> | void;
/** A row's two names: the raw reference's and the contract's. */
type Names = readonly [reference: string, subject: string];

/** What a backend's raw client brings to the comparison. */
interface Baseline {
  readonly partition: Partition;
  /** Operations per round: single-writer puts, puts per concurrent writer, getMany calls. */
  readonly sizes: { readonly single: number; readonly perWriter: number; readonly manyCalls: number };
  readonly names: { readonly put1: Names; readonly putN: Names; readonly get: Names; readonly getMany: Names; readonly scan: Names };
  /** Writes the keys `["item", 0..SCAN_KEYS)` on the raw side (the contract's side is written alongside). */
  preload(from: number, to: number): Promise<void>;
  put(key: Key): Promise<unknown>;
  getRound(keys: readonly Key[]): Round;
  getManyRound(batches: readonly (readonly Key[])[]): Round;
  scanRound(times: number): Round;
  /** Rows only this backend has, after the shared get row. */
  extraGetRows?(ctx: BenchContext, keys: readonly Key[], contractRound: Round): Promise<void>;
  notes(): string[];
  close(): Promise<void>;
}

export const kv: Workload = {
  name: "kv",
  description: LMDB_DESCRIPTION,
  describe: (storeUrl) => (isRedisUrl(storeUrl) ? REDIS_DESCRIPTION : isPostgresUrl(storeUrl) ? POSTGRES_DESCRIPTION : LMDB_DESCRIPTION),
  async run(ctx) {
    const store: KvStore = await ctx.openStore();
    const value = Buffer.alloc(VALUE_BYTES, 0x61);
    const raw = isRedisUrl(ctx.storeUrl) ? redisBaseline(ctx, value) : isPostgresUrl(ctx.storeUrl) ? await postgresBaseline(ctx, value) : lmdbBaseline(ctx, value);
    const P = raw.partition;
    const { names } = raw;
    try {
      // preload what every read uses: SCAN_KEYS records of one partition, on both sides
      for (let i = 0; i < SCAN_KEYS; i += PRELOAD_BATCH) {
        const batch: Op[] = [];
        for (let j = i; j < i + PRELOAD_BATCH; j++) batch.push({ type: "put", key: ["item", j], value });
        await store.commit(P, batch);
        await raw.preload(i, i + PRELOAD_BATCH);
      }

      let n = 0;
      const { single, perWriter, manyCalls } = raw.sizes;
      const put = (key: Key) => store.commit(P, [{ type: "put", key, value }]);
      await ctx.compare({
        ops: single,
        goal: 1.5,
        reference: {
          name: names.put1[0],
          round: async () => {
            for (let i = 0; i < single; i++) await raw.put(["w", n++]);
          },
        },
        subject: {
          name: names.put1[1],
          round: async () => {
            for (let i = 0; i < single; i++) await put(["w", n++]);
          },
        },
      });

      const concurrently = (one: () => Promise<unknown>) =>
        Promise.all(
          Array.from({ length: WRITERS }, async () => {
            for (let i = 0; i < perWriter; i++) await one();
          }),
        ).then(() => {});
      await ctx.compare({
        ops: WRITERS * perWriter,
        goal: 1.5,
        reference: { name: names.putN[0], round: () => concurrently(() => raw.put(["c", n++])) },
        subject: { name: names.putN[1], round: () => concurrently(() => put(["c", n++])) },
      });

      const gets = Math.round(5_000 * ctx.scale);
      const order: Key[] = Array.from({ length: gets }, (_, i) => ["item", (i * 7919) % SCAN_KEYS]);
      const contractGets = async () => {
        for (const k of order) if (!(await store.get(P, k))) throw new Error("missing");
      };
      await ctx.compare({
        ops: gets,
        goal: 1.5,
        reference: { name: names.get[0], round: raw.getRound(order) },
        subject: { name: names.get[1], round: contractGets },
      });
      await raw.extraGetRows?.(ctx, order, contractGets);

      const slice = <T>(xs: readonly T[], c: number) => xs.slice((c * MANY) % (gets - MANY), ((c * MANY) % (gets - MANY)) + MANY);
      const batches = Array.from({ length: manyCalls }, (_, c) => slice(order, c));
      await ctx.compare({
        ops: manyCalls,
        goal: 1.5,
        reference: { name: names.getMany[0], round: raw.getManyRound(batches) },
        subject: {
          name: names.getMany[1],
          round: async () => {
            for (const ks of batches) if ((await store.getMany(P, ks)).length !== MANY) throw new Error("short");
          },
        },
      });

      const scans = Math.max(2, Math.round(3 * ctx.scale));
      await ctx.compare({
        ops: scans,
        goal: 1.5,
        rounds: 15,
        reference: { name: names.scan[0], round: raw.scanRound(scans) },
        subject: {
          name: names.scan[1],
          round: async () => {
            for (let s = 0; s < scans; s++) {
              const page = await store.scan(P, { prefix: ["item"], limit: SCAN_KEYS });
              if (page.entries.length !== SCAN_KEYS) throw new Error(`scan read ${page.entries.length}`);
            }
          },
        },
      });
      for (const note of raw.notes()) ctx.note(note);
    } finally {
      await raw.close();
    }
  },
};

/** Raw lmdb-js on a second fresh directory with the contract's options; puts as durable as the contract's. */
function lmdbBaseline(ctx: BenchContext, value: Buffer): Baseline {
  const raw = open<Buffer, Buffer>(lmdbOpenOptions(ctx.tmpDir()));
  const P = ["bench", "kv"];
  const pBytes = encodeNested(P);
  const full = (key: Key) => Buffer.concat([pBytes, encode(key)]);
  let rawVersion = 0;
  const lo = full(["item"]);
  const hi = Buffer.concat([lo, Buffer.from([0xff])]);
  return {
    partition: P,
    sizes: { single: Math.max(10, Math.round(20 * ctx.scale)), perWriter: Math.max(2, Math.round(4 * ctx.scale)), manyCalls: Math.max(10, Math.round(50 * ctx.scale)) },
    names: {
      put1: ["durable put, 1 writer (raw lmdb)", "durable put, 1 writer (contract)"],
      putN: [`durable put, ${WRITERS} writers (raw lmdb)`, `durable put, ${WRITERS} writers (contract)`],
      get: ["get (raw lmdb getEntry)", "get (contract)"],
      getMany: [`getMany ×${MANY} (raw lmdb getEntry loop)`, `getMany ×${MANY} (contract)`],
      scan: ["scan 10,000 keys (raw lmdb getRange)", "scan 10,000 keys (contract)"],
    },
    async preload(from, to) {
      await raw.transaction(() => {
        for (let i = from; i < to; i++) raw.putSync(full(["item", i]), value, 1);
      });
      await raw.flushed;
    },
    // the durability the contract gives: wait for the commit and for its flush
    async put(key) {
      const written = raw.put(full(key), value, ++rawVersion);
      const flushed = new Promise<void>((resolve, reject) => raw.flushed.then(() => resolve(), reject));
      await written;
      await flushed;
    },
    getRound(keys) {
      const encoded = keys.map(full);
      return () => {
        for (const k of encoded) if (!raw.getEntry(k)) throw new Error("missing");
      };
    },
    // the same, with the raw get awaited as the contract's is: what the async interface itself costs
    async extraGetRows(bench, keys, contractRound) {
      const encoded = keys.map(full);
      await bench.compare({
        ops: keys.length,
        goal: 1.5,
        reference: {
          name: "get (raw lmdb getEntry, awaited)",
          round: async () => {
            for (const k of encoded) if (!(await raw.getEntry(k))) throw new Error("missing");
          },
        },
        subject: { name: "get (contract) ", round: contractRound },
      });
    },
    getManyRound(batches) {
      const encoded = batches.map((ks) => ks.map(full));
      return () => {
        for (const ks of encoded) if (ks.map((k) => raw.getEntry(k)).length !== MANY) throw new Error("short");
      };
    },
    scanRound(times) {
      return () => {
        for (let s = 0; s < times; s++) {
          const out = [];
          for (const e of raw.getRange({ start: lo, end: hi, limit: SCAN_KEYS + 1, versions: true })) out.push(e);
          if (out.length !== SCAN_KEYS) throw new Error(`raw scan read ${out.length}`);
        }
      };
    },
    notes: () => [
      `Values are ${VALUE_BYTES} bytes. Durable: the promise resolves after the commit's fdatasync (lmdb-js ` +
        `overlappingSync, then waiting for \`flushed\`), on both sides. Raw lmdb-js calls get pre-encoded keys; ` +
        `the contract encodes tuples, validates and builds Entry objects. Store under test: ` +
        `${ctx.storeUrl ?? "a fresh LMDB directory"} (raw: a second fresh LMDB directory, same options).`,
      "Where the contract costs more: (1) get/getMany are async (one await each) while raw lmdb-js reads are " +
        "synchronous; the second get row compares with an awaited raw read to isolate that. (2) A contract commit " +
        "is an lmdb-js transaction callback run on the JS thread (it must read and bump the partition's commit " +
        "sequence and evaluate checks inside the write transaction), while a raw put runs entirely on lmdb-js's " +
        "write thread; concurrent commits still share one transaction and one fdatasync (group commit). " +
        "(3) A scan builds one Entry (and one key subarray) per record on top of what getRange returns.",
    ],
    close: () => raw.close(),
  };
}

/**
 * Raw ioredis on the same server: a key written as the contract writes it (ZADD to the ordered set +
 * HSET of the value + HINCRBY of a sequence, pipelined, not atomic), read with HGET / HMGET /
 * ZRANGEBYLEX + HMGET.
 */
function redisBaseline(ctx: BenchContext, value: Buffer): Baseline {
  const url = ctx.storeUrl!;
  const target = parseRedisUrl(url);
  const raw: Redis | Cluster = target.cluster ? new Cluster(target.nodes) : new Redis({ ...target.nodes[0]!, db: target.db });
  const stored = Buffer.concat([Buffer.from("1:"), value]); // what the contract stores: "<version>:<value>"
  const tag = `bench-raw-${Date.now()}`;
  const rk = `{${tag}}:k`;
  const rv = `{${tag}}:v`;
  const rm = `{${tag}}:m`;
  const lo = Buffer.concat([Buffer.from("["), encode(["item"])]);
  const hi = Buffer.concat([Buffer.from("("), encode(["item"]), Buffer.from([0xff])]);
  return {
    partition: ["bench", `kv-${Date.now()}`],
    sizes: { single: Math.max(50, Math.round(300 * ctx.scale)), perWriter: Math.max(4, Math.round(20 * ctx.scale)), manyCalls: Math.max(10, Math.round(100 * ctx.scale)) },
    names: {
      put1: ["put, 1 writer (raw ZADD+HSET+HINCRBY pipeline)", "put, 1 writer (contract commit)"],
      putN: [`put, ${WRITERS} writers (raw pipeline)`, `put, ${WRITERS} writers (contract commit)`],
      get: ["get (raw HGET)", "get (contract)"],
      getMany: [`getMany ×${MANY} (raw HMGET)`, `getMany ×${MANY} (contract)`],
      scan: ["scan 10,000 keys (raw ZRANGEBYLEX + HMGET)", "scan 10,000 keys (contract)"],
    },
    async preload(from, to) {
      const pipe = raw.pipeline();
      for (let j = from; j < to; j++) pipe.zadd(rk, 0, encode(["item", j])).hset(rv, encode(["item", j]), stored);
      await pipe.exec();
    },
    put(key) {
      const k = encode(key);
      return raw.pipeline().zadd(rk, 0, k).hset(rv, k, stored).hincrby(rm, "s", 1).exec();
    },
    getRound(keys) {
      const encoded = keys.map((k) => encode(k));
      return async () => {
        for (const k of encoded) if (!(await raw.hgetBuffer(rv, k))) throw new Error("missing");
      };
    },
    getManyRound(batches) {
      const encoded = batches.map((ks) => ks.map((k) => encode(k)));
      return async () => {
        for (const ks of encoded) if ((await raw.hmgetBuffer(rv, ...ks)).length !== MANY) throw new Error("short");
      };
    },
    scanRound(times) {
      return async () => {
        for (let s = 0; s < times; s++) {
          const keys = await raw.zrangebylexBuffer(rk, lo, hi, "LIMIT", 0, SCAN_KEYS + 1);
          const values = await raw.hmgetBuffer(rv, ...keys);
          if (values.length !== SCAN_KEYS) throw new Error(`raw scan read ${values.length}`);
        }
      };
    },
    notes: () => [
      `Values are ${VALUE_BYTES} bytes. Store under test: ${url.replace(/\/\/[^@/]*@/, "//…@")}; the raw side is a ` +
        `plain ioredis ${target.cluster ? "Cluster" : "Redis"} client on the same server(s), default options. ` +
        "Acknowledged when Redis answers (no waitReplicas); durability is the server's appendfsync (the bench's own " +
        "servers: appendonly yes, appendfsync everysec).",
      "What the contract does beyond the raw commands: a commit is one Lua script (EVALSHA) that evaluates the " +
        "batch's checks, bumps the partition's commit sequence and writes, atomically; a raw pipeline is not atomic. " +
        "A scan of more than 256 keys reads keys then values, each in MULTI with the commit sequence (a consistency " +
        "check the raw side does not make); every read splits the stored version from the value and builds Entry objects.",
    ],
    async close() {
      await raw.del(rk, rv, rm).catch(() => undefined);
      raw.disconnect();
    },
  };
}

/**
 * Raw pg on the same database: a pool as large as the contract's (its default, 10 connections); reads are
 * the same rows the contract wrote (its table, its encoded partition and keys), prepared SELECTs of
 * version and value; a raw put is one autocommit statement bumping a sequence row and upserting the record
 * (what a contract commit writes, without its checks), durable as the contract's (synchronous_commit on).
 */
async function postgresBaseline(ctx: BenchContext, value: Buffer): Promise<Baseline> {
  const url = ctx.storeUrl!;
  const { connectionString, options } = parsePostgresUrl(url);
  const schema = `"${options.schema ?? "public"}"`;
  const records = `${schema}.flowstore_records`;
  const sequences = `${schema}.flowstore_partitions`;
  const pool = new pg.Pool({ connectionString, max: options.poolSize ?? 10, options: "-c synchronous_commit=on" });
  const P: Partition = ["bench", `kv-${Date.now()}`];
  const pBytes = Buffer.from(encodeNested(P));
  const rawP = Buffer.from(encodeNested(["bench", `kv-raw-${Date.now()}`]));
  const bytes = (key: Key) => Buffer.from(encode(key));
  const lo = bytes(["item"]);
  const hi = Buffer.concat([lo, Buffer.from([0xff])]);
  const q = (name: string, text: string, values: unknown[]) => pool.query({ name: `bench_${name}`, text, values });
  return {
    partition: P,
    sizes: { single: Math.max(20, Math.round(50 * ctx.scale)), perWriter: Math.max(2, Math.round(4 * ctx.scale)), manyCalls: Math.max(10, Math.round(50 * ctx.scale)) },
    names: {
      put1: ["durable put, 1 writer (raw pg upsert + sequence)", "durable put, 1 writer (contract commit)"],
      putN: [`durable put, ${WRITERS} writers (raw pg upsert + sequence)`, `durable put, ${WRITERS} writers (contract commit)`],
      get: ["get (raw pg SELECT, same rows)", "get (contract)"],
      getMany: [`getMany ×${MANY} (raw pg SELECT = ANY, same rows)`, `getMany ×${MANY} (contract)`],
      scan: ["scan 10,000 keys (raw pg range SELECT, same rows)", "scan 10,000 keys (contract)"],
    },
    async preload() {
      // the raw side reads the rows the contract writes; its puts go to a partition of its own
      await pool.query(`INSERT INTO ${sequences} (id, seq) VALUES ($1, 0) ON CONFLICT (id) DO NOTHING`, [rawP]);
    },
    put(key) {
      return q(
        "put",
        `WITH s AS (UPDATE ${sequences} SET seq = seq + 1 WHERE id = $1 RETURNING seq)
         INSERT INTO ${records} (partition, key, version, value) SELECT $1, $2, s.seq, $3 FROM s
         ON CONFLICT (partition, key) DO UPDATE SET version = EXCLUDED.version, value = EXCLUDED.value`,
        [rawP, bytes(key), value],
      );
    },
    getRound(keys) {
      const encoded = keys.map(bytes);
      return async () => {
        for (const k of encoded) {
          const r = await q("get", `SELECT version, value FROM ${records} WHERE partition = $1 AND key = $2`, [pBytes, k]);
          if (r.rows.length !== 1) throw new Error("missing");
        }
      };
    },
    getManyRound(batches) {
      const encoded = batches.map((ks) => ks.map(bytes));
      return async () => {
        for (const ks of encoded) {
          const r = await q("getMany", `SELECT key, version, value FROM ${records} WHERE partition = $1 AND key = ANY($2::bytea[])`, [pBytes, ks]);
          if (r.rows.length !== new Set(ks.map((k) => k.toString("hex"))).size) throw new Error("short");
        }
      };
    },
    scanRound(times) {
      return async () => {
        for (let s = 0; s < times; s++) {
          const r = await q("scan", `SELECT key, version, value FROM ${records} WHERE partition = $1 AND key >= $2 AND key < $3 ORDER BY key LIMIT $4`, [
            pBytes,
            lo,
            hi,
            SCAN_KEYS + 1,
          ]);
          if (r.rows.length !== SCAN_KEYS) throw new Error(`raw scan read ${r.rows.length}`);
        }
      };
    },
    notes: () => [
      `Values are ${VALUE_BYTES} bytes. Store under test: ${url.replace(/\/\/[^@/]*@/, "//…@")} (a throwaway cluster when the ` +
        "command says `--store postgres`: fsync on, synchronous_commit on); the raw side is a plain pg Pool of the same size on the " +
        "same database, reading the very rows the contract wrote. Durable on both sides: a put is acknowledged after its " +
        "transaction's WAL flush (synchronous_commit on); concurrent transactions share WAL flushes (PostgreSQL's group commit).",
      "What the contract does beyond the raw queries: a commit is one call of the flowstore_commit function (a transaction " +
        "locking the partition's sequence row, evaluating the batch's checks, writing the records and the partition index); " +
        "reads decode tuples and build Entry objects, and fetch a value above 64 KiB piece by piece (not the case here).",
    ],
    close: () => pool.end(),
  };
}
