/**
 * buildServer: the Fastify instance with error mapping, validation, auth, OpenAPI, metrics and logs,
 * and one plugin per domain. A domain adds its routes as one Fastify plugin in `routes` (registered
 * under /api/v1 behind authentication, with `request.actor` set and `app.flowstore` at hand).
 */
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import fastify, { LogController, type FastifyInstance, type FastifyPluginAsync, type RouteOptions } from "fastify";
import type { Logger } from "pino";
import { assertJsonDepth } from "../depth.js";
import { TooManyRequestsError, ValidationError } from "../errors.js";
import type { Flowstore } from "../compose/index.js";
import { Tokens } from "../identity/index.js";
import { requireAuthentication } from "./auth.js";
import type { ServerContext } from "./context.js";
import { Gate } from "./gate.js";
import { LingeringClose } from "./linger.js";
import { createLogger, requestId } from "./logging.js";
import { Metrics, metricsHooks } from "./metrics.js";
import { clientErrorHandler, Problem, sendProblem, toProblem } from "./problem.js";
import type { LoginRateLimits } from "./rate-limit.js";
import { authRoutes } from "./routes/auth.js";
import { globalRoutes } from "./routes/global.js";
import { groupRoutes } from "./routes/groups.js";
import { systemRoutes } from "./routes/system.js";
import { userRoutes } from "./routes/users.js";
import { eventRoutes } from "./routes/events.js";
import { meRoutes } from "./routes/me.js";
import { workflowRoutes } from "./routes/workflow.js";
import { tenancyRoutes } from "./routes/tenancy.js";

import { namedComponents, registerComponents, useComponents } from "./components.js";
import { apiConventions, securityHeaders, securityHeadersOf, useConventions, type HttpConventionOptions } from "./conventions.js";
import { documentRoute, finishDocument } from "./openapi.js";
import { processDataRoutes } from "./routes/process-data.js";
import { archiveRoutes } from "./routes/archive.js";
import { documentRoutes } from "./routes/documents.js";
import { notificationRoutes } from "./routes/notifications.js";
import { subscriptionRoutes } from "./routes/subscriptions.js";
import { logPublicRoutes, logRoutes } from "./routes/log.js";
import { backupRoutes } from "./routes/backup.js";
import { subjectRoutes } from "./routes/subjects.js";
import { analyticsRoutes } from "./routes/analytics.js";
import { serializerCompiler } from "./serialization.js";
import { TRUBUDGET_PREFIX, trubudgetApi, type TrubudgetApiOptions } from "./trubudget/index.js";
import { DEFAULT_BODY_LIMIT } from "./body-limits.js";
import { validatorCompiler } from "./validation.js";
import { defaultWebRoot, registerWeb } from "./web.js";

export const API_PREFIX = "/api/v1";
/** Where the Swagger UI of the native API lives (its assets under `${DOCS}/static`). */
export const DOCS = "/docs";
export const DEFAULT_HOST = "127.0.0.1";
export { DEFAULT_BODY_LIMIT } from "./body-limits.js";

/**
 * How long a client may take (Node's http.Server timeouts; 0 disables one). A request whose headers or
 * whole body do not arrive in time answers 408 and its connection is closed (a slow client cannot hold
 * a connection open: Slowloris); an idle keep-alive connection is closed after `keepAliveSeconds`. A
 * streamed answer (the change feed) is not cut: these bound receiving the request only. A connection whose
 * request was answered before its body arrived in full lingers at most `lingerSeconds` after the answer
 * (linger.ts).
 */
export interface ServerTimeouts {
  readonly headersSeconds?: number;
  readonly requestSeconds?: number;
  readonly keepAliveSeconds?: number;
  /** How often Node checks the header and request timeouts (default 1 s, Node's own is 30 s). */
  readonly checkIntervalMs?: number;
  /** How long a connection may read and drop a refused body after the answer before it is closed (linger.ts). */
  readonly lingerSeconds?: number;
}

/**
 * lingerSeconds: long enough for a client on a slow link to see the answer and stop sending (nginx waits
 * 5 s for more of it, lingering_timeout), short enough that refused uploads cannot pile up connections.
 */
export const DEFAULT_TIMEOUTS = { headersSeconds: 20, requestSeconds: 300, keepAliveSeconds: 72, checkIntervalMs: 1000, lingerSeconds: 5 } as const;

/** How the server is served; what it serves is the opened store (`openFlowstore`). */
export interface ServerOptions {
  /** The token signing secret (at least 32 bytes), e.g. from loadTokenSecret. */
  readonly tokenSecret: Uint8Array;
  /** Lifetime of an access token (default 15 minutes). */
  readonly tokenTtlSeconds?: number;
  /** Lifetime of a refresh token, renewed by each use (default 24 hours). */
  readonly refreshTtlSeconds?: number;
  /** Limits on log in and refresh per address and per user (default DEFAULT_LOGIN_RATE_LIMITS); false for none. */
  readonly loginRateLimit?: LoginRateLimits | false;
  readonly timeouts?: ServerTimeouts;
  /** A pino logger (createLogger gives one with credentials redacted); false for none. */
  readonly logger?: Logger | false;
  /** Largest accepted request body in bytes (default 1 MiB); larger answers 413. */
  readonly bodyLimit?: number;
  /** Log one line per request (default true). */
  readonly requestLogging?: boolean;
  /** Domain route plugins, registered under /api/v1 behind authentication. */
  readonly routes?: readonly FastifyPluginAsync[];
  /** Where the web explorer's bundle is (default: dist/web); false serves no UI. */
  readonly webRoot?: string | false;
  /**
   * The metrics /metrics renders. Pass the one whose `wrap` instrumented the store
   * (`openFlowstore(url, { instrument: (kv) => metrics.wrap(kv) })`) to count store operations too;
   * default: a new one, counting requests only.
   */
  readonly metrics?: Metrics;
  /** The transparency log's witnesses whose cosignatures this server keeps (C2SP vkeys, type 0x04). */
  readonly logWitnesses?: readonly string[];
  /** Serve GET /metrics on the API's port (default true; false when they are served apart: serveMetrics). */
  readonly metricsRoute?: boolean;
  /**
   * The bearer token a scraper sends for /metrics on the API's port (`--metrics-token-file`); root's access
   * token is taken too. Without either the route answers 401: its counts are not for every caller.
   */
  readonly metricsToken?: string;
  /** Fastify's trustProxy (`--trust-proxy`): whose X-Forwarded-* headers are believed (protocol, client address). */
  readonly trustProxy?: string;
  /**
   * Whether closing the server closes the store as well (default false). The store belongs to whoever
   * opened it: by default the caller closes it after the server.
   */
  readonly closeStore?: boolean;
  /** CORS, compression, security headers and back pressure (conventions.ts; each has its default there). */
  readonly http?: HttpConventionOptions;
  /**
   * Serve TruBudget's HTTP API (v2.18) at /api as well (default false): its frontend and tools then run
   * on this store (src/http/trubudget). Its routes stay out of /openapi.json.
   */
  readonly trubudgetApi?: boolean | Omit<TrubudgetApiOptions, "rateLimit" | "notFound" | "nativePrefix">;
  /** Called for every route as it is registered, before any plugin's (e.g. to enumerate the routes). */
  readonly onRoute?: (route: RouteOptions) => void;
}

/** The built-in authenticated route plugins, one per domain. */
export const CORE_ROUTES: readonly FastifyPluginAsync[] = [
  userRoutes,
  meRoutes,
  groupRoutes,
  globalRoutes,
  workflowRoutes,
  tenancyRoutes,
  eventRoutes,
  processDataRoutes,
  archiveRoutes,
  documentRoutes,
  notificationRoutes,
  subscriptionRoutes,
  logRoutes,
  backupRoutes,
  subjectRoutes,
  analyticsRoutes,
];

/** Builds the server over an opened store; tokens use the store's clock. */
export async function buildServer(flowstore: Flowstore, options: ServerOptions): Promise<FastifyInstance> {
  const metrics = options.metrics ?? new Metrics();
  const tokens = new Tokens(flowstore.identity, {
    secret: options.tokenSecret,
    ttlSeconds: options.tokenTtlSeconds,
    refreshTtlSeconds: options.refreshTtlSeconds,
    now: () => new Date(flowstore.clock()),
    // A restore bumps the store's token epoch: every session and token from before it stops working.
    // Known without I/O while the fence was read recently (the gate reads it), else read.
    tokenEpoch: () => {
      const { state, fresh } = flowstore.fence.cached();
      return fresh ? state.tokenEpoch : flowstore.fence.current().then((s) => s.tokenEpoch);
    },
    // No limits (tests): no guard either.
    ...(options.loginRateLimit === false ? { loginGuard: false as const } : {}),
  });
  const timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
  const gate = new Gate(flowstore.fence, flowstore.clock);
  const context: ServerContext = { ...flowstore, tokens, metrics, gate };

  const logger = options.logger === undefined ? createLogger() : options.logger;
  const app = fastify({
    ...(logger ? { loggerInstance: logger } : { logger: false }),
    bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
    genReqId: requestId,
    logController: new LogController({ disableRequestLogging: options.requestLogging === false }),
    return503OnClosing: true,
    ...(options.trustProxy ? { trustProxy: options.trustProxy } : {}),
    forceCloseConnections: "idle",
    routerOptions: { maxParamLength: 512 },
    // Bad URLs and overlong path parameters are answered before routing: as problems too.
    frameworkErrors: (error, request, reply) => {
      void sendProblem(reply, toProblem(error, request));
    },
    // Requests Node's parser refuses (oversized headers, malformed HTTP) are problems as well.
    clientErrorHandler,
    // Node would answer a Host-less HTTP/1.1 request with a bare 400 itself; the onRequest hook below
    // refuses it as a problem instead.
    http: {
      requireHostHeader: false,
      headersTimeout: timeouts.headersSeconds * 1000,
      requestTimeout: timeouts.requestSeconds * 1000,
      connectionsCheckingInterval: timeouts.checkIntervalMs,
    },
    requestTimeout: timeouts.requestSeconds * 1000,
    keepAliveTimeout: timeouts.keepAliveSeconds * 1000,
    // Validation and serialization know the named schemas of each scope (components.ts); both keep
    // what they compile for the process.
    schemaController: {
      compilersFactory: {
        buildValidator: validatorCompiler,
        buildSerializer: serializerCompiler,
      },
    },
  }) as unknown as FastifyInstance;

  if (options.onRoute) app.addHook("onRoute", options.onRoute);
  app.decorate("flowstore", context);
  // Null until the auth hook sets it, inside the authenticated scope (context.ts).
  app.decorateRequest("actor", null, []);
  useComponents(app);
  registerComponents(app, [Problem]);
  // JSON only: a text/plain body is a 415, not a string that fails validation later.
  app.removeContentTypeParser(["text/plain"]);
  // Every JSON body, on every route, is refused past MAX_JSON_DEPTH levels (a 400 naming the field),
  // after Fastify's own parser (which refuses __proto__ and constructor.prototype keys).
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    parseJson(request, body as string, (error: Error | null, value?: unknown) => {
      if (error) return done(error);
      try {
        assertJsonDepth(value, "body");
      } catch (e) {
        return done(e as Error);
      }
      done(null, value);
    });
  });

  // The one onRequest hook of the whole server (each domain scope adds only its own: authentication,
  // content negotiation), callback-style: no promise per request on the hot path. It serves nothing on a
  // connection that is closing after a refused body (linger.ts), sets the request id, refuses a Host-less
  // HTTP/1.1 request, and while a restore replaces the store answers 503 with Retry-After (gate.ts).
  const linger = new LingeringClose(timeouts.lingerSeconds);
  app.decorate("lingering", linger);
  app.addHook("onRequest", (request, reply, done) => {
    if (!linger.admits(request)) return;
    reply.header("x-request-id", request.id);
    if (request.raw.httpVersion === "1.1" && request.headers.host === undefined) {
      done(new ValidationError("an HTTP/1.1 request needs a Host header", "headers.host"));
      return;
    }
    gate.admit(request, reply, done);
  });
  // While closing, answers to in-flight requests end their connection, so that close() does not wait
  // for idle keep-alive connections to time out.
  let closing = false;
  app.addHook("preClose", async () => {
    closing = true;
    linger.close();
  });
  if (options.closeStore) app.addHook("onClose", async () => flowstore.close());
  // The security headers (conventions.ts), once the answer's type is known: the few of a JSON answer on
  // the API's paths, helmet's on anything else; a header the route set itself (the explorer's policy) stays.
  const secure = await securityHeaders(options.http);
  const apiPaths = [`${API_PREFIX}/`, `${TRUBUDGET_PREFIX}/`];
  app.addHook("onSend", (request, reply, payload, done) => {
    if (closing) reply.header("connection", "close");
    linger.answering(request, reply);
    if (secure) {
      const set = securityHeadersOf(
        secure,
        apiPaths.some((p) => request.url.startsWith(p)),
        reply.getHeader("content-type"),
      );
      for (const name in set) if (!reply.hasHeader(name)) reply.header(name, set[name]);
    }
    done(null, payload);
  });
  metricsHooks(app, metrics, `${API_PREFIX}/events`);
  metrics.observeLog(async () => {
    const [lag, lagSeconds, head] = await Promise.all([flowstore.log.tree.lag(), flowstore.log.tree.lagSeconds(flowstore.clock()), flowstore.log.tree.head()]);
    return { lag, lagSeconds, size: head.size };
  });
  metrics.observeDeferredDeliveries(() => flowstore.subscriptions.deferredDeliveries);
  const writers = new Set([flowstore.resources.writer, flowstore.tenancy.writer]);
  const unobserve = [...writers].map((w) => w.onGroupCommit((n) => metrics.observeCommitGroup(n)));
  app.addHook("onClose", async () => unobserve.forEach((stop) => stop()));

  app.setErrorHandler(async (error, request, reply) => {
    const p = toProblem(error, request);
    if (error instanceof TooManyRequestsError) reply.header("retry-after", String(error.retryAfterSeconds));
    if (p.status >= 500) request.log.error({ err: error }, "request failed");
    return sendProblem(reply, p);
  });
  const notFound = await useConventions(app, options.http);
  app.setNotFoundHandler(async (request, reply) => notFound(request, reply));

  await app.register(swagger, {
    openapi: {
      openapi: "3.0.3",
      info: { title: "flowstore", version: "1", description: "An auditable, hierarchical data store for workflows" },
      components: { securitySchemes: { bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" } } },
    },
    refResolver: namedComponents,
    transform: documentRoute(API_PREFIX),
    transformObject: finishDocument,
  });
  await app.register(swaggerUi, { routePrefix: DOCS });

  await app.register(systemRoutes, { metricsRoute: options.metricsRoute !== false, metricsToken: options.metricsToken });
  if (options.webRoot !== false) registerWeb(app, options.webRoot ?? defaultWebRoot());
  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
  await app.register(
    async (api) => {
      apiConventions(api, options.http);
      await api.register(authRoutes, { rateLimit: options.loginRateLimit });
      await api.register(logPublicRoutes, { witnesses: options.logWitnesses });
      await api.register(async (secured) => {
        requireAuthentication(secured);
        for (const routes of [...CORE_ROUTES, ...(options.routes ?? [])]) await secured.register(routes);
      });
    },
    { prefix: API_PREFIX },
  );
  if (options.trubudgetApi) {
    const tb = options.trubudgetApi === true ? {} : options.trubudgetApi;
    await app.register(trubudgetApi, {
      ...tb,
      prefix: TRUBUDGET_PREFIX,
      rateLimit: options.loginRateLimit,
      notFound,
      nativePrefix: API_PREFIX,
      swaggerUiAssets: `${DOCS}/static`,
    });
  }
  return app;
}
