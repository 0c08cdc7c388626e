/**
 * `flowstore serve`: opens the store, creates root on first start, listens (127.0.0.1 by default) and
 * shuts down gracefully on SIGTERM/SIGINT: stop accepting, let in-flight requests finish, close the store.
 */
import { Option, type Command } from "commander";
import { loadTokenSecret } from "../identity/index.js";
import { createLogger } from "../http/logging.js";
import { buildServer, DEFAULT_HOST } from "../http/server.js";
import { parsePort, storeOptions, type StoreOptions } from "./options.js";
import { openKv } from "../kv/open.js";
import { defaultStoreUrl, isPersistent } from "./store.js";

interface ServeOptions extends StoreOptions {
  host: string;
  port: string;
  logLevel: string;
  bodyLimit: string;
}

/** Longest wait for in-flight requests on shutdown before the process exits anyway. */
const SHUTDOWN_GRACE_MS = 10_000;

export function serveCommand(program: Command): void {
  storeOptions(program.command("serve").description("run the HTTP server"))
    .addOption(new Option("--host <host>", "address to listen on").env("FLOWSTORE_HOST").default(DEFAULT_HOST))
    .addOption(new Option("--port <port>", "port to listen on").env("FLOWSTORE_PORT").default("8080"))
    .addOption(new Option("--log-level <level>", "pino log level").env("FLOWSTORE_LOG_LEVEL").default("info"))
    .addOption(new Option("--body-limit <bytes>", "largest request body").env("FLOWSTORE_BODY_LIMIT").default(String(1024 * 1024)))
    .addHelpText(
      "after",
      "\nEnvironment: FLOWSTORE_ROOT_PASSWORD creates the root user on an empty store (required then);\n" +
        "FLOWSTORE_JWT_SECRET signs tokens (default: a secret generated into <data>/jwt-secret);\n" +
        "FLOWSTORE_PROCESS_DATA_KEY (base64, 32 bytes) encrypts process-data access tokens (default: <data>/process-data.key).",
    )
    .action(async (options: ServeOptions) => {
      const port = parsePort(options.port);
      const bodyLimit = Number(options.bodyLimit);
      if (!Number.isInteger(bodyLimit) || bodyLimit < 1024) throw new Error("--body-limit must be an integer of at least 1024");
      const logger = createLogger({ level: options.logLevel });
      const url = options.store || defaultStoreUrl(options.data);
      const kv = await openKv(url);
      let app;
      try {
        const tokenSecret = await loadTokenSecret({ dataDir: options.data, env: process.env.FLOWSTORE_JWT_SECRET });
        const pdKey = process.env.FLOWSTORE_PROCESS_DATA_KEY;
        app = await buildServer({ kv, tokenSecret, logger, bodyLimit, processDataKey: pdKey ? { encryptionKey: pdKey } : { dataDir: options.data } });
        const root = await app.flowstore.identity.ensureRoot(process.env.FLOWSTORE_ROOT_PASSWORD);
        if (root.created) logger.info("created the root user");
        if (!isPersistent(url)) logger.warn({ store: url }, "the store is in memory: nothing persists after exit");
        await app.listen({ host: options.host, port });
      } catch (e) {
        await app?.close().catch(() => {});
        await kv.close().catch(() => {});
        throw e;
      }
      const server = app;
      let stopping = false;
      const stop = async (signal: string) => {
        if (stopping) return;
        stopping = true;
        logger.info({ signal }, "shutting down: finishing in-flight requests");
        const force = setTimeout(() => {
          logger.error("in-flight requests did not finish in time; exiting");
          process.exit(1);
        }, SHUTDOWN_GRACE_MS);
        force.unref();
        try {
          await server.close();
          await kv.close();
          logger.info("stopped");
          process.exitCode = 0;
        } catch (e) {
          logger.error({ err: e }, "shutdown failed");
          process.exitCode = 1;
        } finally {
          clearTimeout(force);
          process.off("SIGTERM", onTerm);
          process.off("SIGINT", onInt);
        }
      };
      const onTerm = () => void stop("SIGTERM");
      const onInt = () => void stop("SIGINT");
      process.on("SIGTERM", onTerm);
      process.on("SIGINT", onInt);
    });
}
