/**
 * The one key-file loader (src/private-files.ts): a missing key file is created 0600 in a 0700 directory,
 * racing creators (concurrent calls and separate processes) all get the winner's key, and an existing key
 * is read without writing anything (issue 29, finding 11: a start on a full disk).
 */
import { spawn } from "node:child_process";
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { loadOrCreatePrivateFile } from "../src/private-files.js";

const ROOT = resolve(import.meta.dirname, "..");
const mode = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;

let dir: string;
let umask: number;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "flowstore-private-files-"));
  umask = process.umask(0o022);
});
afterEach(async () => {
  process.umask(umask);
  await rm(dir, { recursive: true, force: true });
});

it("creates a missing key file 0600 in a 0700 directory and leaves no temp file", async () => {
  const file = join(dir, "keys", "k");
  const bytes = await loadOrCreatePrivateFile(file, () => "secret\n");
  expect(bytes.toString()).toBe("secret\n");
  expect(await mode(join(dir, "keys"))).toBe(0o700);
  expect(await mode(file)).toBe(0o600);
  expect(await readdir(join(dir, "keys"))).toEqual(["k"]);
});

it("reads an existing key without calling the generator, and tightens a looser one to 0600", async () => {
  const file = join(dir, "k");
  await writeFile(file, "kept\n", { mode: 0o644 });
  await chmod(file, 0o644);
  const bytes = await loadOrCreatePrivateFile(file, () => {
    throw new Error("generated although the key exists");
  });
  expect(bytes.toString()).toBe("kept\n");
  expect(await mode(file)).toBe(0o600);
});

it("concurrent calls all get the same key, generated once per call at most, and the file holds it", async () => {
  const file = join(dir, "k");
  let n = 0;
  const keys = await Promise.all(Array.from({ length: 20 }, () => loadOrCreatePrivateFile(file, () => `key ${n++}\n`)));
  expect(new Set(keys.map((k) => k.toString())).size).toBe(1);
  expect(keys[0]!.toString()).toBe(await readFile(file, "utf8"));
  expect(await readdir(dir)).toEqual(["k"]);
});

/** A node process that loads `file` with a random key and prints what it got. */
function loadInProcess(file: string, shell = ""): Promise<{ code: number | null; out: string; err: string }> {
  const script = `import { loadOrCreatePrivateFile } from ${JSON.stringify(join(ROOT, "src/private-files.ts"))};
import { randomBytes } from "node:crypto";
const key = await loadOrCreatePrivateFile(${JSON.stringify(file)}, () => randomBytes(32).toString("hex"));
process.stdout.write(key.toString());`;
  const node = [process.execPath, "--import", "tsx", "--input-type=module", "-e", script];
  const child = shell
    ? spawn("bash", ["-c", `${shell}; exec "$0" "$@"`, ...node], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] })
    : spawn(node[0]!, node.slice(1), { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  return new Promise((res) => child.on("exit", (code) => res({ code, out, err })));
}

it("racing processes all read the winner's key", async () => {
  const file = join(dir, "k");
  const runs = await Promise.all([1, 2, 3, 4].map(() => loadInProcess(file)));
  for (const r of runs) expect(r.code, r.err).toBe(0);
  const winner = await readFile(file, "utf8");
  expect(winner).toMatch(/^[0-9a-f]{64}$/);
  expect(runs.map((r) => r.out)).toEqual([winner, winner, winner, winner]);
  expect(await readdir(dir)).toEqual(["k"]);
});

it("with no space to write (ulimit -f 0), an existing key loads and a missing one fails", async () => {
  await mkdir(join(dir, "d"));
  const file = join(dir, "d", "k");
  await writeFile(file, "a".repeat(64));
  const full = "trap '' XFSZ; ulimit -f 0";
  const existing = await loadInProcess(file, full);
  expect(existing.code, existing.err).toBe(0);
  expect(existing.out).toBe("a".repeat(64));
  const missing = await loadInProcess(join(dir, "d", "other"), full);
  expect(missing.code).not.toBe(0);
});
