/**
 * `flowstore serve`: opens the store, creates root on first start, listens (127.0.0.1 by default) and
 * shuts down gracefully on SIGTERM/SIGINT: stop accepting, let in-flight requests finish, close the store
 * (the command opened it, so the command closes it, after the server). A start refused because the
 * store is empty and FLOWSTORE_ROOT_PASSWORD is unset leaves nothing behind: the store files and key
 * files it had created are removed again (a retry with the password starts from scratch).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { readFile, rm } from "node:fs/promises";
import type { Server } from "node:http";
import { join, resolve } from "node:path";
import { Command, Option } from "commander";
import { CONFIG, readEnv, readFlag, type ConfigName, type Variable } from "../config.js";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { ConfigurationError, ValidationError } from "../errors.js";
import type { Flowstore, FlowstoreOptions } from "../compose/index.js";
import { loadTokenSecret, ORGANIZATION_MAX } from "../identity/index.js";
import { createLogger } from "../http/logging.js";
import { buildServer } from "../http/server.js";
import { parseVkey, SIG_COSIGNATURE_V1 } from "../tlog/note.js";
import { unservableLog } from "../tlog/verify.js";
import { Metrics, serveMetrics } from "../http/metrics.js";
import { openFlowstore } from "../compose/index.js";
import { EXIT, UsageError, VerificationFailed } from "./exit.js";
import { configOption, parsePort, storeOptions, type StoreOptions } from "./options.js";
import { archiveSealOf, defaultStoreUrl, isPersistent } from "./store.js";
import { importSource, pendingRestore, UNFINISHED_IMPORT, unfinishedImport } from "./transfer.js";

export interface ServeOptions extends StoreOptions {
  host: string;
  port: string;
  logLevel: string;
  bodyLimit: string;
  tokenTtl: string;
  refreshTtl: string;
  loginLimitUser: string;
  loginLimitAddress: string;
  headersTimeout: string;
  requestTimeout: string;
  keepAliveTimeout: string;
  shutdownGrace: string;
  maxDocumentBytes: string;
  keepNotifications: string;
  feedRepairSettleMs: string;
  webhookLeaseMs: string;
  webhookRetryMs: string;
  webhookAttempts: string;
  webhookAllow?: string;
  webhookLookups: string;
  webhookLookupTimeoutMs: string;
  metricsPort?: string;
  metricsTokenFile?: string;
  trustProxy?: string;
  corsOrigin?: string;
  compress: boolean;
  securityHeaders: boolean;
  maxEventLoopDelay: string;
  retryAfter: string;
  trubudgetApi?: boolean;
  requireIfMatch?: boolean;
  trubudgetTestPasswords?: boolean;
  organization: string;
  logOrigin?: string;
  logWitness?: string;
  logCheckpoint?: string;
}

/** A yes/no environment variable: 1/true/yes or 0/false/no/empty (anything else is a usage error). */
function envFlag(name: ConfigName): boolean {
  try {
    return readFlag(name);
  } catch {
    throw new UsageError(`${name} must be 1 or 0`);
  }
}

/** The node's organization (TruBudget's ORGANIZATION): a user's organization, so the same rule. */
function organizationOf(value: string): string {
  const name = value.trim();
  if (name.length === 0 || name.length > ORGANIZATION_MAX) throw new UsageError(`--organization (FLOWSTORE_ORGANIZATION) must be 1 to ${ORGANIZATION_MAX} characters`);
  return name;
}

/** A whole number of at least `min` from an option (named in the error). */
function count(value: string, option: string, min = 0): number {
  const n = Number(value);
  if (!/^\d{1,9}$/.test(value) || n < min) throw new UsageError(`${option} must be an integer of at least ${min}`);
  return n;
}

/**
 * The webhook guard's lookup bounds (subscriptions/webhook-target.ts): whole numbers of at least 1, and
 * fewer lookups at once than libuv has threads (a lookup holds one until the system answers, and file
 * reads, scrypt and gzip need the rest). A bad value is a usage error naming the option and the variable.
 */
function lookupBounds(options: ServeOptions): { concurrent: number; timeoutMs: number } {
  const named = (name: ConfigName) => `${(CONFIG[name] as Variable).option!.split(" ")[0]} (${name})`;
  const concurrent = count(options.webhookLookups, named("FLOWSTORE_WEBHOOK_LOOKUPS"), 1);
  const threads = Number(process.env.UV_THREADPOOL_SIZE) || 4;
  if (concurrent >= threads)
    throw new UsageError(
      `${named("FLOWSTORE_WEBHOOK_LOOKUPS")} must be below libuv's thread pool size (UV_THREADPOOL_SIZE, ${threads} here), not ${concurrent}: lookups that never answer would hold every thread`,
    );
  return { concurrent, timeoutMs: count(options.webhookLookupTimeoutMs, named("FLOWSTORE_WEBHOOK_LOOKUP_TIMEOUT_MS"), 1) };
}

/** The witnesses' verifier keys (comma-separated), each checked here: a bad one is a usage error. */
function witnessesOf(value: string | undefined): string[] {
  const keys = (value ?? "")
    .split(",")
    .map((k) => k.trim())
    .filter((k) => k !== "");
  for (const k of keys) {
    try {
      if (parseVkey(k).type !== SIG_COSIGNATURE_V1) throw new Error("not a cosignature/v1 key (type 0x04)");
    } catch (e) {
      throw new UsageError(`--log-witness (FLOWSTORE_LOG_WITNESSES): ${k}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  return keys;
}

/**
 * What is in `dirs` now; the function returned removes what has been created in them since (a directory
 * that did not exist, whole). Only for a start that is refused before it served anything.
 */
function createdSince(dirs: readonly string[]): () => Promise<void> {
  const before = [...new Set(dirs.map((d) => resolve(d)))].map((dir) => ({ dir, entries: existsSync(dir) ? new Set(readdirSync(dir)) : null }));
  return async () => {
    for (const { dir, entries } of before) {
      if (!existsSync(dir)) continue;
      if (entries === null) await rm(dir, { recursive: true, force: true });
      else for (const name of readdirSync(dir)) if (!entries.has(name)) await rm(join(dir, name), { recursive: true, force: true });
    }
  };
}

/** The directory of an LMDB store URL (`lmdb:<dir>` or a plain path), else null. */
const lmdbDir = (url: string): string | null => (url.startsWith("lmdb:") ? url.slice("lmdb:".length) : /^[a-z][a-z0-9+.-]+:/i.test(url) ? null : url);

/**
 * The store `flowstore serve` opens, from its options: the keys and directories it keeps in the data
 * directory, the document limit, and the work it runs beside the requests (the notification follower,
 * the feed repair, webhook delivery, the transparency log's appender). The http benchmark's server
 * (bench/http/flowstore-server.ts) opens its store with these too, so that it measures the server users run.
 */
export function serveStoreOptions(options: ServeOptions, logger: Logger): FlowstoreOptions {
  const pdKey = readEnv("FLOWSTORE_PROCESS_DATA_KEY");
  return {
    processData: pdKey ? { encryptionKey: pdKey } : { dataDir: options.data },
    archiveSeal: archiveSealOf(options),
    checkpointKey: { pem: readEnv("FLOWSTORE_CHECKPOINT_KEY"), dataDir: options.data },
    onBackgroundError: (err, task) => logger.error({ err }, `${task} failed`),
    documents: { maxBytes: count(options.maxDocumentBytes, "--max-document-bytes", 1) },
    notifications: { follow: true, keepNewest: count(options.keepNotifications, "--keep-notifications", 1) },
    feedRepair: { settleMs: count(options.feedRepairSettleMs, "--feed-repair-settle-ms") },
    // Every server delivers webhooks; each subscription's lease lets one at a time deliver it.
    subscriptions: {
      deliver: true,
      leaseMs: count(options.webhookLeaseMs, "--webhook-lease-ms", 1),
      retryBaseMs: count(options.webhookRetryMs, "--webhook-retry-ms", 1),
      maxAttempts: count(options.webhookAttempts, "--webhook-attempts", 1),
      allow: (options.webhookAllow ?? "").split(/[,\s]+/),
      secretKey: { key: readEnv("FLOWSTORE_WEBHOOK_KEY"), dataDir: options.data },
      // The address a refused name resolves to is the operator's to read, not the user's (whose 400 names its kind).
      resolve: {
        ...lookupBounds(options),
        onRefused: (host, address, why) => logger.warn({ host, address }, `webhook target refused: ${why}`),
      },
      // Once per pass per owner: deliveries waiting for a name lookup place (flowstore_webhook_deliveries_deferred_total).
      onDeferred: (owner, deliveries, reason) => logger.warn({ owner, deliveries }, `webhook deliveries deferred to the next pass: ${reason}`),
    },
    // Every server appends the feed to the transparency log (appends are conditional: no fork).
    log: { append: true, origin: options.logOrigin },
    // A restore (TruBudget's system.restoreBackup) keeps the export it reads here until it is done.
    restoreDir: options.data,
  };
}

/**
 * The options `flowstore serve <args>` runs with (the defaults its options declare, the FLOWSTORE_*
 * variables of the environment, then `args`), without running it: for the http benchmark's server.
 */
export async function serveOptionsOf(args: readonly string[]): Promise<ServeOptions> {
  const program = new Command().exitOverride();
  serveCommand(program);
  let parsed: ServeOptions | undefined;
  program.commands[0]!.action((options: ServeOptions) => {
    parsed = options;
  });
  await program.parseAsync(["serve", ...args], { from: "user" });
  return parsed!;
}

/** Longest wait for in-flight requests on shutdown before the process exits anyway (seconds). */
export const DEFAULT_SHUTDOWN_GRACE_SECONDS = 10;

/** pino's levels: `--log-level` takes one of them. */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

export function serveCommand(program: Command): void {
  storeOptions(program.command("serve").description("run the HTTP server"))
    .addOption(configOption("FLOWSTORE_HOST"))
    .addOption(configOption("FLOWSTORE_PORT"))
    .addOption(configOption("FLOWSTORE_LOG_LEVEL").choices(LOG_LEVELS))
    .addOption(configOption("FLOWSTORE_BODY_LIMIT"))
    .addOption(configOption("FLOWSTORE_TOKEN_TTL"))
    .addOption(configOption("FLOWSTORE_REFRESH_TTL"))
    .addOption(configOption("FLOWSTORE_LOGIN_LIMIT_USER"))
    .addOption(configOption("FLOWSTORE_LOGIN_LIMIT_ADDRESS"))
    .addOption(configOption("FLOWSTORE_HEADERS_TIMEOUT"))
    .addOption(configOption("FLOWSTORE_REQUEST_TIMEOUT"))
    .addOption(configOption("FLOWSTORE_KEEP_ALIVE_TIMEOUT"))
    .addOption(configOption("FLOWSTORE_MAX_DOCUMENT_BYTES"))
    .addOption(configOption("FLOWSTORE_KEEP_NOTIFICATIONS"))
    .addOption(configOption("FLOWSTORE_FEED_REPAIR_SETTLE_MS"))
    .addOption(configOption("FLOWSTORE_WEBHOOK_LEASE_MS"))
    .addOption(configOption("FLOWSTORE_WEBHOOK_RETRY_MS"))
    .addOption(configOption("FLOWSTORE_WEBHOOK_ATTEMPTS"))
    .addOption(configOption("FLOWSTORE_WEBHOOK_ALLOW"))
    .addOption(configOption("FLOWSTORE_WEBHOOK_LOOKUPS"))
    .addOption(configOption("FLOWSTORE_WEBHOOK_LOOKUP_TIMEOUT_MS"))
    .addOption(configOption("FLOWSTORE_SHUTDOWN_GRACE"))
    .addOption(configOption("FLOWSTORE_METRICS_PORT"))
    .addOption(configOption("FLOWSTORE_METRICS_TOKEN_FILE"))
    .addOption(configOption("FLOWSTORE_TRUST_PROXY"))
    .addOption(configOption("FLOWSTORE_CORS_ORIGINS"))
    .addOption(new Option("--trubudget-api", "also serve TruBudget's HTTP API (v2.18) at /api, for its frontend and tools (env FLOWSTORE_TRUBUDGET_API=1)"))
    .addOption(
      new Option(
        "--trubudget-test-passwords",
        "TruBudget's API accepts any non-empty password, as TruBudget outside production: a test node only (env FLOWSTORE_TRUBUDGET_TEST_PASSWORDS=1)",
      ),
    )
    .addOption(configOption("FLOWSTORE_ORGANIZATION"))
    .addOption(configOption("FLOWSTORE_LOG_ORIGIN"))
    .addOption(configOption("FLOWSTORE_LOG_WITNESSES"))
    .addOption(configOption("FLOWSTORE_LOG_CHECKPOINT"))
    .addOption(new Option("--require-if-match", `${CONFIG.FLOWSTORE_REQUIRE_IF_MATCH.doc} (env FLOWSTORE_REQUIRE_IF_MATCH=1)`))
    .addOption(new Option("--no-compress", "do not compress JSON answers"))
    .addOption(new Option("--no-security-headers", "do not send security headers (helmet)"))
    .addOption(configOption("FLOWSTORE_MAX_EVENT_LOOP_DELAY"))
    .addOption(configOption("FLOWSTORE_RETRY_AFTER"))
    .addHelpText(
      "after",
      "\nEnvironment: FLOWSTORE_ROOT_PASSWORD creates the root user on an empty store (required then);\n" +
        "FLOWSTORE_JWT_SECRET signs tokens (default: a secret generated into <data>/jwt-secret);\n" +
        "FLOWSTORE_PROCESS_DATA_KEY (base64, 32 bytes) encrypts process-data access tokens (default: <data>/process-data.key);\n" +
        "FLOWSTORE_ARCHIVE_KEY (base64, 32 bytes) seals project archives (default: <data>/archive-seal.key);\n" +
        "FLOWSTORE_CHECKPOINT_KEY (PKCS#8 PEM, Ed25519) signs checkpoints (default: a key generated into <data>/checkpoint-key.pem);\n" +
        "FLOWSTORE_WEBHOOK_KEY (base64, 32 bytes) seals webhook secrets at rest (default: <data>/webhook-secrets.key).",
    )
    .action(async (options: ServeOptions) => {
      const port = parsePort(options.port);
      const metricsPort = options.metricsPort === undefined ? undefined : parsePort(options.metricsPort);
      const graceMs = count(options.shutdownGrace, "--shutdown-grace") * 1000;
      const bodyLimit = Number(options.bodyLimit);
      if (!Number.isInteger(bodyLimit) || bodyLimit < 1024) throw new UsageError("--body-limit must be an integer of at least 1024");
      const metricsToken = options.metricsTokenFile === undefined ? undefined : readMetricsToken(options.metricsTokenFile);
      const perUser = count(options.loginLimitUser, "--login-limit-user");
      const perAddress = count(options.loginLimitAddress, "--login-limit-address");
      const trubudget = options.trubudgetApi === true || envFlag("FLOWSTORE_TRUBUDGET_API");
      const testPasswords = options.trubudgetTestPasswords === true || envFlag("FLOWSTORE_TRUBUDGET_TEST_PASSWORDS");
      if (testPasswords && !trubudget) throw new UsageError("--trubudget-test-passwords (FLOWSTORE_TRUBUDGET_TEST_PASSWORDS) needs --trubudget-api");
      const http = {
        trubudgetApi: trubudget ? { organization: organizationOf(options.organization), testPasswords } : false,
        tokenTtlSeconds: count(options.tokenTtl, "--token-ttl", 1),
        refreshTtlSeconds: count(options.refreshTtl, "--refresh-ttl", 1),
        // A limit of 0 lifts that limit only.
        loginRateLimit: {
          perUser: { max: perUser || Number.MAX_SAFE_INTEGER, windowSeconds: 60 },
          perAddress: { max: perAddress || Number.MAX_SAFE_INTEGER, windowSeconds: 60 },
        },
        http: {
          cors: options.corsOrigin
            ? {
                origins: options.corsOrigin
                  .split(",")
                  .map((o) => o.trim())
                  .filter(Boolean),
              }
            : false,
          compress: options.compress,
          securityHeaders: options.securityHeaders,
          requireIfMatch: options.requireIfMatch === true || envFlag("FLOWSTORE_REQUIRE_IF_MATCH"),
          pressure:
            count(options.maxEventLoopDelay, "--max-event-loop-delay") === 0
              ? false
              : { maxEventLoopDelayMs: count(options.maxEventLoopDelay, "--max-event-loop-delay"), retryAfterSeconds: count(options.retryAfter, "--retry-after", 1) },
        } as const,
        timeouts: {
          headersSeconds: count(options.headersTimeout, "--headers-timeout"),
          requestSeconds: count(options.requestTimeout, "--request-timeout"),
          keepAliveSeconds: count(options.keepAliveTimeout, "--keep-alive-timeout", 1),
        },
      };
      const logger = createLogger({ level: options.logLevel });
      const opening = serveStoreOptions(options, logger);

      // The signal handlers come first: a SIGTERM or SIGINT while the store opens stops the start
      // (instead of killing the process half-way), one after it stops the server gracefully.
      let requested: NodeJS.Signals | null = null;
      let stop: ((signal: NodeJS.Signals) => Promise<void>) | null = null;
      const onSignal = (signal: NodeJS.Signals): void => {
        if (stop) void stop(signal);
        else requested ??= signal;
      };
      process.on("SIGTERM", onSignal);
      process.on("SIGINT", onSignal);
      const release = (): void => {
        process.off("SIGTERM", onSignal);
        process.off("SIGINT", onSignal);
      };

      const url = options.store || defaultStoreUrl(options.data);
      const undo = createdSince([options.data, ...[lmdbDir(url)].filter((d) => d !== null)]);
      const metrics = new Metrics();
      let flowstore: Flowstore | undefined;
      let app: FastifyInstance | undefined;
      let metricsServer: Server | undefined;
      const closeAll = async (): Promise<void> => {
        await app?.close();
        if (metricsServer) await new Promise((resolve) => metricsServer!.close(resolve));
        await flowstore?.close();
      };
      try {
        flowstore = await openFlowstore(url, { instrument: (kv) => metrics.wrap(kv), ...opening });
        if ((await unfinishedImport(flowstore.kv)) || (await pendingRestore(flowstore.kv)) !== null) {
          const source = await importSource(flowstore.kv);
          throw new ConfigurationError(`refusing to serve: ${UNFINISHED_IMPORT}${source ? ` (a restore was reading ${source})` : ""}`);
        }
        // History rewritten under the log, or a log rebuilt under the witnesses' cosignatures: not served.
        const pinned = options.logCheckpoint === undefined ? undefined : await readFile(options.logCheckpoint, "utf8");
        await flowstore.log.tree.appendPending();
        const unservable = await unservableLog(flowstore.log.tree, flowstore.log.checkpoints, { witnesses: witnessesOf(options.logWitness).map((k) => parseVkey(k)), pinned });
        if (unservable.length > 0) throw new VerificationFailed(`refusing to serve: the store's history is not the one its transparency log holds:\n${unservable.join("\n")}`);
        const tokenSecret = await loadTokenSecret({ dataDir: options.data, env: readEnv("FLOWSTORE_JWT_SECRET") });
        app = await buildServer(flowstore, {
          tokenSecret,
          logger,
          bodyLimit,
          metrics,
          metricsRoute: metricsPort === undefined,
          logWitnesses: witnessesOf(options.logWitness),
          metricsToken,
          trustProxy: options.trustProxy || undefined,
          ...http,
        });
        const root = await flowstore.identity.ensureRoot(readEnv("FLOWSTORE_ROOT_PASSWORD"));
        if (root.created) logger.info("created the root user");
        if (testPasswords) logger.warn("TruBudget's API accepts any non-empty password for new users and password changes (--trubudget-test-passwords): a test node only");
        if (!isPersistent(url)) logger.warn({ store: url }, "the store is in memory: nothing persists after exit");
        if (!requested) {
          await app.listen({ host: options.host, port });
          if (metricsPort !== undefined) {
            metricsServer = await serveMetrics(metrics, options.host, metricsPort);
            logger.info({ port: (metricsServer.address() as { port: number }).port }, "metrics served apart at /metrics");
          }
        }
      } catch (e) {
        await closeAll().catch(() => {});
        release();
        // Refused for want of a root password: the store was empty, so what this start created goes.
        if (e instanceof ValidationError && e.field === "FLOWSTORE_ROOT_PASSWORD") await undo();
        throw e;
      }

      let stopping = false;
      stop = async (signal) => {
        if (stopping) return;
        stopping = true;
        logger.info({ signal, graceSeconds: graceMs / 1000 }, "shutting down: finishing in-flight requests");
        const force = setTimeout(() => {
          logger.error("in-flight requests did not finish in time; exiting");
          process.exit(EXIT.configuration);
        }, graceMs);
        force.unref();
        try {
          await closeAll();
          logger.info("stopped");
          process.exitCode = EXIT.ok;
        } catch (e) {
          logger.error({ err: e }, "shutdown failed");
          process.exitCode = EXIT.configuration;
        } finally {
          clearTimeout(force);
          release();
        }
      };
      if (requested) await stop(requested);
    });
}

/** The metrics token from its file (`--metrics-token-file`): one line of at least 16 characters. */
function readMetricsToken(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new UsageError(`--metrics-token-file: cannot read ${file} (${(e as Error).message})`);
  }
  const token = text.trim();
  if (token.length < 16 || /\s/.test(token)) throw new UsageError(`--metrics-token-file: ${file} must hold one token of at least 16 characters without spaces`);
  return token;
}
