/** flowstore itself as a peer: the Workflow commands over the ResourceStore on LMDB (durable commits). */
import { SYSTEM } from "../../src/access/actor.js";
import type { KvStore } from "../../src/kv/contract.js";
import { ResourceStore } from "../../src/resources/store.js";
import { projectRef, subprojectRef, workflowitemRef, Workflow } from "../../src/workflow/commands.js";
import { workflowSchema } from "../../src/workflow/schema.js";
import { MARY, type Tree } from "../tree.js";
import type { Peer } from "./peer.js";

const OPEN = Buffer.from('{"items":[');
const COMMA = Buffer.from(",");
const CLOSE = Buffer.from('],"nextCursor":null}');

/** Joins stored JSON items into a list body, as the HTTP route does. */
export function joinItems(items: readonly Buffer[]): Buffer {
  const parts: Buffer[] = [OPEN];
  items.forEach((b, i) => {
    if (i > 0) parts.push(COMMA);
    parts.push(b);
  });
  parts.push(CLOSE);
  return Buffer.concat(parts);
}

/** Runs `f` over `xs` with `concurrency` workers (creates in one partition share group commits). */
export async function pool<T>(xs: readonly T[], concurrency: number, f: (x: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, xs.length) }, async () => {
      while (next < xs.length) await f(xs[next++]!);
    }),
  );
}

export async function loadFlowstore(wf: Workflow, tree: Tree): Promise<void> {
  await wf.store.global.grant(SYSTEM, "global.createProject", "managers");
  for (const p of tree.projects) {
    await wf.createProject(MARY, { id: p.id, displayName: `Project ${p.id}` });
    for (const s of p.subprojects) {
      await wf.createSubproject(MARY, p.id, { id: s.id, displayName: `Subproject ${s.id}`, currency: s.currency });
      // in creation order: the tree's order is the creation order every peer uses. Callers load under a
      // standing clock (FlowstorePeer.load, bench/http/flowstore-server.ts): a create that awaits before it
      // enqueues (an assignee lookup) would otherwise be stamped after later ones; with one creation time,
      // ties go by id, the tree's order. The peer sanity checks (workloads/workflow.ts, http.ts) fail otherwise.
      for (let i = 0; i < s.items.length; i += 256) await pool(s.items.slice(i, i + 256), 256, (it) => wf.createWorkflowitem(MARY, p.id, s.id, it.data));
      if (s.ordering.length > 0) await wf.reorderWorkflowitems(MARY, p.id, s.id, s.ordering);
    }
  }
  await pool(tree.updates, 64, (u) => wf.update(MARY, workflowitemRef(u.p, u.s, u.w), u.patch));
}

export class FlowstorePeer implements Peer {
  readonly name = "flowstore";
  readonly wf: Workflow;

  /** The creation time while loading (see load), else undefined: the clock runs. */
  #loading: number | undefined;

  constructor(readonly kv: KvStore) {
    this.wf = new Workflow(new ResourceStore(kv, workflowSchema, { clock: () => this.#loading ?? Date.now() }));
  }

  /**
   * Loads under a standing clock: the creates run 256 at a time and those assigned to someone else than
   * the creator take longer, so with a running clock they would be stamped after items created later.
   * With one creation time ties go by id, the tree's order, which every peer's creation times follow.
   */
  async load(tree: Tree): Promise<void> {
    this.#loading = Date.now();
    try {
      await loadFlowstore(this.wf, tree);
    } finally {
      this.#loading = undefined;
    }
  }

  async getItem(p: string, s: string, w: string): Promise<Buffer> {
    return (await this.wf.store.reads.getJson(MARY, workflowitemRef(p, s, w))).json;
  }

  async listSubproject(p: string, s: string): Promise<{ count: number; body: Buffer }> {
    const page = await this.wf.listWorkflowitemsJson(MARY, p, s, { limit: 10_000 });
    return { count: page.items.length, body: joinItems(page.items) };
  }

  async updateItem(p: string, s: string, w: string, patch: { description: string }): Promise<void> {
    await this.wf.update(MARY, workflowitemRef(p, s, w), patch);
  }

  async history(p: string, s: string, w: string): Promise<{ count: number; body: Buffer }> {
    // the body the HTTP route sends (sendJsonPage): the stored event bytes, joined, as bytes (as a list's
    // body here and the raw peer's history are; decoding it into a string was a step no route takes)
    const page = await this.wf.historyJson(MARY, workflowitemRef(p, s, w), { limit: 10_000 });
    return { count: page.items.length, body: joinItems(page.items) };
  }

  async reorder(p: string, s: string, ordering: readonly string[]): Promise<void> {
    await this.wf.reorderWorkflowitems(MARY, p, s, ordering);
  }

  async deleteProject(p: string): Promise<void> {
    await this.wf.delete(MARY, projectRef(p));
  }

  async close(): Promise<void> {
    await this.kv.close();
  }
}

export { subprojectRef };
