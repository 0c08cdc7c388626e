import { describe, expect, it } from "vitest";
import { decode, encode } from "../../src/kv/tuple.js";

describe("tuple codec smoke", () => {
  it("round-trips a mixed tuple", () => {
    const t = ["project", "p:1/_workflows\u0000", -5, 0, 70000, true, false, null, ["a", null]];
    expect(decode(encode(t))).toEqual(t);
  });
});
