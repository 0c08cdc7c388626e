/**
 * A child process for crash.test.ts: opens the LMDB store in argv[2] and runs a seeded write load through
 * the Workflow API (create subprojects and workflowitems, update workflowitems, reorder, cascade-delete
 * subprojects), several commands in flight at once. It prints one JSON line per ACKNOWLEDGED write,
 * after its promise resolved, and a `deleting` line before it starts a cascade delete (so the parent knows
 * that delete may or may not have landed). The parent kills it with SIGKILL at some point.
 *
 * argv: dir, seed, run (a tag for new ids, so no run reuses an id), maxOps.
 * Lines: {"a":"ready","subprojects":n} | {"a":"project","p"} | {"a":"sub","p","s"} | {"a":"wi","p","s","w"}
 *        | {"a":"upd","p","s","w","v","d"} | {"a":"ord","p","s","v","o"} | {"a":"deleting","p","s"}
 *        | {"a":"del","p","s"} | {"a":"error","message"} | {"a":"done"}
 */
import fc from "fast-check";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { SYSTEM, userActor } from "../../src/resources/actor.js";
import { ResourceStore } from "../../src/resources/store.js";
import { projectRef, subprojectRef, Workflow, workflowitemRef } from "../../src/workflow/commands.js";
import { workflowSchema } from "../../src/workflow/schema.js";

export const PROJECTS = ["p0", "p1", "p2"];
export const ACTOR = "loader";
const WORKERS = 6;
const MAX_LIVE_SUBPROJECTS = 6;

const [dir, seed, run, maxOps] = [process.argv[2]!, Number(process.argv[3]), process.argv[4]!, Number(process.argv[5])];
const say = (line: Record<string, unknown>) => process.stdout.write(JSON.stringify(line) + "\n");

const kv = LmdbKv.open(dir);
const wf = new Workflow(new ResourceStore(kv, workflowSchema));
const actor = userActor(ACTOR);

interface Sub {
  p: string;
  s: string;
  items: string[];
  dying: boolean;
}
const subs: Sub[] = [];

// Recover the model from the store: what a restarted service would see.
if (!(await wf.store.global.has(actor, "global.createProject"))) await wf.store.global.grant(SYSTEM, "global.createProject", ACTOR);
for (const p of PROJECTS) {
  if (!(await wf.store.exists(projectRef(p)))) {
    await wf.createProject(actor, { id: p, displayName: `project ${p}` });
    say({ a: "project", p });
  }
  const list = await wf.store.listChildren(actor, projectRef(p), "subproject", { limit: 10_000 });
  for (const sp of list.items) {
    const items = await wf.store.listOrdered(actor, subprojectRef(p, sp.id), { limit: 10_000 });
    subs.push({ p, s: sp.id, items: items.items.map((i) => i.id), dying: false });
  }
}
say({ a: "ready", subprojects: subs.length });

type Op = { kind: "sub" | "wi" | "upd" | "ord" | "del"; x: number; y: number };
const plan: Op[] = fc.sample(
  fc.record({
    kind: fc.oneof(
      { arbitrary: fc.constant("sub" as const), weight: 2 },
      { arbitrary: fc.constant("wi" as const), weight: 10 },
      { arbitrary: fc.constant("upd" as const), weight: 5 },
      { arbitrary: fc.constant("ord" as const), weight: 2 },
      { arbitrary: fc.constant("del" as const), weight: 1 },
    ),
    x: fc.nat(),
    y: fc.nat(),
  }),
  { seed, numRuns: maxOps },
);

let counter = 0;
const live = () => subs.filter((s) => !s.dying);

async function perform(op: Op): Promise<void> {
  const candidates = live();
  let kind = op.kind;
  if (candidates.length === 0) kind = "sub";
  else if (kind === "sub" && candidates.length >= MAX_LIVE_SUBPROJECTS) kind = "wi";
  const n = counter++;
  if (kind === "sub") {
    const p = PROJECTS[op.x % PROJECTS.length]!;
    const s = `${run}s${n}`;
    await wf.createSubproject(actor, p, { id: s, displayName: `subproject ${s}`, currency: "EUR" });
    subs.push({ p, s, items: [], dying: false });
    say({ a: "sub", p, s });
    return;
  }
  const sub = candidates[op.x % candidates.length]!;
  if (kind === "upd" && sub.items.length === 0) kind = "wi";
  if (kind === "ord" && sub.items.length < 2) kind = "wi";
  if (kind === "del" && sub.items.length < 5) kind = "wi";
  switch (kind) {
    case "wi": {
      const w = `${run}w${n}`;
      await wf.createWorkflowitem(actor, sub.p, sub.s, { id: w, displayName: `item ${w}`, amountType: "N/A" });
      sub.items.push(w);
      say({ a: "wi", p: sub.p, s: sub.s, w });
      return;
    }
    case "upd": {
      const w = sub.items[op.y % sub.items.length]!;
      const d = `${run}u${n}`;
      const r = await wf.update(actor, workflowitemRef(sub.p, sub.s, w), { description: d });
      say({ a: "upd", p: sub.p, s: sub.s, w, v: r.meta.version, d });
      return;
    }
    case "ord": {
      // a seeded shuffle of a seeded subset of the acknowledged items
      const ids = sub.items.filter((_, i) => ((op.y >> (i % 24)) & 1) === 1 || i % 3 === 0);
      const o = ids.map((id, i) => ({ id, k: (op.y * 31 + i * 17) % 101 })).sort((a, b) => a.k - b.k || (a.id < b.id ? -1 : 1)).map((e) => e.id);
      const r = await wf.reorderWorkflowitems(actor, sub.p, sub.s, o);
      say({ a: "ord", p: sub.p, s: sub.s, v: r.meta.version, o });
      return;
    }
    case "del": {
      // the child's largest live subproject goes: a cascade of many workflowitems
      const victim = candidates.reduce((a, b) => (b.items.length > a.items.length ? b : a));
      victim.dying = true;
      say({ a: "deleting", p: victim.p, s: victim.s });
      await wf.delete(actor, subprojectRef(victim.p, victim.s));
      subs.splice(subs.indexOf(victim), 1);
      say({ a: "del", p: victim.p, s: victim.s });
      return;
    }
  }
}

let next = 0;
await Promise.all(
  Array.from({ length: WORKERS }, async () => {
    while (next < plan.length) {
      const op = plan[next++]!;
      try {
        await perform(op);
      } catch (e) {
        say({ a: "error", message: `${(e as Error).name}: ${(e as Error).message}` });
      }
    }
  }),
);
await kv.close();
say({ a: "done" });
