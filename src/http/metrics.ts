/**
 * Prometheus metrics, written in the text exposition format (0.0.4): HTTP request counts by method,
 * route pattern and status; a latency histogram by method and route; store operation counts by
 * operation (through CountingKv, a KvStore decorator the server puts in front of the store).
 */
import type { CommitResult, Entry, Key, KvStore, Op, Partition, PartitionPage, ScanOptions, ScanPage } from "../kv/contract.js";

const BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

interface Histogram {
  readonly counts: number[];
  sum: number;
  count: number;
}

export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

export class Metrics {
  readonly #requests = new Map<string, number>();
  readonly #latency = new Map<string, Histogram>();
  readonly #storeOps = new Map<string, number>();
  readonly #storeErrors = new Map<string, number>();

  observeRequest(method: string, route: string, status: number, seconds: number): void {
    const labels = `method="${esc(method)}",route="${esc(route)}"`;
    const key = `${labels},status="${status}"`;
    this.#requests.set(key, (this.#requests.get(key) ?? 0) + 1);
    let h = this.#latency.get(labels);
    if (!h) this.#latency.set(labels, (h = { counts: BUCKETS.map(() => 0), sum: 0, count: 0 }));
    for (let i = 0; i < BUCKETS.length; i++) if (seconds <= BUCKETS[i]!) h.counts[i]!++;
    h.sum += seconds;
    h.count++;
  }

  observeStore(op: string, failed: boolean): void {
    this.#storeOps.set(op, (this.#storeOps.get(op) ?? 0) + 1);
    if (failed) this.#storeErrors.set(op, (this.#storeErrors.get(op) ?? 0) + 1);
  }

  /** Wraps a store so that every operation is counted here. */
  wrap(kv: KvStore): KvStore {
    return new CountingKv(kv, this);
  }

  render(): string {
    const out: string[] = [];
    out.push("# HELP flowstore_http_requests_total HTTP requests by method, route and status.");
    out.push("# TYPE flowstore_http_requests_total counter");
    for (const [labels, n] of this.#requests) out.push(`flowstore_http_requests_total{${labels}} ${n}`);
    out.push("# HELP flowstore_http_request_duration_seconds HTTP request latency by method and route.");
    out.push("# TYPE flowstore_http_request_duration_seconds histogram");
    for (const [labels, h] of this.#latency) {
      BUCKETS.forEach((le, i) => out.push(`flowstore_http_request_duration_seconds_bucket{${labels},le="${le}"} ${h.counts[i]}`));
      out.push(`flowstore_http_request_duration_seconds_bucket{${labels},le="+Inf"} ${h.count}`);
      out.push(`flowstore_http_request_duration_seconds_sum{${labels}} ${h.sum}`);
      out.push(`flowstore_http_request_duration_seconds_count{${labels}} ${h.count}`);
    }
    out.push("# HELP flowstore_store_operations_total Store operations by operation.");
    out.push("# TYPE flowstore_store_operations_total counter");
    for (const [op, n] of this.#storeOps) out.push(`flowstore_store_operations_total{op="${esc(op)}"} ${n}`);
    out.push("# HELP flowstore_store_operation_errors_total Store operations that failed, by operation.");
    out.push("# TYPE flowstore_store_operation_errors_total counter");
    for (const [op, n] of this.#storeErrors) out.push(`flowstore_store_operation_errors_total{op="${esc(op)}"} ${n}`);
    return out.join("\n") + "\n";
  }
}

function esc(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** A KvStore that counts each operation (and each failure) and otherwise forwards to the inner store. */
export class CountingKv implements KvStore {
  constructor(
    readonly inner: KvStore,
    private readonly metrics: Metrics,
  ) {}

  get backend(): string {
    return this.inner.backend;
  }

  async #count<T>(op: string, run: () => Promise<T>): Promise<T> {
    try {
      const result = await run();
      this.metrics.observeStore(op, false);
      return result;
    } catch (e) {
      this.metrics.observeStore(op, true);
      throw e;
    }
  }

  get(partition: Partition, key: Key): Promise<Entry | undefined> {
    return this.#count("get", () => this.inner.get(partition, key));
  }
  getMany(partition: Partition, keys: readonly Key[]): Promise<(Entry | undefined)[]> {
    return this.#count("getMany", () => this.inner.getMany(partition, keys));
  }
  scan(partition: Partition, options?: ScanOptions): Promise<ScanPage> {
    return this.#count("scan", () => this.inner.scan(partition, options));
  }
  commit(partition: Partition, ops: readonly Op[]): Promise<CommitResult> {
    return this.#count("commit", () => this.inner.commit(partition, ops));
  }
  listPartitions(kind: string, options?: { limit?: number; after?: string | null }): Promise<PartitionPage> {
    return this.#count("listPartitions", () => this.inner.listPartitions(kind, options));
  }
  dropPartition(partition: Partition): Promise<void> {
    return this.#count("dropPartition", () => this.inner.dropPartition(partition));
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}
