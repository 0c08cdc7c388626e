/**
 * Backup and restore of the whole store as operations of the store itself, each taking the acting Actor
 * and checking its declared global intent (TruBudget's `system.createBackup` / `system.restoreBackup`):
 *
 * - `exportStore(actor)`: the store's export (transfer.ts's NDJSON) as a stream; `global.createBackup`;
 * - `stageRestore(actor, input)`: stages a restore from such an export (restore.ts) whose `apply()`
 *   replaces the whole content; `global.restoreBackup`.
 *
 * Rules:
 * - the check comes first, before a byte is read or written; a refusal is a ForbiddenError naming root,
 *   whose the backups are in TruBudget;
 * - root may always (as in TruBudget; a store whose root was created before these intents were declared
 *   holds them implicitly), another user or group when it holds the intent, the system actor (the
 *   operators' CLI) always;
 * - a staged export is checked in a scratch store opened as the live one is (`openScratch`): it must
 *   open here (the process-data key), hold root, and verify; the live store is not touched until
 *   `apply()`;
 * - `apply()` pauses the background work (it must not write into a store being replaced), replaces the
 *   content (transfer.ts `replaceStore`), refreshes what the process keeps of the old content
 *   (`refresh`), then resumes the background work and removes the export's file. A failure midway
 *   leaves the background paused and the file kept: the store holds an unfinished import until
 *   `import --resume --in <the file>` finishes it. One restore at a time.
 */
import { rm } from "node:fs/promises";
import { PassThrough, type Readable } from "node:stream";
import { ROOT_ID, type Actor } from "../access/actor.js";
import type { GlobalPermissions } from "../access/global.js";
import { ConflictError, ForbiddenError, ValidationError } from "../errors.js";
import type { KvStore, Partition } from "../kv/contract.js";
import type { VerifyAllResult } from "../resources/audit/verify-all.js";
import type { Background } from "./background.js";
import { stageExport, type StagedRestore } from "./restore.js";
import { exportStore, replaceStore, type Progress, type TransferCounts } from "./transfer.js";

/** The global intents of the whole-store operations, declared once here (the registry gathers them in intents.ts). */
export const BACKUP_INTENTS = ["global.createBackup", "global.restoreBackup"] as const;
export type BackupIntent = (typeof BACKUP_INTENTS)[number];

declare module "../access/intents.js" {
  interface DeclaredIntents {
    backup: (typeof BACKUP_INTENTS)[number];
  }
}

/** An export under way: its NDJSON, and its counts once the last line is written (or why it failed; the stream fails too). */
export interface StoreExport {
  readonly stream: Readable;
  readonly done: Promise<TransferCounts>;
}

/** What a restore's check needs of a store opened over the scratch copy. */
export interface ScratchStore {
  readonly identity: { getUser(id: string): Promise<unknown> };
  verifyAll(onResult?: (partition: Partition, result: { ok: boolean; firstBad?: { seq: number; reason: string } }) => void): Promise<VerifyAllResult>;
  close(): Promise<void>;
}

export interface BackupParts {
  readonly kv: KvStore;
  readonly global: GlobalPermissions;
  readonly background: Background;
  /** Where a restore keeps the export it reads and its scratch store. */
  readonly restoreDir: string;
  /** Opens a store over a scratch copy as the live one is opened (what an open checks: the process-data key). */
  readonly openScratch: (kv: KvStore) => Promise<ScratchStore>;
  /** Forgets what the process keeps of the old content after a restore (chain heads, recorded keys) and rebuilds what the export lacks. */
  readonly refresh: () => Promise<void>;
}

export class Backups {
  #restoring = false;

  constructor(private readonly parts: BackupParts) {}

  /** Refuses (ForbiddenError) an actor that may not `what`: root and the system actor may, others with `intent`. */
  async assertMay(actor: Actor, intent: BackupIntent, what: string): Promise<void> {
    if (actor.id === ROOT_ID && !actor.system) return;
    if (!(await this.parts.global.has(actor, intent))) throw new ForbiddenError(`only root may ${what}`);
  }

  /**
   * The whole store as an export (NDJSON), streamed as it is read; needs `global.createBackup`. The
   * check is done when this resolves. A failure after the first line can only cut the stream, which an
   * import refuses (an export ends with its counts).
   */
  async exportStore(actor: Actor, onProgress?: Progress): Promise<StoreExport> {
    await this.assertMay(actor, "global.createBackup", "create a backup");
    const stream = new PassThrough();
    const done = exportStore(this.parts.kv, stream, onProgress).then(
      (counts) => {
        stream.end();
        return counts;
      },
      (err: unknown) => {
        stream.destroy(err as Error);
        throw err;
      },
    );
    done.catch(() => {}); // the stream fails too: a caller that reads only the stream sees the failure there
    return { stream, done };
  }

  /**
   * Stages a restore of the whole store from an export (opened only once the actor may restore, when a
   * function is given); needs `global.restoreBackup`. A bad export is refused with a ValidationError
   * naming why, and this store is not touched.
   */
  async stageRestore(actor: Actor, input: Readable | (() => Readable)): Promise<StagedRestore> {
    await this.assertMay(actor, "global.restoreBackup", "restore a backup");
    const staged = await stageExport(this.parts.restoreDir, typeof input === "function" ? input() : input, (scratch) => this.#check(scratch));
    return { ...staged, apply: (onProgress) => this.#apply(staged.file, onProgress), discard: () => rm(staged.file, { force: true }) };
  }

  async #check(scratchKv: KvStore): Promise<void> {
    let scratch: ScratchStore;
    try {
      scratch = await this.parts.openScratch(scratchKv);
    } catch (e) {
      throw new ValidationError(`the export cannot be opened here: ${e instanceof Error ? e.message : String(e)}`, "input");
    }
    try {
      if (!(await scratch.identity.getUser(ROOT_ID).catch(() => null))) throw new ValidationError("the export holds no root user", "input");
      let first = "";
      const verified = await scratch.verifyAll((partition, r) => {
        if (!r.ok && first === "") first = `${JSON.stringify(partition)}${r.firstBad ? ` at seq ${r.firstBad.seq}: ${r.firstBad.reason}` : ""}`;
      });
      if (!verified.ok) throw new ValidationError(`the export does not verify: ${verified.bad} partition(s) fail, the first ${first}`, "input");
    } finally {
      await scratch.close();
    }
  }

  async #apply(file: string, onProgress?: Progress): Promise<TransferCounts> {
    if (this.#restoring) throw new ConflictError("a restore is running already", "store");
    this.#restoring = true;
    const { background } = this.parts;
    try {
      await background.pause();
      const counts = await replaceStore(this.parts.kv, file, onProgress);
      await this.parts.refresh();
      background.resume();
      await rm(file, { force: true });
      return counts;
    } finally {
      this.#restoring = false;
      background.kick();
    }
  }
}
