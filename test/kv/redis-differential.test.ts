/**
 * Differential test: random sequences of commits, reads, scans, listings and drops run on the memory
 * backend (the executable specification) and on each Redis backend; every answer must be the same.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { KvStore, Op, Partition } from "../../src/kv/contract.js";
import type { Tuple } from "../../src/kv/tuple.js";
import { backends } from "../conformance/backends.js";

const item = fc.oneof(fc.constantFrom("a", "b", "a\u0000", "", "\u{1F600}", "z"), fc.integer({ min: -3, max: 300 }), fc.constant(null));
const key: fc.Arbitrary<Tuple> = fc.array(item, { minLength: 0, maxLength: 3 });
const partition: fc.Arbitrary<Partition> = fc.constantFrom(["k1", "x"], ["k1", "y"], ["k2", "x"], ["k1", 1]);
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ type: fc.constant("put" as const), key, value: fc.uint8Array({ maxLength: 8 }) }) },
  { weight: 2, arbitrary: fc.record({ type: fc.constant("delete" as const), key }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant("deletePrefix" as const), prefix: fc.array(item, { maxLength: 1 }) }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant("deleteRange" as const), start: key, end: key }) },
  { weight: 2, arbitrary: fc.record({ type: fc.constant("check" as const), key, version: fc.option(fc.integer({ min: 1, max: 4 }), { nil: null }) }) },
);
type Step =
  | { kind: "commit"; p: Partition; ops: Op[] }
  | { kind: "scan"; p: Partition; prefix: Tuple | undefined; limit: number; reverse: boolean }
  | { kind: "get"; p: Partition; keys: Tuple[] }
  | { kind: "list"; kindName: string; limit: number }
  | { kind: "drop"; p: Partition };
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant("commit" as const), p: partition, ops: fc.array(op, { maxLength: 6 }) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("scan" as const),
      p: partition,
      prefix: fc.option(fc.array(item, { maxLength: 1 }), { nil: undefined }),
      limit: fc.integer({ min: 1, max: 5 }),
      reverse: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("get" as const), p: partition, keys: fc.array(key, { maxLength: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("list" as const), kindName: fc.constantFrom("k1", "k2"), limit: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("drop" as const), p: partition }) },
);

/** More pages than any generated partition can fill: a cursor that stops advancing fails, never hangs. */
const MAX_PAGES = 500;
const bounded = (pages: unknown[]): void => {
  if (pages.length > MAX_PAGES) throw new Error(`paging did not end after ${MAX_PAGES} pages`);
};

/** Runs a step and describes its whole observable outcome (paging scans and listings to the end). */
async function run(kv: KvStore, s: Step): Promise<unknown> {
  try {
    switch (s.kind) {
      case "commit":
        return await kv.commit(s.p, s.ops);
      case "get":
        return (await kv.getMany(s.p, s.keys)).map((e) => e && [e.key, [...e.value], e.version]);
      case "scan": {
        const pages = [];
        let after: string | null = null;
        do {
          const page = await kv.scan(s.p, { ...(s.prefix ? { prefix: s.prefix } : {}), limit: s.limit, reverse: s.reverse, after });
          pages.push(page.entries.map((e) => [e.key, [...e.value], e.version]));
          bounded(pages);
          after = page.cursor;
        } while (after !== null);
        return pages;
      }
      case "list": {
        const pages = [];
        let after: string | null = null;
        do {
          const page = await kv.listPartitions(s.kindName, { limit: s.limit, after });
          pages.push(page.partitions);
          bounded(pages);
          after = page.cursor;
        } while (after !== null);
        return pages;
      }
      case "drop":
        return await kv.dropPartition(s.p);
    }
  } catch (err) {
    return { error: (err as Error).name };
  }
}

const memory = backends.find((b) => b.name === "memory")!;
for (const backend of backends.filter((b) => b.name.startsWith("redis"))) {
  describe(`${backend.name} against memory`, () => {
    it("answers every random sequence of operations as memory does", async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 25 }), async (steps) => {
          const [m, r] = await Promise.all([memory.create(), backend.create()]);
          try {
            for (const s of steps) expect(await run(r.kv, s)).toEqual(await run(m.kv, s));
          } finally {
            await Promise.all([m.destroy(), r.destroy()]);
          }
        }),
        { numRuns: 40 },
      );
    });
  });
}
