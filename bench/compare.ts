/**
 * The regression gate: runs the same benchmark workloads on two commits in one run and prints, row by
 * row, how fast the head is against the base.
 *
 *   npm run bench:compare -- <base-ref>                      http, workflow and resources; head = HEAD
 *   npm run bench:compare -- <base-ref> --head <ref>         another head
 *   npm run bench:compare -- <base-ref> --workloads kv,verify --repeat 2 --out compare.md
 *   npm run bench:compare -- <base-ref> --fail-below 0.85    exit 1 when a row's speed falls under 0.85×
 *
 * Each commit is checked out into a temporary worktree (so both are measured from committed code, and an
 * older commit with its own harness and workloads: bench/compare-child.ts). The worktrees share this
 * checkout's node_modules when their package-lock.json is the same, and run `npm ci` otherwise. The sides
 * alternate (base then head, then head then base, …) workload by workload, so both see the same machine.
 *
 * A row's speed ratio is the head's ops/s over the base's (medians over the repetitions): above 1 the head
 * is faster. Rows that compare with a peer in their own run (the SQLite peer, a raw put) also show that
 * cost ratio on each side, which does not depend on how loaded the machine was. Nothing is written to
 * bench/results or BENCHMARKS.md.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { fmt, type Row, type WorkloadResult } from "./harness.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const USAGE = "usage: npm run bench:compare -- <base-ref> [--head <ref>] [--workloads http,workflow,resources] [--repeat N] [--scale S] [--out FILE] [--fail-below R]\n";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    head: { type: "string", default: "HEAD" },
    workloads: { type: "string", default: "http,workflow,resources" },
    repeat: { type: "string", default: "1" },
    scale: { type: "string", default: "small" },
    out: { type: "string" },
    "fail-below": { type: "string" },
    help: { type: "boolean", short: "h" },
  },
});
if (values.help || positionals.length !== 1) {
  process.stderr.write(USAGE);
  process.exit(values.help ? 0 : 2);
}
const repeat = Number(values.repeat);
const failBelow = values["fail-below"] === undefined ? undefined : Number(values["fail-below"]);
if (!Number.isInteger(repeat) || repeat < 1 || (failBelow !== undefined && !(failBelow > 0))) {
  process.stderr.write(`--repeat takes a whole number ≥ 1 and --fail-below a ratio > 0\n${USAGE}`);
  process.exit(2);
}
const names = values.workloads.split(",").filter(Boolean);

const git = (...args: string[]) => execFileSync("git", args, { cwd: ROOT, encoding: "utf8" }).trim();
function commitOf(ref: string): string {
  try {
    return git("rev-parse", "--verify", `${ref}^{commit}`);
  } catch {
    process.stderr.write(`not a commit: ${ref}\n`);
    process.exit(2);
  }
}

interface Side {
  readonly label: "base" | "head";
  readonly ref: string;
  readonly commit: string;
  readonly dir: string;
  readonly results: WorkloadResult[][];
}

const scratch = mkdtempSync(join(tmpdir(), "flowstore-bench-compare-"));
const sides: Side[] = [
  { label: "base", ref: positionals[0]!, commit: commitOf(positionals[0]!), dir: join(scratch, "base"), results: [] },
  { label: "head", ref: values.head, commit: commitOf(values.head), dir: join(scratch, "head"), results: [] },
];

/** Checks a side out and gives it node_modules: this checkout's when the lock file is the same, else its own. */
function prepare(side: Side): void {
  git("worktree", "add", "--detach", side.dir, side.commit);
  const lock = (dir: string) => readFileSync(join(dir, "package-lock.json"), "utf8");
  if (existsSync(join(ROOT, "node_modules")) && lock(side.dir) === lock(ROOT)) {
    symlinkSync(join(ROOT, "node_modules"), join(side.dir, "node_modules"));
  } else {
    process.stdout.write(`${side.label} (${side.ref}) has other dependencies: npm ci in its worktree\n`);
    execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: side.dir, stdio: "inherit" });
  }
  // The benchmark peers (better-sqlite3, autocannon) are bench/'s own package since the quick start left them out.
  const benchLock = (dir: string) => (existsSync(join(dir, "bench", "package-lock.json")) ? readFileSync(join(dir, "bench", "package-lock.json"), "utf8") : undefined);
  if (benchLock(side.dir) === undefined) return;
  if (existsSync(join(ROOT, "bench", "node_modules")) && benchLock(side.dir) === benchLock(ROOT)) {
    symlinkSync(join(ROOT, "bench", "node_modules"), join(side.dir, "bench", "node_modules"));
  } else {
    execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: join(side.dir, "bench"), stdio: "inherit" });
  }
}

/** Runs the side's workloads in a process of its own with its own code; resolves with their results. */
function run(side: Side, workload: string, round: number): Promise<WorkloadResult> {
  const out = join(scratch, `${side.label}-${workload}-${round}.json`);
  const args = ["--import", "tsx", join(ROOT, "bench", "compare-child.ts"), "--tree", side.dir, "--out", out];
  process.stdout.write(`\n== ${side.label} (${side.ref}, ${side.commit.slice(0, 9)}): ${workload}, round ${round + 1} of ${repeat}\n`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...args, "--scale", values.scale, workload], { cwd: side.dir, stdio: "inherit" });
    child.once("error", reject);
    child.once("exit", (code) => {
      if (code !== 0) return reject(new Error(`${side.label} ${workload} exited ${code}`));
      resolve((JSON.parse(readFileSync(out, "utf8")) as WorkloadResult[])[0]!);
    });
  });
}

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** Each measured row of a workload, by name, over the repetitions of one side. */
function rowsOf(side: Side, workload: string): Map<string, Row[]> {
  const byName = new Map<string, Row[]>();
  for (const round of side.results) {
    for (const row of round.find((r) => r.workload === workload)?.rows ?? []) {
      if (row.skipped || !(row.opsPerSec > 0)) continue;
      byName.set(row.name, [...(byName.get(row.name) ?? []), row]);
    }
  }
  return byName;
}

const ratio = (rows: Row[] | undefined) => {
  const rs = rows?.map((r) => r.costRatio).filter((c): c is number => c !== undefined) ?? [];
  return rs.length ? `${median(rs).toFixed(2)}×` : "";
};

const loadAtStart = loadavg()[0]!;
let slower = 0;
try {
  for (const side of sides) prepare(side);
  for (let round = 0; round < repeat; round++) {
    for (const side of sides) side.results.push([]);
    for (const workload of names) {
      for (const side of round % 2 === 0 ? sides : [...sides].reverse()) side.results[round]!.push(await run(side, workload, round));
    }
  }
  const [base, head] = sides as [Side, Side];
  const lines = [
    `bench:compare · base ${base.ref} (${base.commit.slice(0, 9)}) · head ${head.ref} (${head.commit.slice(0, 9)}) · scale ${values.scale} · ${repeat} round(s) · load ${loadAtStart.toFixed(2)} → ${loadavg()[0]!.toFixed(2)}`,
    "",
    "| workload | row | base ops/s | head ops/s | speed head/base | cost ratio base → head |",
    "|---|---|---:|---:|---:|---|",
  ];
  for (const workload of names) {
    const b = rowsOf(base, workload);
    const h = rowsOf(head, workload);
    for (const [name, hRows] of h) {
      const bRows = b.get(name);
      const hOps = median(hRows.map((r) => r.opsPerSec));
      if (!bRows) {
        lines.push(`| ${workload} | ${name} | (new) | ${fmt(hOps)} |  |  ${ratio(hRows)} |`);
        continue;
      }
      const bOps = median(bRows.map((r) => r.opsPerSec));
      const speed = hOps / bOps;
      const flag = failBelow !== undefined && speed < failBelow ? " ✗" : "";
      if (flag) slower++;
      const costs = ratio(bRows) || ratio(hRows) ? `${ratio(bRows) || "–"} → ${ratio(hRows) || "–"}` : "";
      lines.push(`| ${workload} | ${name} | ${fmt(bOps)} | ${fmt(hOps)} | ${speed.toFixed(2)}×${flag} | ${costs} |`);
    }
    for (const name of b.keys()) if (!h.has(name)) lines.push(`| ${workload} | ${name} | ${fmt(median(b.get(name)!.map((r) => r.opsPerSec)))} | (gone) |  |  |`);
  }
  if (failBelow !== undefined) lines.push("", `${slower} row(s) below ${failBelow}× the base.`);
  const report = lines.join("\n") + "\n";
  process.stdout.write(`\n${report}`);
  if (values.out) writeFileSync(values.out, report);
} finally {
  for (const side of sides) {
    try {
      git("worktree", "remove", "--force", side.dir);
    } catch {
      // not created (a failed checkout); nothing to remove
    }
  }
  rmSync(scratch, { recursive: true, force: true });
}
process.exit(slower > 0 ? 1 : 0);
