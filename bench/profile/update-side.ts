/**
 * One side of bench/profile/update.ts, in a process of its own (forked by it): `fs` (Workflow.update of
 * one workflowitem on a fresh LMDB directory), `mem` (the same update on the memory backend: flowstore's
 * own JavaScript, no storage) or `raw` (the raw lmdb peer's write of the record and a history entry,
 * then `flushed`), each run from the checkout given (its src and bench). Told `{ n }` over IPC, it makes
 * n writes and answers its writes/s and its CPU time per write: the process's (user + system, every
 * thread) and the part of it on the main (JavaScript) thread, read from /proc (Linux; 0 elsewhere).
 *   (forked) update-side.ts fs|mem|raw ROOT
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const side = process.argv[2]!;
const root = process.argv[3]!;
const from = <T>(path: string): Promise<T> => import(join(root, path)) as Promise<T>;
const { LmdbKv } = await from<typeof import("../../src/kv/lmdb.js")>("src/kv/lmdb.ts");
const { MemoryKv } = await from<typeof import("../../src/kv/memory.js")>("src/kv/memory.ts");
const { workflowitemRef } = await from<typeof import("../../src/workflow/commands.js")>("src/workflow/commands.ts");
const { FlowstorePeer } = await from<typeof import("../peers/flowstore.js")>("bench/peers/flowstore.ts");
const { durably, openDb } = await from<typeof import("../peers/lmdb-streams.js")>("bench/peers/lmdb-streams.ts");
const { MARY, subproject } = await from<typeof import("../tree.js")>("bench/tree.ts");

const dirs: string[] = [];
const fresh = (name: string) => {
  const d = mkdtempSync(join(tmpdir(), name));
  dirs.push(d);
  return d;
};
const kv = side === "mem" ? new MemoryKv() : LmdbKv.open(fresh("fs-update-"));
const fs = new FlowstorePeer(kv);
const s = subproject("s", 100);
await fs.load({ projects: [{ id: "p1", subprojects: [s] }], updates: [] });
const ref = workflowitemRef("p1", "s", s.items[1]!.id);
let rev = 0;
let write: () => Promise<unknown> = () => fs.wf.update(MARY, ref, { description: `Changed ${rev++}.` });
const db = side === "raw" ? openDb(fresh("fs-update-raw-")) : undefined;
if (db) {
  const item = await fs.getItem("p1", "s", s.items[1]!.id);
  write = () =>
    durably(db, () => {
      // as the raw peer's update: read the item, change its description, write it and a history entry
      const key = `p1\0i\0s\0${s.items[1]!.id}`;
      const current = JSON.parse((db.get(key) ?? item).toString("utf8")) as { data: { description: string } };
      current.data.description = `Changed ${rev++}.`;
      db.putSync(key, Buffer.from(JSON.stringify(current)));
      db.putSync(`p1\0h\0s\0${rev}`, Buffer.from(JSON.stringify({ seq: rev, type: "workflowitem.updated", data: { description: current.data.description } })));
    });
}

/** CPU time of the main thread in µs (its /proc stat: clock ticks of 10 ms, so read over whole rounds). */
function mainThreadMicros(): number {
  try {
    if (!readdirSync("/proc/self/task").includes(String(process.pid))) return 0;
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) * 10_000;
  } catch {
    return 0;
  }
}

process.on("message", (m: { n: number } | "stop") => {
  void (async () => {
    if (m === "stop") {
      await kv.close();
      await db?.close();
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
      process.exit(0);
    }
    const main0 = mainThreadMicros();
    const cpu = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < m.n; i++) await write();
    const used = process.cpuUsage(cpu);
    const wall = performance.now() - t0;
    const main = (mainThreadMicros() - main0) / m.n;
    const total = (used.user + used.system) / m.n;
    process.send!({ ops: m.n / (wall / 1000), cpu: total, main, other: total - main });
  })();
});
process.send!("ready");
