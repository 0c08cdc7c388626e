/**
 * /metrics through a real server over LMDB: prom-client's registry in the Prometheus text format (each
 * line checked against the format's grammar, families parsed and their histograms checked), default
 * process and Node metrics, request histograms, store latency per backend, commit group sizes, open SSE
 * streams; and the registry served on a port of its own, apart from the API.
 */
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { METRICS_CONTENT_TYPE, serveMetrics } from "../../src/http/metrics.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { MemoryKv } from "../../src/kv/memory.js";
import { eventually } from "../support/eventually.js";
import { SCRAPE, startServer, type Running } from "./harness.js";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}
interface Family {
  type: string;
  help: string;
  samples: Sample[];
}

const NAME = "[a-zA-Z_:][a-zA-Z0-9_:]*";
const LABEL = `[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\[\\\\"n])*"`;
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(${LABEL}(?:,${LABEL})*)?,?\\})? (\\S+)(?: -?\\d+)?$`);
const VALUE = /^(?:[+-]?(?:\d+\.?\d*(?:e[+-]?\d+)?|\.\d+(?:e[+-]?\d+)?)|NaN|[+-]Inf)$/i;

/** Parses the text exposition format 0.0.4 line by line; throws on any line outside the grammar. */
function parse(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const family = (name: string): Family => {
    let f = families.get(name);
    if (!f) families.set(name, (f = { type: "untyped", help: "", samples: [] }));
    return f;
  };
  const owner = (sample: string): string => {
    for (const suffix of ["_bucket", "_sum", "_count", ""]) {
      const base = suffix ? sample.slice(0, -suffix.length) : sample;
      if (sample.endsWith(suffix) && families.get(base)?.type !== undefined && families.has(base)) return base;
    }
    throw new Error(`sample ${sample} before its # TYPE line`);
  };
  expect(text.endsWith("\n")).toBe(true);
  for (const line of text.slice(0, -1).split("\n")) {
    if (line === "") continue;
    const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (meta) {
      expect(meta[2]).toMatch(new RegExp(`^${NAME}$`));
      if (meta[1] === "TYPE") {
        expect(["counter", "gauge", "histogram", "summary", "untyped"]).toContain(meta[3]);
        expect(family(meta[2]!).samples, `TYPE of ${meta[2]} after its samples`).toHaveLength(0);
        family(meta[2]!).type = meta[3]!;
      } else family(meta[2]!).help = meta[3]!;
      continue;
    }
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not a sample line: ${JSON.stringify(line)}`);
    expect(m[3], line).toMatch(VALUE);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    family(owner(m[1]!)).samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return families;
}

/** Checks every histogram: buckets cumulative, `+Inf` equal to `_count`, per label set. */
function checkHistograms(families: Map<string, Family>): void {
  for (const [name, f] of families) {
    if (f.type !== "histogram") continue;
    const series = new Map<string, Sample[]>();
    for (const s of f.samples.filter((x) => x.name === `${name}_bucket`)) {
      const { le, ...rest } = s.labels;
      expect(le, name).toBeDefined();
      const key = JSON.stringify(rest);
      series.set(key, [...(series.get(key) ?? []), s]);
    }
    for (const [key, buckets] of series) {
      const values = buckets.map((b) => b.value);
      expect(values, `${name}${key}`).toEqual([...values].sort((a, b) => a - b));
      expect(buckets.at(-1)!.labels.le).toBe("+Inf");
      const count = f.samples.find((s) => s.name === `${name}_count` && JSON.stringify(s.labels) === key);
      expect(count?.value, `${name}${key} count`).toBe(buckets.at(-1)!.value);
    }
  }
}

let dir: string;
let kv: LmdbKv;
let s: Running;
beforeAll(async () => {
  dir = await makeTempDir("metrics");
  kv = LmdbKv.open(dir);
  s = await startServer(kv);
});
afterAll(async () => {
  await s?.close();
  await kv?.close();
  await removeTempDir(dir);
});

async function scrape(base = s.base): Promise<Map<string, Family>> {
  const r = await fetch(`${base}/metrics`, SCRAPE);
  expect(r.status).toBe(200);
  expect(r.headers.get("content-type")).toBe(METRICS_CONTENT_TYPE);
  const families = parse(await r.text());
  checkHistograms(families);
  return families;
}

const value = (families: Map<string, Family>, sample: string, labels: Record<string, string> = {}): number | undefined =>
  [...families.values()].flatMap((f) => f.samples).find((x) => x.name === sample && Object.entries(labels).every(([k, v]) => x.labels[k] === v))?.value;

describe("/metrics", () => {
  it("is valid Prometheus text with the default process and Node metrics", async () => {
    const families = await scrape();
    for (const name of [
      "flowstore_process_cpu_user_seconds_total",
      "flowstore_process_resident_memory_bytes",
      "flowstore_nodejs_heap_size_used_bytes",
      "flowstore_nodejs_eventloop_lag_seconds",
      "flowstore_nodejs_gc_duration_seconds",
    ]) {
      expect(families.has(name), name).toBe(true);
      expect(families.get(name)!.help).not.toBe("");
    }
    expect(value(families, "flowstore_process_resident_memory_bytes")).toBeGreaterThan(0);
  });

  it("counts requests, times them and the store per backend, and sizes commit groups", async () => {
    await s.root.users.list();
    // Concurrent writes to one project share its partition's commits.
    await s.root.projects.create({ id: "m1", displayName: "M" });
    await Promise.all(Array.from({ length: 8 }, (_, i) => s.root.project("m1").subprojects.create({ id: `s${i}`, displayName: `S${i}`, currency: "EUR", projectedBudgets: [] })));
    const families = await scrape();
    expect(value(families, "flowstore_http_requests_total", { method: "GET", route: "/api/v1/users", status: "200" })).toBe(1);
    expect(value(families, "flowstore_http_request_duration_seconds_count", { method: "GET", route: "/api/v1/users" })).toBe(1);
    expect(value(families, "flowstore_store_operation_duration_seconds_count", { backend: "lmdb", op: "commit" })).toBeGreaterThan(0);
    expect(value(families, "flowstore_store_operation_duration_seconds_count", { backend: "lmdb", op: "scan" })).toBeGreaterThan(0);
    // Every command is in exactly one group: the groups' sizes add up to the commands committed (9 here at least).
    const groups = value(families, "flowstore_commit_group_size_count")!;
    const commands = value(families, "flowstore_commit_group_size_sum")!;
    expect(groups).toBeGreaterThan(0);
    expect(commands).toBeGreaterThanOrEqual(9);
    expect(commands).toBeGreaterThanOrEqual(groups);
  });

  it("counts each request once, scrape after scrape (the request path's own buckets, rendered when scraped)", async () => {
    const route = { method: "GET", route: "/api/v1/projects/:projectId" };
    const at = (families: Map<string, Family>) => ({
      found: value(families, "flowstore_http_requests_total", { ...route, status: "200" }) ?? 0,
      missing: value(families, "flowstore_http_requests_total", { ...route, status: "404" }) ?? 0,
      count: value(families, "flowstore_http_request_duration_seconds_count", route) ?? 0,
      sum: value(families, "flowstore_http_request_duration_seconds_sum", route) ?? 0,
      gets: value(families, "flowstore_store_operation_duration_seconds_count", { backend: "lmdb", op: "get" }) ?? 0,
    });
    await s.root.projects.create({ id: "c1", displayName: "C" });
    const before = at(await scrape());
    for (let i = 0; i < 5; i++) expect((await fetch(`${s.base}/api/v1/projects/c1`, { headers: { authorization: `Bearer ${s.root.token}` } })).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await fetch(`${s.base}/api/v1/projects/nope`, { headers: { authorization: `Bearer ${s.root.token}` } })).status).toBe(404);
    const after = at(await scrape());
    expect(after.found - before.found).toBe(5);
    expect(after.missing - before.missing).toBe(3);
    expect(after.count - before.count).toBe(8);
    expect(after.sum).toBeGreaterThan(before.sum);
    // Each GET read the store (its synchronous reads are timed as gets).
    expect(after.gets - before.gets).toBeGreaterThanOrEqual(8);
    // A scrape reads the figures, it does not move them.
    const again = at(await scrape());
    expect(again).toEqual({ ...after, gets: again.gets });
  });

  it("gauges open change-feed streams", async () => {
    const before = value(await scrape(), "flowstore_sse_connections");
    expect(before).toBe(0);
    const abort = new AbortController();
    const stream = await fetch(`${s.base}/api/v1/events`, { headers: { authorization: `Bearer ${s.root.token}` }, signal: abort.signal });
    expect(stream.status).toBe(200);
    expect(value(await scrape(), "flowstore_sse_connections")).toBe(1);
    // A refused stream (no token) is not counted.
    expect((await fetch(`${s.base}/api/v1/events`)).status).toBe(401);
    expect(value(await scrape(), "flowstore_sse_connections")).toBe(1);
    abort.abort();
    await stream.body?.cancel().catch(() => {});
    await eventually(async () => value(await scrape(), "flowstore_sse_connections") === 0, { what: "flowstore_sse_connections to fall back to 0" });
  });

  it("can be served on a port of its own, apart from the API", async () => {
    const apart = await serveMetrics(s.app.flowstore.metrics, "127.0.0.1", 0);
    try {
      const base = `http://127.0.0.1:${(apart.address() as AddressInfo).port}`;
      const families = await scrape(base);
      expect(value(families, "flowstore_http_requests_total", { method: "GET", route: "/metrics", status: "200" })).toBeGreaterThan(0);
      expect((await fetch(`${base}/api/v1/users`)).status).toBe(404);
    } finally {
      await new Promise((r) => apart.close(r));
    }
    const without = await startServer(new MemoryKv(), { metricsRoute: false });
    try {
      expect((await fetch(`${without.base}/metrics`)).status).toBe(404);
    } finally {
      await without.close();
    }
  });
});
