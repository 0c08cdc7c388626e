/**
 * kv: the storage contract against raw lmdb-js calls on the same data, the same settings, in the same
 * run, with rounds interleaved. Raw calls get their keys already encoded (the strictest baseline: the
 * contract's side includes encoding tuples, validation and building Entry objects).
 */
import { open } from "lmdb";
import type { Workload } from "../harness.js";
import type { KvStore, Op } from "../../src/kv/contract.js";
import { lmdbOpenOptions } from "../../src/kv/lmdb.js";
import { encode, encodeNested } from "../../src/kv/tuple.js";
import { REDIS_DESCRIPTION, runKvRedis } from "./kv-redis.js";

const isRedisUrl = (url: string | undefined): boolean => /^redis(-cluster)?:\/\//.test(url ?? "");

const VALUE_BYTES = 256;
const SCAN_KEYS = 10_000;
const WRITERS = 50;

export const kv: Workload = {
  name: "kv",
  description: "storage contract vs raw lmdb-js: durable put (1 and 50 writers), get, getMany, 10,000-key scan",
  describe: (storeUrl) => (isRedisUrl(storeUrl) ? REDIS_DESCRIPTION : kv.description),
  async run(ctx) {
    if (isRedisUrl(ctx.storeUrl)) return runKvRedis(ctx);
    const store: KvStore = await ctx.openStore();
    const raw = open<Buffer, Buffer>(lmdbOpenOptions(ctx.tmpDir()));
    const value = Buffer.alloc(VALUE_BYTES, 0x61);
    const P = ["bench", "kv"];
    const pBytes = encodeNested(P);
    const full = (key: (string | number)[]) => Buffer.concat([pBytes, encode(key)]);
    // raw lmdb-js with the durability the contract gives: wait for the commit and for its flush
    let rawVersion = 0;
    const rawDurablePut = async (key: Buffer) => {
      const written = raw.put(key, value, ++rawVersion);
      const flushed = new Promise<void>((resolve, reject) => raw.flushed.then(() => resolve(), reject));
      await written;
      await flushed;
    };

    // preload what every read uses: SCAN_KEYS records of one partition, on both sides
    const batch: Op[] = [];
    for (let i = 0; i < SCAN_KEYS; i++) batch.push({ type: "put", key: ["item", i], value });
    await store.commit(P, batch);
    await raw.transaction(() => {
      for (let i = 0; i < SCAN_KEYS; i++) raw.putSync(full(["item", i]), value, 1);
    });
    await raw.flushed;

    let n = 0;
    const single = Math.max(10, Math.round(20 * ctx.scale));
    await ctx.compare({
      ops: single,
      goal: 1.5,
      reference: {
        name: "durable put, 1 writer (raw lmdb)",
        round: async () => {
          for (let i = 0; i < single; i++) await rawDurablePut(full(["w", n++]));
        },
      },
      subject: {
        name: "durable put, 1 writer (contract)",
        round: async () => {
          for (let i = 0; i < single; i++) await store.commit(P, [{ type: "put", key: ["w", n++], value }]);
        },
      },
    });

    const perWriter = Math.max(2, Math.round(4 * ctx.scale));
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
        name: `durable put, ${WRITERS} writers (raw lmdb)`,
        round: () => concurrently(() => rawDurablePut(full(["c", n++]))),
      },
      subject: {
        name: `durable put, ${WRITERS} writers (contract)`,
        round: () => concurrently(() => store.commit(P, [{ type: "put", key: ["c", n++], value }])),
      },
    });

    const gets = Math.round(5_000 * ctx.scale);
    const order = Array.from({ length: gets }, (_, i) => (i * 7919) % SCAN_KEYS);
    const rawKeys = order.map((i) => full(["item", i]));
    await ctx.compare({
      ops: gets,
      goal: 1.5,
      reference: {
        name: "get (raw lmdb getEntry)",
        round: () => {
          for (const k of rawKeys) if (!raw.getEntry(k)) throw new Error("missing");
        },
      },
      subject: {
        name: "get (contract)",
        round: async () => {
          for (const i of order) if (!(await store.get(P, ["item", i]))) throw new Error("missing");
        },
      },
    });

    // the same, with the raw get awaited as the contract's is: what the async interface itself costs
    await ctx.compare({
      ops: gets,
      reference: {
        name: "get (raw lmdb getEntry, awaited)",
        round: async () => {
          for (const k of rawKeys) if (!(await raw.getEntry(k))) throw new Error("missing");
        },
      },
      subject: {
        name: "get (contract) ",
        round: async () => {
          for (const i of order) if (!(await store.get(P, ["item", i]))) throw new Error("missing");
        },
      },
      goal: 1.5,
    });

    const many = 100;
    const calls = Math.max(10, Math.round(50 * ctx.scale));
    const slice = <T>(xs: T[], c: number) => xs.slice((c * many) % (gets - many), ((c * many) % (gets - many)) + many);
    const manyRaw = Array.from({ length: calls }, (_, c) => slice(rawKeys, c));
    const manyKeys = Array.from({ length: calls }, (_, c) => slice(order, c).map((i) => ["item", i]));
    await ctx.compare({
      ops: calls,
      goal: 1.5,
      reference: {
        name: "getMany ×100 (raw lmdb getEntry loop)",
        round: () => {
          for (const ks of manyRaw) if (ks.map((k) => raw.getEntry(k)).length !== many) throw new Error("short");
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
    const lo = full(["item"]);
    const hi = Buffer.concat([lo, Buffer.from([0xff])]);
    await ctx.compare({
      ops: scans,
      goal: 1.5,
      rounds: 15,
      reference: {
        name: "scan 10,000 keys (raw lmdb getRange)",
        round: () => {
          for (let s = 0; s < scans; s++) {
            const out = [];
            for (const e of raw.getRange({ start: lo, end: hi, limit: SCAN_KEYS + 1, versions: true })) out.push(e);
            if (out.length !== SCAN_KEYS) throw new Error(`raw scan read ${out.length}`);
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
      `Values are ${VALUE_BYTES} bytes. Durable: the promise resolves after the commit's fdatasync (lmdb-js ` +
        `overlappingSync, then waiting for \`flushed\`), on both sides. Raw lmdb-js calls get pre-encoded keys; ` +
        `the contract encodes tuples, validates and builds Entry objects. Store under test: ` +
        `${ctx.storeUrl ?? "a fresh LMDB directory"} (raw: a second fresh LMDB directory, same options).`,
    );
    ctx.note(
      "Where the contract costs more: (1) get/getMany are async (one await each) while raw lmdb-js reads are " +
        "synchronous; the second get row compares with an awaited raw read to isolate that. (2) A contract commit " +
        "is an lmdb-js transaction callback run on the JS thread (it must read and bump the partition's commit " +
        "sequence and evaluate checks inside the write transaction), while a raw put runs entirely on lmdb-js's " +
        "write thread; concurrent commits still share one transaction and one fdatasync (group commit). " +
        "(3) A scan builds one Entry (and one key subarray) per record on top of what getRange returns.",
    );
    await raw.close();
  },
};
