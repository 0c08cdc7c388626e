/** The real `flowstore` process: demo, verify, export and import between two LMDB directories. */
import { spawn } from "node:child_process";
import { writeFile, readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";
import { CLI } from "./spawn.js";

const ROOT = resolve(import.meta.dirname, "../..");

function flowstore(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((res) => {
    const child = spawn(process.execPath, [...CLI, ...args], {
      cwd: ROOT,
      env: { ...process.env, FLOWSTORE_STORE: "", FLOWSTORE_DATA: "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("exit", (code) => res({ code, out, err }));
  });
}

let dir: string;
beforeEach(async () => {
  dir = await makeTempDir("ops");
});
afterEach(async () => removeTempDir(dir));

it("loads the demo, verifies, exports, imports into another directory and verifies there", async () => {
  const a = join(dir, "a");
  const b = join(dir, "b");
  const file = join(dir, "export.ndjson");
  const demo = await flowstore(["demo", "--data", a, "--projects", "2", "--subprojects", "2", "--workflowitems", "10"]);
  expect(demo.code, demo.err).toBe(0);
  expect(JSON.parse(demo.out)).toMatchObject({ projects: 2, subprojects: 4, workflowitems: 40 });
  const verified = await flowstore(["verify", "--data", a]);
  expect(verified.code, verified.err).toBe(0);
  expect(JSON.parse(verified.out)).toMatchObject({ ok: true, chained: 2, bad: 0 });
  expect(verified.err).toContain("verified 2 chained partitions");
  const exp = await flowstore(["export", "--data", a, "--out", file]);
  expect(exp.code, exp.err).toBe(0);
  // The same store, the same count under the same name: export writes more partitions than verify checks
  // (users, indexes, the feed…), and says how many of them are the chained ones verify counts.
  const exported = /exported (\d+) partitions \((\d+) chained\), \d+ entries: done/.exec(exp.err);
  expect(exported, exp.err).not.toBeNull();
  expect(Number(exported![2])).toBe(2);
  expect(Number(exported![1])).toBeGreaterThan(2);
  const imp = await flowstore(["import", "--data", b, "--in", file]);
  expect(imp.code, imp.err).toBe(0);
  expect(JSON.parse((await flowstore(["verify", "--data", b])).out)).toMatchObject({ ok: true, chained: 2 });
  // Importing twice is refused with a clear message and exit code 2.
  const again = await flowstore(["import", "--data", b, "--in", file]);
  expect(again.code).toBe(2);
  expect(again.err).toContain("not empty");
  // A tampered export imports, and verify then names the broken chain (exit 1).
  const lines = (await readFile(file, "utf8")).split("\n");
  const i = lines.findIndex((l) => l.startsWith('{"k"') && Buffer.from(JSON.parse(l).v, "base64").toString().includes('"project.created"'));
  const event = JSON.parse(Buffer.from(JSON.parse(lines[i]!).v, "base64").toString());
  event.payload.data.displayName = "forged";
  lines[i] = JSON.stringify({ k: JSON.parse(lines[i]!).k, v: Buffer.from(JSON.stringify(event)).toString("base64") });
  await writeFile(file, lines.join("\n"));
  const c = join(dir, "c");
  expect((await flowstore(["import", "--data", c, "--in", file])).code).toBe(0);
  const broken = await flowstore(["verify", "--data", c]);
  expect(broken.code).toBe(1);
  expect(broken.out).toContain('"firstBad":{"seq":1');
}, 120_000);
