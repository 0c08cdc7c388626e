/**
 * Runs benchmark workloads and regenerates BENCHMARKS.md.
 *
 *   npm run bench                      every workload
 *   npm run bench -- kv                one (or several) by name
 *   npm run bench -- kv --scale large  op counts ×5 (small = ×1, or a number)
 *   npm run bench -- kv --store lmdb:/tmp/x   the store under test (default: a fresh LMDB directory)
 *   npm run bench -- kv --store redis          start a redis-server for the run (or redis://host:port)
 *   npm run bench -- kv --store redis-cluster  start a 3+3 cluster for the run (or redis-cluster://h:p,…)
 *   npm run bench -- kv --store postgres       start a throwaway PostgreSQL cluster for the run (or postgres://…)
 *
 * The PostgreSQL peer runs on PG_URL, or on a throwaway cluster started for the run (bench/servers.ts).
 */
import { parseArgs } from "node:util";
import { runWorkload } from "./harness.js";
import { startBenchServers } from "./servers.js";
import { writeReport } from "./report.js";
import { workloads } from "./workloads/index.js";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { scale: { type: "string", default: "small" }, store: { type: "string" }, help: { type: "boolean", short: "h" } },
});

if (values.help) {
  process.stdout.write(`usage: npm run bench -- [workload...] [--scale small|large|<number>] [--store <url>]\nworkloads: ${workloads.map((w) => w.name).join(", ")}\n`);
  process.exit(0);
}

const scaleArg = values.scale ?? "small";
const scale = scaleArg === "small" ? 1 : scaleArg === "large" ? 5 : Number(scaleArg);
if (!Number.isFinite(scale) || scale <= 0) {
  process.stderr.write(`--scale must be small, large or a positive number, not ${scaleArg}\n`);
  process.exit(2);
}
const unknown = positionals.filter((p) => !workloads.some((w) => w.name === p));
if (unknown.length > 0) {
  process.stderr.write(`unknown workload(s) ${unknown.join(", ")}; known: ${workloads.map((w) => w.name).join(", ")}\n`);
  process.exit(2);
}
const chosen = positionals.length > 0 ? workloads.filter((w) => positionals.includes(w.name)) : workloads;

/** On PostgreSQL each workload writes into a schema of its own (unless the URL names one): the workloads build the same ids. */
function ownSchema(url: string | undefined, workload: string): string | undefined {
  if (!url || !/^postgres(ql)?:/.test(url) || /[?&]schema=/.test(url)) return url;
  return `${url}${url.includes("?") ? "&" : "?"}schema=bench_${workload}_${Date.now()}`;
}

const servers = await startBenchServers(values.store);
try {
  for (const w of chosen) {
    const command = ["npm run bench --", w.name, "--scale", scaleArg, ...(values.store ? ["--store", values.store] : [])].join(" ");
    await runWorkload(w, { scale, storeUrl: ownSchema(servers.url ?? values.store, w.name), command });
  }
} finally {
  await servers.stop();
}
const file = writeReport();
process.stdout.write(`\nwrote ${file}\n`);
