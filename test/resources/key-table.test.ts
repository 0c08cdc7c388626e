/**
 * KeyTable (src/resources/audit/key-table.ts), what a full verify looks the stored keys up in: it must
 * answer exactly as a Map keyed by the keys' latin1 strings would, for any keys, also when many share a
 * hash and probe one run of slots (few hash bits: every hit then compares the bytes), and after it grows.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { KeyTable } from "../../src/resources/audit/key-table.js";

const bytes = fc.uint8Array({ minLength: 0, maxLength: 12 }).map((a) => Buffer.from(a));

describe("KeyTable", () => {
  for (const bits of [32, 2]) {
    it(`answers as a Map of latin1 strings (${bits} hash bits)`, () => {
      fc.assert(
        fc.property(fc.array(fc.tuple(bytes, fc.integer()), { maxLength: 60 }), fc.array(bytes, { maxLength: 30 }), (puts, probes) => {
          const table = new KeyTable<number>(bits);
          const map = new Map<string, number>();
          for (const [k, v] of puts) {
            table.set(k.toString("latin1"), v);
            map.set(k.toString("latin1"), v);
          }
          expect(table.size).toBe(map.size);
          for (const k of [...puts.map(([k]) => k), ...probes]) expect(table.getBytes(k)).toBe(map.get(k.toString("latin1")));
        }),
      );
    });
  }

  for (const bits of [32, 2]) {
    it(`grows past its first slots, answering as a Map of latin1 strings (2,000 keys, ${bits} hash bits)`, () => {
      // Keys alike but for their last two bytes (a long shared prefix, as a partition's keys have), and the empty key.
      const prefix = Buffer.alloc(40, 0x73);
      const key = (i: number) => Buffer.concat([prefix, Buffer.from([i >> 8, i & 0xff])]);
      const keys = [Buffer.alloc(0), ...Array.from({ length: 1999 }, (_, i) => key(i))];
      const table = new KeyTable<number>(bits);
      const map = new Map<string, number>();
      keys.forEach((k, i) => {
        table.set(k.toString("latin1"), i);
        map.set(k.toString("latin1"), i);
      });
      // Values replaced once grown: still one entry per key.
      for (let i = 0; i < keys.length; i += 7) {
        table.set(keys[i]!.toString("latin1"), -i);
        map.set(keys[i]!.toString("latin1"), -i);
      }
      expect(table.size).toBe(2000);
      expect(map.size).toBe(2000);
      const absent = [prefix, Buffer.from([0x73]), ...Array.from({ length: 100 }, (_, i) => key(1999 + i)), Buffer.concat([key(5), Buffer.from([0])])];
      for (const k of [...keys, ...absent]) expect(table.getBytes(k)).toBe(map.get(k.toString("latin1")));
      expect(absent.map((k) => table.getBytes(k))).toEqual(absent.map(() => undefined));
    });
  }

  it("tells apart keys that differ in one byte or in length only", () => {
    const table = new KeyTable<string>(1);
    table.set("ab", "ab");
    table.set("ab\u0000", "ab0");
    table.set("a\u00ff", "aff");
    expect(table.getBytes(Buffer.from([0x61, 0x62]))).toBe("ab");
    expect(table.getBytes(Buffer.from([0x61, 0x62, 0]))).toBe("ab0");
    expect(table.getBytes(Buffer.from([0x61, 0xff]))).toBe("aff");
    expect(table.getBytes(Buffer.from([0x61, 0xfe]))).toBeUndefined();
    expect(table.getBytes(Buffer.from([0x61]))).toBeUndefined();
    expect(table.size).toBe(3);
  });
});
