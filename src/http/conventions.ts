/**
 * HTTP conventions every route follows without code of its own (RFC 9110), and the plugins that give
 * the server its operator-grade behaviour:
 *
 * - conditional reads: a GET (or HEAD) answered with an ETag answers 304 with no body when the request's
 *   If-None-Match holds that ETag (or `*`);
 * - 405 with `Allow` for a path the server knows asked with a method it does not serve there;
 * - CORS (@fastify/cors) for the configured origins only, off by default;
 * - compression (@fastify/compress) of JSON answers;
 * - security headers (@fastify/helmet);
 * - back pressure (@fastify/under-pressure), when configured: 503 with Retry-After while the event loop lags.
 * The defaults are declared here once (DEFAULT_PRESSURE, …); `flowstore serve` exposes them as options.
 */
import type { Readable } from "node:stream";
import compress from "@fastify/compress";
import cors from "@fastify/cors";
import helmet from "@fastify/helmet";
import underPressure from "@fastify/under-pressure";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { UnavailableError } from "../errors.js";
import { problem, sendProblem } from "./problem.js";

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
}

export const DEFAULT_COMPRESS_THRESHOLD = 1024;

/** Headers a browser page may read from an answer (CORS exposes only the simple ones otherwise). */
const EXPOSED = ["ETag", "Location", "Retry-After", "X-Request-Id", "WWW-Authenticate"];
/** Headers a browser page may send. */
const ALLOWED = ["Authorization", "Content-Type", "If-Match", "If-None-Match", "Last-Event-ID", "Accept"];

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
  if (options.securityHeaders !== false) {
    // The explorer sets its own Content-Security-Policy; without TLS, upgrading requests would break /docs.
    await app.register(helmet, { global: true, hsts: false, contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } } });
  }
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
