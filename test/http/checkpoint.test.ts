/**
 * Signed checkpoints over real HTTP and the real `flowstore verify --checkpoint` process, on LMDB: a
 * checkpoint verifies while history extends it; a rewritten history (re-chained, head and ledger
 * rewritten, so the chain alone looks sound) fails naming the rewritten seq; a forged one is refused.
 */
import { spawn } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { readFile, rm, stat, writeFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { FlowstoreClient } from "../../src/client/index.js";
import { projectRef } from "../../src/workflow/commands.js";
import { openFlowstore, type Flowstore } from "../../src/compose/index.js";
import { buildServer } from "../../src/http/server.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { CHECKPOINT_KEY_FILE, Checkpoints, loadCheckpointKey } from "../../src/resources/audit/checkpoint.js";
import { raw, ROOT_PASSWORD, SECRET } from "./harness.js";
import { rewriteFrom } from "../support/rechain.js";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";
import { CLI } from "../cli/spawn.js";

const ROOT = resolve(import.meta.dirname, "../..");
const P = ["project", "p1"];

/** Runs the real CLI; its stdout and exit code. */
const flowstore = (args: string[]): Promise<{ code: number | null; out: string }> =>
  new Promise((res) => {
    const child = spawn(process.execPath, [...CLI, ...args], {
      cwd: ROOT,
      env: { ...process.env, FLOWSTORE_STORE: "", FLOWSTORE_DATA: "" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    const out: Buffer[] = [];
    child.stdout.on("data", (d: Buffer) => out.push(d));
    child.on("exit", (code) => res({ code, out: Buffer.concat(out).toString("utf8") }));
  });

let dir: string;
let kv: LmdbKv;
let fs: Flowstore;
beforeEach(async () => {
  dir = await makeTempDir("checkpoint");
  kv = LmdbKv.open(dir);
  fs = await openFlowstore(kv, { checkpointKey: { dataDir: dir } });
});
afterEach(async () => {
  await fs.close();
  await kv.close();
  await removeTempDir(dir);
});

it("serves a signed checkpoint to holders of project.viewHistory; verify --checkpoint proves history extends it and names a rewritten seq", async () => {
  const app = await buildServer(fs, { tokenSecret: SECRET, logger: false });
  await fs.identity.ensureRoot(ROOT_PASSWORD);
  await app.listen({ host: "127.0.0.1", port: 0 });
  try {
    const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    const root = new FlowstoreClient({ baseUrl: base });
    await root.login("root", ROOT_PASSWORD);
    await root.users.create({ id: "jane", displayName: "jane", password: "jane password" });
    const jane = new FlowstoreClient({ baseUrl: base });
    await jane.login("jane", "jane password");
    const auth = (c: FlowstoreClient) => ({ authorization: `Bearer ${c.token!}` });
    const json = { "content-type": "application/json" };
    expect((await raw(base, "POST", "/api/v1/projects", { headers: { ...auth(root), ...json }, body: JSON.stringify({ id: "p1", displayName: "School" }) })).status).toBe(201);
    for (const name of ["A", "B", "C"]) {
      const r = await raw(base, "PATCH", "/api/v1/projects/p1", { headers: { ...auth(root), ...json }, body: JSON.stringify({ description: name }) });
      expect(r.status).toBe(200);
    }
    const denied = await raw(base, "GET", "/api/v1/projects/p1/checkpoint", { headers: auth(jane) });
    expect([403, 404]).toContain(denied.status);
    const got = await raw(base, "GET", "/api/v1/projects/p1/checkpoint", { headers: auth(root) });
    expect(got.status).toBe(200);
    const checkpoint = got.body;
    expect(checkpoint).toMatchObject({ partition: P, seq: 4 });
    expect((await stat(join(dir, CHECKPOINT_KEY_FILE))).mode & 0o777).toBe(0o600);

    // History extends it: one more event, and the checkpoint still verifies (full and incremental).
    expect((await raw(base, "PATCH", "/api/v1/projects/p1", { headers: { ...auth(root), ...json }, body: JSON.stringify({ description: "D" }) })).status).toBe(200);
    expect(await fs.verifyCheckpoint(checkpoint, { trustedFingerprint: checkpoint.keyFingerprint })).toMatchObject({ ok: true, checked: 5 });
    expect(await fs.verifyCheckpoint(checkpoint, { trustedFingerprint: checkpoint.keyFingerprint, incremental: true })).toMatchObject({ ok: true, checked: 2 });
    // Without a trusted key the library refuses rather than trusting the checkpoint's own (issue 29, finding 13).
    expect((await fs.verifyCheckpoint(checkpoint)).firstBad!.reason).toContain("no trusted key");

    // A forged checkpoint (a seq changed, a signature by another key) is refused.
    expect((await fs.verifyCheckpoint({ ...checkpoint, seq: 3 }, { trustedFingerprint: checkpoint.keyFingerprint })).firstBad!.reason).toContain("signature does not verify");
    const file = join(dir, "checkpoint.json");
    await writeFile(file, JSON.stringify({ ...checkpoint, hash: "0".repeat(64) }));
    await app.close();
    await fs.close();
    await kv.close();
    const forged = await flowstore(["verify", "--data", dir, "--checkpoint", file]);
    expect(forged.code).toBe(1);
    expect(forged.out).toContain("signature does not verify");

    // History rewritten from event 3 on (re-chained): the chain alone is sound, the checkpoint is not.
    kv = LmdbKv.open(dir);
    fs = await openFlowstore(kv, { checkpointKey: { dataDir: dir } });
    await rewriteFrom(kv, P, 3, (e) => {
      e.at = "2020-01-01T00:00:00.000Z";
    });
    await writeFile(file, JSON.stringify(checkpoint));
    await fs.close();
    await kv.close();
    const rewritten = await flowstore(["verify", "--data", dir, "--checkpoint", file]);
    expect(rewritten.code).toBe(1);
    expect(JSON.parse(rewritten.out)).toMatchObject({ ok: false, firstBad: { seq: 4 } });
    expect(rewritten.out).toContain("differs from the checkpoint");
  } finally {
    await app.close().catch(() => undefined);
    kv = LmdbKv.open(dir);
    fs = await openFlowstore(kv);
  }
}, 120_000);

it("verify --checkpoint refuses a checkpoint signed by any key when none is trusted (no key in --data, no --trust: the fleet layout)", async () => {
  await fs.identity.ensureRoot(ROOT_PASSWORD);
  await fs.resources.global.grant(SYSTEM, "global.createProject", "root");
  await fs.workflow.createProject(userActor("root", []), { id: "p1", displayName: "School" });
  // Someone signs the head with a key of their own; the data directory holds no checkpoint key.
  const { privateKey } = generateKeyPairSync("ed25519");
  const forger = new Checkpoints(kv, await loadCheckpointKey({ env: privateKey.export({ type: "pkcs8", format: "pem" }).toString() }));
  const checkpoint = await forger.take(P);
  const file = join(dir, "checkpoint.json");
  await writeFile(file, JSON.stringify(checkpoint));
  await fs.close();
  await kv.close();
  await rm(join(dir, CHECKPOINT_KEY_FILE));
  const refused = await flowstore(["verify", "--data", dir, "--checkpoint", file]);
  expect(refused.code).toBe(1);
  expect(refused.out).toContain("no trusted key");
  // Pinned, the very key is accepted.
  const trusted = await flowstore(["verify", "--data", dir, "--checkpoint", file, "--trust", checkpoint.keyFingerprint]);
  expect(trusted.code).toBe(0);
  kv = LmdbKv.open(dir);
  fs = await openFlowstore(kv);
}, 120_000);

it("verify --incremental records the verified heads, next checks only the chain after them, and fails on history rewritten before them", async () => {
  await fs.identity.ensureRoot(ROOT_PASSWORD);
  await fs.resources.global.grant(SYSTEM, "global.createProject", "root");
  const root = userActor("root", []);
  await fs.workflow.createProject(root, { id: "p1", displayName: "School" });
  for (const d of ["A", "B"]) await fs.workflow.update(root, projectRef("p1"), { description: d });
  await fs.close();
  await kv.close();
  const heads = join(dir, "verified-heads.json");
  const run = async () => {
    const r = await flowstore(["verify", "--data", dir, "--incremental", heads]);
    return { code: r.code, result: JSON.parse(r.out.trim().split("\n").at(-1)!) as { ok: boolean; incremental: number; events: number } };
  };

  // First run: no heads yet, every partition in full; the file (0600) then holds p1's head.
  const first = await run();
  expect(first).toMatchObject({ code: 0, result: { ok: true, incremental: 0 } });
  const recorded = JSON.parse(await readFile(heads, "utf8")) as { heads: Record<string, { seq: number }> };
  expect(recorded.heads[JSON.stringify(P)]).toMatchObject({ seq: 3 });
  expect((await stat(heads)).mode & 0o777).toBe(0o600);

  // Two more events: the next run checks p1 from its recorded head (seq 3) on, 3 events, and records seq 5.
  kv = LmdbKv.open(dir);
  fs = await openFlowstore(kv, { checkpointKey: { dataDir: dir } });
  for (const d of ["C", "D"]) await fs.workflow.update(root, projectRef("p1"), { description: d });
  await fs.close();
  await kv.close();
  const second = await run();
  expect(second.code).toBe(0);
  expect(second.result.ok).toBe(true);
  expect(second.result.incremental).toBeGreaterThanOrEqual(1);
  expect((JSON.parse(await readFile(heads, "utf8")) as typeof recorded).heads[JSON.stringify(P)]).toMatchObject({ seq: 5 });

  // History rewritten from event 2 on (re-chained, head and ledger too): the recorded head no longer holds.
  kv = LmdbKv.open(dir);
  fs = await openFlowstore(kv, { checkpointKey: { dataDir: dir } });
  await rewriteFrom(kv, P, 2, (e) => {
    e.actor = "mallory";
  });
  await fs.close();
  await kv.close();
  const third = await flowstore(["verify", "--data", dir, "--incremental", heads]);
  expect(third.code).toBe(1);
  expect(third.out).toContain("differs from the checkpoint");
  // The failed partition keeps the head it last verified at.
  expect((JSON.parse(await readFile(heads, "utf8")) as typeof recorded).heads[JSON.stringify(P)]).toMatchObject({ seq: 5 });
  kv = LmdbKv.open(dir);
  fs = await openFlowstore(kv);
}, 120_000);
