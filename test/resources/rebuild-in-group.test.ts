/**
 * `rebuildOrderIndex` (audit/order-index.ts) rewrites a partition's order index and sums from its log, as
 * a command of the partition's writer. It may share its group with other commands of the partition (a
 * sums build at open, an upgrade, a read that finds the index missing, while writes go on): the log it
 * replays must then be the group's, with the events of the commands before it in the group that are not
 * committed yet, or the rewrite drops what those commands contributed and `verify` finds the sums
 * differing from the replay of the log.
 */
import { afterEach, expect, it } from "vitest";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { subprojectRef, workflowitemRef } from "../../src/workflow/commands.js";
import { workflowWithSubproject } from "../support/workflow.js";
import { forEachBackend, type BackendHandle } from "../conformance/backends.js";

const mary = userActor("mary", ["finance"]);

const handles: BackendHandle[] = [];
afterEach(async () => {
  while (handles.length) await handles.pop()!.destroy();
});

const item = (id: string, amount: string) => ({ id, displayName: id, amountType: "disbursed" as const, amount, currency: "EUR" });

forEachBackend((backend) => {
  it("a rebuild of the order index and sums sharing a group with other commands keeps what the earlier ones wrote, and the partition verifies", async () => {
    const h = await backend.create();
    handles.push(h);
    const wf = await workflowWithSubproject(h.kv, mary);
    await wf.createWorkflowitem(mary, "p", "s", item("w0", "1"));
    const part = wf.store.partitionOf(subprojectRef("p", "s"));
    const groups: number[] = [];
    wf.store.writer.onGroupCommit((n) => groups.push(n));

    // One group: a blocker holds the partition's queue while the commands (each queued synchronously) queue behind it.
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const blocker = wf.store.writer.run(part, SYSTEM, () => gate);
    const results = [
      wf.createWorkflowitem(mary, "p", "s", item("w1", "10")),
      wf.update(mary, workflowitemRef("p", "s", "w0"), { amount: "2" }),
      wf.store.rebuildOrderIndex(part),
      wf.createWorkflowitem(mary, "p", "s", item("w2", "100")),
    ];
    release();
    await blocker;
    await Promise.all(results);
    expect(groups).toEqual([4]);

    expect(await wf.store.audit.verify(part)).toMatchObject({ ok: true });
    // the order index has every item (w1's entry is the create's, rewritten by the rebuild)
    const children = await wf.store.reads.listChildren(mary, subprojectRef("p", "s"), "workflowitem", { limit: 10 });
    expect(children.items.map((c) => c.id)).toEqual(["w0", "w1", "w2"]);
    // and a rebuild alone afterwards changes nothing
    const before = (await h.kv.scan(part, { limit: 10_000 })).entries.map((e) => `${e.keyBytes.toString("hex")}=${e.value.toString("hex")}`);
    await wf.store.rebuildOrderIndex(part);
    const after = (await h.kv.scan(part, { limit: 10_000 })).entries.map((e) => `${e.keyBytes.toString("hex")}=${e.value.toString("hex")}`);
    expect(after).toEqual(before);
  });
});
