/**
 * What the partition writer keeps per group (log/writer.ts): each key of the partition is read from the
 * store once per group, and a write a later write of the group overwrites is dropped from the commit
 * (`Overlay.finalOps`). Neither may show: a group re-run after a conflict reads the store again, a
 * command that fails leaves nothing the group's later reads see, and a group's commit leaves the state
 * applying every op in order would.
 */
import { afterEach, expect, it } from "vitest";
import { SYSTEM } from "../../src/access/actor.js";
import { MAX_KEY_BYTES, scanAll, type Key, type KvStore, type Partition } from "../../src/kv/contract.js";
import { encode } from "../../src/kv/tuple.js";
import { PartitionWriter, type Tx } from "../../src/resources/log/writer.js";
import { forEachBackend, type BackendHandle } from "../conformance/backends.js";

const handles: BackendHandle[] = [];
afterEach(async () => {
  while (handles.length) await handles.pop()!.destroy();
});

const b = (s: string) => Buffer.from(s);
const str = (v: Buffer | undefined) => (v === undefined ? "-" : v.toString());
const event = (tx: Tx) => tx.append("probe.changed", [], {}, (seq) => ["h", seq]);

/** "ok" or the error's message. */
const outcome = (p: Promise<unknown>): Promise<string> =>
  p.then(
    () => "ok",
    (e: Error) => e.message,
  );

/** The data the tests write (not their events: the log and history entries), as "key(hex)=value" in key order. */
async function state(kv: KvStore, p: Partition): Promise<string[]> {
  const out: string[] = [];
  for (const prefix of [["k"], ["n"], ["y"], ["z"]]) {
    for await (const e of scanAll(kv, p, { prefix })) out.push(`${e.keyBytes.toString("hex")}=${e.value.toString()}`);
  }
  return out;
}

/** `state`'s entries of these keys and values. */
const entries = (...kvs: [Key, string][]): string[] => kvs.map(([k, v]) => `${encode(k).toString("hex")}=${v}`);

/** Runs `commands` on `partition` as ONE group: a blocker holds the queue while they queue behind it. */
async function oneGroup(w: PartitionWriter, partition: Partition, commands: ((tx: Tx) => Promise<unknown>)[]): Promise<string[]> {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const blocker = w.run(partition, SYSTEM, () => gate);
  const results = commands.map((c) => outcome(w.run(partition, SYSTEM, c)));
  release();
  await blocker;
  return Promise.all(results);
}

type Step = { put: Key; value: string } | { delete: Key } | { deletePrefix: Key };

function apply(tx: Tx, s: Step): void {
  if ("put" in s) tx.put(s.put, b(s.value));
  else if ("delete" in s) tx.delete(s.delete);
  else tx.deletePrefix(s.deletePrefix);
}

/** Sequences of writes where a later one overwrites an earlier one (finalOps drops the earlier). */
const SEQUENCES: Record<string, Step[]> = {
  "put, deletePrefix, put": [{ put: ["k", "a"], value: "1" }, { deletePrefix: ["k"] }, { put: ["k", "a"], value: "2" }],
  "put, deletePrefix": [{ put: ["k", "a"], value: "1" }, { put: ["k", "c"], value: "1" }, { deletePrefix: ["k"] }],
  "put, delete": [{ put: ["k", "a"], value: "1" }, { delete: ["k", "a"] }, { put: ["k", "c"], value: "1" }, { delete: ["k", "c"] }],
  "delete, delete": [{ delete: ["k", "a"] }, { delete: ["k", "a"] }, { delete: ["n"] }, { delete: ["n"] }],
  "put twice": [
    { put: ["k", "a"], value: "1" },
    { put: ["k", "a"], value: "2" },
    { put: ["n"], value: "1" },
    { put: ["n"], value: "2" },
  ],
  "put, delete, put, deletePrefix, put twice": [
    { put: ["n"], value: "1" },
    { delete: ["n"] },
    { put: ["n"], value: "2" },
    { deletePrefix: ["k"] },
    { put: ["k", "b"], value: "3" },
    { put: ["k", "b"], value: "4" },
  ],
};

forEachBackend((backend) => {
  async function open(): Promise<{ kv: KvStore; w: PartitionWriter }> {
    const h = await backend.create();
    handles.push(h);
    return { kv: h.kv, w: new PartitionWriter(h.kv) };
  }

  it("a group's commit leaves the state of applying its ops in order, whether a later op of the group overwrites an earlier one in the same command or another", async () => {
    const { kv, w } = await open();
    for (const [i, [name, steps]] of Object.entries(SEQUENCES).entries()) {
      const [expected, perCommand, inOne] = (["step", "group", "one"] as const).map((mode): Partition => ["probe", `${mode}${i}`]) as [Partition, Partition, Partition];
      for (const p of [expected, perCommand, inOne]) {
        await w.run(p, SYSTEM, async (tx) => {
          tx.put(["k", "a"], b("0"));
          tx.put(["k", "b"], b("0"));
          tx.put(["n"], b("0"));
        });
      }
      // the reference: each op its own group (nothing for a commit to drop)
      for (const s of steps) await w.run(expected, SYSTEM, async (tx) => apply(tx, s));
      // a command per op, in one group; all the ops in one command
      expect(await oneGroup(w, perCommand, [...steps.map((s) => async (tx: Tx) => apply(tx, s)), async (tx: Tx) => void event(tx)]), name).toEqual([
        ...steps.map(() => "ok"),
        "ok",
      ]);
      await w.run(inOne, SYSTEM, async (tx) => {
        for (const s of steps) apply(tx, s);
        event(tx);
      });
      const want = await state(kv, expected);
      expect(await state(kv, perCommand), name).toEqual(want);
      expect(await state(kv, inOne), name).toEqual(want);
    }
  });

  it("a command that fails leaves no trace in the group's later reads, of a key the group read before it or not", async () => {
    const { kv, w } = await open();
    const P: Partition = ["probe", "fail"];
    await w.run(P, SYSTEM, async (tx) => {
      tx.put(["k", "a"], b("0"));
      tx.put(["n"], b("0"));
      event(tx);
    });
    const seen: string[] = [];
    const read = async (tx: Tx, who: string) =>
      seen.push(
        `${who} a=${str(await tx.get(["k", "a"]))} n=${str(await tx.get(["n"]))} z=${str(await tx.get(["z"]))} k=${(await tx.scanPrefix(["k"])).length} y=${await tx.anyUnder(["y"])}`,
      );
    const results = await oneGroup(w, P, [
      (tx) => read(tx, "before"), // the group reads (and keeps) a, n and z
      async (tx) => {
        tx.put(["k", "a"], b("failed"));
        tx.delete(["n"]);
        tx.put(["z"], b("failed"));
        tx.put(["y", "1"], b("failed"));
        tx.put(["k", "b"], b("failed"));
        event(tx);
        await read(tx, "failing");
        throw new Error("fails after writing");
      },
      (tx) => read(tx, "after"),
      async (tx) => {
        tx.put(["n"], b("1"));
        tx.deletePrefix(["k"]);
        event(tx);
        throw new Error("fails after writing again");
      },
      async (tx) => {
        await read(tx, "last");
        tx.put(["n"], b("2"));
        event(tx);
      },
    ]);
    expect(results).toEqual(["ok", "fails after writing", "ok", "fails after writing again", "ok"]);
    expect(seen).toEqual(["before a=0 n=0 z=- k=1 y=false", "failing a=failed n=- z=failed k=2 y=true", "after a=0 n=0 z=- k=1 y=false", "last a=0 n=0 z=- k=1 y=false"]);
    const head = await w.readHead(P);
    expect(head.seq).toBe(2); // the failed commands' events were never chained
    expect(await state(kv, P)).toEqual(entries([["k", "a"], "0"], [["n"], "2"]));
  });

  it("a group re-run after a conflict reads the store again: what another writer changed meanwhile decides the re-run", async () => {
    const { kv, w: a } = await open();
    const other = new PartitionWriter(kv);
    const P: Partition = ["probe", "retry"];
    await a.run(P, SYSTEM, async (tx) => {
      tx.put(["allowed"], b("yes"));
      event(tx);
    });
    let entered!: () => void;
    const waiting = new Promise<void>((r) => (entered = r));
    let proceed!: () => void;
    const gate = new Promise<void>((r) => (proceed = r));
    const runs: string[] = [];
    /** A command writing `key` where the partition allows it (it reads the flag the other writer changes). */
    const guarded = (key: string) => async (tx: Tx) => {
      const allowed = str(await tx.get(["allowed"]));
      runs.push(`${key} read ${allowed}`);
      if (allowed !== "yes") throw new Error(`${key} refused`);
      tx.put([key], b("1"));
      event(tx);
    };
    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    const blocker = a.run(P, SYSTEM, () => hold);
    const results = Promise.all([
      outcome(a.run(P, SYSTEM, guarded("x1"))),
      outcome(
        a.run(P, SYSTEM, async () => {
          entered();
          await gate;
        }),
      ),
      outcome(a.run(P, SYSTEM, guarded("x2"))),
    ]);
    release();
    await blocker;
    await waiting; // x1 read the flag and wrote; the group waits
    await other.run(P, SYSTEM, async (tx) => {
      tx.put(["allowed"], b("no"));
      event(tx);
    });
    proceed();
    // A's commit conflicted with the other writer's: the group re-ran against the flag it set
    expect(await results).toEqual(["x1 refused", "ok", "x2 refused"]);
    expect(runs).toEqual(["x1 read yes", "x2 read yes", "x1 read no", "x2 read no"]);
    expect(await kv.get(P, ["x1"])).toBeUndefined();
    expect(await kv.get(P, ["x2"])).toBeUndefined();
    expect((await a.readHead(P)).seq).toBe(2);
  });

  it("a key too long only with its partition's encoding fails its command alone, not the group's commit", async () => {
    const { kv, w } = await open();
    const P: Partition = ["probe", "p".repeat(1000)];
    // the key alone fits the limit by far; with the partition's ~1,010 bytes it does not
    const long: Key = ["k", "y".repeat(MAX_KEY_BYTES - 1000)];
    expect(encode(long).length).toBeLessThan(MAX_KEY_BYTES - 900);
    const results = await oneGroup(w, P, [
      async (tx) => tx.put(["k", "a"], b("1")),
      async (tx) => tx.put(long, b("2")),
      async (tx) => {
        tx.put(["n"], b("3"));
        event(tx);
      },
    ]);
    expect(results[0]).toBe("ok");
    expect(results[1]).toMatch(/key too long/);
    expect(results[2]).toBe("ok");
    expect(await state(kv, P)).toEqual(entries([["k", "a"], "1"], [["n"], "3"]));
  });
});
