/**
 * The acknowledgement model of the crash tests: what a client knows from the writes it saw acknowledged
 * (the lines of load.ts), and the check of a reopened store against it after a kill: every acknowledged
 * write is there (and every acknowledged delete is not), no cascade is half-applied, no orphan is left,
 * and every partition verifies (`verifyAll`). A delete in flight at the kill is in doubt: either outcome
 * is right, and the model takes the store's.
 */
import { createHash } from "node:crypto";
import { scanAll } from "../../src/kv/contract.js";
import { SYSTEM } from "../../src/access/actor.js";
import type { Flowstore } from "../../src/compose/index.js";
import { projectRef, subprojectRef, workflowitemRef } from "../../src/workflow/commands.js";
import { PROJECTS, type LiveSub } from "./load.js";

interface SubModel {
  p: string;
  s: string;
  state: "live" | "deleting" | "deleted";
  items: Set<string>;
  closed: Set<string>;
  /** Highest acknowledged ordering write: the subproject's version then and the ordering. */
  ord?: { v: number; o: string[] };
}
interface ItemModel {
  v: number;
  d: string;
}

export class Model {
  readonly projects = new Set<string>();
  readonly subs = new Map<string, SubModel>();
  readonly updates = new Map<string, ItemModel>();
  /** Acknowledged workflowitem documents: their item, id and the SHA-256 of their content. */
  readonly documents: { p: string; s: string; w: string; id: string; sha256: string }[] = [];
  /** Acknowledged snapshots: id → the SHA-256 of its file. */
  readonly snapshots = new Map<string, string>();
  /** Acknowledged writes, and acknowledged deletes among them. */
  acks = 0;
  deletes = 0;

  apply(line: Record<string, any>): void {
    const key = `${line.p}/${line.s}`;
    switch (line.a) {
      case "project":
        this.projects.add(line.p);
        break;
      case "sub":
        this.subs.set(key, { p: line.p, s: line.s, state: "live", items: new Set(), closed: new Set() });
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
      case "close":
        this.#sub(line).closed.add(line.w);
        break;
      case "ord": {
        const sub = this.#sub(line);
        if (!sub.ord || line.v > sub.ord.v) sub.ord = { v: line.v, o: line.o };
        break;
      }
      case "snap":
        this.snapshots.set(line.id, line.sha256);
        break;
      case "doc":
        this.documents.push({ p: line.p, s: line.s, w: line.w, id: line.id, sha256: line.sha256 });
        break;
      case "deleting":
        this.#sub(line).state = "deleting";
        return;
      case "del":
        this.#sub(line).state = "deleted";
        this.deletes++;
        break;
      default:
        return;
    }
    this.acks++;
  }

  /** A subproject the model has not seen created (it was created but not acknowledged by an earlier run). */
  #sub(line: Record<string, any>): SubModel {
    const key = `${line.p}/${line.s}`;
    let sub = this.subs.get(key);
    if (!sub) this.subs.set(key, (sub = { p: line.p, s: line.s, state: "live", items: new Set(), closed: new Set() }));
    return sub;
  }
}

/** Checks the reopened store against the model; resolves in-doubt deletes to what the store says. */
export async function check(fs: Flowstore, model: Model): Promise<string[]> {
  const { kv, resources: store } = fs;
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
      const env = await store.reads.get(SYSTEM, { ...wref, type: "workflowitem" });
      if (upd) {
        if (env.meta.version < upd.v) problems.push(`acknowledged update ${upd.d} of ${w} is lost (version ${env.meta.version} < ${upd.v})`);
        else if (env.meta.version === upd.v && env.data.description !== upd.d)
          problems.push(`acknowledged update of ${w} at version ${upd.v} reads ${String(env.data.description)}, not ${upd.d}`);
      }
      if (sub.closed.has(w) && env.data.status !== "closed") problems.push(`acknowledged close of ${sub.p}/${sub.s}/${w} is lost`);
    }
    if (sub.ord) {
      const { ordering, version } = await store.reads.getOrdering(SYSTEM, ref);
      if (version < sub.ord.v) problems.push(`acknowledged ordering of ${sub.p}/${sub.s} is lost (version ${version} < ${sub.ord.v})`);
      else if (version === sub.ord.v && JSON.stringify(ordering) !== JSON.stringify(sub.ord.o))
        problems.push(`ordering of ${sub.p}/${sub.s} at version ${version} differs from the acknowledged one`);
    }
  }

  for (const [id, sha256] of model.snapshots) {
    try {
      const snap = await fs.archive.read(SYSTEM, id);
      const file = await fs.archive.openFile(SYSTEM, id, snap.files[0]!.name);
      const hash = createHash("sha256");
      for await (const chunk of file.stream) hash.update(chunk as Buffer);
      if (hash.digest("hex") !== sha256) problems.push(`the file of acknowledged snapshot ${id} differs from what was uploaded`);
    } catch (e) {
      problems.push(`acknowledged snapshot ${id} is unreadable: ${(e as Error).message}`);
    }
  }

  for (const d of model.documents) {
    if (model.subs.get(`${d.p}/${d.s}`)?.state !== "live") continue; // gone with its subproject's cascade
    try {
      const { file } = await fs.documents.open(SYSTEM, d.p, d.s, d.w, d.id);
      const hash = createHash("sha256");
      for await (const chunk of file.stream) hash.update(chunk as Buffer);
      if (hash.digest("hex") !== d.sha256) problems.push(`the content of acknowledged document ${d.id} of ${d.p}/${d.s}/${d.w} differs from what was uploaded`);
    } catch (e) {
      problems.push(`acknowledged document ${d.id} of ${d.p}/${d.s}/${d.w} is unreadable: ${(e as Error).message}`);
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
  }
  const failures: string[] = [];
  const all = await fs.verifyAll((partition, r) => {
    if (!r.ok) failures.push(`partition ${JSON.stringify(partition)} does not verify: ${JSON.stringify(r)}`);
  });
  problems.push(...failures);
  if (!all.ok && failures.length === 0) problems.push(`verifyAll failed: ${JSON.stringify(all)}`);
  return problems;
}

/** The live subprojects and their workflowitems as the store holds them: what a restarted client resumes from. */
export async function liveSubs(store: Flowstore["resources"]): Promise<LiveSub[]> {
  const subs: LiveSub[] = [];
  for (const p of PROJECTS) {
    if (!(await store.exists(projectRef(p)))) continue;
    const list = await store.reads.listChildren(SYSTEM, projectRef(p), "subproject", { limit: 10_000 });
    for (const sp of list.items) {
      const items = await store.reads.listOrdered(SYSTEM, subprojectRef(p, sp.id), { limit: 10_000 });
      subs.push({ p, s: sp.id, items: items.items.map((i) => ({ id: i.id, closed: (i as any).data?.status === "closed" })), dying: false });
    }
  }
  return subs;
}
