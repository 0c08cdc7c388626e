/**
 * Issue 29, finding 8, through a real server on 127.0.0.1: `global.readArchive` reads a project's archive
 * only with the view of the project its snapshot sealed (`project.viewDetails`), and a stored file by its
 * hash only when a snapshot the caller may read holds it: not a project archive it may not view, not a
 * workflowitem's document (read through the item's own permissions). What it may not read answers the
 * 404 of what does not exist.
 */
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryKv } from "../../src/kv/memory.js";
import { raw, startServer, type Running } from "./harness.js";

const API = "/api/v1";
const sha256 = (b: string | Buffer) => createHash("sha256").update(b).digest("hex");
const md5 = (b: string | Buffer) => createHash("md5").update(b).digest("hex");

describe("archive reads by the sealed permissions", () => {
  let s: Running;
  const tokens: Record<string, string> = {};
  const call = (who: string, method: string, path: string, body?: unknown) =>
    raw(s.base, method, `${API}${path}`, {
      headers: { authorization: `Bearer ${tokens[who]}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  let snapshotId: string;
  let dumpHash: string;

  beforeAll(async () => {
    s = await startServer(new MemoryKv(), { webRoot: false, loginRateLimit: false });
    tokens.root = s.root.token!;
    for (const id of ["mallory", "alice"]) tokens[id] = (await s.userClient(id)).token!;
    for (const id of ["mallory", "alice"]) {
      expect((await call("root", "POST", "/global/permissions/grant", { intent: "global.readArchive", identity: id })).status).toBeLessThan(300);
    }
    expect((await call("root", "POST", "/projects", { id: "secret", displayName: "Secret school" })).status).toBe(201);
    expect((await call("root", "POST", "/projects/secret/permissions/grant", { intent: "project.viewDetails", identity: "alice" })).status).toBeLessThan(300);
    expect((await call("root", "POST", "/projects/secret/close")).status).toBe(200);
    const archived = await call("root", "POST", "/projects/secret/archive", { drop: true });
    expect(archived.status).toBe(201);
    snapshotId = archived.body.snapshot.id;
    const whole = await call("root", "GET", `/archive/snapshots/${encodeURIComponent(snapshotId)}`);
    expect(whole.status).toBe(200);
    dumpHash = whole.body.files[0].sha256;
  });
  afterAll(async () => s?.close());

  it("a holder of global.readArchive without the sealed view learns nothing of a project's archive (404, unlisted)", async () => {
    const id = encodeURIComponent(snapshotId);
    expect((await call("mallory", "GET", `/archive/snapshots/${id}`)).status).toBe(404);
    expect((await call("mallory", "GET", `/archive/snapshots/${id}/files/partition.ndjson`)).status).toBe(404);
    expect((await call("mallory", "GET", `/archive/files/${dumpHash}`)).status).toBe(404);
    expect((await call("mallory", "GET", "/archive/snapshots?uniqueId=project%3Asecret")).body.items).toEqual([]);
    const today = new Date().toISOString().slice(0, 10);
    expect((await call("mallory", "GET", `/archive/snapshots?date=${today}`)).body.items.map((i: { id: string }) => i.id)).not.toContain(snapshotId);
    // As a snapshot that does not exist answers.
    const missing = await call("mallory", "GET", `/archive/snapshots/${encodeURIComponent("project:none-1700000000000")}`);
    expect(missing.status).toBe(404);
  });

  it("the sealed viewer and root read it whole", async () => {
    for (const who of ["alice", "root"]) {
      const id = encodeURIComponent(snapshotId);
      expect((await call(who, "GET", `/archive/snapshots/${id}`)).status).toBe(200);
      expect((await call(who, "GET", `/archive/snapshots/${id}/files/partition.ndjson`)).status).toBe(200);
      expect((await call(who, "GET", `/archive/files/${dumpHash}`)).status).toBe(200);
      expect((await call(who, "GET", "/archive/snapshots?uniqueId=project%3Asecret")).body.items).toHaveLength(1);
    }
  });

  it("a workflowitem's document is not served by its hash through the archive, to anyone; its own route still serves it", async () => {
    await s.root.projects.create({ id: "p", displayName: "P" });
    await s.root.project("p").subprojects.create({ id: "s", displayName: "S", currency: "EUR" });
    const item = s.root.project("p").subproject("s").workflowitem("w");
    await s.root.project("p").subproject("s").workflowitems.create({ id: "w", displayName: "w", amountType: "N/A" });
    const content = "the builder's confidential offer";
    const doc = await item.documents.upload({ content: new Blob([content]), fileName: "offer.txt" });
    expect(doc.hash).toBe(sha256(content));
    for (const who of ["mallory", "root"]) {
      expect((await call(who, "GET", `/archive/files/${sha256(content)}`)).status).toBe(404);
      expect((await call(who, "GET", `/archive/files/${md5(content)}`)).status).toBe(404);
    }
    expect((await item.documents.download(doc.id)).status).toBe(200);
    // A snapshot holding the same content makes it readable by hash to whoever may read that snapshot.
    const form = new FormData();
    form.set("uniqueId", "plain");
    form.set("document", JSON.stringify({ a: [1] }));
    form.append("file", new Blob([content]), "f.txt");
    const made = await fetch(`${s.base}${API}/archive/snapshots`, { method: "POST", headers: { authorization: `Bearer ${tokens.root}` }, body: form });
    expect(made.status).toBe(201);
    expect((await call("mallory", "GET", `/archive/files/${sha256(content)}`)).status).toBe(200);
    expect((await call("mallory", "GET", `/archive/files/${md5(content)}`)).status).toBe(200);
  });
});
