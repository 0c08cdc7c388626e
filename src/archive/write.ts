/**
 * Writing a snapshot, all or nothing across partitions:
 *   1. journal ["upload", U]; 2. per file i: stream its chunks into the staging partition (U, i), the
 *   last commit with a "done" marker holding its sha-256; promote it (add the reference (U, i) to the
 *   content's file; the first upload of a content becomes its store); 3. commit the snapshot into its
 *   unique id's partition (the commit point: header, document, ["upload", U]); 4. date index; 5. drop
 *   the staged chunks of contents that were already stored, from the last file down (and the files' MD5
 *   aliases); 6. drop the journal.
 * File i + 1 is staged only once file i's partition exists, and staging partitions are dropped from the
 * highest index down, so the staging of U is always found by probing (U, 0), (U, 1), ... until a miss.
 * A failure before 3 (too large, a cut-off stream, a store error) rolls back: references (U, i) are
 * removed and staged chunks dropped. A process killed before 6 leaves the journal for `recover`.
 */
import { randomUUID } from "node:crypto";
import { ConflictError, FlowstoreError, ValidationError } from "../errors.js";
import type { KvStore } from "../kv/contract.js";
import { layout } from "./layout.js";
import type { ArchiveContext } from "./config.js";
import { encodeDocument, itemCount, itemTime, type ArchiveDocument } from "./document.js";
import { addRef, chunkPartition, getFileMeta, putMd5Alias, removeRef, sameStore, stagedFile, stageFile, stagingExists, type FileContent } from "./files.js";
import { snapshotIdOf, validateMillis, validateUniqueId } from "./ids.js";
import { fromJson, JOURNAL, journalDeletePrefix, journalPut } from "./journal.js";
import { SizeBudget } from "./limits.js";
import {
  getHeader,
  latestMillis,
  putDateIndex,
  readDocumentBytes,
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
   * The snapshot's time (epoch millis or Date), to import an existing archive with its ids. With it the
   * id is exactly `<uniqueId>-<millis>`; an id that exists with the same document and files is answered
   * as it is (`created: false`), with other content it is a ConflictError. Without it the time is now,
   * bumped past the newest snapshot of the unique id so that ids stay distinct and increasing.
   */
  readonly modified?: number | Date;
}

/** A written snapshot's summary, and whether this write stored it (false: the same snapshot existed). */
export type WrittenSnapshot = SnapshotSummary & { readonly created: boolean };

export interface UploadEntry {
  readonly uniqueId: string;
  readonly startedAt: number;
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

/** Iterates the files, turning a failure of the source itself into a ValidationError on `files`. */
async function* filesOf(files: unknown): AsyncGenerator<FileInput> {
  const f = files as Partial<Iterable<FileInput> & AsyncIterable<FileInput>> | null;
  if (typeof f?.[Symbol.asyncIterator] !== "function" && typeof f?.[Symbol.iterator] !== "function") {
    throw new ValidationError("files is a list (or an async iterable) of {name, content}", "files");
  }
  try {
    yield* f as AsyncIterable<FileInput>;
  } catch (e) {
    if (e instanceof FlowstoreError) throw e;
    throw new ValidationError(`the list of files failed: ${(e as Error)?.message ?? e}`, "files");
  }
}

export async function writeSnapshot(
  ctx: ArchiveContext,
  uniqueId: unknown,
  document: unknown,
  files: Iterable<FileInput> | AsyncIterable<FileInput> = [],
  options: WriteOptions = {},
): Promise<WrittenSnapshot> {
  const { kv } = ctx;
  validateUniqueId(uniqueId);
  const explicit = options.modified instanceof Date ? options.modified.getTime() : options.modified;
  if (explicit !== undefined) validateMillis(explicit, "modified");
  const docBytes = encodeDocument(document);
  const indexed = itemTime(document as ArchiveDocument, ctx.dateItem);
  itemCount(document as ArchiveDocument, ctx.retentionItem);
  const budget = new SizeBudget(ctx.maxSnapshotBytes);
  budget.add(docBytes.length);

  const upload = randomUUID();
  ctx.active.add(upload);
  let header: SnapshotHeader;
  try {
    await journalPut(kv, layout.journalUpload(upload), { uniqueId, startedAt: Date.now() } satisfies UploadEntry);
    try {
      const archived: ArchivedFile[] = [];
      const names = new Set<string>();
      let i = 0;
      for await (const file of filesOf(files)) {
        const field = `files[${i}]`;
        if (typeof file !== "object" || file === null) throw new ValidationError("a file is {name, content}", field);
        validateFileName(file.name, `${field}.name`, names);
        if (file.size !== undefined) {
          if (!Number.isSafeInteger(file.size) || file.size < 0) {
            throw new ValidationError("a file size is a non-negative integer", `${field}.size`);
          }
          budget.ensureRoom(file.size);
        }
        const staged = await stageFile(kv, [upload, i], file.content, budget, `${field}.content`);
        if (file.size !== undefined && staged.size !== file.size) {
          throw new ValidationError(`the file was declared ${file.size} bytes but ${staged.size} arrived`, `${field}.size`);
        }
        await addRef(kv, staged, [upload, i], { uniqueId });
        archived.push({ name: file.name, size: staged.size, sha256: staged.sha256, ...(staged.md5 ? { md5: staged.md5 } : {}) });
        i++;
      }
      const committed = await commitSnapshot(ctx, uniqueId, explicit, indexed, upload, budget.used, archived, docBytes);
      if (committed.existing) {
        // The same snapshot was imported before: this write's references and staged chunks go again.
        await rollbackUpload(kv, upload, ctx.active);
        return { ...summaryOf(committed.header), created: false };
      }
      header = committed.header;
    } catch (e) {
      // Undo what this write stored. If the undo itself fails, the journal keeps it for `recover`.
      await settleUpload(kv, upload, ctx.active, uniqueId).catch(() => {});
      throw e;
    }
    await completeUpload(kv, upload, header.uniqueId, header.millis);
  } finally {
    ctx.active.delete(upload);
  }
  return { ...summaryOf(header), created: true };
}

/** True when a stored snapshot holds exactly this document and these files (an import written again). */
async function sameSnapshot(kv: KvStore, stored: SnapshotHeader, files: readonly ArchivedFile[], docBytes: Buffer): Promise<boolean> {
  const key = (f: ArchivedFile): string => `${f.name}\u0000${f.size}\u0000${f.sha256}`;
  if (stored.files.length !== files.length || stored.files.some((f, i) => key(f) !== key(files[i]!))) return false;
  return (await readDocumentBytes(kv, stored)).equals(docBytes);
}

async function commitSnapshot(
  ctx: ArchiveContext,
  uniqueId: string,
  explicit: number | undefined,
  indexed: number | undefined,
  upload: string,
  size: number,
  files: ArchivedFile[],
  docBytes: Buffer,
): Promise<{ header: SnapshotHeader; existing: boolean }> {
  for (let attempt = 0; attempt < MAX_ID_ATTEMPTS; attempt++) {
    let millis = explicit;
    if (millis === undefined) {
      const latest = await latestMillis(ctx.kv, uniqueId);
      millis = Math.max(ctx.now(), latest === undefined ? 0 : latest + 1);
    }
    const header: SnapshotHeader = { id: snapshotIdOf(uniqueId, millis), uniqueId, millis, size, upload, files, indexed: indexed ?? millis };
    try {
      await ctx.kv.commit(snapshotPartition(uniqueId), snapshotOps(header, docBytes));
      return { header, existing: false };
    } catch (e) {
      if (!(e instanceof ConflictError)) throw e;
      if (explicit !== undefined) {
        const stored = await getHeader(ctx.kv, uniqueId, explicit);
        if (stored && (await sameSnapshot(ctx.kv, stored.header, files, docBytes))) return { header: stored.header, existing: true };
        throw new ConflictError(`snapshot ${header.id} already exists with other content`, "modified");
      }
    }
  }
  throw new ConflictError(`could not find a free snapshot id for ${uniqueId}`, "uniqueId");
}

/**
 * Settles an upload left unfinished: completes it when its snapshot was committed (the commit may have
 * applied even though the caller saw an error), otherwise rolls it back.
 */
export async function settleUpload(
  kv: KvStore,
  upload: string,
  active: Set<string>,
  /** Known to the writer itself; recovery reads it from the journal. */
  uniqueId?: string,
): Promise<"completed" | "rolledBack" | "settled"> {
  if (uniqueId === undefined) {
    const entry = await kv.get(JOURNAL, layout.journalUpload(upload));
    if (!entry) return "settled"; // nothing journaled: nothing staged, or settled already
    uniqueId = fromJson<UploadEntry>(entry.value).uniqueId;
  }
  const link = await kv.get(snapshotPartition(uniqueId), layout.uploadKey(upload));
  if (link) {
    await completeUpload(kv, upload, uniqueId, fromJson<number>(link.value));
    return "completed";
  }
  await rollbackUpload(kv, upload, active);
  return "rolledBack";
}

/** How many staging partitions (upload, 0), (upload, 1), ... exist. */
async function stagedCount(kv: KvStore, upload: string): Promise<number> {
  let n = 0;
  while (await stagingExists(kv, [upload, n])) n++;
  return n;
}

/**
 * Undoes an upload that did not reach its commit point: from the last file down, removes the reference
 * (U, i) and drops the staged chunks unless they became the store of a content other snapshots hold.
 * Idempotent; used by a failed write and by recovery.
 */
export async function rollbackUpload(kv: KvStore, upload: string, active: Set<string>): Promise<void> {
  for (let i = (await stagedCount(kv, upload)) - 1; i >= 0; i--) {
    const staged = await stagedFile(kv, [upload, i]);
    if (staged) await removeRef(kv, staged.sha256, [upload, i], active);
    await dropUnlessStore(kv, upload, i, staged?.sha256);
  }
  await journalDeletePrefix(kv, layout.journalUpload(upload));
}

/** Drops the staged chunks of (upload, index) unless they became the store of `sha256`. */
export async function dropUnlessStore(kv: KvStore, upload: string, index: number, sha256: string | undefined): Promise<void> {
  if (sha256 !== undefined) {
    const meta = await getFileMeta(kv, sha256);
    if (meta && sameStore(meta.store, [upload, index])) return;
  }
  await kv.dropPartition(chunkPartition([upload, index]));
}

/**
 * Finishes an upload whose snapshot was committed: its date index entry, the staged chunks of contents
 * that were already stored (from the last file down), then its journal. Idempotent.
 */
export async function completeUpload(kv: KvStore, upload: string, uniqueId: string, millis: number): Promise<void> {
  const found = await getHeader(kv, uniqueId, millis);
  if (found && found.header.upload === upload) {
    await putDateIndex(kv, found.header);
    // The MD5 aliases of its files, once the snapshot holds them (a rolled-back write leaves none).
    for (const f of found.header.files) if (f.md5) await putMd5Alias(kv, f.md5, f.sha256);
  }
  for (let i = (await stagedCount(kv, upload)) - 1; i >= 0; i--) {
    await dropUnlessStore(kv, upload, i, (await stagedFile(kv, [upload, i]))?.sha256);
  }
  await journalDeletePrefix(kv, layout.journalUpload(upload));
}
