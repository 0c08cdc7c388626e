/**
 * LMDB-specific behaviour beyond the conformance suite: several processes on one directory, the
 * durability option, and opening stores by URL.
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConflictError, UnavailableError, ValidationError } from "../../src/errors.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { MemoryKv } from "../../src/kv/memory.js";
import { openKv } from "../../src/kv/open.js";
import { makeTempDirSync, removeTempDirSync } from "../support/temp-dir.js";

let dir: string;
beforeEach(() => {
  dir = makeTempDirSync("lmdb-test");
});
afterEach(() => {
  removeTempDirSync(dir);
});

function runChild(args: string[]): { ready: Promise<void>; go: () => void; result: Promise<{ versions: number[]; race: string }> } {
  const child = spawn(process.execPath, ["--import", "tsx", join(import.meta.dirname, "lmdb-writer.ts"), ...args], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  let signalReady: () => void;
  const ready = new Promise<void>((resolve) => (signalReady = resolve));
  child.stdout.on("data", (d) => {
    out += d;
    if (out.startsWith("ready\n")) signalReady();
  });
  child.stderr.on("data", (d) => (err += d));
  const result = new Promise<{ versions: number[]; race: string }>((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", (code) => {
      if (code !== 0) reject(new Error(`child exited with ${code}: ${err}`));
      else resolve(JSON.parse(out.slice("ready\n".length).trim()));
    });
  });
  return { ready: Promise.race([ready, result.then(() => {})]), go: () => child.stdin.end("go\n"), result };
}

describe("lmdb across processes", () => {
  it("two processes write one partition at once: every commit lands, versions are unique, one create wins", async () => {
    const kv = LmdbKv.open(dir);
    await kv.commit(["shared"], [{ type: "put", key: ["seed"], value: Buffer.from("s") }]);
    const child = runChild([dir, "150"]);
    await child.ready; // the child has the store open and waits for "go"
    child.go();
    const mine = Promise.all(
      Array.from({ length: 150 }, (_, i) => kv.commit(["shared"], [{ type: "put", key: ["parent", i], value: Buffer.from(`p${i}`) }]).then((r) => r.version)),
    );
    const race = kv
      .commit(
        ["shared"],
        [
          { type: "check", key: ["race"], version: null },
          { type: "put", key: ["race"], value: Buffer.from("parent") },
        ],
      )
      .then(
        () => "won",
        (e) => (e instanceof ConflictError ? "conflict" : `error: ${(e as Error).message}`),
      );
    const [parentVersions, parentRace, theirs] = await Promise.all([mine, race, child.result]);
    const all = [1, ...parentVersions, ...theirs.versions];
    expect(new Set(all).size).toBe(all.length); // no version given twice across processes
    expect([parentRace, theirs.race].sort()).toEqual(["conflict", "won"]);
    // the parent reads everything the child wrote
    const { entries } = await kv.scan(["shared"], { limit: 1000 });
    expect(entries).toHaveLength(1 + 150 + 150 + 1);
    expect((await kv.get(["shared"], ["child", 149]))?.value.toString()).toBe("c149");
    const next = await kv.commit(["shared"], [{ type: "delete", key: ["none"] }]);
    // seed (1) + 300 puts + the winning create (a failed commit takes no version) + this one
    expect(next.version).toBe(1 + 300 + 1 + 1);
    await kv.close();
  });
});

describe("lmdb in one process", () => {
  it("opens a directory already open in this process while its write thread holds the lock: one environment, shared, closed with the last handle", async () => {
    // In a child process, bounded: the deadlock this guards against blocks the JS thread for good.
    const child = spawn(process.execPath, ["--import", "tsx", join(import.meta.dirname, "lmdb-reopen.ts"), dir], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    const bound = setTimeout(() => child.kill("SIGKILL"), 30_000);
    const code = await new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)));
    clearTimeout(bound);
    expect({ code, out: out.trim(), err }).toEqual({ code: 0, out: "ok", err: "" });
  });
});

describe("lmdb options and errors", () => {
  it("durable: false still commits and reads back after reopen", async () => {
    const kv = LmdbKv.open(dir, { durable: false });
    await Promise.all(Array.from({ length: 50 }, (_, i) => kv.commit(["p", i], [{ type: "put", key: ["k"], value: Buffer.from("v") }])));
    await kv.close();
    const again = LmdbKv.open(dir);
    expect((await again.listPartitions("p")).partitions).toHaveLength(50);
    await again.close();
  });

  it("refuses to open a store where the directory cannot be made, with an UnavailableError naming it", async () => {
    const file = join(dir, "a-file");
    writeFileSync(file, "x");
    expect(() => LmdbKv.open(join(file, "store"))).toThrow(UnavailableError);
    expect(() => LmdbKv.open(join(file, "store"))).toThrow(/a-file/);
  });
});

describe("openKv", () => {
  it("opens memory:, lmdb:<dir> and a plain directory, and refuses unknown schemes", async () => {
    const m = await openKv("memory:");
    expect(m).toBeInstanceOf(MemoryKv);
    await m.close();
    const a = await openKv(`lmdb:${join(dir, "a")}`);
    expect(a.backend).toBe("lmdb");
    await a.commit(["x", 1], [{ type: "put", key: ["k"], value: Buffer.from("1") }]);
    await a.close();
    const a2 = await openKv(join(dir, "a"));
    expect((await a2.get(["x", 1], ["k"]))?.value.toString()).toBe("1");
    await a2.close();
    for (const bad of ["ftp://x", "redis-sentinel://h:1", "", "lmdb:"]) {
      const err = await openKv(bad).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field).toBe("store");
    }
  });
});
