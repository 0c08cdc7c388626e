/**
 * The web explorer's static files (the bundle `npm run build` writes to dist/web), served at `/` and
 * `/ui/*` outside /api/v1 and without authentication: the page itself holds no data, every call it
 * makes carries the user's bearer token. When the bundle is missing (running from source without a
 * build), `/` answers a short page saying how to build it, and the server starts as usual.
 * Every file is sent `no-cache` with a strong ETag (a digest of its bytes), so a browser revalidates it
 * and gets a 304 while the bundle is unchanged (the conditional GET of conventions.ts).
 */
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Type } from "@sinclair/typebox";
import type { App } from "./context.js";
import { problem, sendProblem } from "./problem.js";

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
};

/** The page may load only its own scripts and styles and talk only to this server. */
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

const MISSING = `<!doctype html><meta charset="utf-8"><title>flowstore</title>
<h1>flowstore</h1><p>The web explorer is not built. Run <code>npm run build</code> (it writes <code>dist/web</code>), then restart the server.</p>
<p>The API is at <a href="/docs">/docs</a>.</p>`;

/** dist/web beside the compiled server (dist/http/web.js → dist/web), or from the source tree. */
export function defaultWebRoot(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [resolve(here, "../web"), resolve(here, "../../dist/web")];
  return candidates.find((c) => existsSync(join(c, "index.html"))) ?? candidates[0]!;
}

const NAME = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.(?:js|css|map|svg|png)$/;

/** A strong validator of a file's bytes: its sha-256, quoted. */
const etagOf = (body: Buffer | string): string => `"${createHash("sha256").update(body).digest("base64url")}"`;

export function registerWeb(app: App, root: string): void {
  const headers = (type: string) => ({
    "content-type": type,
    "x-content-type-options": "nosniff",
    "content-security-policy": CSP,
    "referrer-policy": "no-referrer",
  });

  app.get("/", { schema: { hide: true } }, async (_request, reply) => {
    const index = await readFile(join(root, "index.html")).catch(() => null);
    const body = index ?? MISSING;
    reply.headers({ ...headers(TYPES[".html"]!), "cache-control": "no-cache", etag: etagOf(body) });
    return reply.send(body);
  });

  app.get("/ui/:name", { schema: { hide: true, params: Type.Object({ name: Type.String() }) } }, async (request, reply) => {
    const name = request.params.name;
    // A fixed, flat set of file names: no path ever leaves the bundle directory.
    if (!NAME.test(name)) return sendProblem(reply, problem(404, `no file ${name}`));
    const body = await readFile(join(root, name)).catch(() => null);
    if (!body) return sendProblem(reply, problem(404, `no file ${name}`));
    const ext = name.slice(name.lastIndexOf("."));
    reply.headers({ ...headers(TYPES[ext] ?? "application/octet-stream"), "cache-control": "no-cache", etag: etagOf(body) });
    return reply.send(body);
  });
}
