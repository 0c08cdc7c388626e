/** The web explorer's static route, without a browser: present bundle, missing bundle, no path escape. */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryKv } from "../../src/kv/memory.js";
import { raw, SCRAPE, startServer, type Running } from "./harness.js";
import { makeTempDirSync, removeTempDirSync } from "../support/temp-dir.js";

describe("web explorer static files", () => {
  let dir: string;
  let missing: Running;
  let present: Running;

  beforeAll(async () => {
    dir = makeTempDirSync("web");
    writeFileSync(join(dir, "index.html"), "<!doctype html><title>explorer</title>");
    writeFileSync(join(dir, "app.js"), "console.log('explorer')");
    writeFileSync(join(dir, "secret.txt"), "not served");
    missing = await startServer(new MemoryKv(), { webRoot: join(dir, "nothing-here") });
    present = await startServer(new MemoryKv(), { webRoot: dir });
  });

  afterAll(async () => {
    await missing?.close();
    await present?.close();
    removeTempDirSync(dir);
  });

  it("without a bundle, / says how to build it and the API still answers", async () => {
    const page = await raw(missing.base, "GET", "/");
    expect(page.status).toBe(200);
    expect(page.type).toContain("text/html");
    expect(page.body).toContain("npm run build");
    expect((await raw(missing.base, "GET", "/ui/app.js")).status).toBe(404);
    expect((await raw(missing.base, "GET", "/health")).status).toBe(200);
    expect((await raw(missing.base, "GET", "/openapi.json")).status).toBe(200);
    expect((await raw(missing.base, "GET", "/metrics", SCRAPE)).status).toBe(200);
  });

  it("serves index.html at / and bundle files at /ui/, with a restrictive CSP and no auth", async () => {
    const page = await raw(present.base, "GET", "/");
    expect(page.body).toContain("<title>explorer</title>");
    expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
    const js = await raw(present.base, "GET", "/ui/app.js");
    expect(js.status).toBe(200);
    expect(js.type).toContain("text/javascript");
    expect(js.headers.get("x-content-type-options")).toBe("nosniff");
  });

  it("serves nothing outside the bundle's file types and directory", async () => {
    for (const path of ["/ui/secret.txt", "/ui/..%2Findex.html", "/ui/%2e%2e%2fsecret.txt", "/ui/.hidden.js", "/ui/nope.js"]) {
      const res = await raw(present.base, "GET", path);
      expect(res.status, path).toBe(404);
      expect(res.type, path).toContain("application/problem+json");
    }
    // The API is still behind its bearer token.
    expect((await raw(present.base, "GET", "/api/v1/projects")).status).toBe(401);
  });
});
