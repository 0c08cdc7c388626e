/**
 * The storage contract's conformance suite: the same cases on every backend (see backends.ts).
 */
import { afterEach, beforeEach, expect, it } from "vitest";
import { ConflictError, ValidationError } from "../../src/errors.js";
import {
  allPartitions,
  encodePartition,
  getNow,
  KeyedCheck,
  KeyedDelete,
  KeyedPut,
  MAX_KEY_BYTES,
  scanAll,
  scanEach,
  type Entry,
  type Key,
  type KvStore,
  type Op,
  type Partition,
  type ScanOptions,
} from "../../src/kv/contract.js";
import { compareTuples, encode } from "../../src/kv/tuple.js";
import { forEachBackend, type BackendHandle } from "./backends.js";

const b = (s: string) => Buffer.from(s);
const put = (key: Key, value: string | Uint8Array): Op => ({
  type: "put",
  key,
  value: typeof value === "string" ? b(value) : value,
});
const keysOf = (entries: Entry[]) => entries.map((e) => e.key);
const P: Partition = ["project", "p1"];

/** Reads a whole range page by page, checking that pages are non-empty and cursors behave. */
async function pages(kv: KvStore, partition: Partition, options: Omit<ScanOptions, "after">): Promise<Key[]> {
  const out: Key[] = [];
  let after: string | null = null;
  let n = 0;
  do {
    const page = await kv.scan(partition, { ...options, after });
    expect(page.entries.length).toBeLessThanOrEqual(options.limit ?? 1000);
    if (page.cursor !== null) expect(page.entries.length).toBe(options.limit ?? 1000);
    out.push(...keysOf(page.entries));
    after = page.cursor;
    if (++n > 100_000) throw new Error("runaway pagination");
  } while (after !== null);
  return out;
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error("expected a rejection");
}

/** Ids that must never collide or break ordering. */
const AWKWARD = ["a", "ab", "a\u0000", "a\u0000b", "\u0000", "\u00ff", "\u00ffx", "\u00fe", "a:b", "a/b", "p_workflows", "p", "_workflows", "😀", "\uffff", "\u{10ffff}", ""];

forEachBackend((backend) => {
  let h: BackendHandle;
  let kv: KvStore;
  beforeEach(async () => {
    h = await backend.create();
    kv = h.kv;
  });
  afterEach(async () => {
    await h.destroy();
  });

  it("puts, gets and orders keys of mixed types as tuples", async () => {
    const keys: Key[] = [["b"], ["a", 2], ["a", 10], ["a", -1], ["a"], [null], [true], [false], [5], [-5], ["a", ["x"]], ["a", "z"], [Uint8Array.from([0, 0xff, 1])]];
    await kv.commit(
      P,
      keys.map((k, i) => put(k, `v${i}`)),
    );
    const { entries, cursor } = await kv.scan(P);
    expect(cursor).toBeNull();
    expect(keysOf(entries)).toEqual([...keys].sort(compareTuples));
    const got = await kv.get(P, ["a", 10]);
    expect(got?.value.toString()).toBe("v2");
    expect(await kv.get(P, ["a", 11])).toBeUndefined();
    expect(await kv.get(["project", "other"], ["a", 10])).toBeUndefined();
  });

  it("paginates thousands of keys by cursor, forward and reverse, by prefix and by start/end", async () => {
    const ops: Op[] = [];
    for (let i = 0; i < 3000; i++) ops.push(put(["item", i], `${i}`));
    ops.push(put(["itek"], "before"), put(["iten"], "after"), put(["item"], "self"));
    await kv.commit(P, ops);
    const ints = (keys: Key[]) => keys.map((k) => k[1]);
    const all = Array.from({ length: 3000 }, (_, i) => i);

    const fwd = await pages(kv, P, { prefix: ["item"], limit: 128 });
    expect(fwd[0]).toEqual(["item"]);
    expect(ints(fwd.slice(1))).toEqual(all);

    const rev = await pages(kv, P, { prefix: ["item"], limit: 97, reverse: true });
    expect(rev[rev.length - 1]).toEqual(["item"]);
    expect(ints(rev.slice(0, -1))).toEqual([...all].reverse());

    const mid = await pages(kv, P, { start: ["item", 1000], end: ["item", 2500], limit: 100 });
    expect(ints(mid)).toEqual(all.slice(1000, 2500));
    const midRev = await pages(kv, P, { start: ["item", 1000], end: ["item", 2500], limit: 333, reverse: true });
    expect(ints(midRev)).toEqual(all.slice(1000, 2500).reverse());

    // an exact page boundary ends with a null cursor, not an empty extra page
    const exact = await kv.scan(P, { start: ["item", 0], end: ["item", 10], limit: 10 });
    expect(exact.entries).toHaveLength(10);
    expect(exact.cursor).toBeNull();

    const whole = await pages(kv, P, { limit: 1000 });
    expect(whole).toHaveLength(3003);
    expect(whole[0]).toEqual(["itek"]);
    expect(whole[whole.length - 1]).toEqual(["iten"]);
    let n = 0;
    for await (const _ of scanAll(kv, P, { limit: 7, reverse: true })) n++;
    expect(n).toBe(3003);
  });

  it("pages one entry at a time through a partition holding the empty key, forward and reverse", async () => {
    // The empty key sorts first; its cursor must still be a cursor (a falsy one once restarted the scan).
    const keys: Key[] = [[], [null], ["a\u0000"], [218, "b"]];
    await kv.commit(
      P,
      keys.map((k, i) => put(k, `${i}`)),
    );
    for (const reverse of [false, true]) {
      const seen = await pages(kv, P, { prefix: [], limit: 1, reverse });
      expect(seen).toHaveLength(keys.length);
      expect(seen[reverse ? seen.length - 1 : 0]).toEqual([]);
    }
    const first = await kv.scan(P, { limit: 1 });
    expect(first.cursor).not.toBe("");
    expect(keysOf((await kv.scan(P, { limit: 10, after: first.cursor })).entries)).toHaveLength(keys.length - 1);
  });

  it("reverse scans honour start (inclusive) and end (exclusive)", async () => {
    await kv.commit(
      P,
      ["a", "b", "c", "d", "e"].map((k) => put([k], k)),
    );
    const rev = await kv.scan(P, { start: ["b"], end: ["d"], reverse: true });
    expect(keysOf(rev.entries)).toEqual([["c"], ["b"]]);
    const fwd = await kv.scan(P, { start: ["b"], end: ["d"] });
    expect(keysOf(fwd.entries)).toEqual([["b"], ["c"]]);
    const top = await kv.scan(P, { reverse: true, limit: 2 });
    expect(keysOf(top.entries)).toEqual([["e"], ["d"]]);
    const next = await kv.scan(P, { reverse: true, limit: 2, after: top.cursor });
    expect(keysOf(next.entries)).toEqual([["c"], ["b"]]);
    expect((await kv.scan(P, { start: ["d"], end: ["b"] })).entries).toEqual([]);
  });

  it("a batch with a failing check changes nothing", async () => {
    const { version } = await kv.commit(P, [put(["x"], "1"), put(["y"], "1")]);
    const before = await kv.scan(P);
    const err = await rejection(
      kv.commit(P, [put(["x"], "2"), { type: "delete", key: ["y"] }, { type: "deletePrefix", prefix: [] }, put(["z"], "2"), { type: "check", key: ["x"], version: version + 1 }]),
    );
    expect(err).toBeInstanceOf(ConflictError);
    expect((err as ConflictError).status).toBe(409);
    expect(await kv.scan(P)).toEqual(before);
    const absent = await rejection(kv.commit(P, [put(["q"], "1"), { type: "check", key: ["y"], version: null }]));
    expect(absent).toBeInstanceOf(ConflictError);
    expect(await kv.get(P, ["q"])).toBeUndefined();
    // the failed commits did not consume a version
    expect((await kv.commit(P, [put(["w"], "1")])).version).toBe(version + 1);
    // checks that hold let the batch through
    const ok = await kv.commit(P, [{ type: "check", key: ["x"], version }, { type: "check", key: ["nope"], version: null }, put(["x"], "3")]);
    expect((await kv.get(P, ["x"]))?.version).toBe(ok.version);
  });

  it("a batch with a bad key, value or op changes nothing and names the field", async () => {
    await kv.commit(P, [put(["x"], "1")]);
    const before = await kv.scan(P);
    const cases: [Op[], string][] = [
      [[put(["y"], "1"), put(["bad", 1.5], "1")], "key"],
      [[put(["y"], "1"), put(["bad\ud800"], "1")], "key"],
      [[put(["y"], "1"), put(["x".repeat(MAX_KEY_BYTES)], "1")], "key"],
      [[put(["y"], "1"), { type: "delete", key: [undefined as unknown as null] }], "key"],
      [[put(["y"], "1"), { type: "put", key: ["z"], value: "text" as unknown as Uint8Array }], "value"],
      [[put(["y"], "1"), { type: "check", key: ["x"], version: -1 }], "version"],
      [[put(["y"], "1"), { type: "frobnicate" } as unknown as Op], "ops"],
    ];
    for (const [ops, field] of cases) {
      const err = await rejection(kv.commit(P, ops));
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field).toBe(field);
    }
    expect(await kv.scan(P)).toEqual(before);
    for (const bad of [[], [1], [""], "project" as unknown as Partition, [["x"]]] as Partition[]) {
      const err = await rejection(kv.commit(bad, [put(["y"], "1")]));
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field).toBe("partition");
    }
  });

  it("enforces MAX_KEY_BYTES (partition + key) on every path with a ValidationError on field key", async () => {
    const big = ["k", "x".repeat(MAX_KEY_BYTES)];
    const fits = ["k", "x".repeat(MAX_KEY_BYTES - 100)];
    for (const p of [kv.get(P, big), kv.getMany(P, [big]), kv.scan(P, { prefix: big }), kv.scan(P, { start: big }), kv.commit(P, [{ type: "check", key: big, version: null }])]) {
      const err = await rejection(p);
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field).toBe("key");
    }
    await kv.commit(P, [put(fits, "ok")]);
    expect((await kv.get(P, fits))?.value.toString()).toBe("ok");
    const longPartition: Partition = ["project", "p".repeat(MAX_KEY_BYTES - 60)];
    const err = await rejection(kv.commit(longPartition, [put(fits, "no")]));
    expect((err as ValidationError).field).toBe("key");
  });

  it("keyed ops (KeyedPut, KeyedDelete, KeyedCheck: ops carrying their key's encoding) write, check and delete their key", async () => {
    const pl = encodePartition(P).length;
    const k1: Key = ["carried", 1];
    const k2: Key = ["carried", 2];
    const { version } = await kv.commit(P, [new KeyedCheck(pl, k1, null), new KeyedPut(pl, k1, b("1")), new KeyedPut(pl, k2, b("2"))]);
    expect((await kv.get(P, k1))?.value).toEqual(b("1"));
    const conflict = await rejection(kv.commit(P, [new KeyedCheck(pl, k1, version + 1)]));
    expect(conflict).toBeInstanceOf(ConflictError);
    await kv.commit(P, [new KeyedCheck(pl, k1, version), new KeyedDelete(pl, k2)]);
    expect(keysOf((await kv.scan(P)).entries)).toEqual([k1]);
    // The bytes are held to the limit with the partition they are committed to, not the one they were made for.
    const long: Key = ["x".repeat(MAX_KEY_BYTES - 10)];
    const before = await kv.scan(P);
    const err = await rejection(kv.commit(P, [put(["y"], "1"), new KeyedPut(0, long, b("x"))]));
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).field).toBe("key");
    expect(await kv.scan(P)).toEqual(before);
  });

  it("key bytes an op was not made with do not change which key is written, checked or deleted", async () => {
    const pl = encodePartition(P).length;
    // a JavaScript caller's own bytes on a plain op, as Op had them
    const forged = (op: Op, key: Key): Op => ({ ...op, keyBytes: encode(key) }) as unknown as Op;
    // a keyed op whose key was replaced after it was made
    const moved = <T extends Op>(op: T, key: Key): T => Object.assign(op, { key });
    const { version } = await kv.commit(P, [
      forged(put(["a"], "1"), ["other"]),
      moved(new KeyedPut(pl, ["other"], b("2")), ["b"]),
      { ...new KeyedPut(pl, ["c"], b("3")) }, // a copy is a plain op
    ]);
    expect(keysOf((await kv.scan(P)).entries)).toEqual([["a"], ["b"], ["c"]]);
    await kv.commit(P, [forged({ type: "check", key: ["absent"], version: null }, ["a"])]);
    const present = await rejection(kv.commit(P, [forged({ type: "check", key: ["a"], version: null }, ["absent"])]));
    expect(present).toBeInstanceOf(ConflictError);
    await kv.commit(P, [moved(new KeyedCheck(pl, ["a"], null), ["absent"]), forged({ type: "check", key: ["b"], version }, ["absent"])]);
    await kv.commit(P, [forged({ type: "delete", key: ["a"] }, ["b"]), moved(new KeyedDelete(pl, ["b"]), ["c"])]);
    expect(keysOf((await kv.scan(P)).entries)).toEqual([["b"]]);
  });

  it("prefix delete removes exactly the prefix; siblings sharing a string prefix survive", async () => {
    const keys: Key[] = [["a"], ["a", 1], ["a", "x", 2], ["ab"], ["ab", 1], ["a\u0000"], ["a\u0000", 1], ["a", null], ["b"], ["`"]];
    await kv.commit(
      P,
      keys.map((k) => put(k, "v")),
    );
    await kv.commit(P, [{ type: "deletePrefix", prefix: ["a"] }]);
    expect(keysOf((await kv.scan(P)).entries)).toEqual([["`"], ["a\u0000"], ["a\u0000", 1], ["ab"], ["ab", 1], ["b"]]);
    await kv.commit(P, [{ type: "deletePrefix", prefix: ["a\u0000"] }]);
    expect(keysOf((await kv.scan(P)).entries)).toEqual([["`"], ["ab"], ["ab", 1], ["b"]]);
  });

  it("deleteRange removes [start, end)", async () => {
    await kv.commit(
      P,
      Array.from({ length: 10 }, (_, i) => put(["n", i], `${i}`)),
    );
    await kv.commit(P, [{ type: "deleteRange", start: ["n", 3], end: ["n", 7] }]);
    expect(keysOf((await kv.scan(P)).entries).map((k) => k[1])).toEqual([0, 1, 2, 7, 8, 9]);
    await kv.commit(P, [{ type: "deleteRange", start: ["n", 9], end: ["n", 1] }]); // empty range: no-op
    expect((await kv.scan(P)).entries).toHaveLength(6);
  });

  it("applies ops in order within a batch", async () => {
    await kv.commit(P, [put(["k"], "1"), { type: "delete", key: ["k"] }, put(["k"], "2"), put(["j", 1], "x"), { type: "deletePrefix", prefix: ["j"] }, put(["j", 2], "y")]);
    expect((await kv.get(P, ["k"]))?.value.toString()).toBe("2");
    expect(keysOf((await kv.scan(P, { prefix: ["j"] })).entries)).toEqual([["j", 2]]);
    await kv.commit(P, [put(["m"], "1"), put(["m"], "2")]);
    expect((await kv.get(P, ["m"]))?.value.toString()).toBe("2");
  });

  it("versions grow with every commit of a partition, and all puts of a commit share one", async () => {
    const c1 = await kv.commit(P, [put(["a"], "1"), put(["b"], "1")]);
    const c2 = await kv.commit(P, [put(["a"], "2")]);
    const c3 = await kv.commit(P, [{ type: "delete", key: ["zz"] }]);
    expect(c1.version).toBeGreaterThan(0);
    expect(c2.version).toBeGreaterThan(c1.version);
    expect(c3.version).toBeGreaterThan(c2.version);
    expect((await kv.get(P, ["a"]))?.version).toBe(c2.version);
    expect((await kv.get(P, ["b"]))?.version).toBe(c1.version);
    const other = await kv.commit(["project", "p2"], [put(["a"], "x")]);
    expect(other.version).toBe(1);
  });

  it("getMany returns entries in the order asked, undefined for absent keys", async () => {
    await kv.commit(P, [put(["a"], "A"), put(["c"], "C")]);
    const got = await kv.getMany(P, [["c"], ["b"], ["a"], ["c"]]);
    expect(got.map((e) => e?.value.toString())).toEqual(["C", undefined, "A", "C"]);
    expect(got[0]?.key).toEqual(["c"]);
    expect(await kv.getMany(P, [])).toEqual([]);
  });

  it("getSync, where the backend has it, answers as get (getNow falls back to get elsewhere)", async () => {
    const { version } = await kv.commit(P, [put(["a"], "A"), put(["b", 1], "B")]);
    const keys: Key[] = [["a"], ["b", 1], ["b"], ["zz"]];
    for (const key of keys) {
      const want = await kv.get(P, key);
      const now = await getNow(kv, P, key);
      expect(now?.value.toString()).toBe(want?.value.toString());
      expect(now?.version).toBe(want?.version);
      if (!kv.getSync) continue;
      const got = kv.getSync(P, key);
      expect(got === undefined).toBe(want === undefined);
      if (got) {
        expect(got.key).toEqual(key);
        expect(got.value.equals(want!.value)).toBe(true);
        expect(got.version).toBe(version);
      }
    }
    if (!kv.getSync) return;
    expect(kv.getSync(["project", "other"], ["a"])).toBeUndefined();
    // a write is seen by the next synchronous read
    const next = await kv.commit(P, [put(["a"], "A2"), { type: "delete", key: ["b", 1] }]);
    expect(kv.getSync(P, ["a"])?.value.toString()).toBe("A2");
    expect(kv.getSync(P, ["a"])?.version).toBe(next.version);
    expect(kv.getSync(P, ["b", 1])).toBeUndefined();
    // the same errors as get, thrown
    const thrown = (f: () => unknown): unknown => {
      try {
        f();
      } catch (e) {
        return e;
      }
      throw new Error("expected a throw");
    };
    expect(thrown(() => kv.getSync!(P, ["k", "x".repeat(MAX_KEY_BYTES)]))).toMatchObject({ field: "key" });
    expect(thrown(() => kv.getSync!([] as unknown as Partition, ["a"]))).toMatchObject({ field: "partition" });
    expect(thrown(() => kv.getSync!(P, "a" as unknown as Key))).toBeInstanceOf(ValidationError);
    await kv.close();
    expect(thrown(() => kv.getSync!(P, ["a"]))).toMatchObject({ status: 503 });
  });

  it("scanViews, where the backend has it, visits what scan's pages hold; scanEach reads a whole range on every backend", async () => {
    const sizes = [0, 1, 700, 4097, 70_000, 300_000];
    await kv.commit(P, [...Array.from({ length: 25 }, (_, i) => put(["v", i], `value ${i}`)), ...sizes.map((n) => put(["w", n], Buffer.alloc(n, n & 0xff))), put(["z"], "after")]);
    const copies = (visited: [Buffer, Buffer][]) => visited.map(([k, v]) => [k.toString("hex"), v.toString("hex")]);
    for (const options of [{ prefix: ["v"] }, { prefix: ["w"] }, { start: ["v", 3], end: ["w", 1] }, { prefix: ["v"], reverse: true }, {}] as ScanOptions[]) {
      for (const limit of [1, 7, 1000]) {
        const want: [Buffer, Buffer][] = [];
        for await (const e of scanAll(kv, P, { ...options, limit })) want.push([e.keyBytes, e.value]);
        const each: [Buffer, Buffer][] = [];
        // the visit copies what it keeps: the views may be the backend's read buffers
        await scanEach(kv, P, { ...options, limit }, (k, v) => void each.push([Buffer.from(k), Buffer.from(v)]));
        expect(copies(each)).toEqual(copies(want));
        if (!kv.scanViews) continue;
        // page by page: the cursors scan gives
        let after: string | null = null;
        do {
          const page = await kv.scan(P, { ...options, limit, after });
          const visited: [Buffer, Buffer][] = [];
          const cursor = kv.scanViews(P, { ...options, limit, after }, (k, v) => void visited.push([Buffer.from(k), Buffer.from(v)]));
          expect(copies(visited)).toEqual(copies(page.entries.map((e) => [e.keyBytes, e.value])));
          expect(cursor).toBe(page.cursor);
          after = cursor;
        } while (after !== null);
      }
    }
    // a visit that returns false ends scanEach
    let n = 0;
    await scanEach(kv, P, { prefix: ["v"], limit: 4 }, () => ++n < 6);
    expect(n).toBe(6);
    // a read inside a visit gets its own copy, whatever the scan hands out, and leaves the scan whole: a
    // read of a long key (it overwrites a backend's key buffer) does not move the next page's cursor
    const long = ["z", "k".repeat(300)];
    await kv.commit(P, [put(long, "after")]);
    const inside: Buffer[] = [];
    const keys: string[] = [];
    await scanEach(kv, P, { prefix: ["v"], limit: 10 }, (k) => {
      keys.push(k.toString("hex"));
      inside.push(kv.getSync ? kv.getSync(P, long)!.value : Buffer.from("after"));
    });
    expect(inside.every((v) => v.toString() === "after")).toBe(true);
    const all: string[] = [];
    for await (const e of scanAll(kv, P, { prefix: ["v"] })) all.push(e.keyBytes.toString("hex"));
    expect(keys).toEqual(all);
    expect(keys).toHaveLength(25);
    if (!kv.scanViews) return;
    expect(kv.scanViews(["project", "none"], { prefix: ["v"] }, () => {})).toBeNull();
    expect(() => kv.scanViews!(P, { limit: 0 }, () => {})).toThrow(ValidationError);
    await kv.close();
    expect(() => kv.scanViews!(P, {}, () => {})).toThrow(expect.objectContaining({ status: 503 }));
  });

  it("countSync, where the backend has it, counts the entries scan would page through, up to its limit", async () => {
    if (!kv.countSync) return;
    await kv.commit(P, [...Array.from({ length: 30 }, (_, i) => put(["v", i], `value ${i}`)), put(["w"], "w"), put(["u"], "u")]);
    for (const options of [
      { prefix: ["v"] },
      { prefix: ["x"] },
      { start: ["v", 3], end: ["v", 12] },
      { prefix: ["v"], reverse: true },
      { start: ["v", 20] },
      {},
    ] as ScanOptions[]) {
      let all = 0;
      for await (const _ of scanAll(kv, P, options)) all++;
      for (const limit of [1, 2, 9, 10, 29, 30, 31, 32, 1000]) expect(kv.countSync(P, { ...options, limit })).toBe(Math.min(all, limit));
      // after a cursor: what the rest of the range holds
      const first = await kv.scan(P, { ...options, limit: 4 });
      if (first.cursor !== null) expect(kv.countSync(P, { ...options, after: first.cursor, limit: 1000 })).toBe(all - 4);
    }
    expect(kv.countSync(["project", "none"], { prefix: ["v"] })).toBe(0);
    expect(() => kv.countSync!(P, { limit: 0 })).toThrow(ValidationError);
    await kv.close();
    expect(() => kv.countSync!(P, {})).toThrow(expect.objectContaining({ status: 503 }));
  });

  it("partitionVersionSync, where the backend has it, is the partition's commit sequence: changed by each commit to it and by a drop, by no read and no other partition", async () => {
    if (!kv.partitionVersionSync) return;
    const seq = () => kv.partitionVersionSync!(P);
    expect(seq()).toBe(0);
    const first = await kv.commit(P, [put(["a"], "A")]);
    expect(seq()).toBe(first.version);
    await kv.get(P, ["a"]);
    await kv.scan(P);
    await kv.commit(["project", "other"], [put(["a"], "X")]);
    await kv.commit(P.concat("sub") as Partition, [put(["a"], "Y")]);
    expect(seq()).toBe(first.version);
    const second = await kv.commit(P, [{ type: "delete", key: ["a"] }]);
    expect(second.version).toBeGreaterThan(first.version);
    expect(seq()).toBe(second.version);
    await expect(kv.commit(P, [{ type: "check", key: ["a"], version: 1 }, put(["b"], "B")])).rejects.toBeInstanceOf(ConflictError);
    expect(seq()).toBe(second.version); // a refused commit changes nothing
    // a drop changes the answer (the sequence, negated: a drop moves no version, as on every backend)
    await kv.dropPartition(P);
    const dropped = seq();
    expect(dropped).toBe(-second.version);
    const third = await kv.commit(P, [put(["a"], "again")]);
    expect(seq()).toBe(third.version);
    expect(third.version).toBe(second.version + 1);
    // a drop right after a commit, then a commit that only deletes: each answer is new
    await kv.dropPartition(P);
    expect(seq()).toBe(-third.version);
    const fourth = await kv.commit(P, [{ type: "delete", key: ["a"] }]);
    expect(Math.abs(seq())).toBe(fourth.version);
    expect([second.version, -second.version, third.version, -third.version]).not.toContain(seq());
    const fifth = await kv.commit(P, [put(["a"], "back")]);
    expect(kv.partitionVersionSync(["project", "never"])).toBe(0);
    expect(seq()).toBe(fifth.version);
    // a partition array changed in place names the other partition
    const changing: string[] = ["project", "p1"];
    expect(kv.partitionVersionSync(changing)).toBe(fifth.version);
    changing[1] = "never";
    expect(kv.partitionVersionSync(changing)).toBe(0);
    expect(() => kv.partitionVersionSync!([] as unknown as Partition)).toThrow(expect.objectContaining({ field: "partition" }));
  });

  it("stores 1 MiB values byte for byte", async () => {
    const big = Buffer.alloc(1024 * 1024);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7919) & 0xff;
    await kv.commit(P, [put(["big"], big), put(["big2"], big.subarray(1))]);
    expect((await kv.get(P, ["big"]))!.value.equals(big)).toBe(true);
    const [e] = (await kv.scan(P, { prefix: ["big2"] })).entries;
    expect(e!.value.equals(big.subarray(1))).toBe(true);
  });

  it("reads values of every size back byte for byte, each its own copy, through get, getSync, getMany and scan", async () => {
    // the sizes around the copies a backend makes of what it reads (LMDB: Node's pool below 4 KiB, a
    // buffer of its own above, lmdb-js's shared buffer and memory map beyond its first 64 KiB)
    const sizes = [0, 1, 63, 64, 65, 700, 4095, 4096, 4097, 8193, 65_536, 70_000, 300_000];
    const valueOf = (n: number, salt: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + salt) & 0xff));
    await kv.commit(
      P,
      sizes.map((n) => put(["sized", n], valueOf(n, n))),
    );
    const keys = sizes.map((n) => ["sized", n]);
    const many = await kv.getMany(P, keys);
    const sync = kv.getSync ? keys.map((k) => kv.getSync!(P, k)) : [];
    const scanned = (await kv.scan(P, { prefix: ["sized"] })).entries;
    const one = await Promise.all(keys.map((k) => kv.get(P, k)));
    for (const read of [many, sync, scanned, one]) {
      if (read.length === 0) continue;
      expect(read.map((e) => e!.value.length)).toEqual(sizes);
      sizes.forEach((n, i) => expect(read[i]!.value.equals(valueOf(n, n))).toBe(true));
    }
    // no read hands out a buffer a later read overwrites
    expect(many.every((e, i) => e!.value.equals(valueOf(sizes[i]!, sizes[i]!)))).toBe(true);
    expect(scanned.map((e) => e.key)).toEqual(keys);
  });

  it("takes 200 concurrent commits across partitions and into one partition", async () => {
    const across = await Promise.all(Array.from({ length: 200 }, (_, i) => kv.commit(["shard", i % 20], [put(["k", i], `${i}`)])));
    expect(across.every((r) => r.version >= 1)).toBe(true);
    const same = await Promise.all(Array.from({ length: 200 }, (_, i) => kv.commit(P, [put(["k", i], `${i}`)])));
    // one partition: every commit got its own version, 1..200
    expect(same.map((r) => r.version).sort((x, y) => x - y)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    expect((await kv.scan(P)).entries).toHaveLength(200);
    let total = 0;
    for await (const part of allPartitions(kv, "shard", 7)) total += (await kv.scan(part)).entries.length;
    expect(total).toBe(200);
  });

  it("of 200 concurrent creates of one key with an absent check, exactly one wins", async () => {
    const results = await Promise.allSettled(Array.from({ length: 200 }, (_, i) => kv.commit(P, [{ type: "check", key: ["only"], version: null }, put(["only"], `${i}`)])));
    const won = results.filter((r) => r.status === "fulfilled");
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(199);
    expect(lost.every((r) => r.reason instanceof ConflictError)).toBe(true);
    const winner = (won[0] as PromiseFulfilledResult<{ version: number }>).value;
    expect((await kv.get(P, ["only"]))?.version).toBe(winner.version);
  });

  it("keeps everything after close and reopen", async () => {
    await kv.commit(P, [put(["a"], "1"), put(["b"], "2")]);
    const { version } = await kv.commit(["tenant", "t"], [put(["x"], "3")]);
    await kv.close();
    const again = await h.reopen();
    expect(keysOf((await again.scan(P)).entries)).toEqual([["a"], ["b"]]);
    expect((await again.get(["tenant", "t"], ["x"]))?.version).toBe(version);
    expect((await again.listPartitions("project")).partitions).toEqual([P]);
    expect((await again.commit(["tenant", "t"], [put(["y"], "4")])).version).toBe(version + 1);
    await again.close();
  });

  it("a closed store refuses calls", async () => {
    await kv.close();
    await expect(kv.get(P, ["a"])).rejects.toMatchObject({ status: 503 });
    await expect(kv.commit(P, [put(["a"], "1")])).rejects.toMatchObject({ status: 503 });
  });

  it("lists partitions by kind, paginated, with awkward ids, and only once they hold a put", async () => {
    const ids = AWKWARD;
    for (const id of ids) await kv.commit(["project", id], [put(["k"], id)]);
    await kv.commit(["project", "deep", 1, [null]], [put(["k"], "x")]);
    await kv.commit(["projects", "x"], [put(["k"], "x")]); // another kind sharing a string prefix
    await kv.commit(["project\u0000", "x"], [put(["k"], "x")]);
    await kv.commit(["project"], [put(["k"], "root")]); // a partition that is just its kind
    await kv.commit(["project", "checks-only"], [{ type: "check", key: ["k"], version: null }]);
    const expected = [["project"], ...ids.map((id) => ["project", id]), ["project", "deep", 1, [null]]].sort(compareTuples);
    const listed: Partition[] = [];
    let after: string | null = null;
    do {
      const page: Awaited<ReturnType<KvStore["listPartitions"]>> = await kv.listPartitions("project", { limit: 4, after });
      expect(page.partitions.length).toBeLessThanOrEqual(4);
      listed.push(...page.partitions);
      after = page.cursor;
    } while (after);
    expect(listed).toEqual(expected);
    expect((await kv.listPartitions("projects")).partitions).toEqual([["projects", "x"]]);
    expect((await kv.listPartitions("project\u0000")).partitions).toEqual([["project\u0000", "x"]]);
    expect((await kv.listPartitions("nothing")).partitions).toEqual([]);
    await expect(kv.listPartitions("")).rejects.toBeInstanceOf(ValidationError);
    await expect(kv.listPartitions("project", { limit: 0 })).rejects.toBeInstanceOf(ValidationError);
  });

  it("dropPartition removes exactly one partition and its index entry", async () => {
    for (const id of ["a", "ab", "a\u0000"]) await kv.commit(["project", id], [put(["k"], id), put(["k", 1], id)]);
    await kv.commit(["project", "a", "sub"], [put(["k"], "sub")]);
    await kv.dropPartition(["project", "a"]);
    expect((await kv.scan(["project", "a"])).entries).toEqual([]);
    expect((await kv.listPartitions("project")).partitions).toEqual([
      ["project", "a", "sub"],
      ["project", "a\u0000"],
      ["project", "ab"],
    ]);
    for (const id of ["ab", "a\u0000"]) expect((await kv.scan(["project", id])).entries).toHaveLength(2);
    expect((await kv.scan(["project", "a", "sub"])).entries).toHaveLength(1);
    await kv.dropPartition(["project", "never"]); // dropping an unknown partition is a no-op
    // the partition can be written again and reappears in the index; its versions never repeat
    const { version } = await kv.commit(["project", "a"], [put(["k"], "again")]);
    expect(version).toBeGreaterThan(1);
    expect((await kv.get(["project", "a"], ["k"]))?.value.toString()).toBe("again");
    expect((await kv.listPartitions("project")).partitions).toHaveLength(4);
  });

  it("an invalid cursor is a ValidationError on field cursor", async () => {
    await kv.commit(P, [put(["a"], "1")]);
    for (const after of ["not a cursor!", "%%%", "a".repeat(20_000)]) {
      const err = await rejection(kv.scan(P, { after }));
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field).toBe("cursor");
      const err2 = await rejection(kv.listPartitions("project", { after }));
      expect((err2 as ValidationError).field).toBe("cursor");
    }
    await expect(kv.scan(P, { limit: 0 })).rejects.toBeInstanceOf(ValidationError);
    await expect(kv.scan(P, { prefix: ["a"], start: ["a"] })).rejects.toBeInstanceOf(ValidationError);
  });

  it("ids holding NUL, 0xff-ish chars, separators, _workflows and emoji never collide", async () => {
    const ops: Op[] = [];
    for (const a of AWKWARD) {
      ops.push(put([a], `1:${a}`));
      for (const c of ["", "_workflows", "\u0000", ":"]) ops.push(put([a, c], `2:${a}|${c}`));
      ops.push(put([a + "_workflows"], `1:${a}_workflows`));
    }
    const distinct = new Map(ops.map((o) => [JSON.stringify((o as { key: Key }).key), o]));
    await kv.commit(P, [...distinct.values()]);
    const { entries } = await kv.scan(P, { limit: 10_000 });
    expect(entries).toHaveLength(distinct.size);
    for (const e of entries) expect(e.value.toString()).toBe(Buffer.from((distinct.get(JSON.stringify(e.key)) as { value: Uint8Array }).value).toString());
    expect(keysOf(entries)).toEqual(keysOf(entries).slice().sort(compareTuples));
    // the same ids as partitions stay apart too
    for (const a of AWKWARD) await kv.commit(["tenant", a], [put(["id"], a)]);
    for (const a of AWKWARD) {
      const { entries: es } = await kv.scan(["tenant", a]);
      expect(es.map((e) => e.value.toString())).toEqual([a]);
    }
  });

  it("commitAcross (where the backend has it): one atomic commit over partitions, built from reads inside it, all checks before any write", async () => {
    if (!kv.commitAcross) return expect(["memory", "lmdb"]).not.toContain(backend.name);
    const Q: Partition = ["ledger"];
    const F: Partition = ["feed"];
    await kv.commit(F, [put(["head"], "1")]);
    // the build reads inside the transaction: a counter incremented by ten concurrent commits gives 2..11, no repeat
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        kv.commitAcross!((tx) => {
          const n = Number(tx.get(F, ["head"])!.value.toString()) + 1;
          return [
            { partition: P, ops: [put(["item", i], `${n}`)] },
            { partition: F, ops: [put(["head"], `${n}`), put(["entry", n], `${i}`)] },
          ];
        }),
      ),
    );
    for (const r of results) await r.durable;
    expect((await kv.get(F, ["head"]))!.value.toString()).toBe("11");
    const entries = (await kv.scan(F, { prefix: ["entry"] })).entries;
    expect(entries.map((e) => e.key[1])).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    // each partition's puts carry that partition's version, returned in the batches' order
    const [pv, fv] = results[0]!.versions;
    expect((await kv.get(P, ["item", 0]))!.version).toBe(pv);
    expect((await kv.get(F, ["entry", 2]))!.version).toBe(fv);
    // a failing check in any partition applies nothing anywhere
    const before = await kv.get(P, ["item", 0]);
    const err = await rejection(
      kv.commitAcross((tx) => [
        { partition: P, ops: [put(["item", 0], "changed")] },
        { partition: Q, ops: [put(["x"], "x")] },
        { partition: F, ops: [{ type: "check", key: ["head"], version: tx.get(F, ["head"])!.version + 1 }] },
      ]),
    );
    expect(err).toBeInstanceOf(ConflictError);
    expect((await kv.get(P, ["item", 0]))!.value.toString()).toBe(before!.value.toString());
    expect(await kv.get(Q, ["x"])).toBeUndefined();
    expect((await kv.listPartitions("ledger")).partitions).toEqual([]);
    // an invalid op, a partition named twice, or a throw of the build apply nothing either
    expect(
      await rejection(
        kv.commitAcross(() => [
          { partition: Q, ops: [put(["x"], "x")] },
          { partition: P, ops: [put(["k".repeat(3000)], "v")] },
        ]),
      ),
    ).toBeInstanceOf(ValidationError);
    expect(
      await rejection(
        kv.commitAcross(() => [
          { partition: Q, ops: [put(["x"], "x")] },
          { partition: Q, ops: [put(["y"], "y")] },
        ]),
      ),
    ).toBeInstanceOf(ValidationError);
    expect(
      await rejection(
        kv.commitAcross(() => {
          throw new ConflictError("built from a state the caller did not expect");
        }),
      ),
    ).toBeInstanceOf(ConflictError);
    expect(await kv.get(Q, ["x"])).toBeUndefined();
    // a committed one enters the partition index like a commit
    await (await kv.commitAcross(() => [{ partition: Q, ops: [put(["x"], "x")] }])).durable;
    expect((await kv.listPartitions("ledger")).partitions).toEqual([Q]);
  });
});
