/**
 * Moving a store with its keys, through the real `flowstore` process: export names the keys the target
 * needs; a store imported without them refuses to start (exit 3, the key named) instead of answering
 * 503 later; `keys export|import` carries them (never silently replacing a different key); `keys rotate`
 * re-seals every access token under a new key and replaces the JWT secret.
 */
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { SYSTEM } from "../../src/access/actor.js";
import { ConfigurationError } from "../../src/errors.js";
import { openFlowstore } from "../../src/compose/index.js";
import { loadTokenSecret, SECRET_FILE } from "../../src/identity/index.js";
import { KEY_FILE, TokenCipher } from "../../src/process-data/index.js";
import { freePort } from "../support/ports.js";
import { run } from "./spawn.js";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";

const FS = "bpm-form-submissions";
const KEY = "process/pi-1/task/approve";
const TOKEN = "plain-access-token-0123456789";

let dir: string;
let a: string;
let b: string;
beforeAll(async () => {
  dir = await makeTempDir("keys");
  a = join(dir, "a");
  b = join(dir, "b");
});
afterAll(async () => removeTempDir(dir));

const cli = async (args: string[], env: Record<string, string> = {}) => {
  const r = run(args, { FLOWSTORE_PROCESS_DATA_KEY: "", FLOWSTORE_DATA: "", ...env });
  const { code } = await r.exit;
  return { code, out: r.out(), err: r.err() };
};

/** The token stored at KEY, read through a store opened as a server opens it (key from the data directory). */
async function tokenIn(data: string): Promise<unknown> {
  const store = await openFlowstore(`lmdb:${data}`, { processData: { dataDir: data }, create: false });
  try {
    return (await store.processData.get(SYSTEM, FS, KEY)).fields.accessToken;
  } finally {
    await store.close();
  }
}

const keyIdOf = async (data: string) => (await TokenCipher.fromConfig({ dataDir: data })).keyId;

it("moves a store and its keys, refuses a store opened with the wrong key at start, and rotates the keys", async () => {
  // A store whose process data holds a sealed access token, as a server leaves it.
  const source = await openFlowstore(`lmdb:${a}`, { processData: { dataDir: a } });
  await source.processData.put(SYSTEM, FS, KEY, { accessToken: TOKEN, data: { ok: true } });
  await source.close();
  await loadTokenSecret({ dataDir: a });
  const idA = await keyIdOf(a);

  // export says which keys the target needs, and how to carry them
  const file = join(dir, "export.ndjson");
  const exported = await cli(["export", "--data", a, "--out", file]);
  expect(exported.code, exported.err).toBe(0);
  expect(exported.err).toContain(join(a, KEY_FILE));
  expect(exported.err).toContain(`sealed with key id ${idA}`);
  expect(exported.err).toContain(join(a, SECRET_FILE));
  expect(exported.err).toContain("flowstore keys export");
  expect((await cli(["import", "--data", b, "--in", file])).code).toBe(0);

  // without the keys the target refuses to start: exit 3, naming both keys, before it listens
  const port = await freePort();
  const serve = await cli(["serve", "--data", b, "--port", String(port)]);
  expect(serve.code).toBe(3);
  expect(serve.err).toContain(`sealed with key ${idA}`);
  expect(serve.err).toContain(`the configured key is ${await keyIdOf(b)}`);
  await expect(fetch(`http://127.0.0.1:${port}/health`)).rejects.toThrow();

  // keys export (0600) → keys import: a different key already there is not replaced without --force
  const bundle = join(dir, "keys.json");
  expect((await cli(["keys", "export", "--data", a, "--out", bundle])).code).toBe(0);
  expect((await stat(bundle)).mode & 0o777).toBe(0o600);
  const refused = await cli(["keys", "import", "--data", b, "--in", bundle]);
  expect(refused.code).toBe(3);
  expect(refused.err).toMatch(new RegExp(`already holds other keys \\(${KEY_FILE}\\).*--force`));
  const imported = await cli(["keys", "import", "--data", b, "--in", bundle, "--force"]);
  expect(imported.code, imported.err).toBe(0);
  expect(JSON.parse(imported.out)).toMatchObject({ written: [KEY_FILE, SECRET_FILE] });
  expect(await readFile(join(b, SECRET_FILE), "utf8")).toBe(await readFile(join(a, SECRET_FILE), "utf8"));
  expect(await tokenIn(b)).toBe(TOKEN);

  // keys rotate: every token re-sealed under a new key, a new JWT secret; the old key is refused at open
  const oldKey = (await readFile(join(b, KEY_FILE), "utf8")).trim();
  const oldSecret = await readFile(join(b, SECRET_FILE), "utf8");
  const rotated = await cli(["keys", "rotate", "--data", b]);
  expect(rotated.code, rotated.err).toBe(0);
  const answer = JSON.parse(rotated.out) as { processDataKey: { from: string; to: string; resealed: number } };
  expect(answer.processDataKey).toEqual({ from: idA, to: await keyIdOf(b), resealed: 1 });
  expect(answer.processDataKey.to).not.toBe(idA);
  expect(await readFile(join(b, SECRET_FILE), "utf8")).not.toBe(oldSecret);
  expect((await stat(join(b, KEY_FILE))).mode & 0o777).toBe(0o600);
  expect(await tokenIn(b)).toBe(TOKEN);
  await expect(openFlowstore(`lmdb:${b}`, { processData: { encryptionKey: oldKey } })).rejects.toBeInstanceOf(ConfigurationError);
  expect((await cli(["verify", "--data", b])).code).toBe(0);
}, 240_000);
