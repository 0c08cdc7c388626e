/**
 * The archive (after Imixs-Archive): immutable process-instance snapshots `<uniqueId>-<epochMillis>`,
 * found by unique id and by day, with files stored once by content hash in 1 MiB chunks. A thin façade
 * over the functions of this folder; the store is injected.
 *
 * Every public operation takes the acting Actor first and checks a global intent itself: reads need
 * `global.readArchive`, writes and deletes `global.writeArchive` (the system actor bypasses both).
 * Recovery is a maintenance operation of the system and takes no actor.
 */
import { GlobalPermissions } from "../access/global.js";
import { IntentRegistry } from "../access/intents.js";
import type { Actor } from "../access/actor.js";
import { NotFoundError, ValidationError } from "../errors.js";
import type { KvStore } from "../kv/contract.js";
import { createContext, type ArchiveContext, type ArchiveOptions } from "./config.js";
import { deleteSnapshot } from "./delete.js";
import { itemCount, type ArchiveDocument } from "./document.js";
import { openStoredFile, sha256OfMd5, type FileContent, type OpenedFile } from "./files.js";
import { hashContent, holdFile, pendingHolds, releaseFile, settleHold, type HeldFile, type HoldOptions, type PendingHold } from "./held.js";
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
  snapshotsHolding,
  type Page,
  type PageOptions,
  type Snapshot,
  type SnapshotSummary,
} from "./snapshots.js";
import { writeSnapshot, type FileInput, type WriteOptions, type WrittenSnapshot } from "./write.js";

/** The global intents the archive checks. */
export const ARCHIVE_INTENTS = ["global.readArchive", "global.writeArchive"] as const;

declare module "../access/intents.js" {
  interface DeclaredIntents {
    archive: (typeof ARCHIVE_INTENTS)[number];
  }
}

/**
 * Whether an actor may read a snapshot beyond the archive's global intent (issue 29, finding 8): a domain
 * that archives its own records with their permissions (a project archive, workflow/archive.ts) keeps
 * them sealed in the document, and answers here from them. `document` reads the snapshot's document
 * (only when the policy needs it). A snapshot the actor may not read is answered as a missing one (404).
 */
export type SnapshotReadPolicy = (actor: Actor, uniqueId: string, document: () => Promise<ArchiveDocument>) => Promise<boolean>;

export interface ArchiveServiceOptions extends ArchiveOptions {
  /** Where the archive's intents are checked (default: the global permissions over the same store). */
  readonly global?: GlobalPermissions;
  /** Which snapshots an actor holding `global.readArchive` may read (default: every one). */
  readonly readPolicy?: SnapshotReadPolicy;
}

export class Archive {
  readonly #ctx: ArchiveContext;
  readonly #global: GlobalPermissions;
  readonly #policy: SnapshotReadPolicy | undefined;

  constructor(kv: KvStore, options: ArchiveServiceOptions = {}) {
    this.#ctx = createContext(kv, options);
    this.#global = options.global ?? new GlobalPermissions(kv, { intents: new IntentRegistry(ARCHIVE_INTENTS) });
    this.#policy = options.readPolicy;
  }

  /** Whether the read policy lets `actor` read the snapshot `snapshotId` of `uniqueId` (the system actor always). */
  async #mayReadSnapshot(actor: Actor, uniqueId: string, snapshotId: string): Promise<boolean> {
    if (this.#policy === undefined || actor.system) return true;
    return this.#policy(actor, uniqueId, async () => (await readSnapshot(this.#ctx.kv, snapshotId)).document);
  }

  /** The snapshot's header, or the NotFoundError of a missing one when the read policy refuses it. */
  async #readable(actor: Actor, snapshotId: string): Promise<Awaited<ReturnType<typeof requireHeader>>> {
    const found = await requireHeader(this.#ctx.kv, snapshotId);
    if (!(await this.#mayReadSnapshot(actor, found.header.uniqueId, found.header.id))) throw new NotFoundError(`snapshot ${snapshotId} does not exist`);
    return found;
  }

  /** A page of summaries without those the read policy refuses (a page may hold fewer items than its limit). */
  async #filtered(actor: Actor, page: Page<SnapshotSummary>): Promise<Page<SnapshotSummary>> {
    if (this.#policy === undefined || actor.system) return page;
    const items: SnapshotSummary[] = [];
    for (const s of page.items) if (await this.#mayReadSnapshot(actor, s.uniqueId, s.id)) items.push(s);
    return { items, nextCursor: page.nextCursor };
  }

  #may(actor: Actor, what: "read" | "write"): Promise<void> {
    return this.#global.assert(actor, what === "read" ? "global.readArchive" : "global.writeArchive");
  }

  get maxSnapshotBytes(): number {
    return this.#ctx.maxSnapshotBytes;
  }

  /**
   * Stores a snapshot of `document` (item names to lists of values) with `files` (streamed, each stored
   * once by content), then applies retention. Throws ValidationError (field named), TooLargeError
   * (limit named) or ConflictError (explicit `modified` already taken); on any error nothing is stored.
   */
  async write(actor: Actor, uniqueId: string, document: unknown, files?: Iterable<FileInput> | AsyncIterable<FileInput>, options?: WriteOptions): Promise<WrittenSnapshot> {
    await this.#may(actor, "write");
    const summary = await writeSnapshot(this.#ctx, uniqueId, document, files, options);
    // The document's own retention item (Imixs's `$snapshot.history`) beside the global rule: it wins for its unique id.
    const keep = itemCount(document as ArchiveDocument, this.#ctx.retentionItem) ?? this.#ctx.keepNewest;
    if (keep !== undefined) await applyRetention(this.#ctx, uniqueId, keep);
    return summary;
  }

  async read(actor: Actor, snapshotId: string): Promise<Snapshot> {
    await this.#may(actor, "read");
    await this.#readable(actor, snapshotId);
    return readSnapshot(this.#ctx.kv, snapshotId);
  }

  /** The newest snapshot of a unique id; NotFoundError when it has none. */
  async latest(actor: Actor, uniqueId: string): Promise<Snapshot> {
    await this.#may(actor, "read");
    validateUniqueId(uniqueId);
    const millis = await latestMillis(this.#ctx.kv, uniqueId);
    const id = millis === undefined ? undefined : snapshotIdOf(uniqueId, millis);
    if (id === undefined || !(await this.#mayReadSnapshot(actor, uniqueId, id))) throw new NotFoundError(`unique id ${uniqueId} has no snapshot`);
    return readSnapshot(this.#ctx.kv, id);
  }

  /** A file of a snapshot as a stream, with its size and sha-256 (an ETag). */
  async openFile(actor: Actor, snapshotId: string, name: string): Promise<OpenedFile> {
    await this.#may(actor, "read");
    if (typeof name !== "string" || name === "") throw new ValidationError("a file name is a non-empty string", "name");
    const { header } = await this.#readable(actor, snapshotId);
    const file = header.files.find((f) => f.name === name);
    if (!file) throw new NotFoundError(`snapshot ${snapshotId} has no file ${JSON.stringify(name)}`);
    return openStoredFile(this.#ctx.kv, file.sha256);
  }

  /** A stored file by its content hash: its sha-256 (64 hex digits) or its MD5 (32, the alias Imixs clients use). */
  async openFileByHash(actor: Actor, hash: string): Promise<OpenedFile> {
    await this.#may(actor, "read");
    if (typeof hash !== "string" || !/^([0-9a-f]{32}|[0-9a-f]{64})$/.test(hash)) {
      throw new ValidationError("a file hash is a sha-256 (64 lowercase hex digits) or an MD5 (32)", "hash");
    }
    const missing = () => new NotFoundError(`no stored file has the ${hash.length === 64 ? "sha-256" : "MD5"} ${hash}`);
    const sha256 = hash.length === 64 ? hash : await sha256OfMd5(this.#ctx.kv, hash);
    if (sha256 === undefined) throw missing();
    // Only content a snapshot the actor may read holds: not a workflowitem's document (a held file, read
    // through its item's permissions), not a file of a project archive the actor may not view (finding 8).
    if (!actor.system) {
      let readable = false;
      for await (const holder of snapshotsHolding(this.#ctx.kv, sha256)) {
        if (await this.#mayReadSnapshot(actor, holder.uniqueId, holder.snapshotId)) {
          readable = true;
          break;
        }
      }
      if (!readable) throw missing();
    }
    return openStoredFile(this.#ctx.kv, sha256);
  }

  async findSnapshotsByUniqueId(actor: Actor, uniqueId: string, options?: PageOptions): Promise<Page<SnapshotSummary>> {
    await this.#may(actor, "read");
    return this.#filtered(actor, await findByUniqueId(this.#ctx.kv, uniqueId, options));
  }

  /** Snapshots whose time falls on `date` (`YYYY-MM-DD`, UTC). */
  async findSnapshotsByDate(actor: Actor, date: string, options?: PageOptions): Promise<Page<SnapshotSummary>> {
    await this.#may(actor, "read");
    return this.#filtered(actor, await findByDate(this.#ctx.kv, date, options));
  }

  /** Deletes a snapshot and every file no other snapshot holds; NotFoundError when it does not exist. */
  async delete(actor: Actor, snapshotId: string): Promise<void> {
    await this.#may(actor, "write");
    return deleteSnapshot(this.#ctx, snapshotId);
  }

  /** Keeps the newest `keepNewest` (default: the configured retention) snapshots of a unique id. */
  async applyRetention(actor: Actor, uniqueId: string, keepNewest?: number): Promise<number> {
    await this.#may(actor, "write");
    return applyRetention(this.#ctx, uniqueId, keepNewest);
  }

  // ------------------------------------------------------------------ held files (held.ts)
  // For a domain that keeps content in the file store under its own record and checks its own intents
  // (a workflowitem's documents): no archive intent is checked here.

  /** Stores `content` once by content and holds a reference to it until `settleHold`. */
  holdFile(owner: string, info: unknown, content: FileContent, options: HoldOptions): Promise<HeldFile> {
    return holdFile(this.#ctx, owner, info, content, options);
  }

  /** Keeps (the holder's record was committed) or undoes a hold. */
  settleHold(token: string, committed: boolean): Promise<void> {
    return settleHold(this.#ctx, token, committed);
  }

  /** Removes a held reference; the last one frees the content. */
  releaseFile(sha256: string, token: string): Promise<void> {
    return releaseFile(this.#ctx, sha256, token);
  }

  /** Unsettled holds of `owner` (a killed process's), for the owner's recovery. */
  pendingHolds(owner: string, olderThanMs: number): Promise<PendingHold[]> {
    return pendingHolds(this.#ctx, owner, olderThanMs);
  }

  /** A stored content, streamed and checked against its hash at the end. */
  openContent(sha256: string): Promise<OpenedFile> {
    return openStoredFile(this.#ctx.kv, sha256);
  }

  /** The sha-256 and size of a stream (nothing stored). */
  hashContent(content: AsyncIterable<Uint8Array | string>, options: Omit<HoldOptions, "token">): Promise<{ sha256: string; size: number }> {
    return hashContent(content, options);
  }

  /** Finishes or undoes operations a killed process left half-done (run at startup). */
  recover(options?: { olderThanMs?: number }): Promise<RecoveryReport> {
    return recover(this.#ctx, options);
  }
}
