/**
 * Restore trusts no bytes (issue 16, finding 1), over a real server on LMDB: only a project archive this
 * server sealed is restorable; a crafted upload — a project made elsewhere with a forged history and an
 * extra permission, a state record with an unknown format byte, a missing or wrong seal — answers 400
 * naming snapshotId and writes nothing; an honest archive restores; and one unreadable record never
 * turns a list into a 500 for everyone.
 */
import { createHash, randomBytes } from "node:crypto";
import { afterEach, beforeEach, expect, it } from "vitest";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { sealOf } from "../../src/archive/seal.js";
import { openFlowstore, type Flowstore } from "../../src/compose/index.js";
import { scanAll } from "../../src/kv/contract.js";
import { encode } from "../../src/kv/tuple.js";
import { backends, type BackendHandle } from "../conformance/backends.js";
import { collect } from "../archive/helpers.js";
import { raw, startServer, type Running } from "./harness.js";

const API = "/api/v1";
const KEY = randomBytes(32);
const lmdb = backends.find((b) => b.name === "lmdb")!;

let h: BackendHandle;
let s: Running;
let root: string;
let eve: string;
const call = (token: string, method: string, path: string, body?: unknown) =>
  raw(s.base, method, API + path, {
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

/** Uploads a snapshot as `token` (multipart: the document, then the dump file), as any archive writer may. */
async function upload(token: string, uniqueId: string, document: Record<string, unknown[]>, file: Buffer): Promise<string> {
  const form = new FormData();
  form.append("uniqueId", uniqueId);
  form.append("document", JSON.stringify(document));
  form.append("files", new Blob([file]), "partition.ndjson");
  const r = await fetch(`${s.base}${API}/archive/snapshots`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: form });
  expect(r.status).toBe(201);
  return ((await r.json()) as { id: string }).id;
}

async function snapshotOf(store: Flowstore, id: string): Promise<{ document: Record<string, unknown[]>; file: Buffer }> {
  const snap = await store.archive.read(SYSTEM, id);
  return { document: snap.document as Record<string, unknown[]>, file: await collect((await store.archive.openFile(SYSTEM, id, "partition.ndjson")).stream) };
}

async function partitionEntries(p: string): Promise<number> {
  let n = 0;
  for await (const _ of scanAll(h.kv, ["project", p])) n++;
  return n;
}

/** A refused restore: 400 naming snapshotId, no project, nothing in its partition, the list still whole. */
async function refused(snapshotId: string, p: string, reason: RegExp): Promise<void> {
  const r = await call(eve, "POST", "/archive/restore", { snapshotId });
  expect(r.body).toMatchObject({ status: 400, field: "snapshotId", detail: expect.stringMatching(reason) });
  expect((await call(root, "GET", `/projects/${p}`)).status).toBe(404);
  expect(await partitionEntries(p)).toBe(0);
  expect((await call(root, "GET", "/projects")).status).toBe(200);
}

/** Rewrites the dump line holding the owner's state (key ["s", 0]) with `edit`. */
function editOwnerState(file: Buffer, edit: (value: Buffer) => Buffer): Buffer {
  const ownerKey = encode(["s", 0]).toString("base64");
  const lines = file.toString("utf8").split("\n");
  return Buffer.from(
    lines
      .map((line) => {
        const o = line === "" ? null : (JSON.parse(line) as { k: string; v: string });
        return o?.k === ownerKey ? JSON.stringify({ k: o.k, v: edit(Buffer.from(o.v, "base64")).toString("base64") }) : line;
      })
      .join("\n"),
  );
}

beforeEach(async () => {
  h = await lmdb.create();
  s = await startServer(h.kv, { archiveSeal: { key: KEY } });
  root = s.root.token!;
  eve = (await s.userClient("eve")).token!;
  await s.userClient("mallory");
  for (const intent of ["global.writeArchive", "global.readArchive", "global.createProject"]) {
    expect((await call(root, "POST", "/global/permissions/grant", { intent, identity: "eve" })).status).toBeLessThan(300);
  }
});
afterEach(async () => {
  await s.close();
  await h.destroy();
});

it("refuses a project archive made elsewhere: history by root in 2020, a permission for a third user", async () => {
  // The attacker's own store, its clock in 2020, acting as "root": a perfectly well-formed archive.
  const forge = await openFlowstore("memory:", { clock: () => Date.parse("2020-01-01T00:00:00Z") });
  const fakeRoot = userActor("root");
  await forge.identity.ensureRoot("forged root password");
  await forge.identity.createUser(SYSTEM, { id: "mallory", displayName: "mallory", password: "mallory password" });
  for (const intent of ["global.createProject", "global.writeArchive"] as const) await forge.global.grant(SYSTEM, intent, "root");
  await forge.workflow.createProject(fakeRoot, { id: "forged", displayName: "Forged" });
  await forge.workflow.grant(fakeRoot, { type: "project", ids: ["forged"] }, "project.viewDetails", "mallory");
  await forge.workflow.closeProject(fakeRoot, "forged");
  const made = await forge.archiveProject(fakeRoot, "forged");
  const { document, file } = await snapshotOf(forge, made.snapshot.id);
  await forge.close();

  const id = await upload(eve, "project:forged", document, file);
  await refused(id, "forged", /seal/);
  expect(document.seal).toEqual([expect.stringMatching(/^[0-9a-f]{64}$/)]); // it was sealed, but with another key
});

it("refuses a state record with an unknown format byte, a missing seal, a wrong seal; restores the honest archive", async () => {
  expect((await call(root, "POST", "/projects", { id: "p", displayName: "School" })).status).toBe(201);
  // eve restores it: she must view the project by the archive's sealed permissions (else the reader's 404).
  expect((await call(root, "POST", "/projects/p/permissions/grant", { intent: "project.viewDetails", identity: "eve" })).status).toBeLessThan(300);
  await call(root, "POST", "/projects/p/close");
  const archived = await call(root, "POST", "/projects/p/archive", { drop: true });
  expect(archived.status).toBe(201);
  const { document, file } = await snapshotOf(s.app.flowstore, archived.body.snapshot.id);

  const badFormat = editOwnerState(file, (v) => Buffer.concat([Buffer.from([9]), v.subarray(1)]));
  expect(badFormat.equals(file)).toBe(false);
  await refused(await upload(eve, "project:p", document, badFormat), "p", /seal/);

  // Even sealed with this server's key (a leaked key), the rebuild refuses a record it would not write.
  const sha = createHash("sha256").update(badFormat).digest("hex");
  const resealed = { ...document, seal: [sealOf(KEY, document, sha)] };
  await refused(await upload(eve, "project:p", resealed, badFormat), "p", /unreadable state record/);

  const { seal, ...unsealed } = document;
  await refused(await upload(eve, "project:p", unsealed, file), "p", /seal/);
  const wrong = String(seal![0]).replace(/^./, (c) => (c === "0" ? "1" : "0"));
  await refused(await upload(eve, "project:p", { ...document, seal: [wrong] }, file), "p", /seal/);
  // The summary changed (a permission added to it), the file not: the seal no longer holds.
  const widened = { ...document, permissions: [{ "project.viewDetails": ["root", "eve", "mallory"] }] };
  await refused(await upload(eve, "project:p", widened, file), "p", /seal/);

  const restored = await call(eve, "POST", "/archive/restore", { snapshotId: archived.body.snapshot.id });
  expect(restored.status).toBe(201);
  expect(restored.body).toMatchObject({ projectId: "p", verify: { ok: true } });
  expect((await call(root, "GET", "/projects/p")).body).toMatchObject({ id: "p", data: { status: "closed" } });
});

it("an unreadable record is skipped in lists (one item fails alone), never a 500 for every caller", async () => {
  expect((await call(root, "POST", "/projects", { id: "good", displayName: "Good" })).status).toBe(201);
  const good = (await h.kv.get(["project", "good"], ["s", 0]))!.value;
  const bad = Buffer.concat([Buffer.from([9]), good.subarray(1)]);
  await h.kv.commit(["project", "bad"], [{ type: "put", key: ["s", 0], value: bad }]);
  const list = await call(root, "GET", "/projects");
  expect(list.status).toBe(200);
  expect(list.body.items.map((i: { id: string }) => i.id)).toEqual(["good"]);
  expect((await call(root, "GET", "/projects/good")).status).toBe(200);
  expect((await call(root, "GET", "/projects/bad")).status).toBe(500);
});
