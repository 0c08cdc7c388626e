/**
 * A profiling driver (not a benchmark) of the verify workload: a project of 20,000 workflowitems (the
 * bench's tree) in an LMDB directory kept between runs (made on the first), then rounds of the full
 * verify, of its floor (every key read, each event parsed and its stored hash checked) and of the verify the
 * issue's digest design would leave (`digestDesign` below), alternating,
 * each round's process CPU time (user + system) and wall time printed as events per CPU-second and per
 * second. `--root DIR` runs the verify of another checkout's src (a worktree of main: base and head in
 * one process, alternating). `--profile FILE` writes a CPU profile (node:inspector) of extra verify rounds.
 *   npx tsx bench/profile/verify.ts [--dir DIR] [--rounds N] [--root DIR]... [--profile FILE]
 */
import { createHash } from "node:crypto";
import { Session } from "node:inspector/promises";
import { existsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { scanAll, scanEach } from "../../src/kv/contract.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { storedHashMatches, tailHash } from "../../src/resources/model/events.js";
import { floorNoParse } from "../workloads/verify.js";
import { FlowstorePeer } from "../peers/flowstore.js";
import { subproject } from "../tree.js";

const { values } = parseArgs({
  options: {
    dir: { type: "string", default: join(tmpdir(), "flowstore-verify-profile") },
    rounds: { type: "string", default: "5" },
    root: { type: "string", multiple: true },
    profile: { type: "string" },
    items: { type: "string", default: "20000" },
  },
});
const partition = ["project", "p1"];
const fresh = !existsSync(join(values.dir, "data.mdb"));
const kv = LmdbKv.open(values.dir, { durable: false });
if (fresh) {
  const t0 = performance.now();
  await new FlowstorePeer(kv).load({ projects: [{ id: "p1", subprojects: [subproject("s1", Number(values.items))] }], updates: [] });
  process.stdout.write(`loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
}

type Verify = () => Promise<{ ok: boolean; checked: number }>;
/** A verify over the src of `root` (this checkout's when undefined), on the same LMDB store. */
async function verifierOf(root: string | undefined): Promise<Verify> {
  const src = root ? resolve(root, "src") : resolve(import.meta.dirname, "../../src");
  const { ResourceStore } = (await import(join(src, "resources/store.ts"))) as typeof import("../../src/resources/store.js");
  const { workflowSchema } = (await import(join(src, "workflow/schema.ts"))) as typeof import("../../src/workflow/schema.js");
  const store = new ResourceStore(kv, workflowSchema);
  return () => store.audit.verify(partition);
}

/** The bench's floor as it read before scanViews: every value copied (scanAll). */
const floorCopied: Verify = async () => {
  let n = 0;
  for (const range of [{ prefix: ["l"] }, { end: ["l"] }, { start: ["l\u0000"] }]) {
    for await (const e of scanAll(kv, partition, { ...range, limit: 1024 })) {
      if (range.prefix === undefined) continue;
      const event = JSON.parse(e.value.toString("utf8")) as { hash: string };
      if (!storedHashMatches(e.value, event.hash)) throw new Error("the store's log does not verify");
      n++;
    }
  }
  return { ok: true, checked: n };
};

/** The bench's floor: read as verify reads (scanEach, views). */
const floor: Verify = async () => {
  let n = 0;
  for (const range of [{ prefix: ["l"] }, { end: ["l"] }, { start: ["l\u0000"] }]) {
    await scanEach(kv, partition, { ...range, limit: 1024 }, (_, value) => {
      if (range.prefix === undefined) return;
      const event = JSON.parse(value.toString("utf8")) as { hash: string };
      if (!storedHashMatches(value, event.hash)) throw new Error("the store's log does not verify");
      n++;
    });
  }
  return { ok: true, checked: n };
};

/** The floor of any verify that reads every key once and checks every event's hash, with no parse (the workload's). */
const floorNoParseRound: Verify = async () => ({ ok: true, checked: await floorNoParse(kv, partition) });

/**
 * The verify the digest design would leave (issue 25: the writers keep a digest of each partition's
 * derived keys in the same commits, bound to the chain): the log's chain checked from its bytes (each event's
 * hash read from its stored tail, no parse, no replay) and every derived key folded into an incremental
 * multiset hash to compare with the digest. Such a digest must resist a writer who picks keys to collide: a sum
 * of SHA-256 values (AdHash over 256 bits) does not (Wagner's k-tree algorithm finds a colliding multiset), so
 * this is LtHash16 (Lewi et al., 2019: 1,024 lanes of 16 bits, each key's vector a 2 KiB SHAKE128 output). Its
 * best case: the writer's side (each put's old and new value hashed, in the commit) is not counted.
 */
const lanes = new Uint16Array(1024);
const digestDesign: Verify = async () => {
  let n = 0;
  lanes.fill(0);
  for (const range of [{ prefix: ["l"] }, { end: ["l"] }, { start: ["l\u0000"] }]) {
    await scanEach(kv, partition, { ...range, limit: 1024 }, (key, value) => {
      if (range.prefix !== undefined) {
        if (!storedHashMatches(value, tailHash(value))) throw new Error("the store's log does not verify");
        n++;
        return;
      }
      const v = createHash("shake128", { outputLength: 2048 }).update(key).update(value).digest();
      const add = new Uint16Array(v.buffer, v.byteOffset, 1024);
      for (let i = 0; i < 1024; i++) lanes[i] = lanes[i]! + add[i]!;
    });
  }
  return { ok: true, checked: n };
};

const sides: { name: string; run: Verify }[] = [
  { name: "floor (copies, scanAll)", run: floorCopied },
  { name: "floor (views, scanEach)", run: floor },
  { name: "floor, no parse (read + hash)", run: floorNoParseRound },
  { name: "digest design (LtHash16, no replay)", run: digestDesign },
];
for (const root of values.root ?? []) sides.push({ name: `verify ${root}`, run: await verifierOf(root) });
sides.push({ name: "verify head", run: await verifierOf(undefined) });

const first = await sides.at(-1)!.run();
if (!first.ok) throw new Error(`the store does not verify: ${JSON.stringify(first)}`);
const events = first.checked;
process.stdout.write(`${events} events\n`);
for (const s of sides) await s.run(); // warm-up

const rounds = Number(values.rounds);
const cpu: Record<string, number[]> = {};
const wall: Record<string, number[]> = {};
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? sides : [...sides].reverse();
  for (const s of order) {
    const c = process.cpuUsage();
    const t = performance.now();
    const res = await s.run();
    const w = (performance.now() - t) / 1000;
    const u = process.cpuUsage(c);
    if (!res.ok || res.checked !== events) throw new Error(`${s.name}: ${JSON.stringify(res)}`);
    (cpu[s.name] ??= []).push(events / ((u.user + u.system) / 1e6));
    (wall[s.name] ??= []).push(events / w);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
for (const s of sides)
  process.stdout.write(
    `${s.name.padEnd(40)} ${Math.round(median(cpu[s.name]!)).toLocaleString("en").padStart(9)} events/CPU-s  ${Math.round(median(wall[s.name]!)).toLocaleString("en").padStart(9)} events/s   (cpu rounds ${cpu[s.name]!.map((x) => Math.round(x / 1000)).join(" ")} k)\n`,
  );
if (values.profile) {
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 200 });
  await session.post("Profiler.start");
  for (let i = 0; i < 5; i++) await sides.at(-1)!.run();
  const { profile } = await session.post("Profiler.stop");
  writeFileSync(values.profile, JSON.stringify(profile));
}
await kv.close();
