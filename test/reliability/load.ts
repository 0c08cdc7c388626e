/**
 * The seeded mixed write load of the crash tests, against any target that performs the writes: the
 * Workflow API in a child process (crash-writer.ts) or a real server over HTTP (server-soak.ts). Creates
 * subprojects and workflowitems, updates and closes workflowitems, uploads documents to workflowitems,
 * reorders, cascade-deletes the largest subproject, and stores archive snapshots with a file, several
 * operations in flight at once.
 *
 * Every acknowledged write is reported as one line (the acknowledgement model reads them, see
 * acknowledged.ts), after the target's promise resolved; a `deleting` line goes out before a cascade
 * delete starts (that delete may or may not land). Ids carry a run tag, so no run reuses an id.
 *
 * Lines: {"a":"sub","p","s"} | {"a":"wi","p","s","w"} | {"a":"upd","p","s","w","v","d"}
 *        | {"a":"ord","p","s","v","o"} | {"a":"close","p","s","w"} | {"a":"deleting","p","s"}
 *        | {"a":"del","p","s"} | {"a":"snap","id","u","sha256"} | {"a":"doc","p","s","w","id","sha256"}
 *        | {"a":"error","message"}
 */
import { createHash } from "node:crypto";
import fc from "fast-check";

export const PROJECTS = ["p0", "p1", "p2"];
const MAX_LIVE_SUBPROJECTS = 6;

/** What performs the writes; `close`, `snapshot` and `uploadDocument` are optional kinds of write. */
export interface LoadTarget {
  createSubproject(p: string, s: string): Promise<void>;
  createWorkflowitem(p: string, s: string, w: string): Promise<void>;
  /** Answers the workflowitem's version after the update. */
  update(p: string, s: string, w: string, description: string): Promise<number>;
  /** Answers the subproject's version after the reorder. */
  reorder(p: string, s: string, ordering: string[]): Promise<number>;
  deleteSubproject(p: string, s: string): Promise<void>;
  close?(p: string, s: string, w: string): Promise<void>;
  /** Stores a snapshot of `uniqueId` with one file; answers the snapshot's id. */
  snapshot?(uniqueId: string, file: Buffer): Promise<string>;
  /** Uploads `file` as a document of an open workflowitem; answers the document's id. */
  uploadDocument?(p: string, s: string, w: string, fileName: string, file: Buffer): Promise<string>;
}

export interface LiveSub {
  p: string;
  s: string;
  /** Workflowitem ids with whether each is closed. */
  items: { id: string; closed: boolean }[];
  dying: boolean;
}

type Kind = "sub" | "wi" | "upd" | "ord" | "close" | "del" | "snap" | "doc";
export interface Op {
  kind: Kind;
  x: number;
  y: number;
}

/** A seeded plan of `count` operations; kinds the target lacks are replaced when performed. */
export function plan(seed: number, count: number): Op[] {
  return fc.sample(
    fc.record({
      kind: fc.oneof(
        { arbitrary: fc.constant("sub" as const), weight: 2 },
        { arbitrary: fc.constant("wi" as const), weight: 10 },
        { arbitrary: fc.constant("upd" as const), weight: 5 },
        { arbitrary: fc.constant("ord" as const), weight: 2 },
        { arbitrary: fc.constant("close" as const), weight: 2 },
        { arbitrary: fc.constant("snap" as const), weight: 1 },
        { arbitrary: fc.constant("doc" as const), weight: 2 },
        { arbitrary: fc.constant("del" as const), weight: 1 },
      ),
      x: fc.nat(),
      y: fc.nat(),
    }),
    { seed, numRuns: count },
  );
}

export class Load {
  #counter = 0;
  /** Operations in flight per subproject: a cascade delete only takes a subproject with none. */
  readonly #busySubs = new Map<LiveSub, number>();
  /** Workflowitems with an update or close in flight: neither is sent to one of them. */
  readonly #busyItems = new Set<string>();

  constructor(
    readonly run: string,
    readonly target: LoadTarget,
    readonly subs: LiveSub[],
    readonly say: (line: Record<string, unknown>) => void,
  ) {}

  async perform(op: Op): Promise<void> {
    const { target, say } = this;
    const busy = (sub: LiveSub) => this.#busySubs.get(sub) ?? 0;
    const candidates = this.subs.filter((s) => !s.dying);
    let kind = op.kind;
    if (kind === "close" && !target.close) kind = "upd";
    if (kind === "snap" && !target.snapshot) kind = "wi";
    if (kind === "doc" && !target.uploadDocument) kind = "upd";
    if (candidates.length === 0 && kind !== "snap") kind = "sub";
    else if (kind === "sub" && candidates.length >= MAX_LIVE_SUBPROJECTS) kind = "wi";
    const n = this.#counter++;
    if (kind === "snap") {
      const u = `doc-${op.x % 7}`;
      const file = Buffer.from(`${this.run} ${n} `.repeat(1 + (op.y % 2000)));
      const id = await target.snapshot!(u, file);
      say({ a: "snap", id, u, sha256: createHash("sha256").update(file).digest("hex") });
      return;
    }
    if (kind === "sub") {
      const p = PROJECTS[op.x % PROJECTS.length]!;
      const s = `${this.run}s${n}`;
      await target.createSubproject(p, s);
      this.subs.push({ p, s, items: [], dying: false });
      say({ a: "sub", p, s });
      return;
    }
    const sub = candidates[op.x % candidates.length]!;
    const open = sub.items.filter((i) => !i.closed && !this.#busyItems.has(`${sub.s}/${i.id}`));
    if ((kind === "upd" || kind === "close" || kind === "doc") && open.length === 0) kind = "wi";
    if (kind === "ord" && sub.items.length < 2) kind = "wi";
    const idle = candidates.filter((c) => busy(c) === 0);
    if (kind === "del" && !idle.some((c) => c.items.length >= 5)) kind = "wi";
    if (kind === "del") {
      // the largest idle subproject goes: a cascade of many workflowitems
      const victim = idle.reduce((a, b) => (b.items.length > a.items.length ? b : a));
      victim.dying = true;
      say({ a: "deleting", p: victim.p, s: victim.s });
      await target.deleteSubproject(victim.p, victim.s);
      this.subs.splice(this.subs.indexOf(victim), 1);
      say({ a: "del", p: victim.p, s: victim.s });
      return;
    }
    this.#busySubs.set(sub, busy(sub) + 1);
    let item: string | undefined;
    if (kind === "upd" || kind === "close" || kind === "doc") this.#busyItems.add((item = `${sub.s}/${open[op.y % open.length]!.id}`));
    try {
      await this.#write(kind, op, n, sub, open);
    } finally {
      this.#busySubs.set(sub, busy(sub) - 1);
      if (item) this.#busyItems.delete(item);
    }
  }

  async #write(kind: Kind, op: Op, n: number, sub: LiveSub, open: LiveSub["items"]): Promise<void> {
    const { target, say } = this;
    switch (kind) {
      case "wi": {
        const w = `${this.run}w${n}`;
        await target.createWorkflowitem(sub.p, sub.s, w);
        sub.items.push({ id: w, closed: false });
        say({ a: "wi", p: sub.p, s: sub.s, w });
        return;
      }
      case "upd": {
        const w = open[op.y % open.length]!.id;
        const d = `${this.run}u${n}`;
        const v = await target.update(sub.p, sub.s, w, d);
        say({ a: "upd", p: sub.p, s: sub.s, w, v, d });
        return;
      }
      case "close": {
        const item = open[op.y % open.length]!;
        item.closed = true; // no update is sent to it from now on, whether the close lands or not
        await target.close!(sub.p, sub.s, item.id);
        say({ a: "close", p: sub.p, s: sub.s, w: item.id });
        return;
      }
      case "doc": {
        const w = open[op.y % open.length]!.id;
        const file = Buffer.from(`${this.run} document ${n} `.repeat(1 + (op.x % 500)));
        const id = await target.uploadDocument!(sub.p, sub.s, w, `d${n}.txt`, file);
        say({ a: "doc", p: sub.p, s: sub.s, w, id, sha256: createHash("sha256").update(file).digest("hex") });
        return;
      }
      case "ord": {
        // a seeded shuffle of a seeded subset of the acknowledged items
        const ids = sub.items.map((i) => i.id).filter((_, i) => ((op.y >> (i % 24)) & 1) === 1 || i % 3 === 0);
        const o = ids
          .map((id, i) => ({ id, k: (op.y * 31 + i * 17) % 101 }))
          .sort((a, b) => a.k - b.k || (a.id < b.id ? -1 : 1))
          .map((e) => e.id);
        const v = await target.reorder(sub.p, sub.s, o);
        say({ a: "ord", p: sub.p, s: sub.s, v, o });
        return;
      }
    }
  }

  /**
   * Runs the plan with `workers` operations in flight until it is done or `stopped()` says so; a failed
   * operation is reported through `onError` (which decides whether it is one).
   */
  async drive(ops: readonly Op[], workers: number, stopped: () => boolean, onError: (e: unknown) => void): Promise<void> {
    let next = 0;
    await Promise.all(
      Array.from({ length: workers }, async () => {
        while (next < ops.length && !stopped()) {
          const op = ops[next++]!;
          try {
            await this.perform(op);
          } catch (e) {
            onError(e);
          }
        }
      }),
    );
  }
}
