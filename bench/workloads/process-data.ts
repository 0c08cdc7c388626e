/**
 * process-data: the process-data service against raw contract calls on the same store, in the same run.
 *
 * - put: a task form submission (pointer + sealed token + record: two durable commits) vs one raw
 *   durable put of the same number of value bytes; 1 writer and 50 concurrent writers;
 * - get: a task form submission (decrypting its token) vs a raw get of the same bytes;
 * - delete by instance: deleting a process instance with 10 records, in a store that holds OTHERS other
 *   records (default 100,000 × scale; FLOWSTORE_BENCH_PD_OTHERS sets it, e.g. 1000000), compared with
 *   the same delete in a store of 1,000 records: the cost must not grow with the store.
 *
 * Registered in bench/workloads/index.ts once the runner (bench/harness.ts) is on the branch; the context
 * type below is the part of the runner's BenchContext this workload uses.
 */
import { SYSTEM } from "../../src/access/actor.js";
import { randomBytes, randomUUID } from "node:crypto";
import type { KvStore } from "../../src/kv/contract.js";
import { keys } from "../../src/process-data/keys.js";
import { openProcessData, type ProcessData } from "../../src/process-data/service.js";

interface Ctx {
  readonly scale: number;
  openStore(): Promise<KvStore>;
  measure(
    name: string,
    options: {
      ops: number;
      round: () => Promise<void> | void;
      rounds?: number;
      warmup?: number;
      reference?: string;
      goal?: number;
      note?: string;
    },
  ): Promise<unknown>;
  note(text: string): void;
}

const FS = "bpm-form-submissions";
const RECORDS_PER_INSTANCE = 10;
const SMALL_STORE = 1_000;

function fields(i: number) {
  return {
    accessToken: `eyJhbGciOiJSUzI1NiJ9.${randomBytes(180).toString("base64url")}.${randomBytes(64).toString("base64url")}`,
    data: { applicant: `person-${i}`, laboratory: { name: "Lab", edrpou: "12345678", address: "Kyiv, 1 Street" }, amount: i },
    signature: randomBytes(96).toString("base64"),
  };
}

/** Writes `n` records as instances of RECORDS_PER_INSTANCE task submissions, `concurrency` at a time. */
async function load(pd: ProcessData, n: number, concurrency = 256): Promise<void> {
  let next = 0;
  let pid = randomUUID();
  const worker = async () => {
    while (next < n) {
      const i = next++;
      if (i % RECORDS_PER_INSTANCE === 0) pid = randomUUID();
      await pd.put(SYSTEM, FS, keys.task(pid, `task-${i % RECORDS_PER_INSTANCE}`), fields(i));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** Instances of RECORDS_PER_INSTANCE records, each to be deleted by one call. */
async function targets(pd: ProcessData, count: number): Promise<string[]> {
  const pids = Array.from({ length: count }, () => randomUUID());
  await Promise.all(
    pids.map(async (pid) => {
      for (let t = 0; t < RECORDS_PER_INSTANCE; t++) await pd.put(SYSTEM, FS, keys.task(pid, `task-${t}`), fields(t));
    }),
  );
  return pids;
}

export const processData = {
  name: "process-data",
  description: "process data vs raw contract calls: put, get, delete of a process instance among many records",
  async run(ctx: Ctx): Promise<void> {
    const store = await ctx.openStore();
    const pd = await openProcessData(store, { encryptionKey: randomBytes(32) });
    const sample = await pd.put(SYSTEM, FS, keys.task(randomUUID(), "sample"), fields(0));
    const stored = await store.get(["pd-instance", sample.key.split("/")[1]!], [sample.key]);
    const value = Buffer.alloc(stored!.value.length, 0x61);
    ctx.note(`record: ${value.length} stored bytes (data, signature, sealed JWT-sized token); raw rows put/get the same bytes`);

    // ---- put, one writer
    const single = Math.max(20, Math.round(40 * ctx.scale));
    let n = 0;
    await ctx.measure("durable put, 1 writer (raw contract)", {
      ops: single,
      round: async () => {
        for (let i = 0; i < single; i++) await store.commit(["bench-raw", "pd"], [{ type: "put", key: ["k", n++], value }]);
      },
    });
    const pid1 = randomUUID();
    await ctx.measure("put form submission, 1 writer", {
      ops: single,
      reference: "durable put, 1 writer (raw contract)",
      note: "pointer + record: 2 commits",
      round: async () => {
        for (let i = 0; i < single; i++) await pd.put(SYSTEM, FS, keys.task(pid1, `t${n++}`), fields(i));
      },
    });

    // ---- put, 50 writers
    const writers = 50;
    const many = Math.max(500, Math.round(2000 * ctx.scale));
    await ctx.measure("durable put, 50 writers (raw contract)", {
      ops: many,
      round: async () => {
        let i = 0;
        await Promise.all(
          Array.from({ length: writers }, async () => {
            while (i++ < many) await store.commit(["bench-raw", "pd", n % 64], [{ type: "put", key: ["k", n++], value }]);
          }),
        );
      },
    });
    await ctx.measure("put form submission, 50 writers", {
      ops: many,
      reference: "durable put, 50 writers (raw contract)",
      round: async () => {
        let i = 0;
        await Promise.all(
          Array.from({ length: writers }, async () => {
            while (i++ < many) await pd.put(SYSTEM, FS, keys.task(randomUUID(), "t"), fields(i));
          }),
        );
      },
    });

    // ---- get
    const reads = Math.max(1000, Math.round(5000 * ctx.scale));
    const readPid = randomUUID();
    const readKeys = Array.from({ length: 100 }, (_, i) => keys.task(readPid, `r${i}`));
    for (const k of readKeys) await pd.put(SYSTEM, FS, k, fields(1));
    await ctx.measure("get (raw contract)", {
      ops: reads,
      round: async () => {
        for (let i = 0; i < reads; i++) await store.get(["bench-raw", "pd"], ["k", i % single]);
      },
    });
    await ctx.measure("get form submission (decrypts the token)", {
      ops: reads,
      reference: "get (raw contract)",
      round: async () => {
        for (let i = 0; i < reads; i++) await pd.get(SYSTEM, FS, readKeys[i % readKeys.length]!);
      },
    });
    const plainKeys = Array.from({ length: 100 }, (_, i) => keys.task(readPid, `p${i}`));
    for (const k of plainKeys) await pd.put(SYSTEM, FS, k, { data: fields(1).data, signature: fields(1).signature });
    await ctx.measure("get form submission without a token", {
      ops: reads,
      reference: "get (raw contract)",
      note: "parse key, JSON decode, expiry check",
      round: async () => {
        for (let i = 0; i < reads; i++) await pd.get(SYSTEM, FS, plainKeys[i % plainKeys.length]!);
      },
    });

    // ---- delete a process instance: small store, then a store with OTHERS records
    const others = Number(process.env["FLOWSTORE_BENCH_PD_OTHERS"] ?? Math.round(100_000 * ctx.scale));
    const perRound = 20;
    const rounds = 5;
    const deleteRounds = async (p: ProcessData, label: string, reference?: string) => {
      const pids = await targets(p, perRound * (rounds + 1));
      let at = 0;
      await ctx.measure(label, {
        ops: perRound,
        rounds,
        ...(reference ? { reference, goal: 1.2 } : {}),
        round: async () => {
          for (let i = 0; i < perRound; i++) {
            const { deleted } = await p.deleteProcessInstance(SYSTEM, pids[at++]!);
            if (deleted !== RECORDS_PER_INSTANCE) throw new Error(`deleted ${deleted}, expected ${RECORDS_PER_INSTANCE}`);
          }
        },
      });
    };
    const small = await openProcessData(await ctx.openStore(), { encryptionKey: randomBytes(32) });
    await load(small, SMALL_STORE);
    await deleteRounds(small, `delete instance (10 records) among ${SMALL_STORE.toLocaleString("en-US")}`);
    // The platform's delete: the instance's records and its external start form (alsoKeys), one call.
    {
      const pids = await targets(small, perRound * (rounds + 1));
      const startForms = await Promise.all(
        pids.map(async (pid) => {
          const key = keys.externalStartForm("add-lab", randomUUID());
          await small.put(SYSTEM, FS, key, { data: { pid } });
          return key;
        }),
      );
      let at = 0;
      await ctx.measure(`delete instance (10 records) with its start form (alsoKeys) among ${SMALL_STORE.toLocaleString("en-US")}`, {
        ops: perRound,
        rounds,
        reference: `delete instance (10 records) among ${SMALL_STORE.toLocaleString("en-US")}`,
        note: "one call: the instance's partition, its pointers, one extra key",
        round: async () => {
          for (let i = 0; i < perRound; i++, at++) {
            const { deleted } = await small.deleteProcessInstance(SYSTEM, pids[at]!, { alsoKeys: [startForms[at]!] });
            if (deleted !== RECORDS_PER_INSTANCE + 1) throw new Error(`deleted ${deleted}, expected ${RECORDS_PER_INSTANCE + 1}`);
          }
        },
      });
    }
    const t0 = performance.now();
    await load(pd, others);
    ctx.note(`loaded ${others.toLocaleString("en-US")} other form submissions in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    await deleteRounds(pd, `delete instance (10 records) among ${others.toLocaleString("en-US")}`, `delete instance (10 records) among ${SMALL_STORE.toLocaleString("en-US")}`);
    // A page of the keyspace list in the big store, for the record.
    const page = await pd.list(SYSTEM, FS, { limit: 100 });
    if (page.items.length !== 100) throw new Error("listing the loaded keyspace failed");
  },
};
