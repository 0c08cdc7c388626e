/**
 * Erasure and the copies of a store (issue 26, part 2), through a real server on 127.0.0.1 over LMDB:
 *
 * - a project archive keeps the ciphertext (its file is the partition byte for byte, under its seal);
 *   restored while the subject's key exists it reads as plain text, restored after the erasure as erased;
 * - a backup taken before an erasure holds the key, and restoring it does not bring the key back: the
 *   register of erasures (kept on restore) puts the erasure back before the store is served, so the data
 *   stays unreadable, the receipt is still there and `verify` (the restore's epoch included) is green;
 * - an erasure after a restore also deletes the key from the replaced history the restore kept;
 * - an erasure a kill interrupted right after its key went is registered, and its key deleted from the
 *   replaced histories, at the next open (over the same LMDB directory).
 */
import { gunzipSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FlowstoreClient } from "../../src/client/index.js";
import { allPartitions, scanAll } from "../../src/kv/contract.js";
import { layout } from "../../src/resources/model/layout.js";
import { ERASED_TEXT, SEALED_PREFIX as SEALED } from "../../src/resources/personal/subjects.js";
import { ERASED_KIND } from "../../src/compose/erasure.js";
import { registerLayout } from "../../src/personal/subjects.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { makeTempDirSync, removeTempDirSync } from "../support/temp-dir.js";
import { raw, ROOT_PASSWORD, startLmdbServer, startServer, type Running } from "./harness.js";

const API = "/api/v1";
const MIA = "Mia Keller, Lindenweg 3";
const OTTO = "Otto Brandt, account 4711";
const IDA = "Ida Roth, 2 children";

let s: Running;
let root: FlowstoreClient;

const call = (method: string, path: string, body?: unknown) =>
  raw(s.base, method, `${API}${path}`, {
    headers: { authorization: `Bearer ${root.token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
const item = (p: string, w = "w") => `/projects/${p}/subprojects/s/workflowitems/${w}`;

async function project(p: string, subject: string, description: string): Promise<void> {
  await root.projects.create({ id: p, displayName: p });
  await root.project(p).subprojects.create({ id: "s", displayName: "s", currency: "EUR", workflowMode: "unordered" });
  await root.project(p).subproject("s").workflowitems.create({ id: "w", displayName: "grant", amountType: "N/A", dataSubject: subject, description });
}

async function backup(): Promise<Buffer> {
  const res = await fetch(`${s.base}${API}/store/backup`, { headers: { authorization: `Bearer ${root.token}` } });
  expect(res.status).toBe(200);
  return gunzipSync(Buffer.from(await res.arrayBuffer()));
}

/** Restores a backup (a new epoch: every session ends), then logs root in again. */
async function restore(ndjson: Buffer): Promise<void> {
  const r = await raw(s.base, "POST", `${API}/store/restore`, { headers: { authorization: `Bearer ${root.token}`, "content-type": "application/gzip" }, body: gzipSync(ndjson) });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  await root.login("root", ROOT_PASSWORD);
}

/** Every value of every partition of `kind`, as text. */
async function bytesOf(kind: string): Promise<string> {
  const { kv } = s.app.flowstore;
  let all = "";
  for await (const p of allPartitions(kv, kind)) for await (const e of scanAll(kv, p, { limit: 1000 })) all += `${e.value.toString("utf8")}\n`;
  return all;
}

beforeAll(async () => {
  s = await startLmdbServer("erasure-copies", { webRoot: false });
  root = s.root;
});
afterAll(async () => {
  await s?.close();
});

describe("a project archive", () => {
  it("keeps the ciphertext: restored while the key exists it reads plain, restored after the erasure it reads erased", async () => {
    await project("a", "mia", MIA);
    for (const path of [`${item("a")}/close`, "/projects/a/subprojects/s/close", "/projects/a/close"]) {
      const closed = await call("POST", path, {});
      expect(closed.status, `${path} ${JSON.stringify(closed.body)}`).toBe(200);
    }
    const first = await call("POST", "/projects/a/archive", { drop: true });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const id = encodeURIComponent(first.body.snapshot.id);
    const file = await fetch(`${s.base}${API}/archive/snapshots/${id}/files/partition.ndjson`, { headers: { authorization: `Bearer ${root.token}` } });
    expect(file.status).toBe(200);
    // The dump holds each record base64-encoded: decoded, the ciphertext is there and the name is not.
    const values = (await file.text())
      .split("\n")
      .filter(Boolean)
      .map((l) => Buffer.from((JSON.parse(l) as { v: string }).v, "base64").toString("utf8"))
      .join("\n");
    expect(values).toContain(SEALED);
    expect(values).not.toContain("Mia");
    expect(JSON.stringify((await call("GET", `/archive/snapshots/${id}`)).body)).not.toContain("Mia");

    expect((await call("POST", "/archive/restore", { snapshotId: first.body.snapshot.id })).status).toBe(201);
    expect((await call("GET", item("a"))).body.data.description).toBe(MIA);

    // Archived again and dropped; then the subject is erased: the archive's copy reads erased once restored.
    const second = await call("POST", "/projects/a/archive", { drop: true });
    expect(second.status, JSON.stringify(second.body)).toBe(201);
    const erased = await call("POST", "/subjects/mia/erase");
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    expect(erased.body.resources).toEqual([{ type: "workflowitem", ids: ["a", "s", "w"], fields: ["description", "markdown", "rejectReason"], gone: true }]);
    expect((await call("POST", "/archive/restore", { snapshotId: second.body.snapshot.id })).status).toBe(201);
    expect((await call("GET", item("a"))).body.data.description).toBe(ERASED_TEXT);
    const history = JSON.stringify((await call("GET", `${item("a")}/history`)).body);
    expect(history).not.toContain("Mia");
    expect(history).not.toContain(SEALED);
    expect((await call("GET", "/projects/a/verify")).body).toMatchObject({ ok: true });
  });
});

describe("a backup taken before an erasure", () => {
  it("restored, does not bring the key back: the data stays unreadable, the receipt stays, verify is green", async () => {
    await project("b", "otto", OTTO);
    const taken = await backup();
    expect(taken.toString("utf8")).not.toContain("Otto");

    const erased = await call("POST", "/subjects/otto/erase");
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    const receipt = erased.body;
    expect((await call("GET", item("b"))).body.data.description).toBe(ERASED_TEXT);

    await restore(taken);
    // The backup brought the key; the register of erasures deleted it again before the store was served.
    const otto = s.app.flowstore.kv;
    expect(await otto.get(layout.subject("otto"), layout.subjectKey)).toBeUndefined();
    expect((await call("GET", item("b"))).body.data.description).toBe(ERASED_TEXT);
    const history = JSON.stringify((await call("GET", `${item("b")}/history`)).body);
    expect(history).not.toContain("Otto");
    expect(history).not.toContain(SEALED);
    expect((await call("GET", "/subjects/otto/erasure")).body).toEqual(receipt);
    // The erasure's events are in the replaced history of the restore's epoch, which verify still checks.
    const verified = await s.app.flowstore.verifyAll();
    expect(verified.ok).toBe(true);
    expect(verified.epochs.list.length).toBeGreaterThan(0);
    // An erased subject takes no new personal data, after the restore as before.
    const again = await call("POST", "/projects/b/subprojects/s/workflowitems", { displayName: "again", amountType: "N/A", dataSubject: "otto", description: "x" });
    expect(again.status).toBe(409);
    // And the project archived above, whose subject was erased before the backup was taken, still reads erased.
    expect((await call("GET", item("a"))).body.data.description).toBe(ERASED_TEXT);
  });

  it("an erasure after a restore deletes the key from the replaced history the restore kept, too", async () => {
    await project("c", "ida", IDA);
    // A restore keeps the content it replaces (ida's key with it) as the replaced history of its epoch.
    await restore(await backup());
    expect(await bytesOf("replaced")).toContain('"createdAt"'); // a subject key's record
    const erased = await call("POST", "/subjects/ida/erase");
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    const { kv } = s.app.flowstore;
    let copies = 0;
    for await (const p of allPartitions(kv, "replaced")) {
      if (p[2] !== layout.subject("ida")[0] || p[3] !== "ida") continue;
      copies++;
      expect(await kv.get(p, layout.subjectKey), JSON.stringify(p)).toBeUndefined();
    }
    expect(copies).toBeGreaterThan(0);
    expect((await call("GET", item("c"))).body.data.description).toBe(ERASED_TEXT);
    expect((await s.app.flowstore.verifyAll()).ok).toBe(true);
  });
});

describe("an erasure a kill interrupted right after its key went", () => {
  it("is finished at the next open: registered, and its key gone from the replaced histories too", async () => {
    const dir = makeTempDirSync("erasure-crash");
    let kv = LmdbKv.open(dir);
    let t = await startServer(kv, { webRoot: false });
    const as = (method: string, path: string, body?: unknown) =>
      raw(t.base, method, `${API}${path}`, {
        headers: { authorization: `Bearer ${t.root.token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    /** The copies of eva's partition in the replaced histories, and how many of them still hold her key. */
    const evaCopies = async (): Promise<{ copies: number; keyed: number }> => {
      let copies = 0;
      let keyed = 0;
      for await (const p of allPartitions(t.app.flowstore.kv, "replaced")) {
        if (p[2] !== layout.subject("eva")[0] || p[3] !== "eva") continue;
        copies++;
        if (await t.app.flowstore.kv.get(p, layout.subjectKey)) keyed++;
      }
      return { copies, keyed };
    };
    try {
      expect((await as("POST", "/projects", { id: "d", displayName: "d" })).status).toBe(201);
      expect((await as("POST", "/projects/d/subprojects", { id: "s", displayName: "s", currency: "EUR", workflowMode: "unordered" })).status).toBe(201);
      expect(
        (await as("POST", "/projects/d/subprojects/s/workflowitems", { id: "w", displayName: "w", amountType: "N/A", dataSubject: "eva", description: "Eva Maier" })).status,
      ).toBe(201);
      // A restore keeps what it replaces (eva's key with it) as the replaced history of its epoch.
      const taken = await fetch(`${t.base}${API}/store/backup`, { headers: { authorization: `Bearer ${t.root.token}` } });
      const restored = await raw(t.base, "POST", `${API}/store/restore`, {
        headers: { authorization: `Bearer ${t.root.token}`, "content-type": "application/gzip" },
        body: Buffer.from(await taken.arrayBuffer()),
      });
      expect(restored.status, JSON.stringify(restored.body)).toBe(200);
      expect((await evaCopies()).keyed).toBeGreaterThan(0);

      // The erasure's first commit alone (Erasures.erase: the key deleted with the receipt), as a kill right after it leaves the store.
      const receipt = await t.app.flowstore.resources.subjects.destroyKey("eva", "root", () => ["description"]);
      expect(receipt.complete).toBe(false);
      expect((await evaCopies()).keyed).toBeGreaterThan(0);

      await t.close();
      await kv.close();
      kv = LmdbKv.open(dir);
      t = await startServer(kv, { webRoot: false });
      const after = await evaCopies();
      expect(after.copies).toBeGreaterThan(0);
      expect(after.keyed).toBe(0);
      const register: unknown[] = [];
      for await (const e of scanAll(t.app.flowstore.kv, [ERASED_KIND], { prefix: registerLayout.prefix, limit: 1000 })) register.push(JSON.parse(e.value.toString("utf8")));
      expect(register).toEqual([receipt]);
      expect((await as("GET", "/projects/d/subprojects/s/workflowitems/w")).body.data.description).toBe(ERASED_TEXT);
      // Erasing again appends the events the kill left out: the receipt completes.
      expect((await as("POST", "/subjects/eva/erase")).body).toMatchObject({ subject: "eva", complete: true });
    } finally {
      await t.close();
      await kv.close();
      removeTempDirSync(dir);
    }
  });
});
