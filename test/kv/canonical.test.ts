/**
 * Property tests of canonical JSON (src/kv/canonical.ts): event hashes, checkpoint signatures and archive
 * seals depend on it giving one string per JSON value, whatever the order its objects' keys were built in.
 */
import fc from "fast-check";
import { expect, it } from "vitest";
import { canonicalJson } from "../../src/kv/canonical.js";

const json = fc.jsonValue();

/** The same value with every object's keys inserted in reverse order. */
function reversedKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(reversedKeys);
  if (v !== null && typeof v === "object") {
    const out: Record<string, unknown> = {};
    // defineProperty: a "__proto__" key stays an own member
    for (const k of Object.keys(v).reverse())
      Object.defineProperty(out, k, { value: reversedKeys((v as Record<string, unknown>)[k]), enumerable: true, writable: true, configurable: true });
    return out;
  }
  return v;
}

it("parses back to the same value, and is its own canonical form", () => {
  fc.assert(
    fc.property(json, (v) => {
      const s = canonicalJson(v);
      expect(JSON.parse(s)).toEqual(JSON.parse(JSON.stringify(v)));
      expect(canonicalJson(JSON.parse(s))).toBe(s);
    }),
  );
});

it("does not depend on the order the keys were inserted in", () => {
  fc.assert(
    fc.property(json, (v) => {
      expect(canonicalJson(reversedKeys(v))).toBe(canonicalJson(v));
    }),
  );
});

it("sorts keys at every level and leaves undefined members out", () => {
  expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: undefined }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"z":1}]},"b":1}');
  expect(canonicalJson([undefined, 1])).toBe("[null,1]");
});
