/**
 * Writing a snapshot, all or nothing across partitions:
 *   1. journal ["upload", U]; 2. per file: journal ["upload", U, i], stream its chunks into the staging
 *   partition (U, i), record its sha-256, promote it (add the reference (U, i) to the content's file;
 *   drop the staged chunks when the content was already stored); 3. commit the snapshot into its unique
 *   id's partition (the commit point: header, document, ["upload", U]); 4. date index; 5. drop the journal.
 * A failure before 3 (too large, a cut-off stream, a store error) rolls back: references (U, i) are
 * removed and staged chunks dropped. A process killed before 5 leaves the journal for `recover`.
 */
import { randomUUID } from "node:crypto";
import { ConflictError, ValidationError } from "../errors.js";
import type { KvStore } from "../kv/contract.js";
import { scanAll } from "../kv/contract.js";
import type { ArchiveContext } from "./config.js";
import { encodeDocument } from "./document.js";
import { addRef, chunkPartition, getFileMeta, removeRef, sameStore, stageFile, type FileContent } from "./files.js";
import { snapshotIdOf, validateMillis, validateUniqueId } from "./ids.js";
import { fromJson, JOURNAL, journalDeletePrefix, journalPut } from "./journal.js";
import { SizeBudget } from "./limits.js";
import {
  getHeader,
  latestMillis,
  putDateIndex,
  snapKey,
  snapshotOps,
  snapshotPartition,
  summaryOf,
  type ArchivedFile,
  type SnapshotHeader,
  type SnapshotSummary,
} from "./snapshots.js";

export const MAX_FILE_NAME_LENGTH = 1024;
const MAX_ID_ATTEMPTS = 1000;

export interface FileInput {
  readonly name: string;
  readonly content: FileContent;
  /** The declared size, if known: checked against the limit up front and against the bytes received. */
  readonly size?: number;
}

export interface WriteOptions {
  /**
   * The snapshot's time (epoch millis or Date). With it the id is exactly `<uniqueId>-<millis>` and an
   * existing id is a ConflictError; without it the time is now, bumped past the newest snapshot of the
   * unique id so that ids stay distinct and increasing.
   */
  readonly modified?: number | Date;
}

export interface UploadEntry {
  readonly uniqueId: string;
  readonly startedAt: number;
}

export interface UploadFileEntry {
  readonly startedAt: number;
  readonly sha256?: string;
}

function validateFileName(name: unknown, field: string, seen: Set<string>): asserts name is string {
  if (typeof name !== "string" || name.length === 0 || name.length > MAX_FILE_NAME_LENGTH) {
    throw new ValidationError(`a file name is a string of 1 to ${MAX_FILE_NAME_LENGTH} characters`, field);
  }
  if (/[\u0000-\u001f\u007f-\u009f]/.test(name) || !name.isWellFormed()) {
    throw new ValidationError("a file name holds no control characters and is valid Unicode", field);
  }
  if (seen.has(name)) throw new ValidationError(`two files are named ${JSON.stringify(name)}`, field);
  seen.add(name);
}

export async function writeSnapshot(
  ctx: ArchiveContext,
  uniqueId: unknown,
  document: unknown,
  files: Iterable<FileInput> | AsyncIterable<FileInput> = [],
  options: WriteOptions = {},
): Promise<SnapshotSummary> {
  const { kv } = ctx;
  validateUniqueId(uniqueId);
  const explicit = options.modified instanceof Date ? options.modified.getTime() : options.modified;
  if (explicit !== undefined) {
    validateMillis(explicit, "modified");
    if (await getHeader(kv, uniqueId, explicit)) {
      throw new ConflictError(`snapshot ${snapshotIdOf(uniqueId, explicit)} already exists`, "modified");
    }
  }
  const docBytes = encodeDocument(document);
  const budget = new SizeBudget(ctx.maxSnapshotBytes);
  budget.add(docBytes.length);

  const upload = randomUUID();
  ctx.active.add(upload);
  let header: SnapshotHeader;
  try {
    await journalPut(kv, ["upload", upload], { uniqueId, startedAt: Date.now() } satisfies UploadEntry);
    try {
      const archived: ArchivedFile[] = [];
      const names = new Set<string>();
      let i = 0;
      for await (const file of files) {
        const field = `files[${i}]`;
        if (typeof file !== "object" || file === null) throw new ValidationError("a file is {name, content}", field);
        validateFileName(file.name, `${field}.name`, names);
        if (file.size !== undefined) {
          if (!Number.isSafeInteger(file.size) || file.size < 0) {
            throw new ValidationError("a file size is a non-negative integer", `${field}.size`);
          }
          budget.ensureRoom(file.size);
        }
        await journalPut(kv, ["upload", upload, i], { startedAt: Date.now() } satisfies UploadFileEntry);
        const staged = await stageFile(kv, [upload, i], file.content, budget, `${field}.content`);
        if (file.size !== undefined && staged.size !== file.size) {
          throw new ValidationError(`the file was declared ${file.size} bytes but ${staged.size} arrived`, `${field}.size`);
        }
        await journalPut(kv, ["upload", upload, i], { startedAt: Date.now(), sha256: staged.sha256 } satisfies UploadFileEntry);
        const { deduplicated } = await addRef(kv, staged, [upload, i]);
        if (deduplicated) await kv.dropPartition(chunkPartition([upload, i]));
        archived.push({ name: file.name, size: staged.size, sha256: staged.sha256 });
        i++;
      }
      header = await commitSnapshot(ctx, uniqueId, explicit, upload, budget.used, archived, docBytes);
    } catch (e) {
      // Undo what this write stored. If the undo itself fails, the journal keeps it for `recover`.
      await settleUpload(kv, upload, ctx.active).catch(() => {});
      throw e;
    }
    await putDateIndex(kv, header);
    await journalDeletePrefix(kv, ["upload", upload]);
  } finally {
    ctx.active.delete(upload);
  }
  return summaryOf(header);
}

async function commitSnapshot(
  ctx: ArchiveContext,
  uniqueId: string,
  explicit: number | undefined,
  upload: string,
  size: number,
  files: ArchivedFile[],
  docBytes: Buffer,
): Promise<SnapshotHeader> {
  for (let attempt = 0; attempt < MAX_ID_ATTEMPTS; attempt++) {
    let millis = explicit;
    if (millis === undefined) {
      const latest = await latestMillis(ctx.kv, uniqueId);
      millis = Math.max(ctx.now(), latest === undefined ? 0 : latest + 1);
    }
    const header: SnapshotHeader = { id: snapshotIdOf(uniqueId, millis), uniqueId, millis, size, upload, files };
    try {
      await ctx.kv.commit(snapshotPartition(uniqueId), snapshotOps(header, docBytes));
      return header;
    } catch (e) {
      if (!(e instanceof ConflictError)) throw e;
      if (explicit !== undefined) throw new ConflictError(`snapshot ${header.id} already exists`, "modified");
    }
  }
  throw new ConflictError(`could not find a free snapshot id for ${uniqueId}`, "uniqueId");
}

/**
 * Settles an upload left unfinished: completes it when its snapshot was committed (the commit may have
 * applied even though the caller saw an error), otherwise rolls it back.
 */
export async function settleUpload(kv: KvStore, upload: string, active: Set<string>): Promise<"completed" | "rolledBack"> {
  const entry = await kv.get(JOURNAL, ["upload", upload]);
  if (entry) {
    const { uniqueId } = fromJson<UploadEntry>(entry.value);
    const link = await kv.get(snapshotPartition(uniqueId), ["upload", upload]);
    if (link) {
      await completeUpload(kv, upload, uniqueId, fromJson<number>(link.value), active);
      return "completed";
    }
  }
  await rollbackUpload(kv, upload, active);
  return "rolledBack";
}

/**
 * Undoes an upload that did not reach its commit point: removes its references and drops its staged
 * chunks, then its journal entries. Idempotent; used by a failed write and by recovery.
 */
export async function rollbackUpload(kv: KvStore, upload: string, active: Set<string>): Promise<void> {
  for await (const e of scanAll(kv, JOURNAL, { prefix: ["upload", upload] })) {
    if (e.key.length !== 3) continue;
    const index = e.key[2] as number;
    const entry = fromJson<UploadFileEntry>(e.value);
    await releaseStaged(kv, upload, index, entry.sha256, true, active);
  }
  await journalDeletePrefix(kv, ["upload", upload]);
}

/**
 * Drops the staged chunks of (upload, index) unless they are the store of their content; with
 * `unref`, first removes the reference (upload, index).
 */
export async function releaseStaged(
  kv: KvStore,
  upload: string,
  index: number,
  sha256: string | undefined,
  unref: boolean,
  active: Set<string>,
): Promise<void> {
  if (sha256 !== undefined) {
    if (unref) await removeRef(kv, sha256, [upload, index], active);
    const meta = await getFileMeta(kv, sha256);
    if (meta && sameStore(meta.store, [upload, index])) return;
  }
  await kv.dropPartition(chunkPartition([upload, index]));
}

/** Finishes an upload whose snapshot was committed (a process died after the commit point). */
export async function completeUpload(kv: KvStore, upload: string, uniqueId: string, millis: number, active: Set<string>): Promise<void> {
  const found = await getHeader(kv, uniqueId, millis);
  if (found) await putDateIndex(kv, found.header);
  for await (const e of scanAll(kv, JOURNAL, { prefix: ["upload", upload] })) {
    if (e.key.length !== 3) continue;
    const entry = fromJson<UploadFileEntry>(e.value);
    await releaseStaged(kv, upload, e.key[2] as number, entry.sha256, false, active);
  }
  await journalDeletePrefix(kv, ["upload", upload]);
}

export { snapKey };
