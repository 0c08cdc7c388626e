/**
 * HTTP conventions every route follows without code of its own (RFC 9110), and the plugins that give
 * the server its operator-grade behaviour:
 *
 * - conditional reads: a GET (or HEAD) answered with an ETag answers 304 with no body when the request's
 *   If-None-Match holds that ETag (or `*`);
 * - 405 with `Allow` for a path the server knows asked with a method it does not serve there;
 * - CORS (@fastify/cors) for the configured origins only, off by default;
 * - compression (@fastify/compress) of JSON answers;
 * - security headers (@fastify/helmet's, computed once: `securityHeaders`; server.ts sets them);
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
 * The security headers of every answer: those @fastify/helmet sets with HELMET_OPTIONS, which depend on
 * nothing in the request. The plugin builds its middleware anew on every request (a CPU profile of a
 * GET put it among the server's heaviest frames); here it runs once per process, on a request to a
 * throwaway instance, and the server sets what it set (server.ts). Null when they are turned off.
 */
export function securityHeaders(options: HttpConventionOptions = {}): Promise<Readonly<Record<string, string>> | null> {
  if (options.securityHeaders === false) return Promise.resolve(null);
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
    await app.register(compress, { global: true, threshold: options.compressThreshold ?? DEFAULT_COMPRESS_THRESHOLD, customTypes: /^application\/(?:[\w.-]+\+)?json\b/ });
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
