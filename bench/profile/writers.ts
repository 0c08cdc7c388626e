/**
 * A profiling driver (not a benchmark): 50 writers creating workflowitems in one partition through the
 * Workflow commands on a fresh LMDB directory (the resources row "create workflowitem, 50 writers"), with
 * the group sizes the writer committed. node:inspector profiles the load only.
 *   npx tsx bench/profile/writers.ts [rounds] [out.cpuprofile]
 */
import { Session } from "node:inspector/promises";
import { rmSync, writeFileSync } from "node:fs";
import { itemData, MARY } from "../tree.js";
import { freshSubproject } from "./fresh.js";

const WRITERS = 50;
const rounds = Number(process.argv[2] ?? 20);
const { dir, kv, fs } = await freshSubproject("fs-prof-");
const groups: number[] = [];
fs.wf.store.writer.onGroupCommit((n) => groups.push(n));
let n = 0;
const create = () => fs.wf.createWorkflowitem(MARY, "p1", "w", { ...itemData(n % 1000, "EUR"), id: `c-${n++}` });
const session = new Session();
session.connect();
await session.post("Profiler.enable");
await session.post("Profiler.start");
const t0 = performance.now();
for (let r = 0; r < rounds; r++) await Promise.all(Array.from({ length: WRITERS }, async () => create()));
const sec = (performance.now() - t0) / 1000;
const { profile } = await session.post("Profiler.stop");
writeFileSync(process.argv[3] ?? "/tmp/writers.cpuprofile", JSON.stringify(profile));
const sizes = groups.slice().sort((a, b) => a - b);
process.stdout.write(`${n} creates in ${sec.toFixed(2)} s = ${(n / sec).toFixed(0)}/s; ${groups.length} groups, median size ${sizes[sizes.length >> 1]}\n`);
await kv.close();
rmSync(dir, { recursive: true, force: true });
