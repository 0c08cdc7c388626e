/**
 * Issue 29, "What to build": backup and restore on the native API (`GET /api/v1/store/backup`,
 * `POST /api/v1/store/restore`), the store's own operations with their intents, through a real server on
 * 127.0.0.1 over LMDB: an ordinary account is refused (403, before the body is looked at); a holder of
 * `global.createBackup` gets the backup without credentials; a restore by a holder of
 * `global.restoreBackup` is a new epoch naming who and which backup (its SHA-256), keeps the replaced
 * history verifiable, and ends every session from before it; a bad upload is 415 or 400 and changes
 * nothing.
 */
import { createHash } from "node:crypto";
import { gunzipSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decode } from "../../src/kv/tuple.js";
import { backends, type BackendHandle } from "../conformance/backends.js";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";
import { raw, ROOT_PASSWORD, startServer, type Running } from "./harness.js";

const API = "/api/v1";
const lmdb = backends.find((b) => b.name === "lmdb")!;

describe("the native API's backup and restore", () => {
  let h: BackendHandle;
  let s: Running;
  let dir: string;
  const tokens: Record<string, string> = {};
  const call = (who: string, method: string, path: string, body?: unknown) =>
    raw(s.base, method, `${API}${path}`, {
      headers: { authorization: `Bearer ${tokens[who]}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  const restore = (who: string, body: Buffer, type = "application/gzip") =>
    raw(s.base, "POST", `${API}/store/restore`, { headers: { authorization: `Bearer ${tokens[who]}`, "content-type": type }, body });
  const login = async (username: string, password: string) =>
    (await raw(s.base, "POST", `${API}/auth/token`, { headers: { "content-type": "application/json" }, body: JSON.stringify({ username, password }) })).body.token as string;

  beforeAll(async () => {
    dir = await makeTempDir("store-backup");
    h = await lmdb.create();
    s = await startServer(h.kv, { webRoot: false, loginRateLimit: false, restoreDir: dir });
    tokens.root = s.root.token!;
    for (const id of ["mallory", "operator"]) tokens[id] = (await s.userClient(id, `${id} password 1`)).token!;
    for (const intent of ["global.createBackup", "global.restoreBackup"]) {
      expect((await call("root", "POST", "/global/permissions/grant", { intent, identity: "operator" })).status).toBeLessThan(300);
    }
    expect((await call("root", "POST", "/projects", { id: "kept", displayName: "Kept" })).status).toBe(201);
  });
  afterAll(async () => {
    await s?.close();
    await h?.destroy();
    await removeTempDir(dir);
  });

  it("refuses an ordinary account both ways (403), the restore before its body's media type", async () => {
    expect((await call("mallory", "GET", "/store/backup")).status).toBe(403);
    expect((await restore("mallory", Buffer.from("not a backup"), "text/plain")).status).toBe(403);
    expect((await restore("mallory", gzipSync("{}\n"))).status).toBe(403);
  });

  it("backs up without credentials, refuses bad uploads unchanged, restores as a new epoch that ends every session", async () => {
    const res = await fetch(`${s.base}${API}/store/backup`, { headers: { authorization: `Bearer ${tokens.operator}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/gzip");
    const gz = Buffer.from(await res.arrayBuffer());
    const ndjson = gunzipSync(gz).toString("utf8");
    // The identity partition's key families: users, no password hash, no session.
    const families = new Set<string>();
    let inIdentity = false;
    for (const line of ndjson.split("\n").filter(Boolean)) {
      const o = JSON.parse(line) as { partition?: string; k?: string };
      if (o.partition !== undefined) inIdentity = decode(Buffer.from(o.partition, "base64"))[0] === "identity";
      else if (o.k !== undefined && inIdentity) families.add(decode(Buffer.from(o.k, "base64"))[0] as string);
    }
    expect(families).toContain("user");
    expect(families).not.toContain("password");
    expect(families).not.toContain("session");

    // Not gzip: 415; gzip but not an export: 400; the store goes on (writes, the same tokens).
    expect((await restore("operator", gz, "application/json")).status).toBe(415);
    const bad = await restore("operator", gzipSync("not an export\n"));
    expect(bad.status).toBe(400);
    expect(bad.body.type).toMatch(/validation/);
    expect((await call("root", "POST", "/projects", { id: "after", displayName: "Written after the backup" })).status).toBe(201);

    const done = await restore("operator", gz);
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body).toMatchObject({ sha256: createHash("sha256").update(gunzipSync(gz)).digest("hex") });
    expect(done.body.partitions).toBeGreaterThan(0);
    // Every session from before is over.
    for (const who of ["root", "operator", "mallory"]) expect((await call(who, "GET", "/projects")).status).toBe(401);
    tokens.root = await login("root", ROOT_PASSWORD);
    expect((await call("root", "GET", "/projects/kept")).status).toBe(200);
    expect((await call("root", "GET", "/projects/after")).status).toBe(404);
    // The restore is an epoch naming who and which backup; the replaced history (with "after") verifies.
    const verified = await s.app.flowstore.verifyAll();
    expect(verified.ok).toBe(true);
    expect(verified.epochs.list).toEqual([expect.objectContaining({ epoch: 1, by: "operator", backup: expect.objectContaining({ sha256: done.body.sha256 }) })]);
    expect(verified.epochs.list[0]!.replaced.ok).toBe(true);
  });
});
