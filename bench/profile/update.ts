/**
 * One durable update against the raw write the workflow row compares it with (not a benchmark row):
 * sequential `Workflow.update`s of one workflowitem on a fresh LMDB directory, alternating round by round
 * with the raw lmdb peer's write (one lmdb-js transaction of the record and a history entry, then
 * `flushed`) on a second one. Prints each side's writes/s and process CPU time per write (user + system,
 * every thread): the two differ by about as much as the CPU does, so the update's gap is CPU on its
 * critical path. Run it under `strace -f -c -e trace=fdatasync,pwrite64` to count syncs and page writes.
 *   npx tsx bench/profile/update.ts [writes per round] [rounds] [fs|raw|both]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { workflowitemRef } from "../../src/workflow/commands.js";
import { FlowstorePeer } from "../peers/flowstore.js";
import { durably, openDb } from "../peers/lmdb-streams.js";
import { MARY, subproject } from "../tree.js";

const n = Number(process.argv[2] ?? 500);
const rounds = Number(process.argv[3] ?? 5);
const only = process.argv[4] ?? "both";
const dir = mkdtempSync(join(tmpdir(), "fs-update-"));
const kv = LmdbKv.open(dir);
const fs = new FlowstorePeer(kv);
const s = subproject("s", 100);
await fs.load({ projects: [{ id: "p1", subprojects: [s] }], updates: [] });
const ref = workflowitemRef("p1", "s", s.items[1]!.id);
const rawDir = mkdtempSync(join(tmpdir(), "fs-update-raw-"));
const db = openDb(rawDir);
const item = await fs.getItem("p1", "s", s.items[1]!.id);
let rev = 0;
const sides: [string, () => Promise<unknown>][] = [
  ["flowstore update", () => fs.wf.update(MARY, ref, { description: `Changed ${rev++}.` })],
  [
    "raw lmdb write",
    () =>
      durably(db, () => {
        // as the raw peer's update: read the item, change its description, write it and a history entry
        const key = `p1\0i\0s\0${s.items[1]!.id}`;
        const current = JSON.parse((db.get(key) ?? item).toString("utf8")) as { data: { description: string } };
        current.data.description = `Changed ${rev++}.`;
        db.putSync(key, Buffer.from(JSON.stringify(current)));
        db.putSync(`p1\0h\0s\0${rev}`, Buffer.from(JSON.stringify({ seq: rev, type: "workflowitem.updated", data: { description: current.data.description } })));
      }),
  ],
];
const seen = new Map<string, { ops: number[]; cpu: number[] }>();
for (let r = 0; r < rounds; r++) {
  for (const [name, write] of sides) {
    if (only !== "both" && !name.startsWith(only === "fs" ? "flowstore" : "raw")) continue;
    const cpu = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await write();
    const used = process.cpuUsage(cpu);
    const x = seen.get(name) ?? { ops: [], cpu: [] };
    seen.set(name, x);
    x.ops.push(n / ((performance.now() - t0) / 1000));
    x.cpu.push((used.user + used.system) / n);
  }
}
const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[xs.length >> 1]!;
for (const [name, x] of seen) process.stdout.write(`${name.padEnd(17)} ${median(x.ops).toFixed(0).padStart(6)}/s  CPU ${median(x.cpu).toFixed(0).padStart(4)} µs/write\n`);
await kv.close();
await db.close();
rmSync(dir, { recursive: true, force: true });
rmSync(rawDir, { recursive: true, force: true });
