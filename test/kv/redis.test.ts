/**
 * Focused checks of the Redis backend (standalone and cluster), run beside memory (the specification)
 * so every expectation is also checked against memory: binary-safe key order, scans and cursors,
 * atomic batches, range deletes, the bucketed partition index, drop, and the options.
 */
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { ConflictError, UnavailableError, ValidationError } from "../../src/errors.js";
import { allPartitions, scanAll, type KvStore, type Op } from "../../src/kv/contract.js";
import { openKv } from "../../src/kv/open.js";
import { openRedisKv, parseRedisUrl } from "../../src/kv/redis/connect.js";
import { compareTuples, type Tuple } from "../../src/kv/tuple.js";
import { forEachBackend, type BackendHandle } from "../conformance/backends.js";
import { deleteNamespace } from "../setup/redis-keys.js";

const bytes = (s: string): Buffer => Buffer.from(s);
const P = ["project", "p1"];

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

  it("orders awkward keys exactly as the tuple order, forwards and backwards, page by page", async () => {
    const keys: Tuple[] = [
      [],
      ["a"],
      ["a", null],
      ["a\u0000"],
      ["a\u0000b"],
      ["a", "\u0000"],
      ["a:b"],
      ["_workflows"],
      ["\u{1F600}"],
      ["\uffff"],
      [new Uint8Array([0, 255, 0])],
      [new Uint8Array([255])],
      [-1],
      [0],
      [1],
      [256],
      [-70000],
      [Number.MAX_SAFE_INTEGER],
      [["nested", null]],
      [true],
      [false],
      ["z", 1, "x"],
    ];
    await kv.commit(
      P,
      keys.map((key, i) => ({ type: "put", key, value: bytes(`v${i}`) })),
    );
    const sorted = [...keys].sort(compareTuples);
    const forward: Tuple[] = [];
    for await (const e of scanAll(kv, P, { limit: 3 })) forward.push(e.key);
    expect(forward).toEqual(sorted.map((k) => k.map((x) => (x instanceof Uint8Array ? new Uint8Array(x) : x))));
    const backward: Tuple[] = [];
    for await (const e of scanAll(kv, P, { limit: 4, reverse: true })) backward.push(e.key);
    expect(backward).toEqual([...forward].reverse());
    const one = await kv.get(P, ["a\u0000b"]);
    expect(one?.value.toString()).toBe(`v${keys.findIndex((k) => k[0] === "a\u0000b")}`);
    expect(one?.version).toBe(1);
  });

  it("scans a prefix and a start/end range with limits and cursors", async () => {
    const ops: Op[] = [];
    for (let i = 0; i < 25; i++) ops.push({ type: "put", key: ["item", i], value: bytes(String(i)) });
    ops.push({ type: "put", key: ["itemz"], value: bytes("x") }, { type: "put", key: ["other"], value: bytes("o") });
    await kv.commit(P, ops);
    const page1 = await kv.scan(P, { prefix: ["item"], limit: 10 });
    expect(page1.entries.map((e) => e.key[1])).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const page3 = await kv.scan(P, { prefix: ["item"], limit: 10, after: (await kv.scan(P, { prefix: ["item"], limit: 10, after: page1.cursor })).cursor });
    expect(page3.entries.map((e) => e.key[1])).toEqual([20, 21, 22, 23, 24]);
    expect(page3.cursor).toBeNull();
    const exact = await kv.scan(P, { prefix: ["item"], limit: 25 });
    expect(exact.entries).toHaveLength(25);
    expect(exact.cursor).toBeNull();
    const range = await kv.scan(P, { start: ["item", 5], end: ["item", 8], reverse: true });
    expect(range.entries.map((e) => e.key[1])).toEqual([7, 6, 5]);
    expect((await kv.scan(P, { start: ["z"], end: ["a"] })).entries).toEqual([]);
    await expect(kv.scan(P, { after: "not a cursor!" })).rejects.toBeInstanceOf(ValidationError);
    await expect(kv.scan(P, { limit: 0 })).rejects.toBeInstanceOf(ValidationError);
  });

  it("applies a batch all or nothing, with versions from the partition's commit sequence", async () => {
    const v1 = await kv.commit(P, [{ type: "put", key: ["a"], value: bytes("1") }]);
    const v2 = await kv.commit(P, [{ type: "put", key: ["b"], value: bytes("2") }]);
    expect([v1.version, v2.version]).toEqual([1, 2]);
    await expect(
      kv.commit(P, [
        { type: "put", key: ["c"], value: bytes("3") },
        { type: "check", key: ["a"], version: 1 },
        { type: "check", key: ["b"], version: 1 },
      ]),
    ).rejects.toBeInstanceOf(ConflictError);
    await expect(
      kv.commit(P, [
        { type: "check", key: ["a"], version: null },
        { type: "delete", key: ["b"] },
      ]),
    ).rejects.toBeInstanceOf(ConflictError);
    expect(await kv.get(P, ["c"])).toBeUndefined();
    expect((await kv.get(P, ["b"]))?.version).toBe(2);
    const v3 = await kv.commit(P, [
      { type: "check", key: ["a"], version: 1 },
      { type: "check", key: ["new"], version: null },
      { type: "put", key: ["new"], value: bytes("n") },
      { type: "delete", key: ["a"] },
    ]);
    expect(v3.version).toBe(3);
    const [a, b, n] = await kv.getMany(P, [["a"], ["b"], ["new"]]);
    expect(a).toBeUndefined();
    expect(b?.version).toBe(2);
    expect(n?.version).toBe(3);
    expect(n?.value.toString()).toBe("n");
    expect(await kv.getMany(P, [])).toEqual([]);
  });

  it("deletes prefixes and ranges, in op order with puts, also beyond one script chunk", async () => {
    const ops: Op[] = [];
    for (let i = 0; i < 2500; i++) ops.push({ type: "put", key: ["w", i], value: bytes("x") });
    ops.push({ type: "put", key: ["w"], value: bytes("parent") }, { type: "put", key: ["wx"], value: bytes("y") });
    await kv.commit(P, ops);
    await kv.commit(P, [{ type: "deleteRange", start: ["w", 10], end: ["w", 20] }]);
    expect((await kv.scan(P, { start: ["w", 5], end: ["w", 25] })).entries.map((e) => e.key[1])).toEqual([5, 6, 7, 8, 9, 20, 21, 22, 23, 24]);
    await kv.commit(P, [
      { type: "deletePrefix", prefix: ["w"] },
      { type: "put", key: ["w", 7], value: bytes("again") },
    ]);
    const left = (await kv.scan(P, {})).entries.map((e) => e.key);
    expect(left).toEqual([["w", 7], ["wx"]]);
  });

  it("lists partitions of a kind in key order across index buckets, with a cursor, and drops them", async () => {
    const ids = Array.from({ length: 40 }, (_, i) => `p${String(i).padStart(2, "0")}`);
    await Promise.all(ids.map((id) => kv.commit(["proj", id], [{ type: "put", key: ["x"], value: bytes(id) }])));
    await kv.commit(["other", "o"], [{ type: "put", key: ["x"], value: bytes("o") }]);
    await kv.commit(["proj", "only-deletes"], [{ type: "delete", key: ["x"] }]);
    await expect(
      kv.commit(
        ["proj", "conflict"],
        [
          { type: "check", key: ["x"], version: 3 },
          { type: "put", key: ["x"], value: bytes("c") },
        ],
      ),
    ).rejects.toBeInstanceOf(ConflictError);
    const page = await kv.listPartitions("proj", { limit: 15 });
    expect(page.partitions).toEqual(ids.slice(0, 15).map((id) => ["proj", id]));
    const all = [];
    for await (const p of allPartitions(kv, "proj", 7)) all.push(p);
    expect(all).toEqual(ids.map((id) => ["proj", id]));
    await kv.dropPartition(["proj", "p03"]);
    expect(await kv.get(["proj", "p03"], ["x"])).toBeUndefined();
    const after = await kv.listPartitions("proj", { limit: 3 });
    expect(after.partitions).toEqual([
      ["proj", "p00"],
      ["proj", "p01"],
      ["proj", "p02"],
    ]);
    expect((await kv.listPartitions("proj", { limit: 1, after: after.cursor })).partitions).toEqual([["proj", "p04"]]);
    const again = await kv.commit(["proj", "p03"], [{ type: "put", key: ["x"], value: bytes("back") }]);
    expect(again.version).toBe(2); // versions continue after a drop: they never repeat
    expect((await kv.listPartitions("proj", { limit: 4 })).partitions[3]).toEqual(["proj", "p03"]);
  });

  it("reads every scan page, small or large, as one consistent state while commits run", async () => {
    // One "token" key moves atomically from ["t", i] to ["t", i + 1]; filler keys make large pages.
    const fill: Op[] = Array.from({ length: 600 }, (_, i) => ({ type: "put", key: ["f", i], value: bytes("f") }));
    await kv.commit(P, [...fill, { type: "put", key: ["t", 0], value: bytes("token") }]);
    let stop = false;
    const mover = (async () => {
      for (let i = 0; !stop && i < 5000; i++) {
        await kv.commit(P, [
          { type: "delete", key: ["t", i] },
          { type: "put", key: ["t", i + 1], value: bytes("token") },
        ]);
      }
    })();
    try {
      for (let round = 0; round < 30; round++) {
        for (const limit of [5, 2000]) {
          const page = await kv.scan(P, { limit, reverse: round % 2 === 1 });
          const tokens = page.entries.filter((e) => e.key[0] === "t");
          if (limit === 2000) expect(tokens).toHaveLength(1);
          else expect(tokens.length).toBeLessThanOrEqual(1);
        }
      }
    } finally {
      stop = true;
      await mover;
    }
  });

  it("keeps values byte-exact, empty and large", async () => {
    const big = Buffer.alloc(3 * 1024 * 1024, 7);
    big[0] = 0x3a;
    const bin = Buffer.from([0, 0x3a, 255, 10, 13]);
    await kv.commit(P, [
      { type: "put", key: ["empty"], value: new Uint8Array() },
      { type: "put", key: ["big"], value: big },
      { type: "put", key: ["bin"], value: bin },
    ]);
    const [e, b, n] = await kv.getMany(P, [["empty"], ["big"], ["bin"]]);
    expect(e?.value.length).toBe(0);
    expect(b?.value.equals(big)).toBe(true);
    expect(n?.value.equals(bin)).toBe(true);
  });

  it("answers a closed store with UnavailableError and a reopened one with the data", async () => {
    await kv.commit(P, [{ type: "put", key: ["k"], value: bytes("v") }]);
    await kv.close();
    await expect(kv.get(P, ["k"])).rejects.toBeInstanceOf(UnavailableError);
    const again = await h.reopen();
    expect((await again.get(P, ["k"]))?.value.toString()).toBe("v");
  });
});

describe("redis URLs", () => {
  it("parses standalone and cluster URLs with options", () => {
    expect(parseRedisUrl("redis://127.0.0.1:7000/2?namespace=app&waitReplicas=1")).toMatchObject({
      cluster: false,
      nodes: [{ host: "127.0.0.1", port: 7000 }],
      db: 2,
      options: { namespace: "app", waitReplicas: 1 },
    });
    expect(parseRedisUrl("redis-cluster://a:1,b:2")).toMatchObject({
      cluster: true,
      nodes: [
        { host: "a", port: 1 },
        { host: "b", port: 2 },
      ],
    });
    expect(parseRedisUrl("redis://u:p%40ss@h").password).toBe("p@ss");
  });
  it("refuses bad URLs and options with a ValidationError naming the field", () => {
    for (const bad of ["http://x", "redis://a:1,b:2", "redis://h:99999", "redis-cluster://a:1/3", "redis://h?bogus=1"]) {
      expect(() => parseRedisUrl(bad)).toThrow(ValidationError);
    }
    expect(() => parseRedisUrl("redis://h?waitReplicas=x")).toThrow(expect.objectContaining({ field: "waitReplicas" }));
    expect(() => openRedisKv("redis://127.0.0.1:1", { namespace: "a{b}" })).toThrow(expect.objectContaining({ field: "namespace" }));
  });
});

const redis = inject("redis");
describe.runIf(redis)("openKv with redis URLs", () => {
  it("opens redis:// and redis-cluster:// stores that see the same data as openRedisKv", async () => {
    for (const [url, backend] of [
      [redis!.standalone, "redis"],
      [redis!.cluster, "redis-cluster"],
    ] as const) {
      const namespace = `open-${process.pid}-${Date.now()}`;
      const kv = await openKv(`${url}?namespace=${namespace}`);
      const direct = openRedisKv(url, { namespace });
      try {
        expect(kv.backend).toBe(backend);
        await kv.commit(["p", 1], [{ type: "put", key: ["k"], value: bytes("v") }]);
        expect((await direct.get(["p", 1], ["k"]))?.value.toString()).toBe("v");
      } finally {
        await Promise.all([kv.close(), direct.close()]);
        await deleteNamespace(url, namespace);
      }
    }
    const err = await openKv("redis://h:1?waitReplicas=-1").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
  });
});

describe.runIf(redis)("redis-cluster with waitReplicas", () => {
  it("acknowledges commits once a replica has them", async () => {
    const url = redis!.cluster;
    const namespace = `wait-${process.pid}-${Date.now()}`;
    const kv = openRedisKv(url, { namespace, waitReplicas: 1, waitTimeoutMs: 5000 });
    try {
      for (let i = 0; i < 20; i++) {
        await kv.commit(["p", `x${i}`], [{ type: "put", key: ["k"], value: bytes(String(i)) }]);
      }
      expect((await kv.get(["p", "x19"], ["k"]))?.value.toString()).toBe("19");
      const tooMany = openRedisKv(url, { namespace, waitReplicas: 3, waitTimeoutMs: 200 });
      await expect(tooMany.commit(["p", "y"], [{ type: "put", key: ["k"], value: bytes("y") }])).rejects.toThrow(/only 1 of 3 replicas/);
      await tooMany.close();
    } finally {
      await kv.close();
      await deleteNamespace(url, namespace);
    }
  });
});
