/**
 * A profiling driver (not a benchmark) of the workflow workload's "history of 1,001 events" row: the same
 * item (created, then updated 1,000 times) in flowstore on a fresh LMDB directory and in the SQLite peer,
 * each read whole N times in this process, alternating; prints the CPU time per history of each and
 * their ratio. node:inspector profiles flowstore's reads only.
 *   npx tsx bench/profile/history.ts [reads] [out.cpuprofile]
 */
import { Session } from "node:inspector/promises";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { FlowstorePeer } from "../peers/flowstore.js";
import { SqlitePeer } from "../peers/sqlite.js";
import type { Peer } from "../peers/peer.js";
import { itemId, subproject, type Tree } from "../tree.js";

const reads = Number(process.argv[2] ?? 200);
const dir = mkdtempSync(join(tmpdir(), "fs-prof-"));
const W = itemId(0);
const tree: Tree = {
  projects: [{ id: "p1", subprojects: [subproject("s1k", 1_000, "EUR", 100)] }],
  updates: Array.from({ length: 1_000 }, (_, i) => ({ p: "p1", s: "s1k", w: W, patch: { description: `Revision ${i + 1}.` } })),
};
const fs = new FlowstorePeer(LmdbKv.open(join(dir, "lmdb")));
const sq = new SqlitePeer(mkdtempSync(join(dir, "sqlite-")));
await fs.load(tree);
await sq.load(tree);
const cpu = async (peer: Peer, n: number): Promise<number> => {
  const before = process.cpuUsage();
  for (let i = 0; i < n; i++) if ((await peer.history("p1", "s1k", W)).count !== 1001) throw new Error(`${peer.name}: not 1,001 events`);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / n;
};
await cpu(fs, 50);
await cpu(sq, 50);
const per = { fs: [] as number[], sq: [] as number[] };
for (let r = 0; r < 3; r++) {
  per.sq.push(await cpu(sq, reads));
  per.fs.push(await cpu(fs, reads));
}
const session = new Session();
session.connect();
await session.post("Profiler.enable");
await session.post("Profiler.start");
await cpu(fs, reads);
const { profile } = await session.post("Profiler.stop");
writeFileSync(process.argv[3] ?? "/tmp/history.cpuprofile", JSON.stringify(profile));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[1]!;
process.stdout.write(
  `history of 1,001 events, CPU per read (median of 3 × ${reads}): SQLite ${median(per.sq).toFixed(2)} ms, flowstore ${median(per.fs).toFixed(2)} ms: flowstore ${(median(per.sq) / median(per.fs)).toFixed(2)}× SQLite\n`,
);
await fs.close();
await sq.close();
rmSync(dir, { recursive: true, force: true });
