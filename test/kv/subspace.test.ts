/**
 * Property tests of the Subspace (src/kv/subspace.ts): pack/unpack round trip, range containment (a key's
 * encoding lies in a subspace's byte range exactly when the subspace contains it), prefix ordering (every
 * key of a subspace sorts between its range's ends, after the prefix itself), and nesting.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PartitionKind, Subspace } from "../../src/kv/subspace.js";
import { compareTuples, encode, type TupleItem } from "../../src/kv/tuple.js";

const RUNS = 2000;

const str = fc.oneof(fc.constantFrom("", "\u0000", "\u00ff", "a", "ab", "😀"), fc.string({ unit: "binary", maxLength: 6 }));
const { tuple } = fc.letrec<{ item: TupleItem; tuple: TupleItem[] }>((tie) => ({
  item: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    str,
    fc.oneof(fc.integer({ min: -300, max: 300 }), fc.maxSafeInteger()),
    fc.constant(null),
    fc.boolean(),
    fc.uint8Array({ maxLength: 4 }),
    tie("tuple"),
  ),
  tuple: fc.array(tie("item"), { maxLength: 4 }),
}));

/** A subspace and a key that often (not always) shares its prefix. */
const related = fc.tuple(tuple, tuple, tuple, fc.boolean()).map(([prefix, rest, other, inside]) => ({
  space: new Subspace(prefix),
  key: inside ? [...prefix, ...rest] : [...prefix.slice(0, Math.max(0, prefix.length - 1)), ...other],
}));

describe("Subspace properties", () => {
  it("unpack(pack(t)) equals t, and pack is the prefix then t", () => {
    fc.assert(
      fc.property(tuple, tuple, (prefix, t) => {
        const s = new Subspace(prefix);
        expect(s.pack(t)).toEqual([...prefix, ...t]);
        expect(s.unpack(s.pack(t))).toEqual(t);
        expect(s.contains(s.pack(t))).toBe(true);
        expect(encode(s.pack(t))).toEqual(encode([...prefix, ...t])); // the same bytes as a hand-spelled tuple
      }),
      { numRuns: RUNS },
    );
  });

  it("a key's encoding is in range() exactly when the subspace contains it; unpack refuses the others", () => {
    fc.assert(
      fc.property(related, ({ space, key }) => {
        const { start, end } = space.range();
        const bytes = encode(key);
        const inRange = Buffer.compare(start, bytes) <= 0 && Buffer.compare(bytes, end) < 0;
        expect(inRange).toBe(space.contains(key));
        if (!space.contains(key)) expect(() => space.unpack(key)).toThrow(RangeError);
      }),
      { numRuns: RUNS },
    );
  });

  it("every key of a subspace sorts after its prefix and before every key past its range", () => {
    fc.assert(
      fc.property(tuple, tuple, tuple, (prefix, a, b) => {
        const s = new Subspace(prefix);
        expect(compareTuples(s.prefix, s.pack(a))).toBeLessThanOrEqual(0);
        // Keys of one subspace keep their items' order.
        expect(Math.sign(Buffer.compare(encode(s.pack(a)), encode(s.pack(b))))).toBe(Math.sign(compareTuples(a, b)));
      }),
      { numRuns: RUNS },
    );
  });

  it("sub(...items) is the subspace of pack(items), and its range nests in its parent's", () => {
    fc.assert(
      fc.property(tuple, tuple, tuple, (prefix, items, t) => {
        const s = new Subspace(prefix);
        const inner = s.sub(...items);
        expect(inner.prefix).toEqual(s.pack(items));
        expect(inner.pack(t)).toEqual(s.pack([...items, ...t]));
        expect(s.unpack(inner.pack(t))).toEqual([...items, ...t]);
        const outer = s.range();
        const nested = inner.range(t);
        expect(Buffer.compare(outer.start, nested.start)).toBeLessThanOrEqual(0);
        expect(Buffer.compare(nested.end, outer.end)).toBeLessThanOrEqual(0);
      }),
      { numRuns: RUNS },
    );
  });

  it("a partition kind names its partitions and knows them", () => {
    const project = new PartitionKind("project");
    expect(project.partition("p1")).toEqual(["project", "p1"]);
    expect(project.holds(["project", "p1"])).toBe(true);
    expect(project.holds(["subproject", "p1"])).toBe(false);
    expect(project.unpack(["project", "p1"])).toEqual(["p1"]);
  });
});
