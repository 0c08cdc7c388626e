import { SYSTEM } from "../../src/access/actor.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { randomBytes, randomUUID } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { UnavailableError, ValidationError } from "../../src/errors.js";
import { KEY_FILE, TokenCipher } from "../../src/process-data/crypto.js";
import { keys } from "../../src/process-data/keys.js";
import { layout } from "../../src/process-data/layout.js";
import { openProcessData } from "../../src/process-data/service.js";
import { forEachBackend, type BackendHandle } from "../conformance/backends.js";
import { rawDump, service } from "./helpers.js";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";

const FS = "bpm-form-submissions";

forEachBackend((backend) => {
  let h: BackendHandle;
  let dir: string;
  beforeEach(async () => {
    h = await backend.create();
    dir = await makeTempDir("pd");
  });
  afterEach(async () => {
    await h.destroy();
    await removeTempDir(dir);
  });

  it("never stores an access token in plaintext, anywhere in the backend", async () => {
    const pd = await service(h.kv);
    const token = `eyJhbGciOiJSUzI1NiJ9.${randomBytes(24).toString("base64url")}.sig-${randomUUID()}`;
    const pid = randomUUID();
    await pd.put(SYSTEM, FS, keys.task(pid, "t"), { accessToken: token, data: { ok: true } }, { ttlMs: 60_000 });
    await pd.put(SYSTEM, FS, keys.signature(pid, randomUUID()), { accessToken: token, signature: "s" });
    const sf = await pd.createStartForm(SYSTEM, "def", { accessToken: token });

    const raw = await rawDump(h.kv);
    expect(raw.length).toBeGreaterThanOrEqual(6);
    const needles = [token, Buffer.from(token).toString("base64"), Buffer.from(token).toString("hex"), token.split(".")[1]!];
    for (const { entry } of raw) {
      for (const n of needles) {
        expect(entry.value.includes(Buffer.from(n))).toBe(false);
        expect(entry.keyBytes.includes(Buffer.from(n))).toBe(false);
      }
    }
    // It is there, sealed, and the single-record get opens it.
    expect((await pd.get(SYSTEM, FS, sf.key)).fields).toMatchObject({ accessToken: token });
    expect((await pd.list(SYSTEM, FS)).items.map((i) => JSON.stringify(i)).join()).not.toContain(token);
  });

  it("a sealed token moved to another record, or read with another key, does not open", async () => {
    const pd = await service(h.kv);
    const pid = randomUUID();
    const a = keys.task(pid, "a");
    const b = keys.task(pid, "b");
    await pd.put(SYSTEM, FS, a, { accessToken: "secret-a" });
    await pd.put(SYSTEM, FS, b, { data: 1 });
    const stored = await h.kv.get(layout.instance(pid), layout.record(a));
    await h.kv.commit(layout.instance(pid), [{ type: "put", key: layout.record(b), value: stored!.value }]);
    await expect(pd.get(SYSTEM, FS, b)).rejects.toBeInstanceOf(UnavailableError);
    const other = await service(h.kv);
    await expect(other.get(SYSTEM, FS, a)).rejects.toThrow(/sealed with key/);
    // Lists do not open tokens, so they still work with the wrong key.
    expect((await other.listByProcessInstance(SYSTEM, pid)).items).toHaveLength(2);
  });

  it("generates a key file in the data directory once and reuses it", async () => {
    const pd = await openProcessData(h.kv, { dataDir: dir });
    const k = keys.task(randomUUID(), "t");
    await pd.put(SYSTEM, FS, k, { accessToken: "tok" });
    const file = join(dir, KEY_FILE);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const first = await readFile(file, "utf8");
    const again = await openProcessData(h.kv, { dataDir: dir });
    expect((await again.get(SYSTEM, FS, k)).fields).toMatchObject({ accessToken: "tok" });
    expect(await readFile(file, "utf8")).toBe(first);
    const fromConfig = await openProcessData(h.kv, { encryptionKey: first.trim() });
    expect((await fromConfig.get(SYSTEM, FS, k)).fields).toMatchObject({ accessToken: "tok" });
  });
});

describe("token cipher configuration", () => {
  it("refuses a missing or short key with a validation error", async () => {
    await expect(TokenCipher.fromConfig({})).rejects.toBeInstanceOf(ValidationError);
    await expect(TokenCipher.fromConfig({ encryptionKey: randomBytes(16) })).rejects.toBeInstanceOf(ValidationError);
  });

  it("concurrent openers of one directory agree on one key", async () => {
    const dir = await makeTempDir("pd");
    try {
      const ciphers = await Promise.all(Array.from({ length: 8 }, () => TokenCipher.fromConfig({ dataDir: dir })));
      expect(new Set(ciphers.map((c) => c.keyId)).size).toBe(1);
    } finally {
      await removeTempDir(dir);
    }
  });
});
