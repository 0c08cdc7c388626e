/**
 * Archiving a closed project (workflow policy over the resources' partition dump, stored with the
 * archive's Imixs-Archive-style snapshots): its whole partition becomes ONE snapshot with unique id
 * `project:<id>`, and the live partition can then be dropped. Restoring the snapshot into a store where
 * the project does not exist reproduces the partition byte for byte (see resources/partition-dump.ts).
 *
 * The snapshot:
 *   document   a readable summary: kind "flowstore.project", format 1, projectId, partition, project
 *              (the public envelope), permissions, counts {entries, bytes, resources by type, events},
 *              chainHead {seq, hash}, archivedAt, archivedBy, file
 *              seal: the server's HMAC (archive/seal.ts) over the rest of the document and the file's
 *              sha-256 — what makes it restorable
 *   file       `partition.ndjson`: the partition dump, streamed (read twice: once to hash it for the seal).
 *
 * Restore trusts no bytes: a snapshot without the seal of this server's key (an upload, however well
 * made, or an archive whose summary or file changed) is refused with a 400 naming `snapshotId`; a sealed
 * one is then rebuilt only of records this store would write (resources/partition-dump.ts), its chain
 * recomputed, the file's bytes hashed against the sealed sha-256, and its project and permissions
 * compared with the sealed summary before the project becomes visible; a restored partition that then
 * does not verify (resources/audit.ts: chain and replay) is dropped again.
 *
 * A change while the project is dumped refuses the archive (ConflictError, nothing stored). Dropping
 * uses ResourceStore.lifecycle.delete, refused when anything was appended to the log since the archived head, and
 * then ResourceStore.lifecycle.purge, both as the system actor once the caller's intents are checked.
 *
 * Permissions: archiving needs `global.writeArchive` and the project's `project.close` intent (the
 * holders of close decide the end of a project's life); restoring needs `global.writeArchive` and
 * `global.createProject`.
 */
import { createHash } from "node:crypto";
import { Transform, type Readable } from "node:stream";
import type { Archive, SnapshotReadPolicy } from "../archive/archive.js";
import { SEAL_ITEM, sealHolds, sealOf } from "../archive/seal.js";
import { canonicalJson } from "../kv/canonical.js";
import type { ArchiveDocument } from "../archive/document.js";
import type { SnapshotSummary } from "../archive/snapshots.js";
import { ConflictError, NotFoundError, ValidationError } from "../errors.js";
import { allows, SYSTEM, type Actor, type Permissions } from "../access/actor.js";
import type { VerifyResult } from "../resources/model/events.js";
import type { ChainHead, DumpNames, PartitionCounts, ResourceStore } from "../resources/store.js";
import { projectRef } from "./commands.js";

export type { ChainHead, PartitionCounts } from "../resources/store.js";

export const PROJECT_ARCHIVE_KIND = "flowstore.project";
export const PROJECT_ARCHIVE_FORMAT = 1;
export const PROJECT_ARCHIVE_FILE = "partition.ndjson";
/** The intent a caller needs on the project to archive it. */
export const ARCHIVE_PROJECT_INTENT = "project.close";

export const projectUniqueId = (projectId: string): string => `project:${projectId}`;

/** How the partition dump names a project's errors. */
const NAMES: DumpNames = { field: "projectId", dump: PROJECT_ARCHIVE_FILE, dumpField: "snapshotId", activity: "archived" };

/** What the project functions work on: the archive, the store holding the projects, the seal's key. */
export interface ProjectArchiveDeps {
  readonly archive: Archive;
  readonly store: ResourceStore;
  /** The key of the archive seal (archive/seal.ts's loadSealKey), loaded when first needed. */
  readonly sealKey: () => Promise<Uint8Array>;
}

export interface ArchivedProject {
  readonly projectId: string;
  readonly snapshot: SnapshotSummary;
  readonly counts: PartitionCounts;
  readonly chainHead: ChainHead;
  /** True when the live partition was dropped after the snapshot was stored. */
  readonly dropped: boolean;
}

export interface RestoredProject {
  readonly projectId: string;
  readonly snapshotId: string;
  readonly entries: number;
  /** The restored partition's chain, recomputed. */
  readonly verify: VerifyResult;
}

function assertProjectId(store: ResourceStore, projectId: unknown): string {
  if (typeof projectId !== "string") throw new ValidationError("a project id is a string", "projectId");
  store.partitionOf(projectRef(projectId)); // validates the id (field projectId)
  return projectId;
}

/**
 * Archives a closed project as one snapshot `project:<id>-<millis>`; with `drop`, the live partition
 * is then deleted and purged. ForbiddenError without the intents, NotFoundError when the project does
 * not exist or the caller may not know of it (the one check of the resources layer), ConflictError when it is open or changes meanwhile (nothing stored then; with `drop`, a
 * change between the snapshot and the drop keeps the project and says so).
 */
export async function archiveProject(deps: ProjectArchiveDeps, actor: Actor, projectId: string, options: { drop?: boolean } = {}): Promise<ArchivedProject> {
  const { archive, store } = deps;
  assertProjectId(store, projectId);
  if (options.drop !== undefined && typeof options.drop !== "boolean") throw new ValidationError("drop is true or false", "drop");
  await store.global.assert(actor, "global.writeArchive");
  const ref = projectRef(projectId);
  await store.reads.assertIntent(actor, ref, ARCHIVE_PROJECT_INTENT);
  const project = await store.reads.get(SYSTEM, ref);
  const permissions = await store.reads.listPermissions(SYSTEM, ref);
  if (project.data.status !== "closed") throw new ConflictError(`project ${projectId} is open: only a closed project can be archived`, "status");

  // First pass: the file's sha-256 for the seal; the second pass is stored, and must be the same
  // partition (every write moves the head; a move during the second pass refuses the dump).
  const first = await store.dumps.dump(ref, NAMES);
  const hash = createHash("sha256");
  for await (const piece of first.content) hash.update(piece);
  const sha256 = hash.digest("hex");
  const dump = await store.dumps.dump(ref, NAMES);
  if (dump.head.seq !== first.head.seq || dump.head.hash !== first.head.hash)
    throw new ConflictError(`project ${projectId} changed while it was being archived; try again`, "projectId");
  const document: ArchiveDocument = {
    kind: [PROJECT_ARCHIVE_KIND],
    format: [PROJECT_ARCHIVE_FORMAT],
    projectId: [projectId],
    partition: [[...store.partitionOf(ref)] as string[]],
    project: [project as unknown as ArchiveDocument[string][number]],
    permissions: [permissions],
    counts: [dump.counts as unknown as ArchiveDocument[string][number]],
    chainHead: [{ seq: dump.head.seq, hash: dump.head.hash }],
    archivedAt: [new Date().toISOString()],
    archivedBy: [actor.id],
    file: [PROJECT_ARCHIVE_FILE],
  };
  document[SEAL_ITEM] = [sealOf(await deps.sealKey(), document, sha256)];
  const snapshot = await archive.write(actor, projectUniqueId(projectId), document, [{ name: PROJECT_ARCHIVE_FILE, content: dump.content }]);

  let dropped = false;
  if (options.drop === true) {
    await store.lifecycle.delete(SYSTEM, ref, { ifChainAt: dump.head.seq }).catch((e: unknown) => {
      if (e instanceof ConflictError && e.field === "chain") {
        throw new ConflictError(`project ${projectId} changed after it was archived as ${snapshot.id}; it was not dropped`, "projectId");
      }
      throw e;
    });
    await store.lifecycle.purge(SYSTEM, ref);
    dropped = true;
  }
  return { projectId, snapshot, counts: dump.counts, chainHead: dump.head, dropped };
}

function docValue(doc: ArchiveDocument, item: string): unknown {
  const values = doc[item];
  return Array.isArray(values) ? values[0] : undefined;
}

/**
 * Restores a project snapshot (written by archiveProject) into this store, where the project must not
 * exist (a deleted project's log must be purged first). Returns the restored partition's verification.
 */
export async function restoreProject(deps: ProjectArchiveDeps, actor: Actor, snapshotId: string): Promise<RestoredProject> {
  const { archive, store } = deps;
  await store.global.assert(actor, "global.writeArchive");
  await store.global.assert(actor, "global.createProject");
  const snapshot = await archive.read(SYSTEM, snapshotId); // the caller's intents are checked above
  const doc = snapshot.document;
  if (docValue(doc, "kind") !== PROJECT_ARCHIVE_KIND || docValue(doc, "format") !== PROJECT_ARCHIVE_FORMAT) {
    throw new ValidationError(`snapshot ${snapshotId} is not a project archive (format ${PROJECT_ARCHIVE_FORMAT})`, "snapshotId");
  }
  const projectId = assertProjectId(store, docValue(doc, "projectId"));
  const counts = docValue(doc, "counts") as PartitionCounts | undefined;
  const chainHead = docValue(doc, "chainHead") as ChainHead | undefined;
  const complete =
    snapshot.files.some((f) => f.name === PROJECT_ARCHIVE_FILE) &&
    Number.isSafeInteger(counts?.entries) &&
    Number.isSafeInteger(chainHead?.seq) &&
    (typeof chainHead?.hash === "string" || chainHead?.hash === null);
  if (!complete || !counts || !chainHead) {
    throw new ValidationError(`snapshot ${snapshotId} is not a complete project archive`, "snapshotId");
  }
  const file = snapshot.files.find((f) => f.name === PROJECT_ARCHIVE_FILE)!;
  if (!sealHolds(await deps.sealKey(), doc, file.sha256, docValue(doc, SEAL_ITEM))) {
    throw new ValidationError(`snapshot ${snapshotId} does not bear this server's archive seal: only project archives made here are restorable`, "snapshotId");
  }
  // Whoever may not view the archived project (by its sealed permissions) is answered as a reader is: as if it did not exist.
  if (!actor.system && !(await projectArchiveReadPolicy(store)(actor, snapshot.uniqueId, async () => snapshot.document))) {
    throw new NotFoundError(`snapshot ${snapshotId} does not exist`);
  }
  const refuse = (what: string): ValidationError => new ValidationError(`snapshot ${snapshotId}: ${what}`, "snapshotId");
  const hash = createHash("sha256");
  const { entries, verify } = await store.dumps.restore(
    projectRef(projectId),
    {
      counts,
      head: chainHead,
      open: async () => hashed((await archive.openFile(SYSTEM, snapshot.id, PROJECT_ARCHIVE_FILE)).stream, hash),
      marker: { snapshotId: snapshot.id },
      accept: ({ envelope, permissions }) => {
        if (hash.digest("hex") !== file.sha256) throw refuse(`${PROJECT_ARCHIVE_FILE} is not the sealed file`);
        if (canonicalJson(envelope) !== canonicalJson(docValue(doc, "project"))) throw refuse("the restored project differs from the sealed summary");
        if (canonicalJson(permissions) !== canonicalJson(docValue(doc, "permissions"))) throw refuse("the restored permissions differ from the sealed summary");
      },
    },
    NAMES,
  );
  return { projectId, snapshotId: snapshot.id, entries, verify };
}

/**
 * The archive's read policy for project archives (issue 29, finding 8): a project's snapshot is read, and
 * its files fetched (by name or by content hash), only by whoever may view the project by the
 * permissions sealed in it (the project type's view intent, `project.viewDetails`, held by the actor or
 * one of its groups as they are now), as the live project was; anyone else is answered as if it did not
 * exist. Other snapshots are read with `global.readArchive` alone.
 */
export function projectArchiveReadPolicy(store: ResourceStore): SnapshotReadPolicy {
  const view = store.schema.types.get(projectRef("-").type)?.intents.view;
  return async (actor, uniqueId, document) => {
    if (!uniqueId.startsWith(projectUniqueId(""))) return true;
    const doc = await document();
    if (docValue(doc, "kind") !== PROJECT_ARCHIVE_KIND) return true;
    return view !== undefined && allows(docValue(doc, "permissions") as Permissions | undefined, actor, view);
  };
}

/** The stream, its bytes fed to `hash` on the way. */
function hashed(stream: Readable, hash: ReturnType<typeof createHash>): Readable {
  const tap = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
  stream.on("error", (e) => tap.destroy(e));
  tap.on("close", () => stream.destroy());
  return stream.pipe(tap);
}
