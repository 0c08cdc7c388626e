/**
 * pagination: a page of an ordered collection right after a write (issue 18: "any page of 100 at any
 * depth of a 100,000-item ordered subproject, right after a write, in < 2 ms in process").
 *
 * A subproject of 100,000 workflowitems (× scale) is built through the Workflow commands, 1,000 of them
 * are dragged to the front (a manual ordering), and every page of 100 is walked once to collect its
 * cursor. Then, many times: one durable update of an item of the subproject (the partition's head moves,
 * so the page cache cannot answer), and one page of 100 at a random depth through the route's
 * `listWorkflowitemsPage`, timed alone. The row reports the median as ops/s and p50/p99/max in its note.
 */
import { msBelow, type Workload } from "../harness.js";
import { SYSTEM } from "../../src/access/actor.js";
import { workflowitemRef } from "../../src/workflow/commands.js";
import { FlowstorePeer, pool } from "../peers/flowstore.js";
import { itemData, itemId, MARY } from "../tree.js";

const P = "pg";
const S = "big";

const quantile = (sorted: readonly number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

export const pagination: Workload = {
  name: "pagination",
  description: "one page of 100 at a random depth of a 100,000-item ordered subproject, right after a durable write (in process)",
  async run(ctx) {
    const n = Math.round(100_000 * ctx.scale);
    const kv = await ctx.openStore();
    const fs = new FlowstorePeer(kv);
    const wf = fs.wf;
    let t0 = performance.now();
    await wf.store.global.grant(SYSTEM, "global.createProject", "managers");
    await wf.createProject(MARY, { id: P, displayName: "Pagination" });
    await wf.createSubproject(MARY, P, { id: S, displayName: "Big", currency: "EUR" });
    const ids = Array.from({ length: n }, (_, i) => i);
    for (let i = 0; i < n; i += 2048) await pool(ids.slice(i, i + 2048), 256, (k) => wf.createWorkflowitem(MARY, P, S, itemData(k, "EUR")));
    const ordering = ids
      .slice(n - 1_000)
      .map(itemId)
      .reverse();
    await wf.reorderWorkflowitems(MARY, P, S, ordering);
    process.stdout.write(`  built ${n} workflowitems in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);

    // Walk every page once: the cursors of every depth, and a check of the effective order.
    const cursors: (string | null)[] = [null];
    const seen: string[] = [];
    for (;;) {
      const page = JSON.parse((await wf.listWorkflowitemsPage(MARY, P, S, { cursor: cursors.at(-1), limit: 100 })).json.toString("utf8")) as {
        items: { id: string }[];
        nextCursor: string | null;
      };
      for (const it of page.items) seen.push(it.id);
      if (page.nextCursor === null) break;
      cursors.push(page.nextCursor);
    }
    const expected = [...ordering, ...ids.slice(0, n - 1_000).map(itemId)];
    if (seen.length !== n || seen.some((id, i) => id !== expected[i])) throw new Error("the pages do not list the effective order");

    const samples: number[] = [];
    const times = Math.max(50, Math.round(300 * Math.min(ctx.scale, 1)));
    let x = 0;
    for (let i = 0; i < times + 10; i++) {
      await wf.update(MARY, workflowitemRef(P, S, itemId((i * 7919) % n)), { description: `Changed ${x++}.` });
      const depth = (i * 104_729) % cursors.length;
      t0 = performance.now();
      const page = await wf.listWorkflowitemsPage(MARY, P, S, { cursor: cursors[depth], limit: 100 });
      const ms = performance.now() - t0;
      if (page.json.length < 100) throw new Error("empty page");
      if (i >= 10) samples.push(ms);
    }
    samples.sort((a, b) => a - b);
    const p50 = quantile(samples, 0.5);
    const p99 = quantile(samples, 0.99);
    const max = samples.at(-1)!;
    ctx.record({
      name: `page of 100 at a random depth of ${n.toLocaleString("en-US")}, right after a write (listWorkflowitemsPage)`,
      opsPerSec: 1000 / p50,
      rounds: samples.slice(0, 20).map((ms) => 1000 / ms),
      note: `p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms, max ${max.toFixed(2)} ms over ${samples.length} pages`,
      goals: [msBelow("p99", Number(p99.toFixed(2)), 2)],
    });
    ctx.note(
      "How: the effective order (seed 002: the ordering's live ids first, the rest by creation time, ties by id) is kept at write time as an order index (layout family `x`, ordering.ts), written in the same commit as the create, delete or reorder that changes it; a page is one range read of the index after the cursor plus one getMany of the page's records. Before it (same workload, 20,000 items: p50 203 ms, p99 934 ms), a page scanned and sorted every child: the CPU profile showed GC 27%, Buffer allocation of every scanned value 15%, lmdb range iteration 8%, listOrderedJson + effectiveOrder 11%. After: the page itself is well under 1 ms; the tail is the process's garbage collector (--trace-gc shows incremental-marking steps of 25-60 ms on this shared 2-core machine) and the durable write just before, not the read.",
    );
    process.stdout.write(`  page after a write: p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms, max ${max.toFixed(2)} ms\n`);
  },
};
