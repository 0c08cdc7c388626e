/**
 * The creates of one group under one subproject share what the group read: the partition writer reads a
 * key once per group (log/writer.ts), the store decodes the parent once per group and hands every create
 * the same frozen parent (write/writes.ts), and the workflow keeps a workflowitem's inherited permissions
 * per parent permissions and creator (commands.ts). What these caches must never do: serve a re-run after
 * a conflict the reads of the attempt that conflicted, give one creator another's permissions, or hide a
 * grant or revoke an earlier command of the same group made on the parent.
 *
 * A group is formed deterministically: a blocker holds the partition's queue while the commands queue
 * behind it, each queued before the next is started (a grant checks its grantee before it queues), so
 * they all run in the next group, in the order given.
 */
import { afterEach, expect, it } from "vitest";
import { SYSTEM, userActor, type Actor } from "../../src/access/actor.js";
import type { Partition } from "../../src/kv/contract.js";
import { ResourceStore } from "../../src/resources/store.js";
import { subprojectRef, Workflow, workflowitemRef } from "../../src/workflow/commands.js";
import { workflowSchema } from "../../src/workflow/schema.js";
import { workflowWithSubproject } from "../support/workflow.js";
import { forEachBackend, type BackendHandle } from "../conformance/backends.js";

const mary = userActor("mary", ["finance"]);
const jane = userActor("jane");
const ALL = workflowSchema.type("workflowitem").intents.all;

const handles: BackendHandle[] = [];
afterEach(async () => {
  while (handles.length) await handles.pop()!.destroy();
});

/** "ok" or the error's class name. */
const outcome = (p: Promise<unknown>): Promise<string> =>
  p.then(
    () => "ok",
    (e: Error) => e.constructor.name,
  );

/** Holds `partition`'s queue of `wf`'s writer until the returned release is called: what is queued meanwhile runs as one group. */
function hold(wf: Workflow, partition: Partition): { release: () => void; done: Promise<void> } {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  return { release, done: wf.store.writer.run(partition, SYSTEM, () => gate) };
}

/**
 * Starts commands one at a time, each once the previous one is in its partition's queue: `queue(start)`
 * resolves once `start`'s command is queued, to its outcome (wrapped, not to be awaited with it).
 */
function inOrder(wf: Workflow): (start: () => Promise<unknown>) => Promise<{ outcome: Promise<string> }> {
  const writer = wf.store.writer;
  const run = writer.run.bind(writer);
  let queued: (() => void) | null = null;
  writer.run = ((partition, actor, command) => {
    const result = run(partition, actor, command);
    queued?.();
    return result;
  }) as typeof writer.run;
  return async (start) => {
    const ready = new Promise<void>((r) => (queued = r));
    const result = outcome(start());
    await ready;
    queued = null;
    return { outcome: result };
  };
}

/** The holders of each intent of a workflowitem, sorted (as the system actor reads them). */
async function permissionsOf(wf: Workflow, w: string): Promise<Record<string, string[]>> {
  const p = await wf.listPermissions(SYSTEM, workflowitemRef("p", "s", w));
  return Object.fromEntries(Object.entries(p).map(([i, who]) => [i, [...who].sort()]));
}

const item = (id: string) => ({ id, displayName: id, amountType: "N/A" as const });

forEachBackend((backend) => {
  /** A project p with subproject s, where jane may create workflowitems (and holds nothing else). */
  async function open(): Promise<{ wf: Workflow; h: BackendHandle }> {
    const h = await backend.create();
    handles.push(h);
    const wf = await workflowWithSubproject(h.kv, mary);
    await wf.grant(mary, subprojectRef("p", "s"), "subproject.createWorkflowitem", "jane");
    return { wf, h };
  }

  /**
   * Store A runs a group [jane creates x1, a command waiting for B, jane creates x2] while store B (another
   * writer on the same kv: another process) changes the subproject; A's commit then conflicts and the
   * group re-runs. x1 read the subproject before B's change: the re-run must read it again.
   */
  async function conflictingGroup(change: (b: Workflow) => Promise<unknown>): Promise<{ a: Workflow; results: string[]; groups: number[] }> {
    const { wf: a, h } = await open();
    const b = new Workflow(new ResourceStore(h.kv, workflowSchema));
    const part = a.store.partitionOf(subprojectRef("p", "s"));
    // A's writer has the partition's head cached: its commit is guarded by the version it holds.
    await a.createWorkflowitem(jane, "p", "s", item("x0"));
    const groups: number[] = [];
    a.store.writer.onGroupCommit((n) => groups.push(n));
    const blocker = hold(a, part);
    let entered!: () => void;
    const waiting = new Promise<void>((r) => (entered = r));
    let proceed!: () => void;
    const gate = new Promise<void>((r) => (proceed = r));
    const x1 = outcome(a.createWorkflowitem(jane, "p", "s", item("x1")));
    const wait = a.store.writer.run(part, SYSTEM, async () => {
      entered();
      await gate;
    });
    const x2 = outcome(a.createWorkflowitem(jane, "p", "s", item("x2")));
    blocker.release();
    await blocker.done;
    await waiting; // x1 ran (and read the subproject); the group waits
    await change(b);
    proceed();
    const results = await Promise.all([x1, wait.then(() => "ok"), x2]);
    return { a, results, groups };
  }

  it("a group re-run after a conflict reads afresh: another writer's revoke refuses the re-run's creates", async () => {
    const { a, results, groups } = await conflictingGroup((b) => b.revoke(mary, subprojectRef("p", "s"), "subproject.createWorkflowitem", "jane"));
    // jane holds nothing on the subproject any more: not even its existence is shown to her
    expect(results).toEqual(["NotFoundError", "ok", "NotFoundError"]);
    expect(groups).toEqual([]); // the re-run wrote nothing: no commit
    for (const w of ["x1", "x2"]) expect(await outcome(a.listPermissions(SYSTEM, workflowitemRef("p", "s", w)))).toBe("NotFoundError");
    expect(await a.store.audit.verify(a.store.partitionOf(subprojectRef("p", "s")))).toMatchObject({ ok: true });
  });

  it("a group re-run after a conflict reads afresh: another writer's grant on the subproject is inherited by the re-run's creates", async () => {
    const { a, results, groups } = await conflictingGroup((b) => b.grant(mary, subprojectRef("p", "s"), "subproject.viewDetails", "val"));
    expect(results).toEqual(["ok", "ok", "ok"]);
    expect(groups).toEqual([3]);
    for (const w of ["x1", "x2"]) expect((await permissionsOf(a, w))["workflowitem.viewDetails"]).toEqual(["jane", "mary", "val"]);
    expect((await permissionsOf(a, "x0"))["workflowitem.viewDetails"]).toEqual(["jane", "mary"]);
    expect(await a.store.audit.verify(a.store.partitionOf(subprojectRef("p", "s")))).toMatchObject({ ok: true });
  });

  it("creators mixed in one group each get their own permissions, and see every grant and revoke an earlier command of the group made on the subproject", async () => {
    const { wf } = await open();
    const s = subprojectRef("p", "s");
    const groups: number[] = [];
    wf.store.writer.onGroupCommit((n) => groups.push(n));
    const blocker = hold(wf, wf.store.partitionOf(s));
    const queue = inOrder(wf);
    const create = (who: Actor, id: string) => queue(() => wf.createWorkflowitem(who, "p", "s", item(id)));
    const results = [
      await create(mary, "m1"),
      await create(jane, "j1"),
      await create(mary, "m2"),
      await queue(() => wf.grant(mary, s, "subproject.viewDetails", "val")),
      await create(jane, "j2"),
      await create(mary, "m3"),
      await queue(() => wf.revoke(mary, s, "subproject.createWorkflowitem", "jane")),
      await create(jane, "j3"),
      await queue(() => wf.grant(mary, s, "subproject.createWorkflowitem", "jane")),
      await create(jane, "j4"),
      await queue(() => wf.revoke(mary, s, "subproject.viewDetails", "val")),
      await create(mary, "m4"),
      await create(jane, "j5"),
    ];
    blocker.release();
    await blocker.done;
    expect(await Promise.all(results.map((r) => r.outcome))).toEqual(["ok", "ok", "ok", "ok", "ok", "ok", "ok", "NotFoundError", "ok", "ok", "ok", "ok", "ok"]);
    expect(groups).toEqual([12]); // every command but the refused one, in one commit (the blocker wrote nothing)

    // What a workflowitem of `creator` starts with: every intent to its creator, and the subproject's holders of the mapped intents (mary's, val's while granted).
    const expected = (creator: string, val: boolean): Record<string, string[]> =>
      Object.fromEntries(ALL.map((i) => [i, [...new Set([creator, "mary", ...(val && i === "workflowitem.viewDetails" ? ["val"] : [])])].sort()]));
    for (const [w, creator, withVal] of [
      ["m1", "mary", false],
      ["j1", "jane", false],
      ["m2", "mary", false],
      ["j2", "jane", true],
      ["m3", "mary", true],
      ["j4", "jane", true],
      ["m4", "mary", false],
      ["j5", "jane", false],
    ] as const) {
      expect(await permissionsOf(wf, w), w).toEqual(expected(creator, withVal));
    }
    expect(await outcome(wf.listPermissions(SYSTEM, workflowitemRef("p", "s", "j3")))).toBe("NotFoundError");
    expect(await wf.store.audit.verify(wf.store.partitionOf(s))).toMatchObject({ ok: true });
  });
});
