/**
 * Issue 16 finding 10: files holding secrets were world-readable (`flowstore export --out` 0644 with
 * password hashes, LMDB's data.mdb 0644). The data directory is 0700; key, secret and export files and
 * LMDB's files are 0600, files and directories that already existed with looser modes included.
 */
import { spawn } from "node:child_process";
import { chmod, mkdir, stat, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { loadTokenSecret, SECRET_FILE } from "../../src/identity/secret.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { KEY_FILE, TokenCipher } from "../../src/process-data/crypto.js";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";
import { CLI } from "./spawn.js";

const ROOT = resolve(import.meta.dirname, "../..");
const mode = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;

let dir: string;
let umask: number;
beforeEach(async () => {
  dir = await makeTempDir("modes");
  umask = process.umask(0o022); // the common default, under which files are created 0644
});
afterEach(async () => {
  process.umask(umask);
  await removeTempDir(dir);
});

it("LMDB: the data directory is 0700, data.mdb and lock.mdb 0600, an existing looser directory tightened", async () => {
  const data = join(dir, "data");
  await mkdir(data, { mode: 0o755 });
  await chmod(data, 0o755);
  const kv = LmdbKv.open(data);
  try {
    expect(await mode(data)).toBe(0o700);
    expect(await mode(join(data, "data.mdb"))).toBe(0o600);
    expect(await mode(join(data, "lock.mdb"))).toBe(0o600);
  } finally {
    await kv.close();
  }
});

it("the token secret and the process-data key are 0600 in a 0700 directory", async () => {
  const data = join(dir, "fresh");
  await loadTokenSecret({ dataDir: data });
  expect(await mode(data)).toBe(0o700);
  expect(await mode(join(data, SECRET_FILE))).toBe(0o600);
  await TokenCipher.fromConfig({ dataDir: data });
  expect(await mode(join(data, KEY_FILE))).toBe(0o600);
});

it("`flowstore export --out` writes 0600, over an existing 0644 file too", async () => {
  const file = join(dir, "export.ndjson");
  await writeFile(file, "old\n", { mode: 0o644 });
  await LmdbKv.open(join(dir, "a")).close(); // export reads an existing store only
  const code = await new Promise<number | null>((res) => {
    const child = spawn(process.execPath, [...CLI, "export", "--data", join(dir, "a"), "--out", file], {
      cwd: ROOT,
      env: { ...process.env, FLOWSTORE_STORE: "", FLOWSTORE_DATA: "" },
      stdio: "ignore",
    });
    child.on("exit", res);
  });
  expect(code).toBe(0);
  expect(await mode(file)).toBe(0o600);
});
