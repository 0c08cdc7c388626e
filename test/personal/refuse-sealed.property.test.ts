/**
 * refuseSealed (src/personal/subjects.ts) walks every create's data and builds a field's path only when it
 * finds a sealed string: the error still names the path of the first sealed string in key order (as the
 * walk that named each field on its way did), and data holding none passes.
 */
import fc from "fast-check";
import { expect, it } from "vitest";
import { ValidationError } from "../../src/errors.js";
import { refuseSealed, SEALED_PREFIX } from "../../src/personal/subjects.js";

/** The path (from `field`) of the first sealed string in `value`, as the former walk named it, or null. */
function expected(value: unknown, field: string): string | null {
  if (typeof value === "string") return value.startsWith(SEALED_PREFIX) ? field : null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const at = expected(value[i], `${field}.${i}`);
      if (at !== null) return at;
    }
    return null;
  }
  if (value !== null && typeof value === "object") {
    for (const [k, x] of Object.entries(value)) {
      const at = expected(x, `${field}.${k}`);
      if (at !== null) return at;
    }
  }
  return null;
}

const text = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.string({ maxLength: 6 }).map((s) => `${SEALED_PREFIX}${s}`),
);
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    text,
    fc.integer(),
    fc.constant(null),
    fc.boolean(),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fc.string({ maxLength: 4 }), tie("value"), { maxKeys: 4 }),
  ),
})).value;

it("names the first sealed string's path, and passes data holding none", () => {
  fc.assert(
    fc.property(json, fc.constantFrom("data", "body"), (value, field) => {
      const want = expected(value, field);
      let got: unknown = null;
      try {
        refuseSealed(value, field);
      } catch (e) {
        got = e;
      }
      if (want === null) expect(got).toBeNull();
      else {
        expect(got).toBeInstanceOf(ValidationError);
        expect((got as ValidationError).message).toBe(`${want} is a sealed value (${SEALED_PREFIX}…): sealed values are made by the store, never written`);
      }
    }),
    { numRuns: 500 },
  );
});

it("names a sealed string nested in an array of objects", () => {
  expect(() => refuseSealed({ a: 1, documents: [{ id: "x" }, { id: `${SEALED_PREFIX}k.iv.t.c` }] })).toThrow("data.documents.1.id is a sealed value");
  expect(() => refuseSealed({ a: "plain", b: [1, "two", { c: null }] })).not.toThrow();
});
