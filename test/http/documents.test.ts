/**
 * Documents of workflowitems over a real server (memory store): upload, list, download, validate,
 * delete, links, the size limit, read-only when closed, permissions, and a cut-off upload.
 *
 * | case                                  | TruBudget rule (api/src/service/domain/workflow, document)            |
 * |---------------------------------------|------------------------------------------------------------------------|
 * | upload → listed with id, hash, size   | workflowitem documents carry id, fileName, hash; upload via update    |
 * | validate a file against a document    | documents/validate answers whether the hash matches                   |
 * | upload needs workflowitem.update      | documents are added by workflowitem.update                            |
 * | closed item is read-only              | a closed workflowitem cannot be updated                               |
 * | deleting an item (or its parents)     | (flowstore) releases its documents' content references: freed when last |
 */
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProblemError, type FlowstoreClient } from "../../src/client/index.js";
import { MemoryKv } from "../../src/kv/memory.js";
import { bytes, dump, sha256 } from "../archive/helpers.js";
import { eventually } from "../support/eventually.js";
import { raw, startServer, type Running } from "./harness.js";

const API = "/api/v1";
const MiB = 1024 * 1024;
const LIMIT = 2 * MiB + 17;

let s: Running;
let kv: MemoryKv;
let bob: FlowstoreClient;
const item = (c: FlowstoreClient, w: string) => c.project("p").subproject("s").workflowitem(w);
const docsPath = (w: string) => `${API}/projects/p/subprojects/s/workflowitems/${w}/documents`;
const problemOf = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => (e instanceof ProblemError ? e.problem : Promise.reject(e)),
  );
/** Every document-related archive partition with its key count (chunks, files, the journal). */
const stored = () => dump(kv);

beforeAll(async () => {
  kv = new MemoryKv();
  s = await startServer(kv, { documents: { maxBytes: LIMIT } });
  await s.root.projects.create({ id: "p", displayName: "School" });
  await s.root.project("p").subprojects.create({ id: "s", displayName: "Roof", currency: "EUR", workflowMode: "unordered" });
  for (const w of ["w1", "w2", "w3", "w4"]) await s.root.project("p").subproject("s").workflowitems.create({ id: w, displayName: w, amountType: "N/A" });
  bob = await s.userClient("bob");
});
afterAll(async () => {
  await s.close();
});

describe("documents", () => {
  it("uploads (multi-chunk), lists, downloads with the sha-256 as ETag, validates, deduplicates and deletes", async () => {
    const content = bytes(MiB + MiB / 2, 7);
    const doc = await item(s.root, "w1").documents.upload({ content: new Blob([content]), fileName: "offer.pdf", comment: "the offer" });
    expect(doc).toMatchObject({ fileName: "offer.pdf", hash: sha256(content), size: content.length, comment: "the offer", createdBy: "root" });
    expect(doc.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(await item(s.root, "w1").documents.list()).toEqual([doc]);
    expect((await item(s.root, "w1").get()).data.documents).toEqual([doc]);

    const res = await item(s.root, "w1").documents.download(doc.id);
    expect(res.headers.get("etag")).toBe(`"${doc.hash}"`);
    expect(res.headers.get("content-disposition")).toContain("offer.pdf");
    expect(Buffer.from(await res.arrayBuffer()).equals(content)).toBe(true);
    const again = await fetch(`${s.base}${docsPath("w1")}/${doc.id}`, { headers: { authorization: `Bearer ${s.root.token}`, "if-none-match": `"${doc.hash}"` } });
    expect(again.status).toBe(304);

    expect(await item(s.root, "w1").documents.validate(doc.id, new Blob([content]))).toEqual({ valid: true });
    expect(await item(s.root, "w1").documents.validate(doc.id, new Blob([content.subarray(1)]))).toEqual({ valid: false });

    // The same content on another item is stored once: one file, two references.
    const twin = await item(s.root, "w2").documents.upload({ content: new Blob([content]), fileName: "copy.pdf" });
    expect(twin.hash).toBe(doc.hash);
    const files = (await stored()).filter((l) => l.startsWith('["archive-file"'));
    expect(files).toEqual([`["archive-file","${doc.hash}"]: 3`]); // meta + 2 refs
    expect((await stored()).filter((l) => l.startsWith('["archive-chunks"'))).toHaveLength(1);

    await item(s.root, "w1").documents.delete(doc.id);
    expect(await item(s.root, "w1").documents.list()).toEqual([]);
    const history = await item(s.root, "w1").history();
    expect(history.items.map((e) => e.type)).toEqual(expect.arrayContaining(["workflowitem.document_uploaded", "workflowitem.document_deleted"]));
    // the twin still downloads; deleting it frees the content
    expect(Buffer.from(await (await item(s.root, "w2").documents.download(twin.id)).arrayBuffer()).equals(content)).toBe(true);
    await item(s.root, "w2").documents.delete(twin.id);
    expect(await stored()).toEqual([]);
    expect(await problemOf(item(s.root, "w2").documents.delete(twin.id))).toMatchObject({ status: 404 });
  });

  it("a successful upload keeps its connection (no Connection: close)", async () => {
    // The route answers once it has stored the file part, before the form's closing boundary is read: the
    // lingering close is for refusals, not for this.
    await s.root.project("p").subproject("s").workflowitems.create({ id: "kept", displayName: "kept", amountType: "N/A" });
    for (const size of [10, MiB + MiB / 2]) {
      const form = new FormData();
      form.append("file", new Blob([bytes(size, 3)]), "kept.bin");
      const res = await fetch(`${s.base}${docsPath("kept")}`, { method: "POST", headers: { authorization: `Bearer ${s.root.token}` }, body: form });
      expect([size, res.status]).toEqual([size, 201]);
      expect([size, res.headers.get("connection")]).not.toEqual([size, "close"]);
      await item(s.root, "kept").documents.delete(((await res.json()) as { id: string }).id);
    }
    expect(await stored()).toEqual([]);
  });

  it("records an external link without content; refuses bad input naming the field", async () => {
    const link = await item(s.root, "w3").documents.addLink({ fileName: "spec", link: "https://example.org/spec.pdf", comment: "external" });
    expect(link).toMatchObject({ fileName: "spec", link: "https://example.org/spec.pdf", comment: "external" });
    expect(link.hash).toBeUndefined();
    expect(await problemOf(item(s.root, "w3").documents.download(link.id))).toMatchObject({ status: 404 });

    const auth = { authorization: `Bearer ${s.root.token}` };
    const json = (body: unknown) => raw(s.base, "POST", docsPath("w3"), { headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify(body) });
    expect((await json({ fileName: "x", link: "ftp://x" })).body).toMatchObject({ status: 400, field: expect.stringContaining("link") });
    expect((await json({ link: "https://x" })).body).toMatchObject({ status: 400, field: expect.stringContaining("fileName") });

    const form = new FormData();
    form.append("colour", "red");
    form.append("file", new Blob(["x"]), "x.txt");
    const unknown = await fetch(`${s.base}${docsPath("w3")}`, { method: "POST", headers: auth, body: form });
    expect(unknown.status).toBe(400);
    expect(await unknown.json()).toMatchObject({ field: "body.colour" });
    const noFile = new FormData();
    noFile.append("comment", "no file");
    const missing = await fetch(`${s.base}${docsPath("w3")}`, { method: "POST", headers: auth, body: noFile });
    expect(await missing.json()).toMatchObject({ status: 400, field: "body.file" });
    const long = await problemOf(item(s.root, "w3").documents.upload({ content: new Blob(["x"]), fileName: "n".repeat(300) }));
    expect(long).toMatchObject({ status: 400, field: "fileName" });
    expect(await problemOf(item(s.root, "w3").documents.download("no-such-doc"))).toMatchObject({ status: 404 });
    expect(await problemOf(item(s.root, "nope").documents.list())).toMatchObject({ status: 404 });
    expect((await item(s.root, "w3").documents.list()).map((d) => d.id)).toEqual([link.id]);
    expect(await stored()).toEqual([]);
  });

  it("answers 413 naming the limit over it, and keeps no chunk", async () => {
    const problem = await problemOf(item(s.root, "w3").documents.upload({ content: new Blob([bytes(LIMIT + 1, 3)]), fileName: "big.bin" }));
    expect(problem).toMatchObject({ status: 413, limit: LIMIT });
    expect(problem!.detail).toContain(String(LIMIT));
    expect(await stored()).toEqual([]);
    expect((await item(s.root, "w3").documents.list()).every((d) => d.fileName !== "big.bin")).toBe(true);
  });

  it("needs workflowitem.update to add or delete, viewDetails to read; a closed item's documents are read-only", async () => {
    const doc = await item(s.root, "w4").documents.upload({ content: new Blob(["hello"]), fileName: "a.txt" });
    // Bob holds nothing on w4 nor views its subproject: he learns nothing of it (docs/security.md, "Existence").
    expect(await problemOf(item(bob, "w4").documents.list())).toMatchObject({ status: 404 });
    await item(s.root, "w4").grant("workflowitem.viewDetails", "bob");
    expect((await item(bob, "w4").documents.list()).map((d) => d.id)).toEqual([doc.id]);
    expect(await (await item(bob, "w4").documents.download(doc.id)).text()).toBe("hello");
    expect(await problemOf(item(bob, "w4").documents.upload({ content: new Blob(["more"]), fileName: "b.txt" }))).toMatchObject({ status: 403 });
    expect(await problemOf(item(bob, "w4").documents.delete(doc.id))).toMatchObject({ status: 403 });

    await item(s.root, "w4").close();
    expect(await problemOf(item(s.root, "w4").documents.upload({ content: new Blob(["late"]), fileName: "c.txt" }))).toMatchObject({ status: 409, field: "status" });
    expect(await problemOf(item(s.root, "w4").documents.delete(doc.id))).toMatchObject({ status: 409 });
    expect(await (await item(s.root, "w4").documents.download(doc.id)).text()).toBe("hello");
    expect(await item(s.root, "w4").documents.validate(doc.id, new Blob(["hello"]))).toEqual({ valid: true });
    // only the one document's content is stored
    expect((await stored()).filter((l) => l.startsWith('["archive-file"'))).toEqual([`["archive-file","${sha256(Buffer.from("hello"))}"]: 2`]);
  });

  it("a client killed mid-upload leaves no chunk and no record", async () => {
    const boundary = "----cutoff";
    const url = new URL(`${s.base}${docsPath("w3")}`);
    const head = Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="cut.bin"\r\ncontent-type: application/octet-stream\r\n\r\n`);
    const before = await item(s.root, "w3").documents.list();
    const baseline = await stored();
    await new Promise<void>((resolve) => {
      const req = httpRequest({
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        headers: { authorization: `Bearer ${s.root.token}`, "content-type": `multipart/form-data; boundary=${boundary}`, "content-length": String(head.length + 2 * MiB) },
      });
      req.on("error", () => resolve());
      req.write(head);
      // More than a chunk, so that one is committed into the staging partition before the cut.
      req.write(bytes(MiB + 4096, 11), () => {
        void (async () => {
          await eventually(async () => (await stored()).some((l) => l.startsWith('["archive-chunks"')), {
            what: "a chunk committed into the staging partition",
            intervalMs: 5,
          }).catch(
            () => {}, // the assertions below fail naming the store's state
          );
          req.destroy(); // the client dies: the server sees the body end early
          resolve();
        })();
      });
    });
    // The server undoes the hold once it sees the cut: poll the store until it is clean.
    await eventually(async () => JSON.stringify(await stored()) === JSON.stringify(baseline), { what: "the store back to its state before the upload" }).catch(() => {});
    expect(await stored()).toEqual(baseline);
    expect(await item(s.root, "w3").documents.list()).toEqual(before);
  });
  it("deleting a workflowitem, then its project (a cascade), releases its documents' references: content no longer referenced is freed", async () => {
    // What earlier cases keep (a closed item's document; the journal is theirs to settle, not compared).
    const content = async () => (await stored()).filter((l) => !l.startsWith('["archive-journal"'));
    const before = await content();
    await s.root.projects.create({ id: "q", displayName: "Released" });
    for (const sp of ["a", "b"]) await s.root.project("q").subprojects.create({ id: sp, displayName: sp, currency: "EUR", workflowMode: "unordered" });
    const at = (sp: string, w: string) => s.root.project("q").subproject(sp).workflowitem(w);
    for (const [sp, w] of [
      ["a", "x"],
      ["b", "y"],
      ["b", "z"],
    ] as const)
      await s.root.project("q").subproject(sp).workflowitems.create({ id: w, displayName: w, amountType: "N/A" });
    const shared = bytes(MiB + 5, 11);
    const own = bytes(1000, 12);
    await at("a", "x").documents.upload({ content: new Blob([shared]), fileName: "shared.pdf" });
    await at("b", "y").documents.upload({ content: new Blob([shared]), fileName: "shared-copy.pdf" });
    await at("b", "z").documents.upload({ content: new Blob([own]), fileName: "own.pdf" });
    await at("b", "z").documents.addLink({ fileName: "spec", link: "https://example.org/spec.pdf" });
    const mine = [sha256(shared), sha256(own)];
    const files = async () => (await stored()).filter((l) => l.startsWith('["archive-file"') && mine.some((h) => l.includes(h))).sort();
    expect(await files()).toEqual([`["archive-file","${sha256(shared)}"]: 3`, `["archive-file","${sha256(own)}"]: 2`].sort());

    // The item goes: its reference goes; the twin's keeps the shared content.
    await at("a", "x").delete();
    expect(await files()).toEqual([`["archive-file","${sha256(shared)}"]: 2`, `["archive-file","${sha256(own)}"]: 2`].sort());
    expect(Buffer.from(await (await at("b", "y").documents.download((await at("b", "y").documents.list())[0]!.id)).arrayBuffer()).equals(shared)).toBe(true);

    // The project goes with its subprojects and items: nothing references the content any more, so nothing is kept.
    await s.root.project("q").delete();
    expect(await files()).toEqual([]);
    // Nothing this case stored is kept. (An earlier case's cut upload may still be undoing its staging
    // chunks while this one runs, so the store may hold less than before, never more.)
    const left = new Set(before);
    expect((await content()).filter((l) => !left.has(l))).toEqual([]);
  });
});
