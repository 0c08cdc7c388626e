/**
 * Crash test (issue 9, item 4; DESIGN.md "Reliability"): a child process runs a write load through the
 * Workflow API on LMDB and is killed with SIGKILL at seeded points, many times, on one directory. After
 * each kill the parent reopens the store and checks: every acknowledged write is there (and every
 * acknowledged delete is not), no cascade is half-applied, every project's hash chain verifies. The next
 * child then continues on the same directory from what it finds there.
 *
 * Reproduce a run with FLOWSTORE_CRASH_SEED=<seed> (the seed is printed).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import { scanAll, type KvStore } from "../../src/kv/contract.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { SYSTEM } from "../../src/resources/actor.js";
import { ResourceStore } from "../../src/resources/store.js";
import { projectRef, subprojectRef, workflowitemRef } from "../../src/workflow/commands.js";
import { workflowSchema } from "../../src/workflow/schema.js";
import { runChild } from "./child.js";

const SEED = Number(process.env.FLOWSTORE_CRASH_SEED ?? 20260301);
const KILLS = 18;
const SCRIPT = join(import.meta.dirname, "crash-writer.ts");
const PROJECTS = ["p0", "p1", "p2"];

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "flowstore-crash-"));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** What the parent knows from acknowledgements alone. */
interface SubModel {
  p: string;
  s: string;
  state: "live" | "deleting" | "deleted";
  items: Set<string>;
  /** Highest acknowledged ordering write: the subproject's version then and the ordering. */
  ord?: { v: number; o: string[] };
}
interface ItemModel {
  v: number;
  d: string;
}

class Model {
  readonly projects = new Set<string>();
  readonly subs = new Map<string, SubModel>();
  readonly updates = new Map<string, ItemModel>();
  acks = 0;

  apply(line: Record<string, any>): void {
    const key = `${line.p}/${line.s}`;
    switch (line.a) {
      case "project":
        this.projects.add(line.p);
        break;
      case "sub":
        this.subs.set(key, { p: line.p, s: line.s, state: "live", items: new Set() });
        break;
      case "wi":
        this.#sub(line).items.add(line.w);
        break;
      case "upd": {
        const k = `${key}/${line.w}`;
        const prev = this.updates.get(k);
        if (!prev || line.v > prev.v) this.updates.set(k, { v: line.v, d: line.d });
        break;
      }
      case "ord": {
        const sub = this.#sub(line);
        if (!sub.ord || line.v > sub.ord.v) sub.ord = { v: line.v, o: line.o };
        break;
      }
      case "deleting":
        this.#sub(line).state = "deleting";
        return;
      case "del":
        this.#sub(line).state = "deleted";
        break;
      default:
        return;
    }
    this.acks++;
  }

  /** A subproject the parent has not seen created (it was created but not acknowledged by an earlier run). */
  #sub(line: Record<string, any>): SubModel {
    const key = `${line.p}/${line.s}`;
    let sub = this.subs.get(key);
    if (!sub) this.subs.set(key, (sub = { p: line.p, s: line.s, state: "live", items: new Set() }));
    return sub;
  }
}

/** Checks the reopened store against the model; resolves in-doubt deletes to what the store says. */
async function check(kv: KvStore, model: Model): Promise<string[]> {
  const store = new ResourceStore(kv, workflowSchema);
  const problems: string[] = [];
  const has = async (prefix: readonly (string | number)[], p: string) => (await kv.scan(["project", p], { prefix: [...prefix], limit: 1 })).entries.length > 0;

  for (const p of model.projects) if (!(await store.exists(projectRef(p)))) problems.push(`acknowledged project ${p} is missing`);

  for (const sub of model.subs.values()) {
    const ref = subprojectRef(sub.p, sub.s);
    const exists = await store.exists(ref);
    if (sub.state === "deleting") sub.state = exists ? "live" : "deleted"; // in doubt: either is right
    if (sub.state === "deleted") {
      if (exists) problems.push(`acknowledged delete of ${sub.p}/${sub.s} is undone`);
      if (await has(["s", 2, "subproject", sub.s], sub.p)) problems.push(`half-applied cascade: workflowitems of deleted ${sub.p}/${sub.s} remain`);
      if (await has(["o", 1, "subproject", sub.s], sub.p)) problems.push(`half-applied cascade: the ordering of deleted ${sub.p}/${sub.s} remains`);
      continue;
    }
    if (!exists) {
      problems.push(`acknowledged subproject ${sub.p}/${sub.s} is missing`);
      continue;
    }
    for (const w of sub.items) {
      const wref = workflowitemRef(sub.p, sub.s, w);
      if (!(await store.exists(wref))) {
        problems.push(`acknowledged workflowitem ${sub.p}/${sub.s}/${w} is missing`);
        continue;
      }
      const upd = model.updates.get(`${sub.p}/${sub.s}/${w}`);
      if (upd) {
        const env = await store.get(SYSTEM, { ...wref, type: "workflowitem" });
        if (env.meta.version < upd.v) problems.push(`acknowledged update ${upd.d} of ${w} is lost (version ${env.meta.version} < ${upd.v})`);
        else if (env.meta.version === upd.v && env.data.description !== upd.d) problems.push(`acknowledged update of ${w} at version ${upd.v} reads ${String(env.data.description)}, not ${upd.d}`);
      }
    }
    if (sub.ord) {
      const { ordering, version } = await store.getOrdering(SYSTEM, ref);
      if (version < sub.ord.v) problems.push(`acknowledged ordering of ${sub.p}/${sub.s} is lost (version ${version} < ${sub.ord.v})`);
      else if (version === sub.ord.v && JSON.stringify(ordering) !== JSON.stringify(sub.ord.o)) problems.push(`ordering of ${sub.p}/${sub.s} at version ${version} differs from the acknowledged one`);
    }
  }

  // No orphan anywhere: every stored workflowitem and ordering belongs to a stored subproject.
  for (const p of PROJECTS) {
    if (!(await store.exists(projectRef(p)))) continue;
    const subsHere = new Set<string>();
    for await (const e of scanAll(kv, ["project", p], { prefix: ["s", 1, "subproject"] })) subsHere.add(e.key[3] as string);
    for await (const e of scanAll(kv, ["project", p], { prefix: ["s", 2, "subproject"] })) {
      if (!subsHere.has(e.key[3] as string)) problems.push(`orphan workflowitem ${p}/${String(e.key[3])}/${String(e.key[5])}`);
    }
    for await (const e of scanAll(kv, ["project", p], { prefix: ["o", 1, "subproject"] })) {
      if (!subsHere.has(e.key[3] as string)) problems.push(`orphan ordering of ${p}/${String(e.key[3])}`);
    }
    const v = await store.verify(["project", p]);
    if (!v.ok) problems.push(`chain of ${p} does not verify: ${JSON.stringify(v.firstBad)}`);
  }
  return problems;
}

it(`survives ${KILLS} SIGKILLs mid-load with every acknowledged write intact (seed ${SEED})`, async () => {
  console.log(`crash test seed: ${SEED} (FLOWSTORE_CRASH_SEED=${SEED} to reproduce)`);
  const killPoints = fc.sample(fc.integer({ min: 8, max: 60 }), { seed: SEED, numRuns: KILLS });
  const model = new Model();
  let deletesSeen = 0;
  let maxCascade = 0;
  for (let run = 0; run <= KILLS; run++) {
    const last = run === KILLS;
    // the last run is not killed: it continues on the directory and finishes a short plan on its own
    const killAt = killPoints[run] ?? Infinity;
    let acked = 0;
    const result = await runChild(SCRIPT, [dir, String(SEED + run), `r${run}`, last ? "40" : "100000"], (line) => {
      if (["sub", "wi", "upd", "ord", "del"].includes(line.a)) acked++;
      return acked >= killAt;
    });
    const errors = result.lines.filter((l) => l.a === "error" || l.a === "garbage");
    expect(errors, `child run ${run} reported errors; stderr: ${result.stderr}`).toEqual([]);
    expect(result.lines[0]?.a === "ready" || result.lines[0]?.a === "project", `run ${run} did not start: ${result.stderr}`).toBe(true);
    if (last) {
      expect(result.code, result.stderr).toBe(0);
      expect(result.lines.at(-1)).toEqual({ a: "done" });
    } else {
      expect(result.killed, `run ${run} ended before the kill: code ${result.code}; ${result.stderr}`).toBe(true);
      expect(result.signal).toBe("SIGKILL");
    }
    for (const line of result.lines) {
      if (line.a === "del") {
        deletesSeen++;
        maxCascade = Math.max(maxCascade, model.subs.get(`${line.p}/${line.s}`)?.items.size ?? 0);
      }
      model.apply(line);
    }
    const kv = LmdbKv.open(dir);
    try {
      expect(await check(kv, model), `after run ${run} (seed ${SEED})`).toEqual([]);
    } finally {
      await kv.close();
    }
  }
  console.log(`crash test: ${model.acks} acknowledged writes over ${KILLS} kills, ${deletesSeen} cascade deletes (largest ${maxCascade} workflowitems)`);
  expect(model.acks).toBeGreaterThan(KILLS * 8);
  expect(deletesSeen).toBeGreaterThan(0);
}, 240_000);
