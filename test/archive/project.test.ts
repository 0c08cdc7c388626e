/** Archiving a closed project as one snapshot, dropping it, and restoring it byte for byte (every backend). */
import { randomBytes } from "node:crypto";
import { afterEach, beforeEach, expect, it } from "vitest";
import { GlobalPermissions } from "../../src/access/global.js";
import { IntentRegistry } from "../../src/access/intents.js";
import { Archive, ARCHIVE_INTENTS } from "../../src/archive/archive.js";
import { archiveProject, PROJECT_ARCHIVE_FILE, restoreProject, type ProjectArchiveDeps } from "../../src/workflow/archive.js";
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from "../../src/errors.js";
import { allPartitions, scanAll, type KvStore } from "../../src/kv/contract.js";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { ResourceStore } from "../../src/resources/store.js";
import { projectRef, subprojectRef, Workflow, workflowitemRef } from "../../src/workflow/commands.js";
import { workflowSchema } from "../../src/workflow/schema.js";
import { forEachBackend, type BackendHandle } from "../conformance/backends.js";
import { collect } from "./helpers.js";

const mary = userActor("mary", ["finance"]);
const jane = userActor("jane");
const ITEMS = 400; // enough entries for several restore batches

async function dumpPartition(kv: KvStore, p: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of scanAll(kv, ["project", p], { limit: 1000 })) out.push(`${e.keyBytes.toString("hex")}=${e.value.toString("hex")}`);
  return out;
}

/** One server's seal key: the snapshot travels to the other store, which the same server restores into. */
const SEAL_KEY = randomBytes(32);

function open(kv: KvStore): { wf: Workflow; deps: ProjectArchiveDeps; archive: Archive } {
  let t = Date.parse("2026-03-01T00:00:00Z");
  const global = new GlobalPermissions(kv, { intents: new IntentRegistry(workflowSchema.globalIntents, ARCHIVE_INTENTS) });
  const wf = new Workflow(new ResourceStore(kv, workflowSchema, { clock: () => (t += 1000), global }));
  const archive = new Archive(kv, { global });
  return { wf, archive, deps: { archive, store: wf.store, sealKey: async () => SEAL_KEY } };
}

/** Everything a reader sees of the project. */
async function reads(wf: Workflow, p: string) {
  const { project, subprojects } = await wf.projectDetails(mary, p);
  const subs = [];
  for (const s of subprojects.items) {
    const { subproject, workflowitems } = await wf.subprojectDetails(mary, p, s.id);
    subs.push({ subproject, workflowitems, history: await wf.history(mary, subprojectRef(p, s.id), { limit: 10_000 }) });
  }
  return {
    project,
    subs,
    history: await wf.history(mary, projectRef(p), { limit: 10_000 }),
    itemHistory: await wf.history(mary, workflowitemRef(p, "small", "w1"), { limit: 10_000 }),
    permissions: await wf.listPermissions(mary, subprojectRef(p, "small")),
  };
}

forEachBackend((backend) => {
  let h: BackendHandle;
  let other: BackendHandle;
  let src: ReturnType<typeof open>;

  /** A closed project: one small ordered subproject with grants, one with ITEMS workflowitems. */
  async function closedProject(p: string): Promise<void> {
    const { wf } = src;
    await wf.createProject(mary, { id: p, displayName: "School", projectedBudgets: [{ organization: "Ministry", value: "1000.00", currencyCode: "EUR" }] });
    await wf.createSubproject(mary, p, { id: "small", displayName: "Small", currency: "EUR", workflowMode: "ordered" });
    for (const w of ["w1", "w2", "w3"]) await wf.createWorkflowitem(mary, p, "small", { id: w, displayName: w, amountType: "N/A" });
    await wf.reorderWorkflowitems(mary, p, "small", ["w3", "w1"]);
    await wf.grant(mary, subprojectRef(p, "small"), "subproject.viewDetails", "jane");
    for (const w of ["w3", "w1", "w2"]) await wf.closeWorkflowitem(mary, p, "small", w);
    await wf.closeSubproject(mary, p, "small");
    await wf.createSubproject(mary, p, { id: "big", displayName: "Big", currency: "EUR" });
    const ids = Array.from({ length: ITEMS }, (_, i) => `i${String(i).padStart(4, "0")}`);
    await Promise.all(ids.map((id) => wf.createWorkflowitem(mary, p, "big", { id, displayName: id, amountType: "N/A" })));
    await Promise.all(ids.map((id) => wf.closeWorkflowitem(mary, p, "big", id)));
    await wf.closeSubproject(mary, p, "big");
    await wf.closeProject(mary, p);
  }

  beforeEach(async () => {
    h = await backend.create();
    other = await backend.create();
    src = open(h.kv);
    await src.wf.store.global.grant(SYSTEM, "global.createProject", "mary");
    await src.wf.store.global.grant(SYSTEM, "global.writeArchive", "mary");
  });
  afterEach(async () => {
    await h.destroy();
    await other.destroy();
  });

  it("archives a closed project as one snapshot and restores it into another store byte for byte, chain verified, reads equal", async () => {
    await closedProject("p");
    const before = await dumpPartition(h.kv, "p");
    const expected = await reads(src.wf, "p");

    const archived = await archiveProject(src.deps, mary, "p");
    expect(archived.dropped).toBe(false);
    expect(archived.snapshot.id).toMatch(/^project:p-\d+$/);
    expect(archived.counts).toMatchObject({ entries: before.length, resources: { project: 1, subproject: 2, workflowitem: ITEMS + 3 } });
    const snap = await src.archive.read(SYSTEM, archived.snapshot.id);
    expect(snap.document.kind).toEqual(["flowstore.project"]);
    expect(snap.document.projectId).toEqual(["p"]);
    expect(snap.document.chainHead).toEqual([archived.chainHead]);
    expect(snap.files.map((f) => f.name)).toEqual([PROJECT_ARCHIVE_FILE]);
    const lines = (await collect((await src.archive.openFile(SYSTEM, snap.id, PROJECT_ARCHIVE_FILE)).stream)).toString("utf8").trimEnd().split("\n");
    expect(lines).toHaveLength(before.length);
    expect(JSON.parse(lines[0]!)).toEqual({ k: expect.any(String), v: expect.any(String) });
    expect(await dumpPartition(h.kv, "p")).toEqual(before); // archiving without drop changes nothing

    // The snapshot travels: the archive's partitions are copied to the other store (as an export would).
    for (const kind of ["archive", "archive-file", "archive-chunks"]) {
      for await (const part of allPartitions(h.kv, kind)) {
        for await (const e of scanAll(h.kv, part)) await other.kv.commit(part, [{ type: "put", key: e.key, value: e.value }]);
      }
    }
    const dst = open(other.kv);
    await dst.wf.store.global.grant(SYSTEM, "global.writeArchive", "mary");
    await expect(restoreProject(dst.deps, mary, snap.id)).rejects.toBeInstanceOf(ForbiddenError); // needs global.createProject too
    await dst.wf.store.global.grant(SYSTEM, "global.createProject", "mary");
    // Who may not view the archived project (by its sealed permissions) is answered as for a missing snapshot.
    for (const intent of ["global.writeArchive", "global.createProject"] as const) await dst.wf.store.global.grant(SYSTEM, intent, "tom");
    await expect(restoreProject(dst.deps, userActor("tom"), snap.id)).rejects.toMatchObject({ status: 404, message: `snapshot ${snap.id} does not exist` });
    expect(await dumpPartition(other.kv, "p")).toEqual([]);
    const restored = await restoreProject(dst.deps, mary, snap.id);
    expect(restored).toMatchObject({ projectId: "p", entries: before.length, verify: { ok: true, checked: archived.chainHead.seq } });
    expect(await dumpPartition(other.kv, "p")).toEqual(before);
    expect(await reads(dst.wf, "p")).toEqual(expected);
    expect((await dst.wf.listProjects(mary)).items.map((b) => JSON.parse(b.toString()).id)).toEqual(["p"]);
    // The restored chain continues: a new write appends to it and it still verifies.
    await dst.wf.grant(mary, projectRef("p"), "project.viewDetails", "jane");
    expect(await dst.wf.store.audit.verify(["project", "p"])).toMatchObject({ ok: true, checked: archived.chainHead.seq + 1 });
    // Restoring again where it exists is a conflict and changes nothing.
    const now = await dumpPartition(other.kv, "p");
    await expect(restoreProject(dst.deps, mary, snap.id)).rejects.toMatchObject({ status: 409, field: "projectId" });
    expect(await dumpPartition(other.kv, "p")).toEqual(now);
  });

  it("drops the live partition after archiving, and restores it into the same store", async () => {
    await closedProject("p");
    const before = await dumpPartition(h.kv, "p");
    const expected = await reads(src.wf, "p");
    const events: string[] = [];
    src.wf.store.onChange((_p, evs) => events.push(...evs.map((e) => e.type)));

    const archived = await archiveProject(src.deps, mary, "p", { drop: true });
    expect(archived.dropped).toBe(true);
    expect(events).toEqual(["project.deleted"]);
    expect(await dumpPartition(h.kv, "p")).toEqual([]);
    expect((await h.kv.listPartitions("project")).partitions).toEqual([]);
    await expect(src.wf.projectDetails(mary, "p")).rejects.toBeInstanceOf(NotFoundError);

    const restored = await restoreProject(src.deps, mary, archived.snapshot.id);
    expect(restored.verify).toMatchObject({ ok: true });
    expect(await dumpPartition(h.kv, "p")).toEqual(before);
    expect(await reads(src.wf, "p")).toEqual(expected);
  });

  it("refuses an open project, a caller without the intents, a missing project; nothing is stored", async () => {
    await src.wf.createProject(mary, { id: "open", displayName: "Open" });
    await expect(archiveProject(src.deps, mary, "open")).rejects.toMatchObject({ status: 409, field: "status" });
    await expect(archiveProject(src.deps, mary, "nope")).rejects.toBeInstanceOf(NotFoundError);
    await expect(archiveProject(src.deps, mary, "")).rejects.toBeInstanceOf(ValidationError);
    await expect(archiveProject(src.deps, mary, "open", { drop: "yes" as never })).rejects.toMatchObject({ field: "drop" });
    await src.wf.closeProject(mary, "open");
    // jane: no global.writeArchive; then with it but without project.close on the project
    await expect(archiveProject(src.deps, jane, "open")).rejects.toBeInstanceOf(ForbiddenError);
    await src.wf.store.global.grant(SYSTEM, "global.writeArchive", "jane");
    // jane holds nothing on the project: as if it did not exist (no existence oracle).
    await expect(archiveProject(src.deps, jane, "open")).rejects.toBeInstanceOf(NotFoundError);
    expect((await src.archive.findSnapshotsByUniqueId(SYSTEM, "project:open")).items).toEqual([]);
    await src.wf.grant(mary, projectRef("open"), "project.close", "jane");
    const done = await archiveProject(src.deps, jane, "open");
    expect((await src.archive.findSnapshotsByUniqueId(SYSTEM, "project:open")).items.map((s) => s.id)).toEqual([done.snapshot.id]);
  });

  it("keeps the project when it changes between the snapshot and the drop", async () => {
    await closedProject("p");
    const { wf } = src;
    class Meddling extends Archive {
      override async write(...args: Parameters<Archive["write"]>) {
        const summary = await super.write(...args);
        await wf.grant(mary, subprojectRef("p", "big"), "subproject.viewDetails", "jane");
        return summary;
      }
    }
    const archive = new Meddling(h.kv);
    const err = await archiveProject({ ...src.deps, archive }, mary, "p", { drop: true }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect((err as Error).message).toMatch(/not dropped/);
    expect((await wf.projectDetails(mary, "p")).project.data.status).toBe("closed");
    expect(await wf.store.audit.verify(["project", "p"])).toMatchObject({ ok: true });
  });

  it("refuses a snapshot that is not a project archive, and finishes over the leftover of an interrupted restore", async () => {
    const plain = await src.archive.write(SYSTEM, "project:x", { kind: ["something else"] });
    await expect(restoreProject(src.deps, mary, plain.id)).rejects.toMatchObject({ status: 400, field: "snapshotId" });
    await expect(restoreProject(src.deps, mary, "no-such-1")).rejects.toBeInstanceOf(NotFoundError);

    await closedProject("p");
    const before = await dumpPartition(h.kv, "p");
    const archived = await archiveProject(src.deps, mary, "p", { drop: true });
    // A restore killed after its first commit leaves the marker, the head and some entries.
    await h.kv.commit(
      ["project", "p"],
      [
        { type: "put", key: ["m", "restore"], value: Buffer.from("{}") },
        { type: "put", key: ["m", "head"], value: Buffer.from(JSON.stringify(archived.chainHead)) },
        { type: "put", key: ["l", 1], value: Buffer.from("partial") },
      ],
    );
    const restored = await restoreProject(src.deps, mary, archived.snapshot.id);
    expect(restored.verify.ok).toBe(true);
    expect(await dumpPartition(h.kv, "p")).toEqual(before);
  });
});
