/**
 * The floor under "create workflowitem, 50 writers" (not a benchmark row): what a create cannot avoid,
 * measured beside the raw put the resources row compares with and beside the create itself, in one run
 * on one LMDB directory (durable). 50 writers, 4 operations each per round, the sides alternating round
 * by round; each side's process CPU time (user + system, every thread: lmdb-js's write thread included)
 * over its operations, a figure far less sensitive to other processes than ops/s.
 *   raw put        one durable lmdb-js put of a record's bytes (the resources row's reference)
 *   floor, puts    a create's unavoidable work (validate the data, encode the record and the access
 *                  record, seal the event: JSON and sha-256, tuple-encode its four keys) and four async puts
 *   floor, group   the same work, the creates queued in one event turn written in ONE lmdb-js transaction
 *                  (a group commit with nothing but the unavoidable)
 *   create         the Workflow command (checks, derived indexes, ledger, feed, the one commit per group)
 * and then each piece of the floor alone (CPU µs per create, no I/O).
 *   npx tsx bench/profile/min-create.ts [rounds]
 */
import { rmSync } from "node:fs";
import type { Permissions } from "../../src/access/actor.js";
import { encodeRecordKey } from "../../src/kv/contract.js";
import { encodeAccess, encodeResource } from "../../src/resources/core/core.js";
import { sealEventBytes } from "../../src/resources/model/events.js";
import { layout } from "../../src/resources/model/layout.js";
import type { Envelope } from "../../src/resources/model/record.js";
import { childRef, locate, pathOf } from "../../src/resources/model/ref.js";
import { subprojectRef } from "../../src/workflow/commands.js";
import { itemData, MARY } from "../tree.js";
import { freshSubproject } from "./fresh.js";

const WRITERS = 50;
const PER = 4;
const rounds = Number(process.argv[2] ?? 10);
const { dir, kv, fs } = await freshSubproject("fs-floor-");
const schema = fs.wf.store.schema;
const t = schema.type("workflowitem");
const db = kv.raw;
const flushed = () => new Promise<void>((resolve, reject) => db.flushed.then(() => resolve(), reject));
const permissions: Permissions = Object.fromEntries(t.intents.all.map((i) => [i, [MARY.id]]));
const now = new Date().toISOString();
let n = 0;
let seq = 0;
let prev: string | null = null;

/** A create's unavoidable work: its four keys and values. */
function floor(): { keys: Buffer[]; values: Buffer[] } {
  const id = `f-${n++}`;
  const l = locate(schema, childRef(schema, subprojectRef("p1", "w"), "workflowitem", id));
  const { id: _, ...given } = itemData(n % 1000, "EUR");
  const data = schema.validate(t, { ...given, status: "open", workflowitemType: "general", assignee: MARY.id });
  const envelope: Envelope = { id, type: "workflowitem", data, meta: { createdAt: now, createdBy: MARY.id, updatedAt: now, version: 1 } };
  const { event, bytes } = sealEventBytes({ seq: ++seq, at: now, actor: MARY.id, type: "workflowitem.created", path: pathOf(l), payload: { data, permissions }, prev });
  prev = event.hash;
  const keys = [layout.state(l), layout.access(l), layout.log(seq), layout.historyEntry(l, seq)].map((k) => encodeRecordKey(l.partition, k).full);
  return { keys, values: [encodeResource(t, envelope, permissions), encodeAccess({ permissions, parent: null }), bytes, bytes] };
}

const record = Buffer.alloc(509, 0x61);
let r = 0;
const rawPut = async (): Promise<void> => {
  const written = db.put(Buffer.from(`\x05raw-${r++}`), record, 1);
  const f = flushed();
  await written;
  await f;
};
const floorPuts = async (): Promise<void> => {
  const { keys, values } = floor();
  const written = keys.map((k, i) => db.put(k, values[i]!, 1));
  const f = flushed();
  await Promise.all(written);
  await f;
};
let queued: { w: ReturnType<typeof floor>; resolve: () => void; reject: (e: unknown) => void }[] = [];
const floorGroup = (): Promise<void> =>
  new Promise((resolve, reject) => {
    queued.push({ w: floor(), resolve, reject });
    if (queued.length > 1) return;
    setImmediate(() => {
      const group = queued;
      queued = [];
      const done = db.transaction(() => {
        for (const { w } of group) w.keys.forEach((k, i) => db.putSync(k, w.values[i]!, 1));
      });
      const f = flushed();
      Promise.all([done, f]).then(
        () => group.forEach((x) => x.resolve()),
        (e: unknown) => group.forEach((x) => x.reject(e)),
      );
    });
  });
let c = 0;
const create = () => fs.wf.createWorkflowitem(MARY, "p1", "w", { ...itemData(c % 1000, "EUR"), id: `c-${c++}` });

const sides: [string, () => Promise<unknown>][] = [
  ["raw put", rawPut],
  ["floor, puts", floorPuts],
  ["floor, group", floorGroup],
  ["create", create],
];
const seen = new Map<string, { ops: number[]; cpu: number[] }>();
for (let k = 0; k < rounds; k++) {
  for (const [name, one] of sides) {
    const cpu = process.cpuUsage();
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        for (let i = 0; i < PER; i++) await one();
      }),
    );
    const used = process.cpuUsage(cpu);
    const s = seen.get(name) ?? { ops: [], cpu: [] };
    seen.set(name, s);
    s.ops.push((WRITERS * PER) / ((performance.now() - t0) / 1000));
    s.cpu.push((used.user + used.system) / (WRITERS * PER));
  }
}
const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[xs.length >> 1]!;
const raw = seen.get("raw put")!;
for (const [name, s] of seen) {
  const line = `${name.padEnd(14)} ${median(s.ops).toFixed(0).padStart(7)}/s  CPU ${median(s.cpu).toFixed(0).padStart(4)} µs/op  (${(median(raw.ops) / median(s.ops)).toFixed(2)}× the raw put's time)`;
  process.stdout.write(`${line}\n`);
}

// each piece of the floor alone: CPU µs per create, no I/O
const l = locate(schema, childRef(schema, subprojectRef("p1", "w"), "workflowitem", "x-1"));
const { id: _, ...given } = itemData(5, "EUR");
const input = { ...given, status: "open", workflowitemType: "general", assignee: MARY.id };
const data = schema.validate(t, input);
const envelope: Envelope = { id: "x-1", type: "workflowitem", data, meta: { createdAt: now, createdBy: MARY.id, updatedAt: now, version: 1 } };
const pieces: [string, () => unknown][] = [
  ["validate", () => schema.validate(t, input)],
  ["record", () => encodeResource(t, envelope, permissions)],
  ["access record", () => encodeAccess({ permissions, parent: null })],
  ["event sealed", () => sealEventBytes({ seq: 7, at: now, actor: MARY.id, type: "workflowitem.created", path: pathOf(l), payload: { data, permissions }, prev: "ab".repeat(32) })],
  ["four keys", () => [layout.state(l), layout.access(l), layout.log(7), layout.historyEntry(l, 7)].map((k) => encodeRecordKey(l.partition, k).full)],
];
const M = 20_000;
for (const [name, f] of pieces) {
  for (let i = 0; i < 2_000; i++) f();
  const cpu = process.cpuUsage();
  for (let i = 0; i < M; i++) f();
  const used = process.cpuUsage(cpu);
  process.stdout.write(`  ${name.padEnd(14)} ${((used.user + used.system) / M).toFixed(1)} µs\n`);
}
await kv.close();
rmSync(dir, { recursive: true, force: true });
