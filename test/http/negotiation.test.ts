/**
 * HTTP details of issue 30 over a real server on 127.0.0.1: token answers are `Cache-Control: no-store`
 * (both APIs); If-Match compares strongly (a weak or unquoted tag is a 412); `requireIfMatch` (serve
 * --require-if-match) answers 428 to an unconditional write of an existing resource; an Accept that
 * admits nothing the route answers is a 406 on the native API (not on the static files or /docs); the
 * explorer's static files carry a strong ETag, so a `no-cache` revalidation is a 304.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryKv } from "../../src/kv/memory.js";
import { makeTempDirSync, removeTempDirSync } from "../support/temp-dir.js";
import { raw, ROOT_PASSWORD, startServer, type Running } from "./harness.js";
import { setCookies, tbCall } from "./trubudget/harness.js";

const API = "/api/v1";
const JSON_BODY = { "content-type": "application/json" };

describe("HTTP negotiation and preconditions", () => {
  let dir: string;
  let s: Running;
  let strict: Running;
  const auth = (r: Running) => ({ authorization: `Bearer ${r.root.token}` });
  const patch = (r: Running, path: string, ifMatch: string | undefined, body: object) =>
    raw(r.base, "PATCH", `${API}${path}`, { headers: { ...auth(r), ...JSON_BODY, ...(ifMatch === undefined ? {} : { "if-match": ifMatch }) }, body: JSON.stringify(body) });
  const description = async (r: Running, path: string) => (await r.root.request<{ data: { description: string } }>("GET", `${API}${path}`)).data.description;

  beforeAll(async () => {
    dir = makeTempDirSync("negotiation-web");
    writeFileSync(join(dir, "index.html"), "<!doctype html><title>explorer</title>");
    writeFileSync(join(dir, "app.js"), "console.log('explorer')");
    s = await startServer(new MemoryKv(), { webRoot: dir, trubudgetApi: { organization: "KfW" }, loginRateLimit: false });
    strict = await startServer(new MemoryKv(), { webRoot: false, http: { requireIfMatch: true } });
    for (const r of [s, strict]) await r.root.projects.create({ id: "p1", displayName: "P1", description: "first" });
  });
  afterAll(async () => {
    await s?.close();
    await strict?.close();
    removeTempDirSync(dir);
  });

  it("answers tokens with Cache-Control: no-store, native and TruBudget, log in and refresh", async () => {
    const login = await raw(s.base, "POST", `${API}/auth/token`, { headers: JSON_BODY, body: JSON.stringify({ username: "root", password: ROOT_PASSWORD }) });
    expect(login.status).toBe(200);
    expect(login.headers.get("cache-control")).toBe("no-store");
    const refresh = await raw(s.base, "POST", `${API}/auth/refresh`, { headers: JSON_BODY, body: JSON.stringify({ refreshToken: login.body.refreshToken }) });
    expect(refresh.status).toBe(200);
    expect(refresh.headers.get("cache-control")).toBe("no-store");

    const tbLogin = await tbCall(s.base, "user.authenticate", { data: { user: { id: "root", password: ROOT_PASSWORD } } });
    expect(tbLogin.status).toBe(200);
    expect(tbLogin.headers.get("cache-control")).toBe("no-store");
    const tbRefresh = await tbCall(s.base, "user.refreshtoken", { data: {}, cookie: setCookies(tbLogin).header });
    expect(tbRefresh.status).toBe(200);
    expect(tbRefresh.headers.get("cache-control")).toBe("no-store");
    // An answer without a token keeps the default caching.
    expect((await raw(s.base, "GET", `${API}/me`, { headers: auth(s) })).headers.get("cache-control")).toBeNull();
  });

  it("compares If-Match strongly: a weak or unquoted ETag never matches (412, nothing applied); the strong one does", async () => {
    const got = await raw(s.base, "GET", `${API}/projects/p1`, { headers: auth(s) });
    const etag = got.headers.get("etag")!;
    expect(etag).toMatch(/^"\d+"$/);
    for (const tag of [`W/${etag}`, etag.slice(1, -1), `W/${etag}, W/"999"`, '"not a version"']) {
      const refused = await patch(s, "/projects/p1", tag, { description: `by ${tag}` });
      expect(refused.status, tag).toBe(412);
      expect(refused.type).toContain("application/problem+json");
      expect(refused.body).toMatchObject({ status: 412, field: "header.if-match" });
    }
    expect(await description(s, "/projects/p1")).toBe("first");
    const ok = await patch(s, "/projects/p1", `W/"999", ${etag}`, { description: "second" });
    expect(ok.status).toBe(200);
    expect(await description(s, "/projects/p1")).toBe("second");
  });

  it("with requireIfMatch, refuses an unconditional write of an existing resource with 428, and applies nothing", async () => {
    const unconditional = await patch(strict, "/projects/p1", undefined, { description: "blind" });
    expect(unconditional.status).toBe(428);
    expect(unconditional.type).toContain("application/problem+json");
    expect(unconditional.body).toMatchObject({ status: 428, field: "header.if-match", type: "urn:flowstore:problem:precondition_required" });
    expect(await description(strict, "/projects/p1")).toBe("first");
    expect((await raw(strict.base, "DELETE", `${API}/projects/p1`, { headers: auth(strict) })).status).toBe(428);
    expect(
      (await raw(strict.base, "PUT", `${API}/projects/p1/subprojects/nope/workflowitem-ordering`, { headers: { ...auth(strict), ...JSON_BODY }, body: '{"ordering":[]}' })).status,
    ).toBe(428);
    // A create names no existing resource: no If-Match is needed.
    const created = await raw(strict.base, "POST", `${API}/projects`, { headers: { ...auth(strict), ...JSON_BODY }, body: JSON.stringify({ id: "p2", displayName: "P2" }) });
    expect(created.status).toBe(201);
    // With If-Match (a version, or *), the write goes through.
    const etag = (await raw(strict.base, "GET", `${API}/projects/p1`, { headers: auth(strict) })).headers.get("etag")!;
    expect((await patch(strict, "/projects/p1", etag, { description: "seen" })).status).toBe(200);
    expect((await patch(strict, "/projects/p1", "*", { description: "any" })).status).toBe(200);
    expect(await description(strict, "/projects/p1")).toBe("any");
    // The default server takes unconditional writes.
    expect((await patch(s, "/projects/p1", undefined, { description: "third" })).status).toBe(200);
  });

  it("answers 406 when Accept admits nothing the route answers; */*, none, JSON and problem+json are fine", async () => {
    for (const accept of ["application/xml", "text/html", "application/json;q=0, application/problem+json;q=0"]) {
      const refused = await raw(s.base, "GET", `${API}/projects`, { headers: { ...auth(s), accept } });
      expect(refused.status, accept).toBe(406);
      expect(refused.type).toContain("application/problem+json");
      expect(refused.body).toMatchObject({ status: 406, field: "header.accept" });
    }
    // Refused before anything runs: a write with an unacceptable Accept changes nothing.
    const write = await raw(s.base, "POST", `${API}/projects`, {
      headers: { ...auth(s), ...JSON_BODY, accept: "application/xml" },
      body: JSON.stringify({ id: "p9", displayName: "P9" }),
    });
    expect(write.status).toBe(406);
    expect((await raw(s.base, "GET", `${API}/projects/p9`, { headers: auth(s) })).status).toBe(404);
    for (const accept of [undefined, "*/*", "application/json", "application/problem+json", "application/*", "text/html, application/json;q=0.5", "application/xml, */*;q=0.1"]) {
      const r = await raw(s.base, "GET", `${API}/projects`, { headers: { ...auth(s), ...(accept ? { accept } : {}) } });
      expect(r.status, String(accept)).toBe(200);
    }
    // A route that answers another type is negotiated on that type.
    const feed = await raw(s.base, "GET", `${API}/events`, { headers: { ...auth(s), accept: "application/json" } });
    expect(feed.status).toBe(406);
    expect(feed.body.detail).toContain("text/event-stream");
    // Not the explorer's files nor the API's documentation page.
    expect((await raw(s.base, "GET", "/ui/app.js", { headers: { accept: "application/xml" } })).status).toBe(200);
    expect((await raw(s.base, "GET", "/", { headers: { accept: "application/xml" } })).status).toBe(200);
    expect((await raw(s.base, "GET", "/docs", { headers: { accept: "application/xml" } })).status).not.toBe(406);
  });

  it("sends the explorer's files no-cache with a strong ETag, so revalidating answers 304", async () => {
    for (const path of ["/", "/ui/app.js"]) {
      const first = await raw(s.base, "GET", path);
      expect(first.status).toBe(200);
      expect(first.headers.get("cache-control")).toBe("no-cache");
      const etag = first.headers.get("etag");
      expect(etag, path).toMatch(/^"[A-Za-z0-9_-]+"$/);
      const again = await raw(s.base, "GET", path, { headers: { "if-none-match": etag! } });
      expect(again.status, path).toBe(304);
      expect(again.body).toBe("");
    }
    writeFileSync(join(dir, "app.js"), "console.log('explorer, rebuilt')");
    const changed = await raw(s.base, "GET", "/ui/app.js", { headers: { "if-none-match": '"stale"' } });
    expect(changed.status).toBe(200);
    expect(changed.body).toContain("rebuilt");
  });
});
