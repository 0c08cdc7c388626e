/**
 * The archive (seed 003): immutable process-instance snapshots `<uniqueId>-<epochMillis>`, found by
 * unique id and by day, with files stored once by content hash in 1 MiB chunks. A thin façade over the
 * functions of this folder; the store is injected.
 */
import { NotFoundError, ValidationError } from "../errors.js";
import type { KvStore } from "../kv/contract.js";
import { createContext, type ArchiveContext, type ArchiveOptions } from "./config.js";
import { deleteSnapshot } from "./delete.js";
import { openStoredFile, type OpenedFile } from "./files.js";
import { validateUniqueId } from "./ids.js";
import { recover, type RecoveryReport } from "./recovery.js";
import { applyRetention } from "./retention.js";
import {
  findByDate,
  findByUniqueId,
  latestMillis,
  readSnapshot,
  requireHeader,
  snapshotIdOf,
  type Page,
  type PageOptions,
  type Snapshot,
  type SnapshotSummary,
} from "./snapshots.js";
import { writeSnapshot, type FileInput, type WriteOptions } from "./write.js";

export class Archive {
  readonly #ctx: ArchiveContext;

  constructor(kv: KvStore, options: ArchiveOptions = {}) {
    this.#ctx = createContext(kv, options);
  }

  get maxSnapshotBytes(): number {
    return this.#ctx.maxSnapshotBytes;
  }

  /**
   * Stores a snapshot of `document` (item names to lists of values) with `files` (streamed, each stored
   * once by content), then applies retention. Throws ValidationError (field named), TooLargeError
   * (limit named) or ConflictError (explicit `modified` already taken); on any error nothing is stored.
   */
  async write(
    uniqueId: string,
    document: unknown,
    files?: Iterable<FileInput> | AsyncIterable<FileInput>,
    options?: WriteOptions,
  ): Promise<SnapshotSummary> {
    const summary = await writeSnapshot(this.#ctx, uniqueId, document, files, options);
    if (this.#ctx.keepNewest !== undefined) await applyRetention(this.#ctx, uniqueId);
    return summary;
  }

  read(snapshotId: string): Promise<Snapshot> {
    return readSnapshot(this.#ctx.kv, snapshotId);
  }

  /** The newest snapshot of a unique id; NotFoundError when it has none. */
  async latest(uniqueId: string): Promise<Snapshot> {
    validateUniqueId(uniqueId);
    const millis = await latestMillis(this.#ctx.kv, uniqueId);
    if (millis === undefined) throw new NotFoundError(`unique id ${uniqueId} has no snapshot`);
    return readSnapshot(this.#ctx.kv, snapshotIdOf(uniqueId, millis));
  }

  /** A file of a snapshot as a stream, with its size and sha-256 (an ETag). */
  async openFile(snapshotId: string, name: string): Promise<OpenedFile> {
    if (typeof name !== "string" || name === "") throw new ValidationError("a file name is a non-empty string", "name");
    const { header } = await requireHeader(this.#ctx.kv, snapshotId);
    const file = header.files.find((f) => f.name === name);
    if (!file) throw new NotFoundError(`snapshot ${snapshotId} has no file ${JSON.stringify(name)}`);
    return openStoredFile(this.#ctx.kv, file.sha256);
  }

  findSnapshotsByUniqueId(uniqueId: string, options?: PageOptions): Promise<Page<SnapshotSummary>> {
    return findByUniqueId(this.#ctx.kv, uniqueId, options);
  }

  /** Snapshots whose time falls on `date` (`YYYY-MM-DD`, UTC). */
  findSnapshotsByDate(date: string, options?: PageOptions): Promise<Page<SnapshotSummary>> {
    return findByDate(this.#ctx.kv, date, options);
  }

  /** Deletes a snapshot and every file no other snapshot holds; NotFoundError when it does not exist. */
  delete(snapshotId: string): Promise<void> {
    return deleteSnapshot(this.#ctx, snapshotId);
  }

  /** Keeps the newest `keepNewest` (default: the configured retention) snapshots of a unique id. */
  applyRetention(uniqueId: string, keepNewest?: number): Promise<number> {
    return applyRetention(this.#ctx, uniqueId, keepNewest);
  }

  /** Finishes or undoes operations a killed process left half-done (run at startup). */
  recover(options?: { olderThanMs?: number }): Promise<RecoveryReport> {
    return recover(this.#ctx, options);
  }
}
