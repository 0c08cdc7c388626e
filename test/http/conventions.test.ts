/**
 * HTTP conventions over a real server (src/http/conventions.ts): 412 for a stale If-Match, 304 for a
 * matching If-None-Match, 405 with Allow, security headers, compression of JSON, CORS off by default
 * and on for configured origins only, and 503 with Retry-After while the event loop lags.
 */
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryKv } from "../../src/kv/memory.js";
import { eventually, pause } from "../support/eventually.js";
import { raw, startServer, type Running } from "./harness.js";

/** An answer's status and headers as sent (node:http: no decompression, no cache). */
function head(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(base + path, { method, headers }, (res) => {
      let bytes = 0;
      res.on("data", (c: Buffer) => (bytes += c.length));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, bytes }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("HTTP conventions", () => {
  let s: Running;
  let auth: Record<string, string>;

  beforeAll(async () => {
    s = await startServer(new MemoryKv());
    auth = { authorization: `Bearer ${s.root.token}` };
    await s.root.projects.create({ id: "p1", displayName: "Schools" });
    await s.root.project("p1").subprojects.create({ id: "s1", displayName: "Roofs", currency: "EUR" });
  });
  afterAll(async () => s?.close());

  it("answers 412 to a stale If-Match and applies nothing", async () => {
    const got = await raw(s.base, "GET", "/api/v1/projects/p1", { headers: auth });
    const etag = got.headers.get("etag")!;
    const body = JSON.stringify({ description: "first" });
    const json = { ...auth, "content-type": "application/json" };
    expect((await raw(s.base, "PATCH", "/api/v1/projects/p1", { headers: { ...json, "if-match": etag }, body })).status).toBe(200);
    const stale = await raw(s.base, "PATCH", "/api/v1/projects/p1", { headers: { ...json, "if-match": etag }, body: JSON.stringify({ description: "second" }) });
    expect(stale.status).toBe(412);
    expect(stale.body).toMatchObject({ status: 412, type: "urn:flowstore:problem:precondition_failed", field: "version" });
    expect((await raw(s.base, "GET", "/api/v1/projects/p1", { headers: auth })).body.data.description).toBe("first");
  });

  it("answers 304 with no body to a matching If-None-Match, 200 to another", async () => {
    for (const path of ["/api/v1/projects/p1", "/api/v1/projects/p1/subprojects/s1/workflowitem-ordering"]) {
      const first = await head(s.base, "GET", path, auth);
      const etag = first.headers.etag as string;
      expect(etag, path).toMatch(/^"\d+"$/);
      const same = await head(s.base, "GET", path, { ...auth, "if-none-match": etag });
      expect([same.status, same.bytes, same.headers.etag], path).toEqual([304, 0, etag]);
      expect((await head(s.base, "GET", path, { ...auth, "if-none-match": `W/${etag}, "x"` })).status, path).toBe(304);
      expect((await head(s.base, "GET", path, { ...auth, "if-none-match": '"999999"' })).status, path).toBe(200);
    }
  });

  it("answers 405 with Allow for a known path asked with another method, 404 for an unknown path", async () => {
    const wrong = await raw(s.base, "DELETE", "/api/v1/projects", { headers: auth });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("allow")).toBe("GET, HEAD, POST");
    expect(wrong.type).toContain("application/problem+json");
    expect((await raw(s.base, "PUT", "/api/v1/projects/p1/subprojects/s1", { headers: auth })).headers.get("allow")).toBe("DELETE, GET, HEAD, PATCH");
    expect((await raw(s.base, "GET", "/api/v1/nothing-here", { headers: auth })).status).toBe(404);
  });

  it("sends security headers on the API; the explorer keeps its own policy", async () => {
    const api = await raw(s.base, "GET", "/health");
    expect(api.headers.get("x-content-type-options")).toBe("nosniff");
    expect(api.headers.get("x-frame-options")).toBe("SAMEORIGIN");
    expect(api.headers.get("content-security-policy")).toContain("default-src 'self'");
    expect(api.headers.get("content-security-policy")).not.toContain("upgrade-insecure-requests");
    expect((await raw(s.base, "GET", "/")).headers.get("content-security-policy")).toContain("connect-src 'self'");
  });

  it("sends a JSON answer of the API the security headers of a JSON answer, not a page's", async () => {
    const page = await head(s.base, "GET", "/health", {});
    for (const [path, headers] of [
      ["/api/v1/projects/p1", auth],
      ["/api/v1/projects/p1/subprojects/s1/workflowitems", auth],
      ["/api/v1/projects/p1", {}], // a 401 problem
      ["/api/v1/no-such-route", auth], // a 404 problem
    ] as const) {
      const answer = await head(s.base, "GET", path, headers);
      expect(answer.headers["content-type"], path).toMatch(/^application\/(problem\+)?json/);
      expect(answer.headers["x-content-type-options"], path).toBe("nosniff");
      expect(answer.headers["cross-origin-resource-policy"], path).toBe("same-origin");
      expect(answer.headers["content-security-policy"], path).toBe("default-src 'none'; frame-ancestors 'none'");
      expect(answer.headers["x-frame-options"], path).toBe("DENY");
      // what only a page (a document) acts on is left out
      for (const name of [
        "cross-origin-opener-policy",
        "origin-agent-cluster",
        "referrer-policy",
        "x-dns-prefetch-control",
        "x-download-options",
        "x-permitted-cross-domain-policies",
        "x-xss-protection",
      ]) {
        expect(page.headers[name], name).toBeDefined();
        expect(answer.headers[name], `${path} ${name}`).toBeUndefined();
      }
    }
    // the explorer's page keeps helmet's headers beside its own policy
    const explorer = await head(s.base, "GET", "/", {});
    expect(explorer.headers["content-security-policy"]).toContain("connect-src 'self'");
    expect(explorer.headers["cross-origin-opener-policy"]).toBe("same-origin");
    expect(explorer.headers["x-frame-options"]).toBe("SAMEORIGIN");
  });

  it("compresses JSON answers for a client that accepts it", async () => {
    const gz = await head(s.base, "GET", "/openapi.json", { "accept-encoding": "gzip" });
    const plain = await head(s.base, "GET", "/openapi.json", {});
    expect(gz.headers["content-encoding"]).toBe("gzip");
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(gz.bytes).toBeLessThan(plain.bytes / 3);
  });

  it("allows no cross-origin caller by default", async () => {
    const preflight = await head(s.base, "OPTIONS", "/api/v1/projects", { origin: "https://app.example.org", "access-control-request-method": "POST" });
    expect(preflight.headers["access-control-allow-origin"]).toBeUndefined();
    const get = await head(s.base, "GET", "/health", { origin: "https://app.example.org" });
    expect(get.headers["access-control-allow-origin"]).toBeUndefined();
  });

  describe("configured: CORS origins and back pressure", () => {
    let c: Running;
    beforeAll(async () => {
      c = await startServer(new MemoryKv(), {
        http: { cors: { origins: ["https://app.example.org"] }, pressure: { maxEventLoopDelayMs: 1500, sampleIntervalMs: 100, retryAfterSeconds: 7 } },
      });
    });
    afterAll(async () => c?.close());

    it("answers a preflight from a configured origin, and only from it", async () => {
      const ok = await head(c.base, "OPTIONS", "/api/v1/projects", {
        origin: "https://app.example.org",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, if-match",
      });
      expect(ok.status).toBe(204);
      expect(ok.headers["access-control-allow-origin"]).toBe("https://app.example.org");
      expect(String(ok.headers["access-control-allow-headers"]).toLowerCase()).toContain("if-match");
      const get = await head(c.base, "GET", "/health", { origin: "https://app.example.org" });
      expect(get.headers["access-control-allow-origin"]).toBe("https://app.example.org");
      expect(String(get.headers["access-control-expose-headers"])).toContain("ETag");
      const other = await head(c.base, "OPTIONS", "/api/v1/projects", { origin: "https://evil.example.com", "access-control-request-method": "POST" });
      expect(other.headers["access-control-allow-origin"]).toBeUndefined();
    });

    it("answers 503 with Retry-After while the event loop lags, and serves again after", async () => {
      let answer: Awaited<ReturnType<typeof raw>> | undefined;
      // Past the start-up grace (conventions.ts), block the loop well past the limit (the server runs in
      // this process), then ask at once.
      await pause(1100); // the grace is a duration, not an observable state
      for (let attempt = 0; attempt < 4 && answer?.status !== 503; attempt++) {
        const until = Date.now() + 3000;
        while (Date.now() < until);
        answer = await raw(c.base, "GET", "/health");
      }
      expect(answer!.status).toBe(503);
      expect(answer!.headers.get("retry-after")).toBe("7");
      expect(answer!.body).toMatchObject({ status: 503, type: "urn:flowstore:problem:unavailable" });
      await eventually(async () => (await raw(c.base, "GET", "/health")).status === 200, { what: "/health to answer 200 again", intervalMs: 50 });
    });
  });
});
