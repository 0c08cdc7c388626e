/**
 * One side of `npm run bench:compare`: runs workloads of the checkout at `--tree` with that checkout's own
 * harness, workloads and servers (so an older commit is measured with its own code), and writes the
 * results as JSON to `--out`. Started by bench/compare.ts in a process of its own, never by hand.
 *
 * It relies only on what every commit since the bench harness gained goals has: bench/harness.ts's
 * runWorkload, bench/servers.ts's startBenchServers and bench/workloads/index.ts's workloads.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { tree: { type: "string" }, out: { type: "string" }, scale: { type: "string", default: "small" } },
});
if (!values.tree || !values.out || positionals.length === 0) {
  process.stderr.write("usage: compare-child.ts --tree DIR --out FILE [--scale S] WORKLOAD...\n");
  process.exit(2);
}
const tree = values.tree;
const load = (path: string) => import(pathToFileURL(join(tree, path)).href);
const [{ runWorkload }, { startBenchServers }, { workloads }] = await Promise.all([load("bench/harness.ts"), load("bench/servers.ts"), load("bench/workloads/index.ts")]);
const scale = values.scale === "small" ? 1 : values.scale === "large" ? 5 : Number(values.scale);
const results: unknown[] = [];
const servers = await startBenchServers(undefined);
try {
  for (const name of positionals) {
    const w = (workloads as { name: string }[]).find((x) => x.name === name);
    if (!w) throw new Error(`${tree} has no workload ${name}`);
    results.push(await runWorkload(w, { scale, storeUrl: undefined, command: `bench:compare ${name}` }));
  }
} finally {
  await servers.stop();
}
writeFileSync(values.out, JSON.stringify(results));
