/**
 * Prometheus metrics through prom-client, one registry per Metrics (a process may serve several stores,
 * as the tests do):
 * - the default process and Node metrics (CPU, resident memory, heap, event-loop lag, GC, handles),
 *   prefixed `flowstore_`;
 * - HTTP requests: a counter by method, route pattern and status, a latency histogram by method and route;
 * - store operations: a latency histogram by backend and operation (through `wrap`, a KvStore decorator
 *   put in front of the store before anything is built on it), and failures by backend and operation;
 * - commit groups: how many commands each commit of a partition writer carried (`observeCommitGroup`);
 * - the open change-feed (SSE) streams (`metricsHooks`);
 * - the transparency log (`observeLog`): its size, and how far it trails the feed (its merge lag) in feed
 *   entries and in seconds (the age of the oldest acknowledged event not in it yet), read from the store
 *   when /metrics is rendered.
 * `/metrics` renders the registry; `serveMetrics` serves it on a port of its own when asked.
 */
import { createServer, type Server } from "node:http";
import type { FastifyInstance } from "fastify";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { CommitResult, Entry, Key, KvStore, Op, Partition, PartitionPage, ScanOptions, ScanPage } from "../compose/index.js";

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const GROUP_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128];

/** What /metrics reports of the transparency log. */
export interface LogState {
  /** Feed entries the log has not appended yet. */
  readonly lag: number;
  /** The age in seconds of the oldest acknowledged event the log does not hold yet. */
  readonly lagSeconds: number;
  /** Leaves in the log. */
  readonly size: number;
}

export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

export class Metrics {
  readonly registry = new Registry();
  readonly #requests = new Counter({
    name: "flowstore_http_requests_total",
    help: "HTTP requests by method, route and status.",
    labelNames: ["method", "route", "status"] as const,
    registers: [this.registry],
  });
  readonly #latency = new Histogram({
    name: "flowstore_http_request_duration_seconds",
    help: "HTTP request latency by method and route.",
    labelNames: ["method", "route"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly #storeLatency = new Histogram({
    name: "flowstore_store_operation_duration_seconds",
    help: "Store operation latency by backend and operation.",
    labelNames: ["backend", "op"] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly #storeErrors = new Counter({
    name: "flowstore_store_operation_errors_total",
    help: "Store operations that failed, by backend and operation.",
    labelNames: ["backend", "op"] as const,
    registers: [this.registry],
  });
  readonly #groups = new Histogram({
    name: "flowstore_commit_group_size",
    help: "Commands carried by one commit of a partition (concurrent commands of a partition share a commit).",
    buckets: GROUP_BUCKETS,
    registers: [this.registry],
  });
  readonly #sse = new Gauge({
    name: "flowstore_sse_connections",
    help: "Open change-feed (Server-Sent Events) streams.",
    registers: [this.registry],
  });

  #logSource: (() => Promise<LogState>) | null = null;
  #logRead: Promise<LogState | null> | null = null;
  /** The log's state, read once for the gauges a render collects together (prom-client collects them at once). */
  #log(): Promise<LogState | null> {
    this.#logRead ??= (this.#logSource?.() ?? Promise.resolve(null))
      .catch(() => null)
      .finally(() => {
        this.#logRead = null;
      });
    return this.#logRead;
  }
  readonly #logLag = new Gauge({
    name: "flowstore_tlog_lag_entries",
    help: "Change-feed entries the transparency log has not appended yet (its merge delay, in entries).",
    registers: [this.registry],
    collect: async () => {
      const s = await this.#log();
      if (s) this.#logLag.set(s.lag);
    },
  });
  readonly #logLagSeconds = new Gauge({
    name: "flowstore_tlog_lag_seconds",
    help: "Age in seconds of the oldest acknowledged event the transparency log does not hold yet (its merge lag; 0 when it holds every event).",
    registers: [this.registry],
    collect: async () => {
      const s = await this.#log();
      if (s) this.#logLagSeconds.set(s.lagSeconds);
    },
  });
  readonly #logSize = new Gauge({
    name: "flowstore_tlog_size",
    help: "Leaves (events) in the transparency log.",
    registers: [this.registry],
    collect: async () => {
      const s = await this.#log();
      if (s) this.#logSize.set(s.size);
    },
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: "flowstore_" });
  }

  observeRequest(method: string, route: string, status: number, seconds: number): void {
    this.#requests.inc({ method, route, status: String(status) });
    this.#latency.observe({ method, route }, seconds);
  }

  observeStore(backend: string, op: string, seconds: number, failed: boolean): void {
    this.#storeLatency.observe({ backend, op }, seconds);
    if (failed) this.#storeErrors.inc({ backend, op });
  }

  observeCommitGroup(commands: number): void {
    this.#groups.observe(commands);
  }

  streamOpened(): void {
    this.#sse.inc();
  }

  streamClosed(): void {
    this.#sse.dec();
  }

  /** Reports the transparency log's lag and size (read when the metrics are rendered). */
  observeLog(source: () => Promise<LogState>): void {
    this.#logSource = source;
  }

  /** Wraps a store so that every operation is timed here. */
  wrap(kv: KvStore): KvStore {
    return new TimedKv(kv, this);
  }

  /** The registry in the text exposition format (0.0.4). */
  render(): Promise<string> {
    return this.registry.metrics();
  }
}

/**
 * The server's metric hooks: each answered request, and each change-feed stream while it is open (the
 * stream's response is hijacked, so it is counted from its handler's start to its connection's close).
 */
export function metricsHooks(app: FastifyInstance, metrics: Metrics, feedRoute: string): void {
  app.addHook("onResponse", (request, reply, done) => {
    metrics.observeRequest(request.method, request.routeOptions.url ?? "unmatched", reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
  // preHandler runs after authentication and validation: only streams that start are counted.
  app.addHook("preHandler", (request, reply, done) => {
    if (request.method === "GET" && request.routeOptions.url === feedRoute) {
      metrics.streamOpened();
      reply.raw.once("close", () => metrics.streamClosed());
    }
    done();
  });
}

/** Serves the registry alone on `host:port` (GET /metrics), apart from the API. */
export async function serveMetrics(metrics: Metrics, host: string, port: number): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.method !== "GET" || (req.url ?? "").split("?")[0] !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found: GET /metrics\n");
      return;
    }
    metrics.render().then(
      (text) => res.writeHead(200, { "content-type": METRICS_CONTENT_TYPE }).end(text),
      (e: unknown) => res.writeHead(500, { "content-type": "text/plain" }).end(`${e instanceof Error ? e.message : String(e)}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return server;
}

/** A KvStore that times each operation (and counts each failure) and otherwise forwards to the inner store. */
export class TimedKv implements KvStore {
  /** The synchronous get (the read fast path), where the backend has one; counted as a get. Made once, not per access. */
  readonly getSync?: KvStore["getSync"];
  /** The staged commit (pipelining), where the backend has one; counted as a commit. */
  readonly commitVisible?: KvStore["commitVisible"];
  /** The commit across partitions, where the backend has one; counted as a commit. */
  readonly commitAcross?: KvStore["commitAcross"];

  constructor(
    readonly inner: KvStore,
    private readonly metrics: Metrics,
  ) {
    const getSync = inner.getSync;
    if (getSync) {
      this.getSync = (partition, key) => {
        const start = process.hrtime.bigint();
        let failed = true;
        try {
          const entry = getSync.call(inner, partition, key);
          failed = false;
          return entry;
        } finally {
          this.#observe("get", start, failed);
        }
      };
    }
    const commitVisible = inner.commitVisible;
    if (commitVisible) this.commitVisible = (partition, ops) => this.#time("commit", () => commitVisible.call(inner, partition, ops));
    const commitAcross = inner.commitAcross;
    if (commitAcross) this.commitAcross = (build) => this.#time("commit", () => commitAcross.call(inner, build));
  }

  get backend(): string {
    return this.inner.backend;
  }

  async #time<T>(op: string, run: () => Promise<T>): Promise<T> {
    const start = process.hrtime.bigint();
    let failed = true;
    try {
      const result = await run();
      failed = false;
      return result;
    } finally {
      this.#observe(op, start, failed);
    }
  }

  #observe(op: string, start: bigint, failed: boolean): void {
    this.metrics.observeStore(this.inner.backend, op, Number(process.hrtime.bigint() - start) / 1e9, failed);
  }

  get(partition: Partition, key: Key): Promise<Entry | undefined> {
    return this.#time("get", () => this.inner.get(partition, key));
  }
  getMany(partition: Partition, keys: readonly Key[]): Promise<(Entry | undefined)[]> {
    return this.#time("getMany", () => this.inner.getMany(partition, keys));
  }
  scan(partition: Partition, options?: ScanOptions): Promise<ScanPage> {
    return this.#time("scan", () => this.inner.scan(partition, options));
  }
  commit(partition: Partition, ops: readonly Op[]): Promise<CommitResult> {
    return this.#time("commit", () => this.inner.commit(partition, ops));
  }
  listPartitions(kind: string, options?: { limit?: number; after?: string | null }): Promise<PartitionPage> {
    return this.#time("listPartitions", () => this.inner.listPartitions(kind, options));
  }
  dropPartition(partition: Partition): Promise<void> {
    return this.#time("dropPartition", () => this.inner.dropPartition(partition));
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}
