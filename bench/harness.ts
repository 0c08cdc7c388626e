/**
 * The benchmark harness: what a workload gets (BenchContext), how it measures (warm-up, several rounds,
 * median), and how a table is printed and saved (bench/results/<workload>.json, read by report.ts).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { KvStore } from "../src/kv/contract.js";
import { openKv } from "../src/kv/open.js";

export const RESULTS_DIR = join(dirname(fileURLToPath(import.meta.url)), "results");

/** A workload: one module in bench/workloads/, registered in bench/workloads/index.ts. */
export interface Workload {
  readonly name: string;
  readonly description: string;
  /** The description when the store under test is `storeUrl`, if it differs (e.g. another raw peer). */
  describe?(storeUrl: string | undefined): string;
  run(ctx: BenchContext): Promise<void>;
}

/**
 * The results of a workload run on a Redis or PostgreSQL store are kept beside the default (LMDB) ones:
 * bench/results/kv.json, kv-redis.json, kv-redis-cluster.json, kv-postgres.json.
 */
export function resultName(workload: string, storeUrl: string | undefined): string {
  const scheme = /^(redis|redis-cluster|postgres)(?:ql)?:\/\//.exec(storeUrl ?? "")?.[1];
  return scheme ? `${workload}-${scheme}` : workload;
}

export interface Row {
  /** What was measured, e.g. "get (contract)". */
  readonly name: string;
  /** Median operations per second over the measured rounds. */
  readonly opsPerSec: number;
  /** The name of the row this one is compared with (same table, same run). */
  readonly reference?: string;
  /**
   * How many times the reference's cost this row's operation takes: the reference's ops/s over this
   * row's (for interleaved comparisons, the median of the per-round-pair ratios).
   */
  readonly costRatio?: number;
  /** The goal for costRatio, when there is one (e.g. 1.5). */
  readonly goal?: number;
  /** Each round's ops/s, for the record. */
  readonly rounds: readonly number[];
  readonly note?: string;
  /** Targets judged from this run's figures (shown in the goal column; one unmet marks the row MISSED). */
  readonly goals?: readonly Goal[];
  /** Why the row was not measured (e.g. its server is not reachable); opsPerSec is then 0. */
  readonly skipped?: string;
}

/** A target and whether this run met it; `text` names the target and the measured value. */
export interface Goal {
  readonly text: string;
  readonly met: boolean;
}

/** At least `target` times `of` (a throughput ratio, e.g. flowstore's req/s over the peer's). */
export function timesAtLeast(ratio: number, target: number, of: string): Goal {
  return { text: `≥ ${Number(target.toFixed(2))}× ${of} (${ratio.toFixed(2)}×)`, met: ratio >= target };
}

/** A rate of at least `target` per second. */
export function rateAtLeast(what: string, rate: number, target: number): Goal {
  return { text: `≥ ${target.toLocaleString("en-US")} ${what} (${Math.round(rate).toLocaleString("en-US")})`, met: rate >= target };
}

/** A latency under a bound. */
export function msBelow(what: string, ms: number, bound: number): Goal {
  return { text: `${what} < ${bound} ms (${ms} ms)`, met: ms < bound };
}

/** The goal column of a row with goals: each with ✓ or ✗, then MET or MISSED. */
export function goalsText(goals: readonly Goal[]): string {
  const all = goals.every((g) => g.met);
  return `${goals.map((g) => `${g.text} ${g.met ? "✓" : "✗"}`).join("; ")}: ${all ? "**MET**" : "🔴 **MISSED**"}`;
}

export interface MeasureOptions {
  /** Operations one call of `round` performs. */
  readonly ops: number;
  /** Performs `ops` operations. */
  readonly round: () => Promise<void> | void;
  /** Measured rounds (the median is reported); default 5. */
  readonly rounds?: number;
  /** Rounds run first and discarded; default 1. */
  readonly warmup?: number;
  readonly reference?: string;
  readonly goal?: number;
  readonly note?: string;
  /** Targets judged from the measured ops/s (e.g. an absolute rate). */
  readonly goals?: (opsPerSec: number) => readonly Goal[];
}

/** One side of a comparison. */
export interface Side {
  readonly name: string;
  /** Performs `ops` operations. */
  readonly round: () => Promise<void> | void;
}

export interface CompareOptions {
  /** Operations one round of either side performs. */
  readonly ops: number;
  readonly reference: Side;
  readonly subject: Side;
  /** Measured round pairs; default 11. */
  readonly rounds?: number;
  /** Warm-up rounds of each side, discarded; default 1. */
  readonly warmup?: number;
  readonly goal?: number;
  readonly note?: string;
}

/** One side of a many-way comparison: performs `n` operations (n is calibrated per side). */
export interface Runner {
  readonly name: string;
  run(n: number): Promise<void> | void;
  /** Upper bound for n (default 100,000). */
  readonly maxOps?: number;
}

export interface CompareAllOptions {
  /** The reference (e.g. flowstore); each subject's cost ratio is the reference's ops/s over its own. */
  readonly reference: Runner;
  readonly subjects: readonly Runner[];
  /** Measured rounds (round-robin, the order rotating each round); default 5. */
  readonly rounds?: number;
  /** Wall time one round of one side should take; ops per side are calibrated to it. Default 150 ms. */
  readonly targetMs?: number;
  readonly goal?: number;
  readonly note?: string;
  /** Targets judged from the rows of this comparison (the reference's first), shown on the reference's row. */
  readonly goals?: (rows: readonly Row[]) => readonly Goal[];
}

export interface BenchContext {
  /** Multiplier of the op counts: small = 1, large = 5, or a number given with --scale. */
  readonly scale: number;
  /** The store URL given with --store, or undefined (workloads then use a fresh LMDB directory). */
  readonly storeUrl: string | undefined;
  /** A fresh temporary directory, removed after the workload. */
  tmpDir(): string;
  /** Opens the store under test: --store, or a fresh LMDB store in a temporary directory. */
  openStore(): Promise<KvStore>;
  /** Runs warm-up and measured rounds and records a row of this workload's table. */
  measure(name: string, options: MeasureOptions): Promise<Row>;
  /**
   * Measures `subject` against `reference` with their rounds interleaved (A B, B A, A B, …) so both
   * see the same machine load; records two rows. The cost ratio is the median of the per-pair ratios.
   */
  compare(options: CompareOptions): Promise<Row>;
  /**
   * Measures several sides round-robin (the order rotates each round, so all see the same machine
   * load). Each side's op count is calibrated so a round takes about `targetMs`. Records one row per
   * side; subjects carry the median of their per-round cost ratios against the reference.
   */
  compareAll(options: CompareAllOptions): Promise<Row[]>;
  /** Records a row measured by other means (e.g. a load generator in another process). */
  record(row: Row): Row;
  /** Records a row that could not be measured, with the reason. */
  skip(name: string, reason: string, reference?: string): void;
  /** Records free text shown under the table (findings, settings). */
  note(text: string): void;
}

export interface WorkloadResult {
  readonly workload: string;
  readonly description: string;
  readonly command: string;
  readonly date: string;
  readonly scale: number;
  readonly store: string;
  readonly machine: Machine;
  readonly rows: Row[];
  readonly notes: string[];
  /** The 1-minute load average when the workload started and ended (other processes on the machine). */
  readonly load: readonly [number, number];
}

export interface Machine {
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly node: string;
  readonly platform: string;
}

export function machine(): Machine {
  const c = cpus();
  return {
    cpu: c[0]?.model.trim() ?? "unknown",
    cores: c.length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
  };
}

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** Runs one workload and returns its result (also printed and written to bench/results/). */
export async function runWorkload(workload: Workload, settings: { scale: number; storeUrl: string | undefined; command: string }): Promise<WorkloadResult> {
  const rows: Row[] = [];
  const notes: string[] = [];
  const dirs: string[] = [];
  const stores: KvStore[] = [];
  const ctx: BenchContext = {
    scale: settings.scale,
    storeUrl: settings.storeUrl,
    tmpDir() {
      const d = mkdtempSync(join(tmpdir(), `flowstore-bench-${workload.name}-`));
      dirs.push(d);
      return d;
    },
    async openStore() {
      const kv = await openKv(settings.storeUrl ?? `lmdb:${ctx.tmpDir()}`);
      stores.push(kv);
      return kv;
    },
    async measure(name, o) {
      const rounds = o.rounds ?? 5;
      for (let i = 0; i < (o.warmup ?? 1); i++) await o.round();
      const samples: number[] = [];
      for (let i = 0; i < rounds; i++) {
        const t0 = performance.now();
        await o.round();
        samples.push((o.ops / (performance.now() - t0)) * 1000);
      }
      const opsPerSec = median(samples);
      const ref = o.reference ? rows.find((r) => r.name === o.reference) : undefined;
      if (o.reference && !ref) throw new Error(`reference row ${o.reference} not measured yet`);
      const row: Row = {
        name,
        opsPerSec,
        rounds: samples,
        ...(ref ? { reference: ref.name, costRatio: ref.opsPerSec / opsPerSec } : {}),
        ...(o.goal ? { goal: o.goal } : {}),
        ...(o.note ? { note: o.note } : {}),
        ...(o.goals ? { goals: o.goals(opsPerSec) } : {}),
      };
      rows.push(row);
      process.stdout.write(`  ${name}: ${fmt(opsPerSec)} ops/s${row.costRatio ? ` (cost ${row.costRatio.toFixed(2)}× ${ref!.name})` : ""}\n`);
      return row;
    },
    async compare(o) {
      const pairs = o.rounds ?? 11;
      for (let i = 0; i < (o.warmup ?? 1); i++) {
        await o.reference.round();
        await o.subject.round();
      }
      const timed = async (side: Side) => {
        const t0 = performance.now();
        await side.round();
        return (o.ops / (performance.now() - t0)) * 1000;
      };
      const ref: number[] = [];
      const sub: number[] = [];
      for (let i = 0; i < pairs; i++) {
        if (i % 2 === 0) {
          ref.push(await timed(o.reference));
          sub.push(await timed(o.subject));
        } else {
          sub.push(await timed(o.subject));
          ref.push(await timed(o.reference));
        }
      }
      const refRow: Row = { name: o.reference.name, opsPerSec: median(ref), rounds: ref };
      const row: Row = {
        name: o.subject.name,
        opsPerSec: median(sub),
        rounds: sub,
        reference: o.reference.name,
        costRatio: median(ref.map((r, i) => r / sub[i]!)),
        ...(o.goal ? { goal: o.goal } : {}),
        ...(o.note ? { note: o.note } : {}),
      };
      rows.push(refRow, row);
      process.stdout.write(`  ${refRow.name}: ${fmt(refRow.opsPerSec)} ops/s\n`);
      process.stdout.write(`  ${row.name}: ${fmt(row.opsPerSec)} ops/s (cost ${row.costRatio!.toFixed(2)}× ${refRow.name})\n`);
      return row;
    },
    async compareAll(o) {
      const sides = [o.reference, ...o.subjects];
      const target = o.targetMs ?? 150;
      const counts: number[] = [];
      for (const side of sides) {
        // calibrate: time growing batches until one takes a tenth of the target, then scale up
        let n = 1;
        for (;;) {
          const t0 = performance.now();
          await side.run(n);
          const ms = performance.now() - t0;
          const cap = side.maxOps ?? 100_000;
          if (ms >= target / 10 || n >= cap) {
            counts.push(Math.max(1, Math.min(cap, Math.round((n * target) / Math.max(ms, 0.001)))));
            break;
          }
          n = Math.min(cap, n * 10);
        }
      }
      const samples: number[][] = sides.map(() => []);
      const rounds = o.rounds ?? 5;
      for (let r = 0; r < rounds; r++) {
        for (let k = 0; k < sides.length; k++) {
          const i = (k + r) % sides.length;
          const t0 = performance.now();
          await sides[i]!.run(counts[i]!);
          samples[i]!.push((counts[i]! / (performance.now() - t0)) * 1000);
        }
      }
      const ref: Row = { name: o.reference.name, opsPerSec: median(samples[0]!), rounds: samples[0]! };
      rows.push(ref);
      process.stdout.write(`  ${ref.name}: ${fmt(ref.opsPerSec)} ops/s\n`);
      const out: Row[] = [ref];
      o.subjects.forEach((side, j) => {
        const mine = samples[j + 1]!;
        const row: Row = {
          name: side.name,
          opsPerSec: median(mine),
          rounds: mine,
          reference: ref.name,
          costRatio: median(samples[0]!.map((x, r) => x / mine[r]!)),
          ...(o.goal ? { goal: o.goal } : {}),
          ...(o.note ? { note: o.note } : {}),
        };
        rows.push(row);
        out.push(row);
        process.stdout.write(`  ${row.name}: ${fmt(row.opsPerSec)} ops/s (cost ${row.costRatio!.toFixed(2)}× ${ref.name})\n`);
      });
      if (o.goals) {
        const judged: Row = { ...ref, goals: o.goals(out) };
        rows[rows.indexOf(ref)] = judged;
        out[0] = judged;
        process.stdout.write(`  ${ref.name}: ${goalsText(judged.goals!)}\n`);
      }
      return out;
    },
    record(row) {
      const ref = row.reference ? rows.find((r) => r.name === row.reference) : undefined;
      const out: Row = ref && row.costRatio === undefined ? { ...row, costRatio: ref.opsPerSec / row.opsPerSec } : row;
      rows.push(out);
      process.stdout.write(
        `  ${out.name}: ${fmt(out.opsPerSec)} ops/s${out.costRatio ? ` (cost ${out.costRatio.toFixed(2)}× ${out.reference})` : ""}${out.note ? ` — ${out.note}` : ""}${out.goals ? ` — ${goalsText(out.goals)}` : ""}\n`,
      );
      return out;
    },
    skip(name, reason, reference) {
      rows.push({ name, opsPerSec: 0, rounds: [], skipped: reason, ...(reference ? { reference } : {}) });
      process.stdout.write(`  ${name}: skipped (${reason})\n`);
    },
    note(text) {
      notes.push(text);
    },
  };
  const loadAtStart = loadavg()[0]!;
  process.stdout.write(`\n## ${workload.name}: ${workload.describe?.(settings.storeUrl) ?? workload.description}\n`);
  try {
    await workload.run(ctx);
  } finally {
    for (const kv of stores) await kv.close().catch(() => {});
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
  const result: WorkloadResult = {
    workload: resultName(workload.name, settings.storeUrl),
    description: workload.describe?.(settings.storeUrl) ?? workload.description,
    command: settings.command,
    date: new Date().toISOString(),
    scale: settings.scale,
    store: settings.storeUrl ?? "lmdb (fresh temporary directory)",
    machine: machine(),
    rows,
    notes,
    load: [Math.round(loadAtStart * 100) / 100, Math.round(loadavg()[0]! * 100) / 100],
  };
  process.stdout.write("\n" + table(result) + "\n");
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(join(RESULTS_DIR, `${result.workload}.json`), JSON.stringify(result, null, 2) + "\n");
  return result;
}

export function fmt(n: number): string {
  if (n >= 100) return Math.round(n).toLocaleString("en-US");
  return n.toPrecision(3);
}

/** The Markdown table of a result. */
export function table(result: WorkloadResult): string {
  const lines = ["| operation | ops/s (median) | compared with | cost ratio | goal |", "|---|---:|---|---:|---:|"];
  for (const r of result.rows) {
    if (r.skipped) {
      lines.push(`| ${r.name} | skipped: ${r.skipped} | ${r.reference ?? ""} |  | |`);
      continue;
    }
    // A row that answered nothing has an infinite ratio, which its results file holds as null (JSON has no Infinity).
    const cost = r.costRatio === undefined ? undefined : (r.costRatio ?? Number.POSITIVE_INFINITY);
    const ratio = cost === undefined ? "" : Number.isFinite(cost) ? `${cost.toFixed(2)}×` : "∞";
    const verdict = r.goals ? ` ${goalsText(r.goals)}` : r.goal === undefined || cost === undefined ? "" : cost <= r.goal ? ` ≤ ${r.goal}× ✓` : ` ≤ ${r.goal}× ✗`;
    lines.push(`| ${r.name}${r.note ? ` (${r.note})` : ""} | ${fmt(r.opsPerSec)} | ${r.reference ?? ""} | ${ratio} |${verdict} |`);
  }
  return lines.join("\n");
}
