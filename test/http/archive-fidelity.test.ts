/**
 * Fidelity to Imixs-Archive over HTTP (issue 20): importing snapshots with their ids (idempotent, a
 * different content a 409), the date index by the document's `$modified`, files by sha-256 and by MD5,
 * a unique id's snapshots newest first, and per-document retention (`$snapshot.history`). One server over
 * LMDB: the archive's rules are the same over every backend (test/http/archive.test.ts runs them all).
 */
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { raw, startLmdbServer, type Running } from "./harness.js";

const API = "/api/v1";
const hex = (algorithm: string, b: Uint8Array | string) => createHash(algorithm).update(b).digest("hex");

describe("archive fidelity to Imixs-Archive", () => {
  let s: Running;
  let root: string;

  const call = (method: string, path: string, body?: unknown, token = root) =>
    raw(s.base, method, API + path, {
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const upload = async (fields: Record<string, string>, files: [string, string][]) => {
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) form.set(k, v);
    for (const [name, text] of files) form.append("file", new Blob([text]), name);
    const r = await fetch(`${s.base}${API}/archive/snapshots`, { method: "POST", headers: { authorization: `Bearer ${root}` }, body: form });
    return { status: r.status, body: JSON.parse(await r.text()) };
  };
  const ids = async (query: string) => ((await call("GET", `/archive/snapshots?${query}`)).body.items as { id: string }[]).map((i) => i.id);

  beforeAll(async () => {
    s = await startLmdbServer("archive-fidelity");
    root = s.root.token!;
  });
  afterAll(async () => {
    await s?.close();
  });

  it("imports a snapshot with its time or full id: the same content again is a 200, other content a 409", async () => {
    const doc = { $modified: ["2020-09-13T12:26:40.000Z"], amount: [7] };
    const first = await call("POST", "/archive/snapshots", { uniqueId: "imp-1", document: doc, modified: 1_600_000_000_000 });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.body).toMatchObject({ id: "imp-1-1600000000000", uniqueId: "imp-1", modified: "2020-09-13T12:26:40.000Z" });

    const again = await call("POST", "/archive/snapshots", { uniqueId: "imp-1", document: doc, id: "imp-1-1600000000000" });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(await ids("uniqueId=imp-1")).toEqual(["imp-1-1600000000000"]);

    const other = await call("POST", "/archive/snapshots", { uniqueId: "imp-1", document: { ...doc, amount: [8] }, modified: 1_600_000_000_000 });
    expect(other.status).toBe(409);
    expect(other.body.field).toBe("modified");
    expect((await call("GET", "/archive/snapshots/imp-1-1600000000000")).body.document).toEqual(doc);

    // With files (multipart): the same files again are the same snapshot, another file is not.
    const fields = { uniqueId: "imp-2", document: JSON.stringify({ x: [1] }), id: "imp-2-1500000000000" };
    const withFile = await upload(fields, [["a.txt", "alpha"]]);
    expect(withFile.status, JSON.stringify(withFile.body)).toBe(201);
    expect((await upload(fields, [["a.txt", "alpha"]])).status).toBe(200);
    expect((await upload(fields, [["a.txt", "beta"]])).status).toBe(409);
    expect((await call("GET", "/archive/snapshots/imp-2-1500000000000")).body.files).toEqual([
      { name: "a.txt", size: 5, sha256: hex("sha256", "alpha"), md5: hex("md5", "alpha") },
    ]);

    const bad: [unknown, string][] = [
      [{ uniqueId: "imp-1", document: doc, id: "other-1600000000000" }, "body.id"],
      [{ uniqueId: "imp-1", document: doc, id: "imp-1-16000x" }, "body.id"],
      [{ uniqueId: "imp-1", document: doc, id: "imp-1-1600000000000", modified: 1 }, "body.modified"],
      [{ uniqueId: "imp-1", document: doc, modified: -1 }, "body.modified"],
    ];
    for (const [body, field] of bad) {
      const r = await call("POST", "/archive/snapshots", body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.field, JSON.stringify(r.body)).toBe(field);
    }
  });

  it("indexes a snapshot by its document's $modified, falling back to the snapshot time; a delete leaves the index", async () => {
    const today = new Date().toISOString().slice(0, 10);
    const dated = await call("POST", "/archive/snapshots", { uniqueId: "dated", document: { $modified: ["2019-02-03T04:05:06.000Z"] } });
    const epoch = await call("POST", "/archive/snapshots", { uniqueId: "dated-n", document: { $modified: [Date.parse("2019-02-03T23:00:00Z")] } });
    const plain = await call("POST", "/archive/snapshots", { uniqueId: "undated", document: { a: [1] } });
    expect(await ids("date=2019-02-03")).toEqual([dated.body.id, epoch.body.id]);
    expect(await ids(`date=${today}`)).toContain(plain.body.id);
    expect(await ids(`date=${today}`)).not.toContain(dated.body.id);

    const refused = await call("POST", "/archive/snapshots", { uniqueId: "dated", document: { $modified: ["yesterday"] } });
    expect(refused.status).toBe(400);
    expect(refused.body.field).toBe("document.$modified[0]");

    expect((await call("DELETE", `/archive/snapshots/${dated.body.id}`)).status).toBe(204);
    expect(await ids("date=2019-02-03")).toEqual([epoch.body.id]);
  });

  it("serves a stored file by its sha-256 and by its MD5, with the archive's read intent", async () => {
    const text = "content addressed by two hashes";
    const r = await upload({ uniqueId: "files", document: JSON.stringify({}) }, [["doc.txt", text]]);
    expect(r.status).toBe(201);
    for (const hash of [hex("sha256", text), hex("md5", text)]) {
      const got = await fetch(`${s.base}${API}/archive/files/${hash}`, { headers: { authorization: `Bearer ${root}` } });
      expect(got.status, hash).toBe(200);
      expect(got.headers.get("etag")).toBe(`"${hex("sha256", text)}"`);
      expect(await got.text()).toBe(text);
    }
    expect((await call("GET", `/archive/files/${"0".repeat(64)}`)).status).toBe(404);
    expect((await call("GET", `/archive/files/${"0".repeat(32)}`)).status).toBe(404);
    const bad = await call("GET", "/archive/files/XYZ");
    expect(bad.status).toBe(400);
    expect(bad.body.field).toBe("params.hash");
    const eve = (await s.userClient("eve")).token!;
    expect((await call("GET", `/archive/files/${hex("md5", text)}`, undefined, eve)).status).toBe(403);
  });

  it("lists a unique id's snapshots newest first with a limit, and keeps the newest N a document asks for", async () => {
    for (const t of [1000, 2000, 3000, 4000]) await call("POST", "/archive/snapshots", { uniqueId: "series", document: { n: [t] }, modified: t });
    expect(await ids("uniqueId=series&order=desc&limit=2")).toEqual(["series-4000", "series-3000"]);
    const page = await call("GET", "/archive/snapshots?uniqueId=series&order=desc&limit=3");
    const rest = await call("GET", `/archive/snapshots?uniqueId=series&order=desc&limit=3&cursor=${encodeURIComponent(page.body.nextCursor)}`);
    expect(rest.body.items.map((i: { id: string }) => i.id)).toEqual(["series-1000"]);
    expect((await call("GET", "/archive/snapshots?date=2020-01-01&order=desc")).body.field).toBe("query.order");

    // $snapshot.history = 2: this unique id keeps its newest two (the server has no global rule).
    for (let i = 0; i < 4; i++) {
      const w = await call("POST", "/archive/snapshots", { uniqueId: "kept", document: { "$snapshot.history": [2], i: [i] } });
      expect(w.status).toBe(201);
    }
    const kept = await call("GET", "/archive/snapshots?uniqueId=kept");
    expect(kept.body.items).toHaveLength(2);
    const docs = await Promise.all(kept.body.items.map(async (i: { id: string }) => (await call("GET", `/archive/snapshots/${i.id}`)).body.document.i[0]));
    expect(docs).toEqual([2, 3]);
    const invalid = await call("POST", "/archive/snapshots", { uniqueId: "kept", document: { "$snapshot.history": [0] } });
    expect(invalid.status).toBe(400);
    expect(invalid.body.field).toBe("document.$snapshot.history[0]");
  });
});
