/**
 * A restore (TruBudget's system.restoreBackup) killed midway, with the real `flowstore serve` on LMDB:
 * the server is SIGKILLed once it logs that the old content is dropped and the backup is being imported
 * (a backup of some hundred projects, so the import is still under way). The store then holds the
 * unfinished import: `serve` refuses it, naming `import --resume` and the export the restore kept in the
 * data directory; `import --resume --in <that export>` finishes it, `verify` passes, and the store holds
 * the backup's content byte for byte (a clean import of it), not what was written after the backup.
 * A restore that fails after its import, before the credentials are kept and the fence opens, is
 * refused by `serve` too, and finished by `import --resume` (its epoch, its kept credentials).
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { gunzipSync } from "node:zlib";
import { expect, it } from "vitest";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { importStore, pendingRestore, unfinishedImport } from "../../src/compose/transfer.js";
import { listEpochs } from "../../src/compose/epochs.js";
import { CONTENT_KINDS, IMPORT_MARKER } from "../../src/compose/kinds.js";
import { encode } from "../../src/kv/tuple.js";
import { openFlowstore } from "../../src/compose/index.js";
import type { Op, Partition } from "../../src/kv/contract.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { dumpAll } from "../setup/dump.js";
import { freePort } from "../support/ports.js";
import { eventually, GiveUp } from "../support/eventually.js";
import { tempDir } from "../support/temp-dir.js";
import { run, waitHealthy, type Run } from "./spawn.js";

const PASSWORD = "root password 123";
const PROJECTS = 300;

/** Waits (bounded) until the process has written `text`; fails when it exits first. */
async function logged(r: Run, text: string): Promise<void> {
  let exited = false;
  void r.exit.then(() => (exited = true));
  await eventually(
    () => {
      if (r.out().includes(text) || r.err().includes(text)) return true;
      if (exited) throw new GiveUp(`the server exited first`);
      return false;
    },
    { what: `the server to log ${JSON.stringify(text)}`, timeoutMs: 60_000, intervalMs: 10 },
  ).catch((err: Error) => {
    throw new Error(`${err.message}: ${r.err()} ${r.out().slice(-2000)}`);
  });
}

async function finished(r: Run): Promise<{ code: number | null; out: string; err: string }> {
  const { code } = await r.exit;
  return { code, out: r.out(), err: r.err() };
}

const tmp = tempDir("restore-kill", "each");

it("killed while it imports: serve refuses, import --resume finishes the backup's content, verify passes", async () => {
  const dir = tmp();
  const data = join(dir, "data");
  const seed = await openFlowstore(`lmdb:${data}`, { processData: { dataDir: data } });
  await seed.identity.ensureRoot(PASSWORD);
  const root = userActor("root");
  for (let i = 0; i < PROJECTS; i += 25) {
    await Promise.all(Array.from({ length: 25 }, (_, j) => seed.workflow.createProject(root, { id: `p${i + j}`, displayName: `project ${i + j}` })));
  }
  await seed.close();

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = { FLOWSTORE_ROOT_PASSWORD: PASSWORD, FLOWSTORE_LOG_LEVEL: "info" };
  const server = run(["serve", "--data", data, "--port", String(port), "--trubudget-api", "--organization", "KfW"], env);
  let backup: Buffer;
  try {
    await waitHealthy(base, server);
    const post = (intent: string, body: unknown, token?: string) =>
      fetch(`${base}/api/${intent}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify({ apiVersion: "1.0", data: body }),
      });
    const login = await post("user.authenticate", { user: { id: "root", password: PASSWORD } });
    expect(login.status).toBe(200);
    const token = ((await login.json()) as { data: { user: { token: string } } }).data.user.token;
    const res = await fetch(`${base}/api/system.createBackup`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    backup = Buffer.from(await res.arrayBuffer());
    // Written after the backup: the restore takes it away (root creates no projects on TruBudget's API: a 412).
    expect((await post("global.createUser", { user: { id: "bob", displayName: "bob", organization: "KfW", password: "bob password 123" } }, token)).status).toBe(200);

    const restoring = fetch(`${base}/api/system.restoreBackup`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/gzip" },
      body: backup,
    }).catch(() => null);
    await logged(server, "importing the backup");
    server.child.kill("SIGKILL");
    await server.exit;
    await restoring;
  } finally {
    server.child.kill("SIGKILL");
  }

  // The export the restore read is kept in the data directory, and the store says so.
  const kept = (await readdir(data)).filter((f) => f.startsWith("restore-") && f.endsWith(".ndjson"));
  expect(kept).toHaveLength(1);
  const file = join(data, kept[0]!);
  const refused = await finished(run(["serve", "--data", data, "--port", String(port)], env));
  expect(refused.code, refused.err).toBe(3);
  expect(refused.err).toMatch(/unfinished import.*flowstore import --resume/);
  expect(refused.err).toContain(file);

  const resumed = await finished(run(["import", "--resume", "--in", file, "--data", data]));
  expect(resumed.code, resumed.err).toBe(0);
  const verified = await finished(run(["verify", "--data", data]));
  expect(verified.code, verified.err + verified.out).toBe(0);
  expect(JSON.parse(verified.out.trim().split("\n").at(-1)!)).toMatchObject({ ok: true });

  // Byte for byte the backup's content: a clean import of it.
  const clean = LmdbKv.open(join(dir, "clean"));
  await importStore(clean, Readable.from([gunzipSync(backup!)]));
  const expected = await dumpAll(clean, CONTENT_KINDS);
  await clean.close();
  const restored = LmdbKv.open(data);
  try {
    expect(await unfinishedImport(restored)).toBeNull();
    // The resume finished the restore: its epoch is recorded, the replaced history kept, the fence open.
    expect((await listEpochs(restored)).map((e) => e.epoch)).toEqual([1]);
    expect(JSON.parse((await restored.get(["fence"], ["state"]))!.value.toString("utf8"))).toMatchObject({ shut: null, epoch: 1, tokenEpoch: 1 });
    // The content (what a restore replaces; the kinds kept on restore aside) is the backup's.
    // A backup over HTTP holds no password hash; the restore gave root the one it had before.
    const rootPassword = `["identity"] ${encode(["password", "root"]).toString("hex")}=`;
    const got = await dumpAll(restored, CONTENT_KINDS);
    expect(expected.some((l) => l.startsWith(rootPassword))).toBe(false);
    expect(got.filter((l) => l.startsWith(rootPassword))).toHaveLength(1);
    const content = got.filter((l) => !l.startsWith(rootPassword));
    expect(content.length).toBe(expected.length);
    expect(content).toEqual(expected);
  } finally {
    await restored.close();
  }
}, 300_000);

it("failed after its import, before the credentials are kept and the fence opens: serve refuses, import --resume finishes that restore", async () => {
  const dir = tmp();
  const data = join(dir, "data");
  // The store over a backend whose identity commits fail once a restore's import has ended (its marker
  // deleted): the restore's last steps, keeping the credentials and opening the fence, do not happen.
  const lmdb = LmdbKv.open(data);
  let restoring = false;
  let armed = false;
  const kv = new Proxy(lmdb, {
    get(target, name) {
      if (name === "commit")
        return async (partition: Partition, ops: readonly Op[]) => {
          if (armed && partition[0] === "identity") throw new Error("the disk failed");
          const done = await target.commit(partition, ops);
          if (restoring && partition[0] === IMPORT_MARKER.partition[0] && ops.some((o) => o.type === "delete" && encode(o.key).equals(encode(IMPORT_MARKER.key)))) armed = true;
          return done;
        };
      const value = Reflect.get(target, name, target) as unknown;
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const fs = await openFlowstore(kv, { processData: { dataDir: data } });
  await fs.identity.ensureRoot(PASSWORD);
  await fs.identity.createUser(SYSTEM, { id: "bob", displayName: "Bob", password: "bob's first password" });
  await fs.workflow.createProject(SYSTEM, { id: "kept", displayName: "in the backup" });
  const backup = await fs.exportStore(SYSTEM);
  const chunks: Buffer[] = [];
  for await (const c of backup.stream) chunks.push(c as Buffer);
  await backup.done;
  // After the backup: bob's password changes (a restore keeps it), a project is written (a restore replaces it).
  await fs.identity.setPassword(SYSTEM, "bob", "bob's second password");
  await fs.workflow.createProject(SYSTEM, { id: "later", displayName: "after the backup" });
  const staged = await fs.stageRestore(SYSTEM, Readable.from([Buffer.concat(chunks)]));
  restoring = true;
  await expect(staged.apply()).rejects.toThrow(/after it began to replace the store/);
  await fs.close();
  await lmdb.close();

  const port = await freePort();
  const refused = await finished(run(["serve", "--data", data, "--port", String(port)], { FLOWSTORE_ROOT_PASSWORD: PASSWORD }));
  expect(refused.code, refused.err).toBe(3);
  expect(refused.err).toMatch(/unfinished import/);

  const resumed = await finished(run(["import", "--resume", "--data", data]));
  expect(resumed.code, resumed.err).toBe(0);
  expect(resumed.err).toMatch(/finished now \(epoch 1\)/);
  const verified = await finished(run(["verify", "--data", data]));
  expect(verified.code, verified.err + verified.out).toBe(0);

  const after = await openFlowstore(`lmdb:${data}`, { processData: { dataDir: data } });
  try {
    expect(await pendingRestore(after.kv)).toBeNull();
    expect(await after.fence.read()).toMatchObject({ shut: null, epoch: 1, tokenEpoch: 1 });
    expect((await listEpochs(after.kv)).map((e) => e.epoch)).toEqual([1]);
    // The backup's content, with the credentials of the moment the restore began.
    expect((await after.workflow.listProjects(SYSTEM)).items.map((p) => (JSON.parse(p.toString("utf8")) as { id: string }).id)).toEqual(["kept"]);
    await expect(after.identity.authenticate("bob", "bob's second password")).resolves.toMatchObject({ id: "bob" });
    await expect(after.identity.authenticate("bob", "bob's first password")).rejects.toThrow();
  } finally {
    await after.close();
  }
}, 300_000);
