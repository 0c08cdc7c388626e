/**
 * HTTP conventions every route follows without code of its own (RFC 9110), and the plugins that give
 * the server its operator-grade behaviour:
 *
 * - conditional reads: a GET (or HEAD) answered with an ETag answers 304 with no body when the request's
 *   If-None-Match holds that ETag (or `*`);
 * - 405 with `Allow` for a path the server knows asked with a method it does not serve there;
 * - CORS (@fastify/cors) for the configured origins only, off by default;
 * - compression (@fastify/compress) of JSON answers;
 * - security headers (`securityHeaders`; server.ts sets them): @fastify/helmet's, computed once, on pages
 *   and everything outside the API; a JSON answer of the API gets the few a JSON answer needs;
 * - back pressure (@fastify/under-pressure), when configured: 503 with Retry-After while the event loop lags;
 * - on the native API (apiConventions): 406 when Accept admits none of the media types a route answers,
 *   and, when required, 428 for a write to an existing resource sent without If-Match.
 * The defaults are declared here once (DEFAULT_PRESSURE, …); `flowstore serve` exposes them as options.
 */
import type { Readable } from "node:stream";
import compress from "@fastify/compress";
import cors from "@fastify/cors";
import helmet from "@fastify/helmet";
import underPressure from "@fastify/under-pressure";
import fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { PreconditionRequiredError, UnavailableError } from "../errors.js";
import { PROBLEM_CONTENT_TYPE, problem, sendProblem } from "./problem.js";

/** Back pressure: answer 503 (with Retry-After) while the event loop lags more than `maxEventLoopDelayMs`. */
export interface PressureOptions {
  readonly maxEventLoopDelayMs: number;
  readonly retryAfterSeconds: number;
  /** How often the lag is measured (under-pressure's sampleInterval). */
  readonly sampleIntervalMs: number;
}

export const DEFAULT_PRESSURE: PressureOptions = { maxEventLoopDelayMs: 1000, retryAfterSeconds: 10, sampleIntervalMs: 1000 };

/** CORS: the origins (e.g. `https://app.example.org`) whose pages may call the API; none by default. */
export interface CorsOptions {
  readonly origins: readonly string[];
}

/** How the conventions are configured (ServerOptions.http). */
export interface HttpConventionOptions {
  /** Origins allowed to call the API from a browser (default: none, CORS off). */
  readonly cors?: CorsOptions | false;
  /** Compress JSON answers (gzip, deflate, br) of at least `compressThreshold` bytes (default true). */
  readonly compress?: boolean;
  readonly compressThreshold?: number;
  /** Security headers (default true). */
  readonly securityHeaders?: boolean;
  /**
   * Back pressure; none by default (a library user's process may block its loop for reasons of its own,
   * e.g. building another server); `flowstore serve` turns it on with DEFAULT_PRESSURE.
   */
  readonly pressure?: Partial<PressureOptions> | false;
  /**
   * Refuse with 428 a write to an existing resource on the native API (a route that takes If-Match: PUT,
   * PATCH, DELETE, POST on a resource) sent without If-Match (`serve --require-if-match`); default false.
   */
  readonly requireIfMatch?: boolean;
}

export const DEFAULT_COMPRESS_THRESHOLD = 1024;

// The explorer sets its own Content-Security-Policy; without TLS, upgrading requests would break /docs.
const HELMET_OPTIONS = { global: true, hsts: false, contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } } } as const;
let helmetHeaders: Promise<Readonly<Record<string, string>>> | undefined;

/**
 * The security headers of a JSON answer of the API (OWASP's REST Security Cheat Sheet, "Security
 * headers"). Such an answer is data for a script, never a page, so only what guards it when a browser
 * meets it anyway is kept:
 * - `X-Content-Type-Options: nosniff`: the browser takes it as the JSON it declares, never sniffs a body
 *   holding text a user wrote (a description) as HTML or script; and cross-origin no-cors reads of it are
 *   blocked (CORB/ORB).
 * - `Cross-Origin-Resource-Policy: same-origin`: another site's page cannot load it as a subresource
 *   (`<script>`, `<img>`: no-cors) into its own process, where a side channel (Spectre) could read it.
 *   The CORS origins a server is configured with still call the API (CORP does not apply to CORS requests).
 * - `Content-Security-Policy: default-src 'none'; frame-ancestors 'none'` and `X-Frame-Options: DENY`:
 *   opened as a document (a link to the API), it loads and runs nothing and no page may frame it
 *   (X-Frame-Options for browsers without frame-ancestors). Stricter than helmet's page policy, which
 *   allows the page's own scripts and frames: an answer of the API has neither.
 * Dropped, as they only act on documents (pages, their links and subresources, their browsing context):
 * Cross-Origin-Opener-Policy, Origin-Agent-Cluster, Referrer-Policy (the referrer of the requests a
 * page makes), X-DNS-Prefetch-Control (prefetching a page's links), X-Download-Options (IE 8 opening a
 * download in the site's context), X-Permitted-Cross-Domain-Policies (Flash and Acrobat policy files),
 * X-XSS-Protection (a legacy HTML filter helmet turns off). 4 headers, ~150 bytes, against helmet's
 * 12, ~800 bytes: every answer of the API carries them, and a GET's answer is ~700 bytes of JSON.
 * Strict-Transport-Security is left to the TLS terminator, as with helmet (HELMET_OPTIONS: hsts off).
 */
export const API_SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
  "cross-origin-resource-policy": "same-origin",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
});

/** The media types that get API_SECURITY_HEADERS (JSON and its `+json` kinds, as problem+json). */
const JSON_TYPE = /^application\/(?:[\w.-]+\+)?json\b/;

/** The security headers an answer gets (server.ts): a JSON answer of the API gets `api`, any other answer `page`. */
export interface SecurityHeaders {
  readonly page: Readonly<Record<string, string>>;
  readonly api: Readonly<Record<string, string>>;
}

/**
 * The header set of an answer (undefined: none), by its content type and whether its path is one of
 * the API's: a JSON answer of the API gets `api`; pages, scripts, downloads and every answer outside the
 * API (the explorer, /docs, /health) get helmet's.
 */
export function securityHeadersOf(headers: SecurityHeaders, api: boolean, contentType: unknown): Readonly<Record<string, string>> {
  return api && typeof contentType === "string" && JSON_TYPE.test(contentType) ? headers.api : headers.page;
}

/**
 * The security headers: on pages (and outside the API) those @fastify/helmet sets with HELMET_OPTIONS,
 * which depend on nothing in the request; on the API's JSON answers API_SECURITY_HEADERS. The plugin
 * builds its middleware anew on every request (a CPU profile of a GET put it among the server's
 * heaviest frames); here it runs once per process, on a request to a throwaway instance, and the server
 * sets what it set (server.ts). Null when they are turned off.
 */
export async function securityHeaders(options: HttpConventionOptions = {}): Promise<SecurityHeaders | null> {
  if (options.securityHeaders === false) return null;
  return { page: await helmetPageHeaders(), api: API_SECURITY_HEADERS };
}

function helmetPageHeaders(): Promise<Readonly<Record<string, string>>> {
  helmetHeaders ??= (async () => {
    const probe = fastify({ logger: false });
    try {
      await probe.register(helmet, HELMET_OPTIONS);
      // Helmet sets its headers on the raw response before the handler runs: they are all it holds here.
      probe.get("/", (_request, reply) => reply.send(Object.fromEntries(Object.entries(reply.raw.getHeaders()).map(([k, v]) => [k, String(v)]))));
      const answer = await probe.inject({ method: "GET", url: "/" });
      return Object.freeze(answer.json<Record<string, string>>());
    } finally {
      await probe.close();
    }
  })();
  return helmetHeaders;
}

/** Headers a browser page may read from an answer (CORS exposes only the simple ones otherwise). */
const EXPOSED = ["ETag", "Location", "Retry-After", "X-Request-Id", "WWW-Authenticate"];
/** Headers a browser page may send. */
const ALLOWED = ["Authorization", "Content-Type", "If-Match", "If-None-Match", "Last-Event-ID", "Accept"];

/**
 * Marks an answer that carries credentials (an access or refresh token) as one no cache may keep
 * (RFC 9111 §5.2.2.5; OAuth 2.0's token answers, RFC 6749 §5.1): the log ins and refreshes of both APIs.
 */
export const noStore = (reply: FastifyReply): FastifyReply => reply.header("cache-control", "no-store");

/** `W/"3"` and `"3"` name the same version (If-None-Match compares weakly). */
const opaque = (tag: string): string => tag.trim().replace(/^W\//, "");

/** Whether an If-None-Match header holds the ETag (or `*`). */
export function noneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === "*") return true;
  const wanted = opaque(etag);
  return header.split(",").some((t) => opaque(t) === wanted);
}

function conditionalReads(app: FastifyInstance): void {
  app.addHook("onSend", (request, reply, payload, done) => {
    const etag = reply.getHeader("etag");
    if ((request.method !== "GET" && request.method !== "HEAD") || reply.statusCode !== 200 || typeof etag !== "string") return done(null, payload);
    const header = request.headers["if-none-match"];
    if (!noneMatch(header, etag)) return done(null, payload);
    if (payload !== null && typeof payload === "object" && typeof (payload as Readable).destroy === "function") (payload as Readable).destroy();
    reply.code(304).removeHeader("content-type").removeHeader("content-length");
    done(null, null);
  });
}

/** A route's path as a pattern: `:name` one segment, `*` the rest. */
const patternOf = (url: string): RegExp =>
  new RegExp(
    `^${url
      .split("/")
      .map((seg) => (seg.startsWith(":") ? "[^/]+" : seg === "*" ? ".*" : seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
      .join("/")}/?$`,
  );

/**
 * Remembers every route's path and methods; `allowed(path)` answers the methods the server serves at a
 * concrete path (empty for an unknown path). The catch-all preflight route of CORS is left out.
 */
function methodTable(app: FastifyInstance): (path: string) => string[] {
  const routes = new Map<string, { pattern: RegExp; methods: Set<string> }>();
  app.addHook("onRoute", (route) => {
    if (route.url === "*" || route.url === "/*") return;
    const entry = routes.get(route.url) ?? { pattern: patternOf(route.url), methods: new Set<string>() };
    for (const m of [route.method].flat()) entry.methods.add(m);
    routes.set(route.url, entry);
  });
  return (path) => {
    const methods = new Set<string>();
    for (const { pattern, methods: ms } of routes.values()) if (pattern.test(path)) for (const m of ms) methods.add(m);
    return [...methods].sort();
  };
}

/** Installs the conventions; answers the not-found handler (which answers 405 where a path is known). */
export async function useConventions(app: FastifyInstance, options: HttpConventionOptions = {}): Promise<(request: FastifyRequest, reply: FastifyReply) => FastifyReply> {
  const allowed = methodTable(app);
  // Before compression: a 304 has no body to compress.
  conditionalReads(app);
  if (options.cors) {
    await app.register(cors, { origin: [...options.cors.origins], exposedHeaders: EXPOSED, allowedHeaders: ALLOWED, maxAge: 600 });
  }
  if (options.compress !== false) {
    await app.register(compress, { global: true, threshold: options.compressThreshold ?? DEFAULT_COMPRESS_THRESHOLD, customTypes: JSON_TYPE });
  }
  if (options.pressure) {
    const p = { ...DEFAULT_PRESSURE, ...options.pressure };
    // Building the server (compiling every route's schemas) blocks the loop once: that lag is not load,
    // so pressure counts from two samples (and at least a second) after the server is ready.
    let countsFrom = Number.POSITIVE_INFINITY;
    app.addHook("onReady", (done) => {
      countsFrom = performance.now() + Math.max(2 * p.sampleIntervalMs, 1000);
      done();
    });
    await app.register(underPressure, {
      maxEventLoopDelay: p.maxEventLoopDelayMs,
      retryAfter: p.retryAfterSeconds,
      sampleInterval: p.sampleIntervalMs,
      pressureHandler: (_request, reply) => {
        if (performance.now() < countsFrom) return undefined;
        reply.header("retry-after", String(p.retryAfterSeconds));
        return Promise.reject(new UnavailableError(`the server is overloaded: retry after ${p.retryAfterSeconds} s`));
      },
    });
  }
  return (request, reply) => {
    const path = request.url.split("?")[0]!;
    const methods = allowed(path);
    if (methods.length > 0) {
      reply.header("allow", methods.join(", "));
      return sendProblem(reply, problem(405, `${request.method} is not served at ${path}: use ${methods.join(", ")}`));
    }
    return sendProblem(reply, problem(404, `no route ${request.method} ${path}`));
  };
}

/** An Accept entry: a media range (`type/subtype`, `type/*`, `*\/*`) and its weight. */
interface MediaRange {
  readonly range: string;
  readonly q: number;
}

const parseAccept = (header: string): MediaRange[] =>
  header.split(",").map((part) => {
    const [range = "", ...params] = part.split(";").map((p) => p.trim().toLowerCase());
    const q = Number(params.find((p) => p.startsWith("q="))?.slice(2) ?? 1);
    return { range, q: Number.isFinite(q) ? q : 1 };
  });

/**
 * Whether an Accept header admits one of `types` (RFC 9110 §12.5.1): for each type the most specific
 * range that names it decides, and a weight of 0 refuses it. An absent or empty header admits anything.
 */
export function accepts(header: string | undefined, types: readonly string[]): boolean {
  if (header === undefined || header.trim() === "") return true;
  const ranges = parseAccept(header);
  return types.some((type) => {
    const full = type.split(";")[0]!.trim().toLowerCase();
    const major = full.split("/")[0];
    let best: { specificity: number; q: number } | undefined;
    for (const { range, q } of ranges) {
      const specificity = range === full ? 3 : range === `${major}/*` ? 2 : range === "*/*" ? 1 : 0;
      if (specificity > (best?.specificity ?? 0)) best = { specificity, q };
    }
    return best !== undefined && best.q > 0;
  });
}

type RouteSchema = { produces?: readonly string[]; response?: Record<string, { content?: Record<string, unknown> } | undefined> };
const answered = new WeakMap<object, readonly string[]>();

/**
 * The media types a route answers, from its schema: `produces`, else the content types its success
 * responses declare (JSON when they declare a schema only); and problem+json, which every refusal is.
 */
export function answeredTypes(schema: RouteSchema | undefined): readonly string[] {
  if (!schema) return ["application/json", PROBLEM_CONTENT_TYPE];
  let types = answered.get(schema);
  if (!types) {
    const success = Object.entries(schema.response ?? {}).filter(([code]) => code.startsWith("2"));
    const declared = schema.produces ?? success.flatMap(([, r]) => (r?.content ? Object.keys(r.content) : ["application/json"]));
    types = [...new Set([...(declared.length > 0 ? declared : ["application/json"]), PROBLEM_CONTENT_TYPE])];
    answered.set(schema, types);
  }
  return types;
}

/**
 * The conventions of the native API's scope (server.ts registers it on /api/v1, not on the static files
 * or /docs): content negotiation (406 when Accept admits no type the route answers; `*\/*`, JSON and
 * problem+json always do) and, when required, conditional writes (428 without If-Match).
 */
export function apiConventions(api: FastifyInstance, options: HttpConventionOptions = {}): void {
  api.addHook("onRequest", (request, reply, done) => {
    const types = answeredTypes(request.routeOptions.schema as RouteSchema | undefined);
    if (accepts(request.headers.accept, types)) return done();
    sendProblem(
      reply,
      problem(406, `Accept ${JSON.stringify(request.headers.accept)} admits none of what ${request.routeOptions.url} answers: ${types.join(", ")}`, { field: "header.accept" }),
    );
  });
  if (options.requireIfMatch) {
    api.addHook("preValidation", (request, _reply, done) => {
      if (request.routeOptions.config.ifMatch !== true || request.headers["if-match"] !== undefined) return done();
      done(
        new PreconditionRequiredError(
          `${request.method} ${request.routeOptions.url} needs If-Match on this server: send the ETag a GET of the resource gave, e.g. "3"`,
          "header.if-match",
        ),
      );
    });
  }
}
