/**
 * erasure (issue 26, part 2): what the register of erasures costs the open of a store. At every open
 * (compose/open.ts) `keepErasures` (compose/erasure.ts) sweeps it: the register's entries, every subject
 * partition (its receipt, when erased, kept in the register and its key deleted from the replaced
 * histories), then every registered erasure put back where a copy brought its key. Two stores of the
 * same shape (10,000 workflowitems in 10 projects, each item naming a data subject of its own with a
 * personal description), one with every subject erased, one with none; rows, in one run: the open of
 * each (openFlowstore and close, interleaved), and the sweep alone on each. In process, LMDB by default
 * (each store in a directory of its own; a store URL given with --store holds both, so the figures there
 * would not be of two stores: the workload refuses one).
 */
import { SYSTEM } from "../../src/access/actor.js";
import { keepErasures } from "../../src/compose/erasure.js";
import { openFlowstore } from "../../src/compose/index.js";
import type { KvStore } from "../../src/kv/contract.js";
import type { Workload } from "../harness.js";
import { pool } from "../peers/flowstore.js";

const SUBJECTS = 10_000;
const PROJECTS = 10;

/** A store of `n` workflowitems, each naming its own data subject; with `erase`, every subject erased. */
async function build(kv: KvStore, n: number, erase: boolean): Promise<{ createdMs: number; erasedMs: number }> {
  const store = await openFlowstore(kv, {});
  try {
    for (let p = 0; p < PROJECTS; p++) {
      await store.workflow.createProject(SYSTEM, { id: `p${p}`, displayName: `Project ${p}` });
      await store.workflow.createSubproject(SYSTEM, `p${p}`, { id: "s", displayName: "Fund", currency: "EUR", workflowMode: "unordered" });
    }
    const subject = (i: number) => `subject${String(i).padStart(5, "0")}`;
    let t0 = Date.now();
    await pool(
      Array.from({ length: n }, (_, i) => i),
      64,
      (i) =>
        store.workflow.createWorkflowitem(SYSTEM, `p${i % PROJECTS}`, "s", {
          id: `w${i}`,
          displayName: `Item ${i}`,
          amountType: "N/A",
          dataSubject: subject(i),
          description: `Applicant ${i}, Main Street ${i}`,
        } as never),
    );
    const createdMs = Date.now() - t0;
    t0 = Date.now();
    if (erase)
      await pool(
        Array.from({ length: n }, (_, i) => i),
        16,
        (i) => store.eraseSubject(SYSTEM, subject(i)),
      );
    return { createdMs, erasedMs: Date.now() - t0 };
  } finally {
    await store.close();
  }
}

export const erasure: Workload = {
  name: "erasure",
  description: `the register of erasures swept at open: a store whose ${SUBJECTS.toLocaleString("en")} data subjects are all erased against the same store with none erased, in process`,
  async run(ctx) {
    if (ctx.storeUrl !== undefined) throw new Error("the erasure workload compares two stores, each in a fresh LMDB directory: run it without --store");
    const n = Math.round(SUBJECTS * ctx.scale);
    const none = await ctx.openStore();
    const erased = await ctx.openStore();
    const a = await build(none, n, false);
    const b = await build(erased, n, true);
    ctx.note(
      `Each store: ${n.toLocaleString("en")} workflowitems in ${PROJECTS} projects created through the workflow commands (64 in flight) in ${(a.createdMs / 1000).toFixed(1)} s and ${(b.createdMs / 1000).toFixed(1)} s; the second store's ${n.toLocaleString("en")} subjects erased (16 at once: key destroyed, receipt, an erasure event in each item's chain, the register) in ${(b.erasedMs / 1000).toFixed(1)} s.`,
    );
    // Both stores as the sweep finds them: nothing left to repair (a run that writes would not be the sweep at open).
    if ((await keepErasures(erased)).reinstated.length !== 0 || (await keepErasures(none)).reinstated.length !== 0) throw new Error("the sweep found erasures to put back");
    const opened = (kv: KvStore) => async () => {
      const store = await openFlowstore(kv, {});
      await store.close();
    };
    await ctx.compare({
      ops: 1,
      rounds: 9,
      reference: { name: `open and close of a store of ${n.toLocaleString("en")} data subjects, none erased (opens/s)`, round: opened(none) },
      subject: { name: `open and close of the same store with all ${n.toLocaleString("en")} subjects erased (opens/s)`, round: opened(erased) },
      note: "both stores hold the same projects, items and subject partitions; the erased one also holds an erasure event in each item's chain, a receipt in each subject's partition and the register, which the sweep at open (keepErasures) reads",
    });
    await ctx.compare({
      ops: 1,
      rounds: 9,
      reference: {
        name: `the sweep alone (keepErasures), no erasure registered, ${n.toLocaleString("en")} subject partitions (sweeps/s)`,
        round: () => keepErasures(none).then(() => undefined),
      },
      subject: {
        name: `the sweep alone (keepErasures), ${n.toLocaleString("en")} erasures registered (sweeps/s)`,
        round: () => keepErasures(erased).then(() => undefined),
      },
      note: "every subject partition is walked in both; with erasures, each receipt is compared with the register's, the replaced histories are looked up, and each registered erasure is checked in its subject's partition",
    });
  },
};
