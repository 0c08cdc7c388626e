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
 * - webhook deliveries deferred because their name lookup found no place (`observeDeferredDeliveries`);
 * - the transparency log (`observeLog`): its size, and how far it trails the feed (its merge lag) in feed
 *   entries and in seconds (the age of the oldest acknowledged event not in it yet), read from the store
 *   when /metrics is rendered.
 * `/metrics` renders the registry; `serveMetrics` serves it on a port of its own when asked.
 *
 * The request path does no prom-client work: each request and store operation adds to plain numbers of
 * its label set's series (a per-route, per-operation bucket array), which the registry renders when
 * scraped (`LocalHistogram`, `LocalCounter`: the same names, types, labels and values prom-client's own
 * Histogram and Counter would give).
 */
import { createServer, type Server } from "node:http";
import type { FastifyInstance, preHandlerHookHandler } from "fastify";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type Metric } from "prom-client";
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

type Labels = Record<string, string>;
/** One sample as prom-client's registry renders it (`sharedLabels` after `labels`, as its histograms put `le` first). */
interface Value {
  labels: Record<string, string | number>;
  sharedLabels?: Labels;
  value: number;
  metricName?: string;
}

/** One label set's observations of a histogram: a count per bucket (the last past every bound), their sum and count. */
export class Series {
  readonly #bounds: readonly number[];
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  /** Requests counted by status (the request counter's third label), for series of requests. */
  readonly statuses = new Map<number, number>();

  constructor(
    readonly labels: Labels,
    bounds: readonly number[],
  ) {
    this.#bounds = bounds;
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.#bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.counts[i]! += 1;
    this.sum += value;
    this.count += 1;
  }
}

/**
 * A histogram whose label sets are `Series` kept by their callers (looked up once, then plain additions),
 * registered in a prom-client registry, which renders it as it renders its own Histogram: cumulative
 * `_bucket` samples with `le` first, `+Inf`, `_sum`, `_count`.
 */
class LocalHistogram {
  readonly type = "histogram";
  readonly aggregator = "sum";
  readonly #series = new Map<string, Series>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly bounds: readonly number[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  /** The series of a label set, made on its first use (label values in the order of the label names). */
  series(labels: Labels): Series {
    const key = JSON.stringify(Object.values(labels));
    let s = this.#series.get(key);
    if (!s) this.#series.set(key, (s = new Series(labels, this.bounds)));
    return s;
  }

  all(): IterableIterator<Series> {
    return this.#series.values();
  }

  getForPromString(): { name: string; help: string; type: string; values: Value[]; aggregator: string } {
    const values: Value[] = [];
    for (const s of this.#series.values()) {
      let acc = 0;
      this.bounds.forEach((le, i) => {
        acc += s.counts[i]!;
        values.push({ labels: { le }, sharedLabels: s.labels, value: acc, metricName: `${this.name}_bucket` });
      });
      values.push(
        { labels: { le: "+Inf" }, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_bucket` },
        { labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${this.name}_sum` },
        { labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_count` },
      );
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  get(): ReturnType<LocalHistogram["getForPromString"]> {
    const data = this.getForPromString();
    return { ...data, values: data.values.map((v) => ({ ...v, labels: { ...v.sharedLabels, ...v.labels }, sharedLabels: {} })) };
  }

  reset(): void {
    for (const s of this.#series.values()) {
      s.counts.fill(0);
      s.sum = 0;
      s.count = 0;
      s.statuses.clear();
    }
  }
}

/** The request counter (by method, route and status), read from the request histogram's series at render. */
class LocalCounter {
  readonly type = "counter";
  readonly aggregator = "sum";

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly of: LocalHistogram,
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  get(): { name: string; help: string; type: string; values: Value[]; aggregator: string } {
    const values: Value[] = [];
    for (const s of this.of.all()) for (const [status, n] of s.statuses) values.push({ labels: { ...s.labels, status: String(status) }, value: n });
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    for (const s of this.of.all()) s.statuses.clear();
  }
}

export class Metrics {
  readonly registry = new Registry();
  readonly #latency = new LocalHistogram("flowstore_http_request_duration_seconds", "HTTP request latency by method and route.", LATENCY_BUCKETS, this.registry);
  /** The request series by route, then method: two map reads per request. */
  readonly #routes = new Map<string, Map<string, Series>>();
  readonly #storeLatency = new LocalHistogram("flowstore_store_operation_duration_seconds", "Store operation latency by backend and operation.", LATENCY_BUCKETS, this.registry);
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

  #deferredSource: (() => number) | null = null;
  readonly #deferred = new Counter({
    name: "flowstore_webhook_deliveries_deferred_total",
    help: "Webhook deliveries not attempted because their name lookup found no place (the owner's own lookups held, or none free in time): tried again at the next pass, no attempt counted.",
    registers: [this.registry],
    collect: () => {
      const n = this.#deferredSource?.();
      if (n === undefined) return;
      this.#deferred.reset();
      this.#deferred.inc(n);
    },
  });

  constructor() {
    new LocalCounter("flowstore_http_requests_total", "HTTP requests by method, route and status.", this.#latency, this.registry);
    collectDefaultMetrics({ register: this.registry, prefix: "flowstore_" });
  }

  observeRequest(method: string, route: string, status: number, seconds: number): void {
    let methods = this.#routes.get(route);
    if (!methods) this.#routes.set(route, (methods = new Map()));
    let s = methods.get(method);
    if (!s) methods.set(method, (s = this.#latency.series({ method, route })));
    s.statuses.set(status, (s.statuses.get(status) ?? 0) + 1);
    s.observe(seconds);
  }

  /** The latency series of one store operation (a TimedKv keeps it: no lookup per operation). */
  storeSeries(backend: string, op: string): Series {
    return this.#storeLatency.series({ backend, op });
  }

  observeStore(backend: string, op: string, seconds: number, failed: boolean): void {
    this.storeSeries(backend, op).observe(seconds);
    if (failed) this.storeFailed(backend, op);
  }

  storeFailed(backend: string, op: string): void {
    this.#storeErrors.inc({ backend, op });
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

  /** Reports the webhook deliveries deferred so far (read when the metrics are rendered). */
  observeDeferredDeliveries(source: () => number): void {
    this.#deferredSource = source;
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
  // The feed route's own preHandler (no hook on the other routes' path). preHandler runs after
  // authentication and validation: only streams that start are counted.
  const opened: preHandlerHookHandler = (_request, reply, done) => {
    metrics.streamOpened();
    reply.raw.once("close", () => metrics.streamClosed());
    done();
  };
  app.addHook("onRoute", (route) => {
    const methods = [route.method].flat();
    if (route.url !== feedRoute || !methods.includes("GET")) return;
    route.preHandler = [...[route.preHandler ?? []].flat(), opened];
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
  /** The scan that hands out views (verify), where the backend has one; counted as a scan. */
  readonly scanViews?: KvStore["scanViews"];
  readonly countSync?: KvStore["countSync"];
  /** The partition's commit sequence, where the backend reads it synchronously; counted as a get. */
  readonly partitionVersionSync?: KvStore["partitionVersionSync"];
  /** The staged commit (pipelining), where the backend has one; counted as a commit. */
  readonly commitVisible?: KvStore["commitVisible"];
  /** The commit across partitions, where the backend has one; counted as a commit. */
  readonly commitAcross?: KvStore["commitAcross"];

  constructor(
    readonly inner: KvStore,
    private readonly metrics: Metrics,
  ) {
    const getSync = inner.getSync;
    if (getSync) this.getSync = (partition, key) => this.#timeSync("get", () => getSync.call(inner, partition, key));
    const scanViews = inner.scanViews;
    if (scanViews) this.scanViews = (partition, options, visit) => this.#timeSync("scan", () => scanViews.call(inner, partition, options, visit));
    const countSync = inner.countSync;
    if (countSync) this.countSync = (partition, options) => this.#timeSync("scan", () => countSync.call(inner, partition, options));
    const partitionVersionSync = inner.partitionVersionSync;
    if (partitionVersionSync) this.partitionVersionSync = (partition) => this.#timeSync("get", () => partitionVersionSync.call(inner, partition));
    const commitVisible = inner.commitVisible;
    if (commitVisible) this.commitVisible = (partition, ops) => this.#time("commit", () => commitVisible.call(inner, partition, ops));
    const commitAcross = inner.commitAcross;
    if (commitAcross) this.commitAcross = (build) => this.#time("commit", () => commitAcross.call(inner, build));
  }

  get backend(): string {
    return this.inner.backend;
  }

  /** `#time` for the synchronous calls (getSync, scanViews, partitionVersionSync). */
  #timeSync<T>(op: string, run: () => T): T {
    const start = performance.now();
    let failed = true;
    try {
      const result = run();
      failed = false;
      return result;
    } finally {
      this.#observe(op, start, failed);
    }
  }

  async #time<T>(op: string, run: () => Promise<T>): Promise<T> {
    const start = performance.now();
    let failed = true;
    try {
      const result = await run();
      failed = false;
      return result;
    } finally {
      this.#observe(op, start, failed);
    }
  }

  /** Each operation's series, made on its first use. */
  readonly #series = new Map<string, Series>();

  #observe(op: string, start: number, failed: boolean): void {
    const seconds = (performance.now() - start) / 1000;
    let s = this.#series.get(op);
    if (!s) this.#series.set(op, (s = this.metrics.storeSeries(this.inner.backend, op)));
    s.observe(seconds);
    if (failed) this.metrics.storeFailed(this.inner.backend, op);
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
