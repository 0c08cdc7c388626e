/**
 * One durable update against the raw write the workflow row compares it with (not a benchmark row):
 * sequential `Workflow.update`s of one workflowitem on a fresh LMDB directory (side `fs`), the raw lmdb
 * peer's write (one lmdb-js transaction of the record and a history entry, then `flushed`; side `raw`)
 * and, with `--mem`, the same update on the memory backend (flowstore's own JavaScript with no storage),
 * each side in a process of its own (bench/profile/update-side.ts), alternating round by round (the
 * order turned each round). With `--root DIR` (a worktree of main at the base commit) the `fs` side of
 * that checkout runs too, in the same rounds: an A/B in one run. Prints each side's writes/s and CPU time
 * per write, medians of the rounds: the process's (user + system, every thread: the lmdb-js write thread,
 * the kernel's page writes and syncs, V8's compiler and GC threads) and the main thread's part. Wall-clock
 * writes/s is noisy on a shared machine; the CPU figures much less. Run it under
 * `strace -f -c -e trace=fdatasync,pwrite64` (one side) to count syncs and page writes.
 *   npx tsx bench/profile/update.ts [writes per round] [rounds] [fs|raw|both] [--mem] [--root DIR]
 */
import { fork, type ChildProcess } from "node:child_process";
import { resolve } from "node:path";
import { parseArgs } from "node:util";

const { values, positionals } = parseArgs({ allowPositionals: true, options: { root: { type: "string", multiple: true }, mem: { type: "boolean" } } });
const n = Number(positionals[0] ?? 500);
const rounds = Number(positionals[1] ?? 5);
const only = positionals[2] ?? "both";
const here = resolve(import.meta.dirname, "../..");
const sides: { label: string; side: string; root: string }[] = [];
if (only !== "raw") sides.push({ label: "flowstore update", side: "fs", root: here });
for (const r of values.root ?? []) sides.push({ label: `flowstore ${r}`, side: "fs", root: resolve(r) });
if (values.mem) sides.push({ label: "memory update", side: "mem", root: here });
if (only !== "fs") sides.push({ label: "raw lmdb write", side: "raw", root: here });

interface Round {
  ops: number;
  cpu: number;
  main: number;
  other: number;
}
const start = (s: (typeof sides)[number]): Promise<ChildProcess> => {
  const child = fork(resolve(import.meta.dirname, "update-side.ts"), [s.side, s.root], { cwd: s.root, execArgv: ["--import", "tsx"] });
  return new Promise((ok, fail) => {
    child.once("message", () => ok(child));
    child.once("exit", (code) => fail(new Error(`${s.label}: exited (${code})`)));
  });
};
const children = await Promise.all(sides.map(start));
const seen: Round[][] = sides.map(() => []);
for (let r = 0; r < rounds; r++) {
  const order = [...sides.keys()];
  if (r % 2 === 1) order.reverse();
  for (const i of order) {
    const child = children[i]!;
    seen[i]!.push(await new Promise<Round>((ok) => (child.once("message", (m) => ok(m as Round)), child.send({ n }))));
  }
}
const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[xs.length >> 1]!;
const width = Math.max(...sides.map((s) => s.label.length));
for (const [i, s] of sides.entries()) {
  const x = seen[i]!;
  const m = (k: keyof Round) => median(x.map((r) => r[k]));
  process.stdout.write(
    `${s.label.padEnd(width)} ${m("ops").toFixed(0).padStart(6)}/s  CPU ${m("cpu").toFixed(0).padStart(5)} µs/write (main thread ${m("main").toFixed(0).padStart(5)}, other threads ${m("other").toFixed(0).padStart(5)})\n`,
  );
}
process.stdout.write(
  `rounds ${rounds} of ${n} writes; load average ${(await import("node:os"))
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")}\n`,
);
for (const child of children) child.send("stop");
