/** Starts a real server on 127.0.0.1 (port 0) over a backend, with root created, for the HTTP suites. */
import { request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { FlowstoreClient } from "../../src/client/index.js";
import { openFlowstore, type FlowstoreOptions } from "../../src/compose/index.js";
import { Metrics } from "../../src/http/metrics.js";
import type { BackendFactory } from "../conformance/backends.js";
import { buildServer, type ServerOptions } from "../../src/http/server.js";
import type { KvStore } from "../../src/kv/contract.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { makeTempDirSync, removeTempDirSync } from "../support/temp-dir.js";

export const ROOT_PASSWORD = "root password 123";
export const SECRET = new TextEncoder().encode("test secret that is long enough 0123456789");
/** The metrics token of the servers tests start (`--metrics-token-file`'s): /metrics takes it, or root's token. */
export const METRICS_TOKEN = "metrics-token-of-the-tests";
/** The headers a scraper sends for /metrics. */
export const SCRAPE = { headers: { authorization: `Bearer ${METRICS_TOKEN}` } } as const;

export interface Running {
  readonly app: FastifyInstance;
  readonly base: string;
  /** A client logged in as root. */
  readonly root: FlowstoreClient;
  client(token?: string): FlowstoreClient;
  /** A client logged in as a new user with the given password. */
  userClient(id: string, password?: string): Promise<FlowstoreClient>;
  close(): Promise<void>;
}

/** The store's options (openFlowstore) and the server's (buildServer), in one bag. */
export type StartOptions = { logger?: Logger | false } & Partial<ServerOptions> &
  Pick<
    FlowstoreOptions,
    "archive" | "archiveSeal" | "processData" | "pageCache" | "clock" | "documents" | "notifications" | "feedRepair" | "restoreDir" | "log" | "subscriptions" | "onBackgroundError"
  >;

/** Opens the store over `kv` (which stays the caller's to close) counted in /metrics, and serves it. */
export async function startServer(kv: KvStore, options: StartOptions = {}): Promise<Running> {
  const { archive, archiveSeal, processData, pageCache, clock, documents, notifications, feedRepair, restoreDir, log, subscriptions, onBackgroundError, ...http } = options;
  const metrics = new Metrics();
  const flowstore = await openFlowstore(kv, {
    archive,
    archiveSeal,
    processData,
    pageCache,
    clock,
    documents,
    notifications,
    feedRepair,
    restoreDir,
    log,
    subscriptions,
    onBackgroundError,
    instrument: (inner) => metrics.wrap(inner),
  });
  const app = await buildServer(flowstore, { tokenSecret: SECRET, logger: false, metrics, closeStore: true, metricsToken: METRICS_TOKEN, ...http });
  await app.flowstore.identity.ensureRoot(ROOT_PASSWORD);
  await app.listen({ host: "127.0.0.1", port: 0 });
  const { port } = app.server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}`;
  const client = (token?: string) => new FlowstoreClient({ baseUrl: base, token });
  const root = client();
  await root.login("root", ROOT_PASSWORD);
  return {
    app,
    base,
    root,
    client,
    async userClient(id, password = `${id} password`) {
      await root.users.create({ id, displayName: id, password });
      const c = client();
      await c.login(id, password);
      return c;
    },
    close: () => app.close(),
  };
}

/**
 * A server over LMDB files of its own, for a suite that runs one server per file: a fresh directory
 * (named after `name`), the store, the server; `close` stops the server, closes the store and removes
 * the directory.
 */
export async function startLmdbServer(name: string, options: StartOptions = {}): Promise<Running> {
  const dir = makeTempDirSync(name);
  const kv = LmdbKv.open(dir);
  const cleanUp = async (): Promise<void> => {
    await kv.close();
    removeTempDirSync(dir);
  };
  let running: Running;
  try {
    running = await startServer(kv, options);
  } catch (e) {
    await cleanUp();
    throw e;
  }
  return {
    ...running,
    async close() {
      try {
        await running.close();
      } finally {
        await cleanUp();
      }
    },
  };
}

/** Fetch and read: status, content type and the parsed body (or text). */
export async function raw(
  base: string,
  method: string,
  path: string,
  init: { headers?: Record<string, string>; body?: string | Uint8Array } = {},
): Promise<{ status: number; type: string; body: any; headers: Headers }> {
  const res = await fetch(base + path, { method, headers: init.headers, body: init.body });
  const text = await res.text();
  const type = res.headers.get("content-type") ?? "";
  let body: unknown = text;
  if (type.includes("json") && text !== "") body = JSON.parse(text);
  return { status: res.status, type, body, headers: res.headers };
}

/**
 * Two servers, each with its own openFlowstore over its own handle on the same data of `backend` (a fleet
 * of two); what they hold is closed through `cleanup` (the caller's list, emptied after each test).
 */
export async function startTwoServers(backend: BackendFactory, cleanup: (() => Promise<unknown>)[], options: StartOptions = {}): Promise<{ a: Running; b: Running }> {
  const handle = await backend.create();
  cleanup.push(() => handle.destroy());
  const a = await startServer(handle.kv, options);
  cleanup.push(() => a.close());
  const b = await startServer(await handle.reopen(), options);
  cleanup.push(() => b.close());
  return { a, b };
}

/** POST /api/v1/auth/token (or TruBudget's user.authenticate) from a chosen loopback address (the whole of 127/8 is loopback on Linux). */
export function loginFrom(
  base: string,
  localAddress: string,
  username: string,
  password: string,
  path = "/api/v1/auth/token",
): Promise<{ status: number; retryAfter?: string; body: any }> {
  const url = new URL(path, base);
  const body = JSON.stringify(path === "/api/v1/auth/token" ? { username, password } : { apiVersion: "1.0", data: { user: { id: username, password } } });
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: "POST", localAddress, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode!, retryAfter: res.headers["retry-after"] as string | undefined, body: JSON.parse(text) }));
    });
    req.on("error", reject);
    req.end(body);
  });
}
