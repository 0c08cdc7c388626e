/**
 * prepareBatch (batch.ts), through which every backend prepares a commit: a keyed op's key bytes (contract.ts
 * KeyedPut, KeyedDelete, KeyedCheck) are taken as they are, and any other op's key is encoded.
 */
import { expect, it } from "vitest";
import { type PreparedBatch, prepareBatch } from "../../src/kv/batch.js";
import { encodePartition, type Key, KeyedCheck, KeyedDelete, KeyedPut, type Op, type Partition } from "../../src/kv/contract.js";
import { encode } from "../../src/kv/tuple.js";

const P: Partition = ["project", "p1"];
const value = Buffer.from("v");
/** The key of a prepared put or delete. */
const keyOf = (w: PreparedBatch["writes"][number] | undefined) => (w && "key" in w ? w.key : undefined);

it("takes a keyed op's key bytes as they are (not encoded again)", () => {
  const pl = encodePartition(P).length;
  const ops = [new KeyedPut(pl, ["a", 1], value), new KeyedDelete(pl, ["b"]), new KeyedCheck(pl, ["c", null], null)];
  const batch = prepareBatch(P, ops);
  expect(keyOf(batch.writes[0])).toBe(ops[0]!.keyBytes);
  expect(keyOf(batch.writes[1])).toBe(ops[1]!.keyBytes);
  expect(batch.checks[0]!.key).toBe(ops[2]!.keyBytes);
  expect(ops[0]!.keyBytes).toEqual(encode(["a", 1]));
});

it("encodes the key of an op carrying bytes it was not made with: a plain op's own, or a keyed op's whose key was replaced", () => {
  const key: Key = ["a"];
  const pl = encodePartition(P).length;
  const carried: unknown[] = [encode(["z"]), new KeyedPut(pl, ["z"], value).keyBytes, "\x02z\x00", 7, null];
  for (const keyBytes of carried) {
    const batch = prepareBatch(P, [{ type: "put", key, value, keyBytes } as Op, { type: "check", key, version: null, keyBytes } as Op]);
    expect(keyOf(batch.writes[0]), String(keyBytes)).toEqual(encode(key));
    expect(keyOf(batch.writes[0])).not.toBe(keyBytes);
    expect(batch.checks[0]!.key).toEqual(encode(key));
  }
  const moved = Object.assign(new KeyedPut(pl, ["z"], value), { key });
  expect(keyOf(prepareBatch(P, [moved]).writes[0])).toEqual(encode(key));
});
