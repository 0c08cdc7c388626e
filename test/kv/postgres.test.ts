/**
 * Focused checks of the PostgreSQL backend (the contract itself is checked by the conformance suite):
 * URLs and options, schemas as separate stores, commits of one partition from several processes' pools
 * serialized on the sequence row, and the server going away and coming back (a cluster of this file's
 * own, so the shared one stays healthy). Bounded in count and time; no timing assertions.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import pg from "pg";
import { ConflictError, UnavailableError, ValidationError } from "../../src/errors.js";
import { openKv } from "../../src/kv/open.js";
import { parsePostgresUrl, PostgresKv } from "../../src/kv/postgres/index.js";
import { dropSchema, findPostgresBinaries, removePostgres, startPostgres, type PostgresServer } from "../setup/postgres-server.js";
import { eventually, GiveUp } from "../support/eventually.js";
import { freePort } from "../support/ports.js";

const bytes = (s: string): Buffer => Buffer.from(s);
const url = inject("postgres");

describe("postgres URLs", () => {
  it("parses postgres:// and postgresql:// with flowstore's options, leaving the driver's in the URL", () => {
    expect(parsePostgresUrl("postgres://u:p@h:5433/db?schema=fs&poolSize=4&timeoutMs=500&sslmode=require")).toEqual({
      connectionString: "postgres://u:p@h:5433/db?sslmode=require",
      options: { schema: "fs", poolSize: 4, timeoutMs: 500 },
    });
    expect(parsePostgresUrl("postgresql://h/db").options).toEqual({});
  });

  it("refuses bad URLs and options with a ValidationError naming the field", () => {
    expect(() => parsePostgresUrl("redis://h")).toThrow(ValidationError);
    expect(() => parsePostgresUrl("postgres://h/db?poolSize=x")).toThrow(expect.objectContaining({ field: "poolSize" }));
    for (const schema of ["a-b", 'x"; drop', "1abc", ""]) {
      expect(() => PostgresKv.open("postgres://h/db", { schema })).toThrow(expect.objectContaining({ field: "schema" }));
    }
    expect(() => PostgresKv.open("postgres://h/db?timeoutMs=0")).toThrow(expect.objectContaining({ field: "timeoutMs" }));
  });

  it("answers UnavailableError (503), without hanging or crashing, when PostgreSQL is not there", async () => {
    const kv = PostgresKv.open(`postgres://nobody@127.0.0.1:${await freePort()}/none`, { timeoutMs: 2000 });
    try {
      await expect(kv.get(["p", "x"], ["k"])).rejects.toBeInstanceOf(UnavailableError);
      await expect(kv.commit(["p", "x"], [{ type: "put", key: ["k"], value: bytes("v") }])).rejects.toThrow(UnavailableError);
      await expect(kv.listPartitions("p")).rejects.toBeInstanceOf(UnavailableError);
      await expect(kv.scan(["p", "x"])).rejects.toHaveProperty("status", 503);
      // Validation comes first and needs no server.
      await expect(kv.get(["p", "x"], ["k".repeat(3000)])).rejects.toBeInstanceOf(ValidationError);
    } finally {
      await kv.close();
    }
  });
});

describe.runIf(url)("postgres", () => {
  const schemas: string[] = [];
  const fresh = (label: string): string => {
    const schema = `${label}_${process.pid}_${Date.now()}_${schemas.length}`;
    schemas.push(schema);
    return schema;
  };
  afterAll(async () => {
    for (const schema of schemas) await dropSchema(url!, schema);
  });

  it("opens postgres:// and postgresql:// through openKv; a schema is a store of its own", async () => {
    const schema = fresh("open");
    const a = await openKv(`${url}?schema=${schema}`);
    const b = await openKv(`${url!.replace(/^postgres:/, "postgresql:")}?schema=${schema}`);
    const other = PostgresKv.open(url!, { schema: fresh("other") });
    try {
      expect(a.backend).toBe("postgres");
      await a.commit(["p", 1], [{ type: "put", key: ["k"], value: bytes("v") }]);
      expect((await b.get(["p", 1], ["k"]))?.value.toString()).toBe("v");
      expect(await other.get(["p", 1], ["k"])).toBeUndefined();
      expect((await other.listPartitions("p")).partitions).toEqual([]);
    } finally {
      await Promise.all([a.close(), b.close(), other.close()]);
    }
  });

  it("serializes the commits of one partition from several pools: versions 1..n, one winner per absent check", async () => {
    const schema = fresh("race");
    const stores = Array.from({ length: 4 }, () => PostgresKv.open(url!, { schema, poolSize: 5 }));
    try {
      const results = await Promise.all(Array.from({ length: 200 }, (_, i) => stores[i % 4]!.commit(["doc", "one"], [{ type: "put", key: ["n", i], value: bytes(String(i)) }])));
      expect(results.map((r) => r.version).sort((x, y) => x - y)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
      const outcomes = await Promise.allSettled(
        Array.from({ length: 40 }, (_, i) =>
          stores[i % 4]!.commit(
            ["doc", "one"],
            [
              { type: "check", key: ["only"], version: null },
              { type: "put", key: ["only"], value: bytes(String(i)) },
            ],
          ),
        ),
      );
      expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
      for (const o of outcomes) if (o.status === "rejected") expect(o.reason).toBeInstanceOf(ConflictError);
      // A drop keeps the sequence: the partition's next version continues.
      await stores[0]!.dropPartition(["doc", "one"]);
      expect((await stores[1]!.commit(["doc", "one"], [{ type: "put", key: ["k"], value: bytes("x") }])).version).toBe(202);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });
});

describe.runIf(url)("postgres large values", () => {
  it("reads a value larger than a piece whole and as of one version while it is overwritten", async () => {
    const schema = `large_${process.pid}_${Date.now()}`;
    const kv = PostgresKv.open(url!, { schema });
    const writer = PostgresKv.open(url!, { schema });
    const a = Buffer.alloc(600 * 1024, 1);
    const b = Buffer.alloc(900 * 1024, 2);
    try {
      await kv.commit(["doc", "d"], [{ type: "put", key: ["v"], value: a }]);
      let stop = false;
      let writes = 0;
      const writing = (async () => {
        while (!stop) await writer.commit(["doc", "d"], [{ type: "put", key: ["v"], value: writes++ % 2 ? a : b }]);
      })();
      for (let i = 0; i < 30; i++) {
        const got = [(await kv.get(["doc", "d"], ["v"]))!.value, (await kv.scan(["doc", "d"])).entries[0]!.value];
        for (const v of got) expect(v.equals(a) || v.equals(b)).toBe(true);
      }
      stop = true;
      await writing;
      expect(writes).toBeGreaterThan(0);
    } finally {
      await Promise.all([kv.close(), writer.close()]);
      await dropSchema(url!, schema);
    }
  });
});

const bin = findPostgresBinaries();
describe.runIf(url && bin)("postgres restart", () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres(bin!, "restart");
  });
  afterAll(async () => {
    await removePostgres(server);
  });

  it("answers 503 while PostgreSQL is down and serves again, with everything committed, once it is back", async () => {
    const admin = new pg.Client({ connectionString: server.url() });
    await admin.connect();
    expect((await admin.query("SHOW fsync")).rows[0].fsync).toBe("on");
    await admin.end();
    const kv = PostgresKv.open(server.url(), { timeoutMs: 3000 });
    try {
      for (let i = 0; i < 50; i++) {
        await kv.commit(["doc", `d${i % 5}`], [{ type: "put", key: ["n", i], value: bytes(`v${i}`) }]);
      }
      await server.stop();
      await expect(kv.get(["doc", "d0"], ["n", 0])).rejects.toBeInstanceOf(UnavailableError);
      await expect(kv.commit(["doc", "d0"], [{ type: "put", key: ["n", 99], value: bytes("x") }])).rejects.toHaveProperty("status", 503);
      await server.start();
      // The same store object serves again: the pool replaces its broken connections.
      const first = await eventually(
        async () => {
          try {
            return await kv.get(["doc", "d0"], ["n", 0]);
          } catch (err) {
            if (!(err instanceof UnavailableError)) throw new GiveUp(`a failure other than UnavailableError while the pool reconnects: ${err}`);
            throw err;
          }
        },
        { what: "the pool to serve again after the restart", timeoutMs: 12_000, intervalMs: 250 },
      );
      expect(first?.value.toString()).toBe("v0");
      expect((await kv.scan(["doc", "d3"])).entries.map((e) => e.key[1])).toEqual([3, 8, 13, 18, 23, 28, 33, 38, 43, 48]);
      expect((await kv.listPartitions("doc")).partitions).toHaveLength(5);
      expect((await kv.commit(["doc", "d0"], [{ type: "put", key: ["n", 50], value: bytes("v50") }])).version).toBe(11);
    } finally {
      await kv.close();
    }
  });
});
