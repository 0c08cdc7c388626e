/** The archive over a real server: JSON and multipart snapshots, streamed downloads, limits, permissions, projects. */
import { SYSTEM } from "../../src/access/actor.js";
import { createHash } from "node:crypto";
import { afterEach, beforeEach, expect, it } from "vitest";
import { Archive } from "../../src/archive/archive.js";
import { bytes, dump, sha256 } from "../archive/helpers.js";
import { forEachBackend, httpBackends, type BackendHandle } from "../conformance/backends.js";
import { raw, startServer, type Running } from "./harness.js";

const API = "/api/v1";
const MiB = 1024 * 1024;

/** Deterministic bytes that do not compress or repeat per chunk. */
const md5 = (b: Uint8Array) => createHash("md5").update(b).digest("hex");

forEachBackend((backend) => {
  let h: BackendHandle;
  let s: Running;
  let root: string;
  const call = (token: string, method: string, path: string, body?: unknown, base = s.base) =>
    raw(base, method, API + path, {
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const upload = (token: string, form: FormData, base = s.base) =>
    fetch(`${base}${API}/archive/snapshots`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: form }).then(async (r) => ({
      status: r.status,
      body: JSON.parse(await r.text()),
    }));

  beforeEach(async () => {
    h = await backend.create();
    s = await startServer(h.kv);
    root = s.root.token!;
  });
  afterEach(async () => {
    await s.close();
    await h.destroy();
  });

  it("stores a JSON snapshot, reads it, finds it by unique id and by date (paginated), deletes it", async () => {
    const a = await call(root, "POST", "/archive/snapshots", { uniqueId: "order/42", document: { status: ["open"], amount: [12.5] } });
    expect(a.status).toBe(201);
    expect(a.body).toMatchObject({ id: expect.stringMatching(/^order\/42-\d+$/), uniqueId: "order/42", size: expect.any(Number) });
    const b = await call(root, "POST", "/archive/snapshots", { uniqueId: "order/42", document: { status: ["closed"] } });
    const id = encodeURIComponent(a.body.id);
    const got = await call(root, "GET", `/archive/snapshots/${id}`);
    expect(got.body).toEqual({ ...a.body, document: { status: ["open"], amount: [12.5] }, files: [] });

    const page1 = await call(root, "GET", "/archive/snapshots?uniqueId=order%2F42&limit=1");
    expect(page1.body.items.map((i: { id: string }) => i.id)).toEqual([a.body.id]);
    expect(page1.body.nextCursor).toEqual(expect.any(String));
    const page2 = await call(root, "GET", `/archive/snapshots?uniqueId=order%2F42&limit=1&cursor=${page1.body.nextCursor}`);
    expect(page2.body.items.map((i: { id: string }) => i.id)).toEqual([b.body.id]);
    const day = (a.body.modified as string).slice(0, 10);
    const byDate = await call(root, "GET", `/archive/snapshots?date=${day}`);
    expect(byDate.body.items.map((i: { id: string }) => i.id)).toContain(a.body.id);

    expect((await call(root, "DELETE", `/archive/snapshots/${id}`)).status).toBe(204);
    expect((await call(root, "GET", `/archive/snapshots/${id}`)).status).toBe(404);
    expect((await call(root, "DELETE", `/archive/snapshots/${id}`)).status).toBe(404);
  });

  it("takes a multipart upload of a few MiB and streams the files back byte for byte with Content-Length and ETag", async () => {
    const big = bytes(3 * MiB + 12345, 7);
    const small = Buffer.from("hello archive\n");
    const form = new FormData();
    form.append("uniqueId", "case-1");
    form.append("document", JSON.stringify({ title: ["Case 1"] }));
    form.append("scan", new Blob([big]), "scan.pdf");
    form.append("note", new Blob([small]), "notes/ä note.txt");
    const created = await upload(root, form);
    expect(created.status).toBe(201);
    expect(created.body.size).toBe(big.length + small.length + JSON.stringify({ title: ["Case 1"] }).length);
    const id = encodeURIComponent(created.body.id);
    const snap = await call(root, "GET", `/archive/snapshots/${id}`);
    expect(snap.body.files).toEqual([
      { name: "scan.pdf", size: big.length, sha256: sha256(big), md5: md5(big) },
      { name: "notes/ä note.txt", size: small.length, sha256: sha256(small), md5: md5(small) },
    ]);

    const res = await fetch(`${s.base}${API}/archive/snapshots/${id}/files/scan.pdf`, { headers: { authorization: `Bearer ${root}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-length")).toBe(String(big.length));
    expect(res.headers.get("etag")).toBe(`"${sha256(big)}"`);
    expect(res.headers.get("content-type")).toBe("application/octet-stream");
    expect(Buffer.from(await res.arrayBuffer()).equals(big)).toBe(true);
    const note = await fetch(`${s.base}${API}/archive/snapshots/${id}/files/${encodeURIComponent("notes/ä note.txt")}`, { headers: { authorization: `Bearer ${root}` } });
    expect(Buffer.from(await note.arrayBuffer()).equals(small)).toBe(true);
    const again = await fetch(`${s.base}${API}/archive/snapshots/${id}/files/scan.pdf`, { headers: { authorization: `Bearer ${root}`, "if-none-match": `"${sha256(big)}"` } });
    expect(again.status).toBe(304);
    expect((await call(root, "GET", `/archive/snapshots/${id}/files/missing.txt`)).status).toBe(404);
  });

  it("answers 413 naming the limit (archive limit, body limit), 400 for bad input, 415 for a wrong type; nothing stored", async () => {
    const limited = await startServer(h.kv, { archive: { maxSnapshotBytes: 64 * 1024 } });
    try {
      const token = limited.root.token!;
      const doc = { blob: ["x".repeat(100 * 1024)] };
      const overArchive = await call(token, "POST", "/archive/snapshots", { uniqueId: "big", document: doc }, limited.base);
      expect(overArchive.status).toBe(413);
      expect(overArchive.body).toMatchObject({ limit: 64 * 1024, detail: expect.stringContaining("65536") });
      const overBody = await call(token, "POST", "/archive/snapshots", { uniqueId: "big", document: { blob: ["x".repeat(1100 * 1024)] } }, limited.base);
      expect(overBody.status).toBe(413);
      expect(overBody.body.limit).toBe(1024 * 1024);
      const form = new FormData();
      form.append("uniqueId", "big");
      form.append("document", "{}");
      form.append("file", new Blob([bytes(1 * MiB, 3)]), "f.bin");
      const overFile = await upload(token, form, limited.base);
      expect(overFile.status).toBe(413);
      expect(overFile.body.limit).toBe(64 * 1024);
      // the connection is still usable and nothing of the refused snapshots is stored
      expect((await call(token, "GET", "/archive/snapshots?uniqueId=big", undefined, limited.base)).body.items).toEqual([]);
      expect((await dump(h.kv)).filter((l) => !l.startsWith('["archive-date"'))).toEqual([]);
    } finally {
      await limited.close();
    }

    const bad: [string, FormData][] = [];
    const f1 = new FormData();
    f1.append("document", "{}");
    bad.push(["body.uniqueId", f1]);
    const f2 = new FormData();
    f2.append("uniqueId", "u");
    f2.append("document", "{not json");
    bad.push(["body.document", f2]);
    const f3 = new FormData();
    f3.append("uniqueId", "u");
    f3.append("document", "{}");
    f3.append("f", new Blob(["a"]), "a.txt");
    f3.append("uniqueId", "late");
    bad.push(["body.uniqueId", f3]);
    const f4 = new FormData();
    f4.append("uniqueId", "u");
    f4.append("colour", "red");
    bad.push(["body.colour", f4]);
    const f5 = new FormData();
    f5.append("uniqueId", "u");
    f5.append("document", JSON.stringify({ item: "not a list" }));
    bad.push(["document.item", f5]);
    for (const [field, form] of bad) {
      const r = await upload(root, form);
      expect(r, field).toMatchObject({ status: 400, body: { field } });
    }
    for (const [path, field] of [
      ["/archive/snapshots", "query.uniqueId"],
      ["/archive/snapshots?uniqueId=a&date=2026-01-01", "query.date"],
      ["/archive/snapshots?date=2026-02-30", "date"],
      ["/archive/snapshots/no-dash-here", "snapshotId"],
      ["/archive/snapshots?uniqueId=a&limit=0", "query.limit"],
    ] as const) {
      const r = await call(root, "GET", path);
      expect(r, path).toMatchObject({ status: 400, body: { field } });
    }
    expect((await call(root, "POST", "/archive/snapshots", { uniqueId: "u", document: [] })).status).toBe(400);
    expect((await call(root, "POST", "/archive/snapshots", { uniqueId: "", document: {} })).status).toBe(400);
    const empty = await raw(s.base, "POST", `${API}/archive/snapshots`, { headers: { authorization: `Bearer ${root}` } });
    expect(empty).toMatchObject({ status: 400, body: { field: "body" } });
    const text = await raw(s.base, "POST", `${API}/archive/snapshots`, { headers: { authorization: `Bearer ${root}`, "content-type": "text/plain" }, body: "hi" });
    expect(text.status).toBe(415);
    const broken = await raw(s.base, "POST", `${API}/archive/snapshots`, {
      headers: { authorization: `Bearer ${root}`, "content-type": "multipart/form-data; boundary=xyz" },
      body: '--xyz\r\nContent-Disposition: form-data; name="uniqueId"\r\n\r\nu\r\n--xyz\r\nContent-Disposition: form-data; name="f"; filename="a"\r\n\r\npartial',
    });
    expect(broken.status).toBe(400);
    expect((await call(root, "GET", "/archive/snapshots?uniqueId=u")).body.items).toEqual([]);
  });

  it("needs global.readArchive to read and global.writeArchive to write", async () => {
    const made = await call(root, "POST", "/archive/snapshots", { uniqueId: "u", document: {} });
    const id = encodeURIComponent(made.body.id);
    const bob = (await s.userClient("bob")).token!;
    expect((await call(bob, "GET", `/archive/snapshots/${id}`)).status).toBe(403);
    expect((await call(bob, "GET", "/archive/snapshots?uniqueId=u")).status).toBe(403);
    expect((await call(bob, "POST", "/archive/snapshots", { uniqueId: "u", document: {} })).status).toBe(403);
    expect((await call(root, "POST", "/global/permissions/grant", { intent: "global.readArchive", identity: "bob" })).status).toBeLessThan(300);
    expect((await call(bob, "GET", `/archive/snapshots/${id}`)).status).toBe(200);
    expect((await call(bob, "DELETE", `/archive/snapshots/${id}`)).status).toBe(403);
    expect((await call(bob, "POST", "/archive/restore", { snapshotId: made.body.id })).status).toBe(403);
    expect((await call(bob, "POST", "/projects/x/archive", {})).status).toBe(403);
    expect((await call(root, "POST", "/global/permissions/grant", { intent: "global.writeArchive", identity: "bob" })).status).toBeLessThan(300);
    expect((await call(bob, "DELETE", `/archive/snapshots/${id}`)).status).toBe(204);
    expect((await call(s.client().token ?? "nope", "GET", "/archive/snapshots?uniqueId=u")).status).toBe(401);
  });

  it("archives a closed project (dropping it) and restores it over HTTP", async () => {
    expect((await call(root, "POST", "/projects", { id: "p", displayName: "School" })).status).toBe(201);
    expect((await call(root, "POST", "/projects/p/subprojects", { id: "s", displayName: "Roof", currency: "EUR" })).status).toBe(201);
    expect((await call(root, "POST", "/projects/p/archive", {})).body).toMatchObject({ status: 409, field: "status" });
    await call(root, "POST", "/projects/p/subprojects/s/close");
    await call(root, "POST", "/projects/p/close");
    const before = (await call(root, "GET", "/projects/p/history?limit=1000")).body;
    const bob = (await s.userClient("bob")).token!;
    await call(root, "POST", "/global/permissions/grant", { intent: "global.writeArchive", identity: "bob" });
    expect((await call(bob, "POST", "/projects/p/archive", {})).status).toBe(404); // holds nothing on p: as if it did not exist
    expect((await call(root, "POST", "/projects/p/archive", { drop: "yes" })).status).toBe(400);
    expect((await call(root, "POST", "/projects/nope/archive", {})).status).toBe(404);

    const archived = await call(root, "POST", "/projects/p/archive", { drop: true });
    expect(archived.status).toBe(201);
    expect(archived.body).toMatchObject({ projectId: "p", dropped: true, snapshot: { uniqueId: "project:p" }, counts: { resources: { project: 1, subproject: 1 } } });
    expect((await call(root, "GET", "/projects/p")).status).toBe(404);
    const listed = await call(root, "GET", "/archive/snapshots?uniqueId=project%3Ap");
    expect(listed.body.items.map((i: { id: string }) => i.id)).toEqual([archived.body.snapshot.id]);

    const restored = await call(root, "POST", "/archive/restore", { snapshotId: archived.body.snapshot.id });
    expect(restored.status).toBe(201);
    expect(restored.body).toMatchObject({ projectId: "p", verify: { ok: true, checked: archived.body.chainHead.seq } });
    expect((await call(root, "GET", "/projects/p")).body.data.status).toBe("closed");
    expect((await call(root, "GET", "/projects/p/history?limit=1000")).body).toEqual(before);
    expect((await call(root, "GET", "/projects/p/verify")).body).toMatchObject({ ok: true });
    expect((await call(root, "POST", "/archive/restore", { snapshotId: archived.body.snapshot.id })).status).toBe(409);
    expect((await call(root, "POST", "/archive/restore", { snapshotId: "bad" })).status).toBe(400);
  });

  it("cleans up an upload another process left half-done when the server starts", async () => {
    const other = new Archive(h.kv);
    let fail!: (e: Error) => void;
    const stuck = new Promise<never>((_, rej) => (fail = rej));
    let started!: () => void;
    const staged = new Promise<void>((res) => (started = res));
    const content = (async function* () {
      yield bytes(MiB + 10, 5); // one full chunk gets committed
      started();
      await stuck;
    })();
    const write = other.write(SYSTEM, "killed", {}, [{ name: "f", content }]).catch((e: unknown) => e);
    await staged;
    // wait for the first chunk's commit to land (no timing: poll the store)
    while (!(await dump(h.kv)).some((l) => l.startsWith('["archive-chunks"'))) await new Promise((r) => setImmediate(r));
    expect((await dump(h.kv)).some((l) => l.startsWith('["archive-journal"'))).toBe(true);

    const restarted = await startServer(h.kv, { archive: { recoverOlderThanMs: 0 } });
    try {
      expect(await dump(h.kv)).toEqual([]);
    } finally {
      await restarted.close();
      fail(new Error("the process is gone"));
      await write;
    }
    expect(await dump(h.kv)).toEqual([]);
  });
}, httpBackends);
