/**
 * A restore cannot erase history (issue 29, findings 2 and 9), through a real server on LMDB with
 * TruBudget's backup routes:
 *
 * - the attack: a backup edited to drop one project (its partition, its ledger entry, every index entry
 *   naming it, the end counts fixed) is either refused as forged (400, nothing changed) or restored as a
 *   new epoch whose replaced history still holds the project and verifies, with the epoch naming who
 *   restored, when and which backup (its SHA-256), in every `verify` after;
 * - a backup whose history does not verify against its own chains is refused (400) and changes nothing:
 *   no epoch, the fence open again (writes go on);
 * - sessions: an access token and a refresh token from before the backup, revoked after it (logout),
 *   and a token issued after it, all fail after the restore (401); a new log in works;
 * - credentials: a backup taken over HTTP holds no password hash and no session; a restore (of such a
 *   backup, or of an operator's export that holds hashes) keeps every user's current password.
 */
import { createHash } from "node:crypto";
import { buffer } from "node:stream/consumers";
import { gunzipSync, gzipSync } from "node:zlib";
import { afterEach, beforeEach, expect, it } from "vitest";
import { listEpochs, replacedView } from "../../src/compose/epochs.js";
import { SYSTEM } from "../../src/access/actor.js";
import { scanAll } from "../../src/kv/contract.js";
import { decode } from "../../src/kv/tuple.js";
import { backends, type BackendHandle } from "../conformance/backends.js";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";
import { raw } from "./harness.js";
import { startTruBudget, TB, type TbRunning } from "./trubudget/harness.js";

const API = "/api/v1";
const lmdb = backends.find((b) => b.name === "lmdb")!;

let h: BackendHandle;
let s: TbRunning;
let dir: string;

const call = (token: string, method: string, path: string, body?: unknown) =>
  raw(s.base, method, API + path, {
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

async function backup(): Promise<Buffer> {
  const res = await fetch(`${s.base}${TB}/system.createBackup`, { headers: { authorization: `Bearer ${s.rootToken}` } });
  expect(res.status).toBe(200);
  return gunzipSync(Buffer.from(await res.arrayBuffer()));
}

const restore = (ndjson: Buffer) =>
  raw(s.base, "POST", `${TB}/system.restoreBackup`, {
    headers: { authorization: `Bearer ${s.rootToken}`, "content-type": "application/gzip" },
    body: gzipSync(ndjson),
  });

const login = async (username: string, password: string): Promise<{ token: string; refreshToken: string }> => {
  const r = await raw(s.base, "POST", `${API}/auth/token`, { headers: { "content-type": "application/json" }, body: JSON.stringify({ username, password }) });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
};

/** The export without every line naming `id`: its partition, its ledger entry, its index entries; the end counts fixed. */
function dropProject(ndjson: Buffer, id: string): Buffer {
  const mentions = (b64: string): boolean => Buffer.from(b64, "base64").toString("latin1").includes(id);
  const out: string[] = [];
  let skipping = false;
  let partitions = 0;
  let entries = 0;
  let pending: string | null = null;
  for (const line of ndjson.toString("utf8").split("\n")) {
    if (line === "") continue;
    const o = JSON.parse(line) as { partition?: string; k?: string; v?: string; end?: unknown };
    if (o.partition !== undefined) {
      skipping = mentions(o.partition);
      pending = skipping ? null : line; // a partition line is written with its first kept entry
    } else if (o.k !== undefined) {
      if (skipping || mentions(o.k) || mentions(o.v!)) continue;
      if (pending !== null) {
        out.push(pending);
        partitions++;
        pending = null;
      }
      out.push(line);
      entries++;
    } else if (o.end !== undefined) {
      out.push(JSON.stringify({ end: { partitions, entries } }));
    } else out.push(line);
  }
  return Buffer.from(`${out.join("\n")}\n`);
}

beforeEach(async () => {
  dir = await makeTempDir("restore-epochs");
  h = await lmdb.create();
  s = await startTruBudget(h.kv, { restoreDir: dir });
});
afterEach(async () => {
  await s.close();
  await h.destroy();
  await removeTempDir(dir);
});

it("a backup edited to drop a project is refused as forged or restored as an epoch that keeps the project in a verifiable replaced history", async () => {
  expect((await call(s.rootToken, "POST", "/projects", { id: "keep", displayName: "keep" })).status).toBe(201);
  expect((await call(s.rootToken, "POST", "/projects", { id: "victim", displayName: "evidence" })).status).toBe(201);
  // Checkpoints of both projects, signed before the backup: each shows the restore after it.
  const { checkpoints } = s.app.flowstore;
  const [victimCp, keepCp] = [await checkpoints.take(["project", "victim"]), await checkpoints.take(["project", "keep"])];
  const trustedFingerprint = checkpoints.publicKey.keyFingerprint;
  const original = await backup();
  const edited = dropProject(original, "victim");
  expect(edited.length).toBeLessThan(original.length);

  const r = await restore(edited);
  if (r.status === 400) {
    // Refused as forged: nothing changed, no epoch.
    expect((await call(s.rootToken, "GET", "/projects/victim")).status).toBe(200);
    expect(await listEpochs(h.kv)).toEqual([]);
    return;
  }
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  const root = (await login("root", "root password 123")).token;
  expect((await call(root, "GET", "/projects/victim")).status).toBe(404);

  // The restore is an epoch: who, when, which backup.
  const epochs = await listEpochs(h.kv);
  expect(epochs).toHaveLength(1);
  expect(epochs[0]).toMatchObject({ epoch: 1, by: "root", backup: { sha256: createHash("sha256").update(edited).digest("hex") }, previous: null });
  expect(Date.parse(epochs[0]!.at)).not.toBeNaN();

  // The replaced history still holds the dropped project, byte for byte its log.
  const keptLog: string[] = [];
  for await (const e of scanAll(replacedView(h.kv, 1), ["project", "victim"])) keptLog.push(e.value.toString("latin1"));
  expect(keptLog.some((v) => v.includes("evidence"))).toBe(true);

  // verify shows the discontinuity: the epoch, and its replaced history verified (both projects' chains).
  const verified = await s.app.flowstore.verifyAll();
  expect(verified.ok).toBe(true);
  expect(verified.epochs.list).toEqual([expect.objectContaining({ epoch: 1, by: "root", replaced: expect.objectContaining({ ok: true, partitions: 2 }) })]);

  // The checkpoints show the discontinuity: the dropped project's is found in the replaced history,
  // the kept one's still extends, and both name the restore since.
  const victimChecked = await s.app.flowstore.verifyCheckpoint(victimCp, { trustedFingerprint });
  expect(victimChecked).toMatchObject({ ok: false, replacedIn: 1, restoredSince: [{ epoch: 1, by: "root" }] });
  expect(victimChecked.firstBad?.reason).toMatch(/replaced by the restore of epoch 1/);
  expect(await s.app.flowstore.verifyCheckpoint(keepCp, { trustedFingerprint })).toMatchObject({ ok: true, restoredSince: [{ epoch: 1, by: "root" }] });

  // A replaced history that is altered afterwards fails verify.
  const [entry] = await (async () => {
    const found = [];
    for await (const e of scanAll(h.kv, ["replaced", 1, "project", "victim"])) if (e.value.toString("latin1").includes("evidence")) found.push(e);
    return found;
  })();
  await h.kv.commit(
    ["replaced", 1, "project", "victim"],
    [{ type: "put", key: entry!.key, value: Buffer.from(entry!.value.toString("latin1").replace("evidence", "evidenze"), "latin1") }],
  );
  const after = await s.app.flowstore.verifyAll();
  expect(after.ok).toBe(false);
  expect(after.epochs.list[0]!.replaced.ok).toBe(false);
});

it("refuses a backup whose chain does not verify (400): no epoch, the fence opens again, writes go on", async () => {
  expect((await call(s.rootToken, "POST", "/projects", { id: "p", displayName: "School" })).status).toBe(201);
  const lines = (await backup()).toString("utf8").split("\n");
  const at = lines.findIndex((l) => l.startsWith('{"k"') && Buffer.from(JSON.parse(l).v, "base64").toString("latin1").includes("School"));
  const e = JSON.parse(lines[at]!) as { k: string; v: string };
  lines[at] = JSON.stringify({ k: e.k, v: Buffer.from(Buffer.from(e.v, "base64").toString("latin1").replace("School", "Schoal"), "latin1").toString("base64") });
  const r = await restore(Buffer.from(lines.join("\n")));
  expect(r.status).toBe(400);
  expect(await listEpochs(h.kv)).toEqual([]);
  expect((await s.app.flowstore.fence.read()).shut).toBeNull();
  expect((await call(s.rootToken, "POST", "/projects", { id: "q", displayName: "After" })).status).toBe(201);
});

it("ends every session from before the restore: a revoked one does not come back, refresh tokens fail, a new log in works", async () => {
  await s.user("alice", "alice password 123");
  const before = await login("alice", "alice password 123");
  const saved = await backup();
  // Revoked after the backup: the backup still holds the session.
  expect((await call(before.token, "POST", "/auth/logout")).status).toBeLessThan(300);
  expect((await call(before.token, "GET", "/me")).status).toBe(401);
  const later = await login("alice", "alice password 123");

  const r = await restore(saved);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  for (const token of [before.token, later.token, s.rootToken]) expect((await call(token, "GET", "/me")).status).toBe(401);
  for (const refreshToken of [before.refreshToken, later.refreshToken]) {
    const refreshed = await raw(s.base, "POST", `${API}/auth/refresh`, { headers: { "content-type": "application/json" }, body: JSON.stringify({ refreshToken }) });
    expect(refreshed.status).toBe(401);
  }
  const again = await login("alice", "alice password 123");
  expect((await call(again.token, "GET", "/me")).body).toMatchObject({ id: "alice" });
});

/** The identity entries' key families in an export (the first item of each key of the identity partition). */
function identityFamilies(ndjson: Buffer): Set<string> {
  const families = new Set<string>();
  let inIdentity = false;
  for (const line of ndjson.toString("utf8").split("\n")) {
    if (line === "") continue;
    const o = JSON.parse(line) as { partition?: string; k?: string };
    if (o.partition !== undefined) inIdentity = (decode(Buffer.from(o.partition, "base64"))[0] as string) === "identity";
    else if (o.k !== undefined && inIdentity) families.add(decode(Buffer.from(o.k, "base64"))[0] as string);
  }
  return families;
}

it("a backup over HTTP holds no password hash or session; a restore keeps every user's current password, never the backup's older one", async () => {
  await s.user("alice", "alice password 123");
  await login("alice", "alice password 123");
  const overHttp = await backup();
  const families = identityFamilies(overHttp);
  expect(families).toContain("user");
  expect(families).not.toContain("password");
  expect(families).not.toContain("session");
  // The operators' export (the CLI: the system actor) carries them.
  const full = await s.app.flowstore.exportStore(SYSTEM);
  const [operators] = await Promise.all([buffer(full.stream), full.done]);
  expect(identityFamilies(operators)).toContain("password");

  // alice changes her password after the backups were taken; each restore keeps the new one.
  const alice = await login("alice", "alice password 123");
  expect((await call(alice.token, "PUT", "/me/password", { currentPassword: "alice password 123", password: "alice's new password" })).status).toBe(204);
  for (const saved of [overHttp, operators]) {
    const token = (await login("root", "root password 123")).token;
    const r = await raw(s.base, "POST", `${TB}/system.restoreBackup`, {
      headers: { authorization: `Bearer ${token}`, "content-type": "application/gzip" },
      body: gzipSync(saved),
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const old = await raw(s.base, "POST", `${API}/auth/token`, {
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "alice", password: "alice password 123" }),
    });
    expect(old.status).toBe(401);
    expect((await login("alice", "alice's new password")).token).toBeTruthy();
  }
  expect((await s.app.flowstore.verifyAll()).epochs.list.map((e) => e.epoch)).toEqual([1, 2]);
});
