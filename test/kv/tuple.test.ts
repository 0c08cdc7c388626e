/**
 * Property tests of the tuple key codec (src/kv/tuple.ts).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ValidationError } from "../../src/errors.js";
import { compareTuples, decode, encode, encodeNested, encodeNestedPrefix, isTuplePrefix, prefixRange, TupleError, type Tuple, type TupleItem } from "../../src/kv/tuple.js";

const RUNS = 3000;

/** Pieces that stress the escaping and the ordering: NUL, 0xFF-range chars, separators, astral chars. */
const awkward = fc.constantFrom("\u0000", "\u0001", "\u00fe", "\u00ff", "\u07ff", "\uffff", "\ud7ff", "\ue000", ":", "/", "_", "_workflows", "a", "ab", "😀", "\u{10ffff}");
const str = fc.oneof(
  fc.array(fc.oneof(awkward, fc.string({ unit: "binary", maxLength: 2 })), { maxLength: 5 }).map((a) => a.join("")),
  fc.string({ unit: "binary", maxLength: 8 }),
);
const bytes = fc.oneof(
  fc.uint8Array({ maxLength: 6 }),
  fc.array(fc.constantFrom(0, 1, 0xfe, 0xff), { maxLength: 5 }).map((a) => Uint8Array.from(a)),
);
const int = fc.oneof(
  fc.integer({ min: -300, max: 300 }),
  fc.maxSafeInteger(),
  fc.constantFrom(0, 255, 256, -255, -256, 65535, 65536, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER),
);

const { tuple } = fc.letrec<{ item: TupleItem; tuple: TupleItem[] }>((tie) => ({
  item: fc.oneof({ depthSize: "small", withCrossShrink: true }, str, int, fc.constant(null), fc.boolean(), bytes, tie("tuple")),
  tuple: fc.array(tie("item"), { maxLength: 4 }),
}));

/** Two tuples that often share a prefix, so the interesting comparisons happen. */
const related = fc.tuple(tuple, tuple, tuple).map(
  ([common, a, b]) =>
    [
      [...common, ...a],
      [...common, ...b],
    ] as const,
);

const sign = (n: number) => (n < 0 ? -1 : n > 0 ? 1 : 0);

describe("tuple codec properties", () => {
  it("decode(encode(t)) equals t", () => {
    fc.assert(
      fc.property(tuple, (t) => {
        expect(decode(encode(t))).toEqual(t);
        expect(decode(encodeNested(t))).toEqual([t]);
      }),
      { numRuns: RUNS },
    );
  });

  it("byte order of encodings equals compareTuples order", () => {
    fc.assert(
      fc.property(fc.oneof(related, fc.tuple(tuple, tuple)), ([a, b]) => {
        const bytesOrder = sign(Buffer.compare(encode(a), encode(b)));
        expect(bytesOrder).toBe(sign(compareTuples(a, b)));
        expect(sign(Buffer.compare(encodeNested(a), encodeNested(b)))).toBe(bytesOrder);
      }),
      { numRuns: RUNS },
    );
  });

  it("encode(p) is a byte prefix of encode(t) exactly when p is a tuple prefix of t", () => {
    const pairs = fc.oneof(
      related,
      fc.tuple(tuple, tuple).map(([p, rest]) => [p, [...p, ...rest]] as const),
      // a prefix whose last string is cut short, or extended by a NUL: the classic escape ambiguity
      fc.tuple(tuple, str).map(
        ([p, s]) =>
          [
            [...p, s],
            [...p, s + "\u0000"],
          ] as const,
      ),
      fc.tuple(tuple, tuple).map(
        ([p, inner]) =>
          [
            [...p, inner],
            [...p, [...inner, null]],
          ] as const,
      ),
    );
    fc.assert(
      fc.property(pairs, ([p, t]) => {
        const ep = encode(p);
        const et = encode(t);
        const bytePrefix = et.length >= ep.length && et.subarray(0, ep.length).equals(ep);
        expect(bytePrefix).toBe(isTuplePrefix(p, t));
      }),
      { numRuns: RUNS },
    );
  });

  it("no two distinct tuples share an encoding", () => {
    fc.assert(
      fc.property(fc.oneof(related, fc.tuple(tuple, tuple)), ([a, b]) => {
        expect(encode(a).equals(encode(b))).toBe(compareTuples(a, b) === 0);
      }),
      { numRuns: RUNS },
    );
  });

  it("prefixRange holds exactly the prefix and its extensions", () => {
    fc.assert(
      fc.property(related, ([p, t]) => {
        const { start, end } = prefixRange(p);
        const et = encode(t);
        const inside = Buffer.compare(et, start) >= 0 && Buffer.compare(et, end) < 0;
        expect(inside).toBe(isTuplePrefix(p, t));
      }),
      { numRuns: RUNS },
    );
  });

  it("encodeNestedPrefix is a byte prefix of encodeNested exactly for the extensions", () => {
    fc.assert(
      fc.property(related, ([p, t]) => {
        const pre = encodeNestedPrefix(p);
        const et = encodeNested(t);
        const inside = Buffer.compare(et, pre) >= 0 && Buffer.compare(et, Buffer.concat([pre, Buffer.from([0xff])])) < 0;
        expect(inside).toBe(isTuplePrefix(p, t));
      }),
      { numRuns: RUNS },
    );
  });

  it("rejects unpaired surrogates with a TupleError (a ValidationError on field key)", () => {
    const lone = fc.oneof(fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)));
    fc.assert(
      fc.property(str, lone, str, (a, s, b) => {
        const bad = a + s + b;
        fc.pre(!bad.isWellFormed());
        let err: unknown;
        try {
          encode(["k", [bad]]);
        } catch (e) {
          err = e;
        }
        expect(err).toBeInstanceOf(TupleError);
        expect(err).toBeInstanceOf(ValidationError);
        expect((err as TupleError).field).toBe("key");
        expect((err as Error).message).toMatch(/surrogate/);
      }),
      { numRuns: 500 },
    );
  });

  it("rejects what it cannot hold, and malformed bytes, with a TupleError", () => {
    for (const bad of [[1.5], [Number.MAX_SAFE_INTEGER + 1], [NaN], [{}], [undefined]] as unknown as Tuple[]) {
      expect(() => encode(bad)).toThrow(TupleError);
    }
    expect(() => encode("x" as unknown as Tuple)).toThrow(TupleError);
    for (const bad of [[0x02, 0x61], [0x02, 0x61, 0x00], [0x02, 0x61, 0x00, 0x07], [0x05], [0x05, 0x00, 0x01], [0x99], [0x16, 1]]) {
      expect(() => decode(Uint8Array.from(bad))).toThrow(TupleError);
    }
  });

  it("encodes -0 as 0 and sorts integers numerically across byte lengths", () => {
    expect(decode(encode([-0]))).toEqual([0]);
    const ints = [Number.MIN_SAFE_INTEGER, -65536, -65535, -256, -255, -1, 0, 1, 255, 256, 65535, 65536, Number.MAX_SAFE_INTEGER];
    const sorted = ints
      .map((i) => encode([i]))
      .sort(Buffer.compare)
      .map((b) => decode(b)[0]);
    expect(sorted).toEqual(ints);
  });
});
