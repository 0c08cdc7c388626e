/**
 * buildServer: the Fastify instance with error mapping, validation, auth, OpenAPI, metrics and logs,
 * and one plugin per domain. A domain adds its routes as one Fastify plugin in `routes` (registered
 * under /api/v1 behind authentication, with `request.actor` set and `app.flowstore` at hand).
 */
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import fastify, { LogController, type FastifyInstance, type FastifyPluginAsync, type RouteOptions } from "fastify";
import type { Logger } from "pino";
import { ValidationError } from "../errors.js";
import { Identity, Tokens } from "../identity/index.js";
import type { KvStore } from "../kv/contract.js";
import { requireAuthentication } from "./auth.js";
import type { ServerContext } from "./context.js";
import { createLogger, requestId } from "./logging.js";
import { Metrics } from "./metrics.js";
import { clientErrorHandler, problem, sendProblem, toProblem } from "./problem.js";
import { authRoutes } from "./routes/auth.js";
import { globalRoutes } from "./routes/global.js";
import { groupRoutes } from "./routes/groups.js";
import { systemRoutes } from "./routes/system.js";
import { userRoutes } from "./routes/users.js";
import { eventRoutes } from "./routes/events.js";
import { meRoutes } from "./routes/me.js";
import { workflowRoutes } from "./routes/workflow.js";
import { processDataRoutes } from "./routes/process-data.js";
import { archiveRoutes } from "./routes/archive.js";
import { Archive, type ArchiveOptions } from "../archive/index.js";
import { openProcessData } from "../process-data/service.js";
import type { KeyConfig } from "../process-data/crypto.js";
import { randomBytes } from "node:crypto";
import { ResourceStore } from "../resources/store.js";
import { Workflow } from "../workflow/commands.js";
import { workflowSchema } from "../workflow/schema.js";
import { validatorCompiler } from "./validation.js";
import { defaultWebRoot, registerWeb } from "./web.js";

export const API_PREFIX = "/api/v1";
export const DEFAULT_HOST = "127.0.0.1";
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

export interface ServerOptions {
  readonly kv: KvStore;
  /** The token signing secret (at least 32 bytes), e.g. from loadTokenSecret. */
  readonly tokenSecret: Uint8Array;
  readonly tokenTtlSeconds?: number;
  /** A pino logger (createLogger gives one with credentials redacted); false for none. */
  readonly logger?: Logger | false;
  /** Largest accepted request body in bytes (default 1 MiB); larger answers 413. */
  readonly bodyLimit?: number;
  /** Log one line per request (default true). */
  readonly requestLogging?: boolean;
  /** Domain route plugins, registered under /api/v1 behind authentication. */
  readonly routes?: readonly FastifyPluginAsync[];
  /**
   * Where the key that encrypts process-data access tokens comes from: a 32-byte key, or a data directory
   * holding the key file. Without one a random key is used, and stored tokens are unreadable after a restart.
   */
  readonly processDataKey?: KeyConfig;
  /** Where the web explorer's bundle is (default: dist/web); false serves no UI. */
  readonly webRoot?: string | false;
  /** The archive's limits and retention (default: 100 MiB per snapshot, keep all). */
  readonly archive?: ArchiveOptions & {
    /**
     * At start and then periodically, half-done archive operations older than this are finished or
     * undone (a killed upload). Keep it above the longest upload when other processes share the store.
     * Default 10 minutes.
     */
    readonly recoverOlderThanMs?: number;
  };
  /** Cache rendered workflowitem list pages per project version (default true). */
  readonly listPageCache?: boolean;
  /** A clock for tokens (tests). */
  readonly now?: () => Date;
  /** Called for every route as it is registered, before any plugin's (e.g. to enumerate the routes). */
  readonly onRoute?: (route: RouteOptions) => void;
}

export const DEFAULT_ARCHIVE_RECOVERY_AGE_MS = 10 * 60 * 1000;

/** The built-in authenticated route plugins, one per domain. */
export const CORE_ROUTES: readonly FastifyPluginAsync[] = [userRoutes, meRoutes, groupRoutes, globalRoutes, workflowRoutes, eventRoutes, processDataRoutes, archiveRoutes];

export async function buildServer(options: ServerOptions): Promise<FastifyInstance> {
  const metrics = new Metrics();
  const kv = metrics.wrap(options.kv);
  const identity = new Identity(kv, { now: options.now });
  const tokens = new Tokens(identity, { secret: options.tokenSecret, ttlSeconds: options.tokenTtlSeconds, now: options.now });
  const workflow = new Workflow(new ResourceStore(kv, workflowSchema, { clock: options.now ? () => options.now!().getTime() : undefined, pageCache: options.listPageCache }));
  const processData = await openProcessData(kv, options.processDataKey ?? { encryptionKey: randomBytes(32) });
  const archive = new Archive(kv, options.archive);
  const recoverOlderThanMs = options.archive?.recoverOlderThanMs ?? DEFAULT_ARCHIVE_RECOVERY_AGE_MS;
  await archive.recover({ olderThanMs: recoverOlderThanMs });
  const context: ServerContext = { kv, identity, tokens, metrics, workflow, processData, archive };

  const logger = options.logger === undefined ? createLogger() : options.logger;
  const app = fastify({
    ...(logger ? { loggerInstance: logger } : { logger: false }),
    bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
    genReqId: requestId,
    logController: new LogController({ disableRequestLogging: options.requestLogging === false }),
    return503OnClosing: true,
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
    http: { requireHostHeader: false },
  }) as unknown as FastifyInstance;

  if (options.onRoute) app.addHook("onRoute", options.onRoute);
  app.decorate("flowstore", context);
  app.decorateRequest("actor", null as never);
  app.setValidatorCompiler(validatorCompiler());
  // JSON only: a text/plain body is a 415, not a string that fails validation later.
  app.removeContentTypeParser(["text/plain"]);

  // Per-request hooks are callback-style: no promise per request on the hot path.
  app.addHook("onRequest", (request, reply, done) => {
    reply.header("x-request-id", request.id);
    if (request.raw.httpVersion === "1.1" && request.headers.host === undefined) {
      done(new ValidationError("an HTTP/1.1 request needs a Host header", "headers.host"));
      return;
    }
    done();
  });
  // While closing, answers to in-flight requests end their connection, so that close() does not wait
  // for idle keep-alive connections to time out.
  let closing = false;
  app.addHook("preClose", async () => {
    closing = true;
  });
  // Uploads killed after the start (by another process sharing the store) are swept up later on.
  const sweep = setInterval(() => {
    archive.recover({ olderThanMs: recoverOlderThanMs }).catch((err: unknown) => app.log.error({ err }, "archive recovery failed"));
  }, Math.max(recoverOlderThanMs, 60_000));
  sweep.unref();
  app.addHook("onClose", async () => clearInterval(sweep));
  app.addHook("onSend", (_request, reply, payload, done) => {
    if (closing) reply.header("connection", "close");
    done(null, payload);
  });
  app.addHook("onResponse", (request, reply, done) => {
    metrics.observeRequest(request.method, request.routeOptions.url ?? "unmatched", reply.statusCode, reply.elapsedTime / 1000);
    done();
  });

  app.setErrorHandler(async (error, request, reply) => {
    const p = toProblem(error, request);
    if (p.status >= 500) request.log.error({ err: error }, "request failed");
    return sendProblem(reply, p);
  });
  app.setNotFoundHandler(async (request, reply) =>
    sendProblem(reply, problem(404, `no route ${request.method} ${request.url.split("?")[0]}`)),
  );

  await app.register(swagger, {
    openapi: {
      openapi: "3.0.3",
      info: { title: "flowstore", version: "1", description: "An auditable, hierarchical data store for workflows" },
      components: { securitySchemes: { bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" } } },
    },
  });
  await app.register(swaggerUi, { routePrefix: "/docs" });

  await app.register(systemRoutes);
  if (options.webRoot !== false) registerWeb(app, options.webRoot ?? defaultWebRoot());
  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
  await app.register(
    async (api) => {
      await api.register(authRoutes);
      await api.register(async (secured) => {
        requireAuthentication(secured);
        for (const routes of [...CORE_ROUTES, ...(options.routes ?? [])]) await secured.register(routes);
      });
    },
    { prefix: API_PREFIX },
  );
  return app;
}
