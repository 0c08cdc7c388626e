/**
 * Archiving a closed project (DESIGN "Archive"; issue 6 item 6): its whole partition — every resource
 * with its permissions, orderings, history index and the hash-chained log — becomes ONE snapshot with
 * unique id `project:<id>`, and the live partition can then be dropped. Restoring the snapshot into a
 * store where the project does not exist reproduces the partition byte for byte (same keys, same values;
 * kv versions are the new store's), so its chain verifies and reads equal the original's.
 *
 * The snapshot:
 *   document   a readable summary: kind "flowstore.project", format 1, projectId, partition, project
 *              (the public envelope), permissions, counts {entries, bytes, resources by type, events},
 *              chainHead {seq, hash}, archivedAt, archivedBy, file
 *   file       `partition.ndjson`: one line per kv entry in key order, `{"k": base64 key, "v": base64
 *              value}` (keys relative to the partition), streamed page by page — never a whole partition
 *              in memory.
 *
 * Consistency: a closed project still takes permission changes and deletes, and every write of the
 * partition moves its chain head. The summary pass and the streamed pass each read the head before and
 * after; a moved head makes the archive refuse (ConflictError, nothing stored). Dropping uses
 * ResourceStore.delete with a guard (nothing appended to the log since the archived head) and then
 * ResourceStore.purge, both as the system actor once the caller's intents are checked.
 *
 * Restoring writes the entries in batches. The first commit (precondition: the partition has no chain
 * head and no restore marker) puts the chain head — so a concurrent create of the same id fails — and a
 * restore marker `["m","restore"]`; the root's state `["s",0]` is held back to the last commit, which
 * also removes the marker, so the project is invisible (reads 404, lists skip it) until it is whole.
 * Every later commit checks that the marker and the head are still as written. A restore killed
 * half-way leaves the marker; the next restore of that project drops the leftover and starts over.
 *
 * Permissions: archiving needs `global.writeArchive` and the project's `project.close` intent (the
 * holders of close decide the end of a project's life); restoring needs `global.writeArchive` and
 * `global.createProject`.
 */
import { createInterface } from "node:readline";
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from "../errors.js";
import { scanAll, type Key, type KvStore, type Op, type Partition } from "../kv/contract.js";
import { decode, encode } from "../kv/tuple.js";
import { allows, SYSTEM, type Actor, type Permissions } from "../resources/actor.js";
import type { VerifyResult } from "../resources/events.js";
import { HEAD_KEY, locate, logKey, stateKey } from "../resources/keys.js";
import { RecordView, type Envelope } from "../resources/record.js";
import type { ResourceStore } from "../resources/store.js";
import { projectRef } from "../workflow/commands.js";
import type { Archive } from "./archive.js";
import type { ArchiveDocument } from "./document.js";
import type { SnapshotSummary } from "./snapshots.js";

export const PROJECT_ARCHIVE_KIND = "flowstore.project";
export const PROJECT_ARCHIVE_FORMAT = 1;
export const PROJECT_ARCHIVE_FILE = "partition.ndjson";
/** The intent a caller needs on the project to archive it. */
export const ARCHIVE_PROJECT_INTENT = "project.close";

const RESTORE_MARKER: Key = ["m", "restore"];
const BATCH_ENTRIES = 1000;
const BATCH_BYTES = 4 * 1024 * 1024;
/** Lines are joined into pieces of about this size before they are handed to the archive. */
const PIECE_BYTES = 256 * 1024;
const SUMMARY_ATTEMPTS = 3;

export const projectUniqueId = (projectId: string): string => `project:${projectId}`;

/** What the project functions work on: the archive and the store holding the projects. */
export interface ProjectArchiveDeps {
  readonly archive: Archive;
  readonly store: ResourceStore;
}

export interface ChainHead {
  readonly seq: number;
  readonly hash: string | null;
}

export interface PartitionCounts {
  /** kv entries of the partition. */
  readonly entries: number;
  /** Bytes of keys plus values. */
  readonly bytes: number;
  /** Live resources by type (state records). */
  readonly resources: Record<string, number>;
  /** Events in the log (the chain head's seq). */
  readonly events: number;
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

interface HeadState {
  readonly head: ChainHead;
  /** kv version of the head key (null: no head). */
  readonly version: number | null;
}

async function readHead(kv: KvStore, partition: Partition): Promise<HeadState> {
  const e = await kv.get(partition, HEAD_KEY);
  if (!e) return { head: { seq: 0, hash: null }, version: null };
  const h = JSON.parse(e.value.toString("utf8")) as ChainHead;
  return { head: { seq: h.seq, hash: h.hash }, version: e.version };
}

const moved = (a: HeadState, b: HeadState): boolean => a.version !== b.version;

function changedWhileArchiving(projectId: string): ConflictError {
  return new ConflictError(`project ${projectId} changed while it was being archived; try again`, "projectId");
}

/** Counts a partition in one pass; retried when the chain head moves meanwhile. */
async function summarize(kv: KvStore, partition: Partition, projectId: string): Promise<{ counts: PartitionCounts; head: HeadState }> {
  for (let attempt = 0; attempt < SUMMARY_ATTEMPTS; attempt++) {
    const before = await readHead(kv, partition);
    let entries = 0;
    let bytes = 0;
    const resources: Record<string, number> = {};
    for await (const e of scanAll(kv, partition, { limit: 1000 })) {
      entries++;
      bytes += e.keyBytes.length + e.value.length;
      const key = e.key;
      if (key[0] === "s") {
        const type = key.length === 2 ? (partition[0] as string) : (key.at(-2) as string);
        resources[type] = (resources[type] ?? 0) + 1;
      }
    }
    const after = await readHead(kv, partition);
    if (!moved(before, after)) return { counts: { entries, bytes, resources, events: after.head.seq }, head: after };
  }
  throw changedWhileArchiving(projectId);
}

/** The partition as NDJSON pieces, in key order; refuses (ConflictError) when it changes meanwhile. */
async function* ndjsonOf(kv: KvStore, partition: Partition, projectId: string, expected: { head: HeadState; entries: number }): AsyncGenerator<Buffer> {
  let lines: string[] = [];
  let size = 0;
  let entries = 0;
  for await (const e of scanAll(kv, partition, { limit: 1000 })) {
    const line = `{"k":"${e.keyBytes.toString("base64")}","v":"${e.value.toString("base64")}"}\n`;
    lines.push(line);
    size += line.length;
    entries++;
    if (size >= PIECE_BYTES) {
      yield Buffer.from(lines.join(""), "utf8");
      lines = [];
      size = 0;
    }
  }
  if (lines.length > 0) yield Buffer.from(lines.join(""), "utf8");
  if (entries !== expected.entries || moved(expected.head, await readHead(kv, partition))) throw changedWhileArchiving(projectId);
}

function assertProjectId(store: ResourceStore, projectId: unknown): string {
  if (typeof projectId !== "string") throw new ValidationError("a project id is a string", "projectId");
  locate(store.schema, projectRef(projectId)); // validates the id (field projectId)
  return projectId;
}

/**
 * Archives a closed project as one snapshot `project:<id>-<millis>`; with `drop`, the live partition
 * is then deleted and purged. ForbiddenError without the intents, NotFoundError when the project does
 * not exist, ConflictError when it is open or changes meanwhile (nothing stored then; with `drop`, a
 * change between the snapshot and the drop keeps the project and says so).
 */
export async function archiveProject(
  deps: ProjectArchiveDeps,
  actor: Actor,
  projectId: string,
  options: { drop?: boolean } = {},
): Promise<ArchivedProject> {
  const { archive, store } = deps;
  const kv = store.kv;
  assertProjectId(store, projectId);
  if (options.drop !== undefined && typeof options.drop !== "boolean") throw new ValidationError("drop is true or false", "drop");
  await store.global.assert(actor, "global.writeArchive");
  const ref = projectRef(projectId);
  const l = locate(store.schema, ref);
  const raw = await kv.get(l.partition, stateKey(l));
  if (!raw) throw new NotFoundError(`project ${projectId} not found`);
  const view = new RecordView(raw.value);
  const permissions: Permissions = await store.listPermissions(SYSTEM, ref);
  if (!allows(permissions, actor, ARCHIVE_PROJECT_INTENT)) throw new ForbiddenError(`${actor.id} lacks the intent ${ARCHIVE_PROJECT_INTENT}`);
  if (view.status !== "closed") throw new ConflictError(`project ${projectId} is open: only a closed project can be archived`, "status");

  const { counts, head } = await summarize(kv, l.partition, projectId);
  const project = view.envelope() as Envelope;
  const document: ArchiveDocument = {
    kind: [PROJECT_ARCHIVE_KIND],
    format: [PROJECT_ARCHIVE_FORMAT],
    projectId: [projectId],
    partition: [[...l.partition] as string[]],
    project: [project as unknown as ArchiveDocument[string][number]],
    permissions: [permissions],
    counts: [counts as unknown as ArchiveDocument[string][number]],
    chainHead: [{ seq: head.head.seq, hash: head.head.hash }],
    archivedAt: [new Date().toISOString()],
    archivedBy: [actor.id],
    file: [PROJECT_ARCHIVE_FILE],
  };
  const snapshot = await archive.write(projectUniqueId(projectId), document, [
    { name: PROJECT_ARCHIVE_FILE, content: ndjsonOf(kv, l.partition, projectId, { head, entries: counts.entries }) },
  ]);

  let dropped = false;
  if (options.drop === true) {
    await store.delete(SYSTEM, ref, {
      guard: async (tx) => {
        if (await tx.get(logKey(head.head.seq + 1))) {
          throw new ConflictError(`project ${projectId} changed after it was archived as ${snapshot.id}; it was not dropped`, "projectId");
        }
      },
    });
    await store.purge(SYSTEM, ref);
    dropped = true;
  }
  return { projectId, snapshot, counts, chainHead: head.head, dropped };
}

interface Line {
  readonly keyBytes: Buffer;
  readonly key: Key;
  readonly value: Buffer;
}

function parseLine(text: string, n: number): Line {
  const bad = (): never => {
    throw new ValidationError(`line ${n} of ${PROJECT_ARCHIVE_FILE} is not a partition entry`, "snapshotId");
  };
  let o: unknown;
  try {
    o = JSON.parse(text);
  } catch {
    return bad();
  }
  const { k, v } = (o ?? {}) as { k?: unknown; v?: unknown };
  if (typeof k !== "string" || typeof v !== "string") return bad();
  const keyBytes = Buffer.from(k, "base64");
  let key: Key;
  try {
    key = decode(keyBytes);
  } catch {
    return bad();
  }
  if (!encode(key).equals(keyBytes)) return bad();
  return { keyBytes, key, value: Buffer.from(v, "base64") };
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
  const kv = store.kv;
  await store.global.assert(actor, "global.writeArchive");
  await store.global.assert(actor, "global.createProject");
  const snapshot = await archive.read(snapshotId);
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
  const l = locate(store.schema, projectRef(projectId));
  const partition = l.partition;

  const first = await kv.scan(partition, { limit: 1 });
  if (first.entries.length > 0) {
    if (await kv.get(partition, RESTORE_MARKER)) {
      await kv.dropPartition(partition); // the leftover of an interrupted restore
    } else {
      throw new ConflictError(`project ${projectId} exists (or existed: a deleted project's log stays until it is purged)`, "projectId");
    }
  }
  store.writer.forget(partition);

  const headBytes = encode(HEAD_KEY);
  const rootStateBytes = encode(stateKey(l));
  const file = await archive.openFile(snapshot.id, PROJECT_ARCHIVE_FILE);
  let marker: number | null = null; // version of the first commit (marker and head)
  let held: { head?: Line; root?: Line } = {};
  let ops: Op[] = [];
  let batchBytes = 0;
  let entries = 0;

  const guards = (): Op[] =>
    marker === null
      ? [
          { type: "check", key: HEAD_KEY, version: null },
          { type: "check", key: RESTORE_MARKER, version: null },
        ]
      : [
          { type: "check", key: HEAD_KEY, version: marker },
          { type: "check", key: RESTORE_MARKER, version: marker },
        ];
  // The head is written first (it sorts after the log, so take it from the summary); the file's own
  // head entry must then be exactly these bytes.
  const headValue = Buffer.from(JSON.stringify({ seq: chainHead.seq, hash: chainHead.hash }));
  const flush = async (): Promise<void> => {
    const batch = [...guards(), ...ops];
    if (marker === null) {
      batch.push(
        { type: "put", key: RESTORE_MARKER, value: Buffer.from(JSON.stringify({ snapshotId: snapshot.id, startedAt: Date.now() })) },
        { type: "put", key: HEAD_KEY, value: headValue },
      );
    }
    try {
      const { version } = await kv.commit(partition, batch);
      marker ??= version;
    } catch (e) {
      if (e instanceof ConflictError) throw new ConflictError(`project ${projectId} was written to while it was being restored`, "projectId");
      throw e;
    }
    ops = [];
    batchBytes = 0;
  };

  try {
    const lines = createInterface({ input: file.stream, crlfDelay: Infinity });
    let n = 0;
    for await (const text of lines) {
      n++;
      if (text === "") continue;
      const line = parseLine(text, n);
      entries++;
      if (line.keyBytes.equals(headBytes)) held = { ...held, head: line };
      else if (line.keyBytes.equals(rootStateBytes)) held = { ...held, root: line };
      else {
        ops.push({ type: "put", key: line.key, value: line.value });
        batchBytes += line.keyBytes.length + line.value.length;
        if (ops.length >= BATCH_ENTRIES || batchBytes >= BATCH_BYTES) await flush();
      }
    }
    if (!held.head || !held.root) throw new ValidationError(`${PROJECT_ARCHIVE_FILE} lacks the project's state or chain head`, "snapshotId");
    if (entries !== counts.entries) {
      throw new ValidationError(`${PROJECT_ARCHIVE_FILE} holds ${entries} entries, the snapshot says ${counts.entries}`, "snapshotId");
    }
    if (!held.head.value.equals(headValue)) {
      throw new ValidationError(`${PROJECT_ARCHIVE_FILE}'s chain head differs from the snapshot's summary`, "snapshotId");
    }
    if (marker === null) await flush();
    ops.push({ type: "put", key: held.root.key, value: held.root.value }, { type: "delete", key: RESTORE_MARKER });
    await flush();
  } catch (e) {
    // Undo a partial restore unless someone else has written the partition meanwhile.
    if (marker !== null) {
      const m = await kv.get(partition, RESTORE_MARKER).catch(() => undefined);
      if (m && m.version === marker) await kv.dropPartition(partition).catch(() => undefined);
    }
    file.stream.destroy();
    throw e;
  } finally {
    store.writer.forget(partition);
  }
  return { projectId, snapshotId: snapshot.id, entries, verify: await store.verify(partition) };
}
