/**
 * Prints the top self-time frames of a V8 .cpuprofile (node --cpu-prof), and the top frames by total time
 * under src/: usage `tsx bench/profile/top.ts <file.cpuprofile> [n]`.
 */
import { readFileSync } from "node:fs";

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
  hitCount?: number;
}
const profile = JSON.parse(readFileSync(process.argv[2]!, "utf8")) as { nodes: Node[]; samples: number[]; timeDeltas: number[] };
const n = Number(process.argv[3] ?? 30);
const byId = new Map(profile.nodes.map((x) => [x.id, x]));
const self = new Map<number, number>();
for (let i = 0; i < profile.samples.length; i++) self.set(profile.samples[i]!, (self.get(profile.samples[i]!) ?? 0) + (profile.timeDeltas[i] ?? 0));
const name = (x: Node) => `${x.callFrame.functionName || "(anon)"} ${x.callFrame.url.replace(/^.*\/(node_modules|src)\//, "$1/")}:${x.callFrame.lineNumber + 1}`;
const total = [...self.values()].reduce((a, b) => a + b, 0);
const selfBy = new Map<string, number>();
for (const [id, t] of self) selfBy.set(name(byId.get(id)!), (selfBy.get(name(byId.get(id)!)) ?? 0) + t);
process.stdout.write(`total ${(total / 1000).toFixed(0)} ms\n-- self time\n`);
for (const [k, t] of [...selfBy].sort((a, b) => b[1] - a[1]).slice(0, n)) process.stdout.write(`${((100 * t) / total).toFixed(1).padStart(5)}%  ${k}\n`);
// inclusive time per src/ frame
const parent = new Map<number, number>();
for (const x of profile.nodes) for (const c of x.children ?? []) parent.set(c, x.id);
const incl = new Map<string, number>();
for (const [id, t] of self) {
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const k = name(byId.get(cur)!);
    if (!k.includes("src/") || seen.has(k)) continue;
    seen.add(k);
    incl.set(k, (incl.get(k) ?? 0) + t);
  }
}
process.stdout.write("-- total time, src/ frames\n");
for (const [k, t] of [...incl].sort((a, b) => b[1] - a[1]).slice(0, n)) process.stdout.write(`${((100 * t) / total).toFixed(1).padStart(5)}%  ${k}\n`);
// self time per file of src/ and per package of node_modules
const byFile = new Map<string, number>();
for (const [id, t] of self) {
  const url = byId.get(id)!.callFrame.url;
  const k = url.includes("/node_modules/")
    ? `pkg ${url.split("/node_modules/").at(-1)!.split("/")[0]}`
    : url.includes("/src/")
      ? `src/${url.split("/src/").at(-1)}`
      : url.startsWith("node:")
        ? "node internals"
        : "(native / vm)";
  byFile.set(k, (byFile.get(k) ?? 0) + t);
}
process.stdout.write("-- self time per file / package\n");
for (const [k, t] of [...byFile].sort((a, b) => b[1] - a[1]).slice(0, n)) process.stdout.write(`${((100 * t) / total).toFixed(1).padStart(5)}%  ${k}\n`);
