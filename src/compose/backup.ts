/**
 * Backup and restore of the whole store as operations of the store itself, each taking the acting Actor
 * and checking its declared global intent (TruBudget's `system.createBackup` / `system.restoreBackup`):
 *
 * - `exportStore(actor)`: the store's export (transfer.ts's NDJSON) as a stream; `global.createBackup`;
 *   for any actor but the system actor (the operators' CLI) without credentials (password hashes,
 *   sessions: identity/credentials.ts);
 * - `stageRestore(actor, input)`: stages a restore from such an export (restore.ts) whose `apply()`
 *   replaces the whole content; `global.restoreBackup`.
 *
 * Rules:
 * - the check comes first, before a byte is read or written; a refusal is a ForbiddenError naming root,
 *   whose the backups are in TruBudget;
 * - root may always (as in TruBudget; a store whose root was created before these intents were declared
 *   holds them implicitly), another user or group when it holds the intent, the system actor (the
 *   operators' CLI) always;
 * - the store's fence (fence.ts) shuts next, before the upload is read: from then on no process over the
 *   store acknowledges a write, so nothing acknowledged can be dropped by the restore; one restore at a
 *   time in the whole fleet (a second is a 503);
 * - a staged export is checked in a scratch store opened as the live one is (`openScratch`): it must
 *   open here (the process-data key), hold root, and verify (its chains and ledger: a forged or edited
 *   history is refused); a refused export is a ValidationError (400), the fence opens again, and the
 *   live store is untouched;
 * - `apply()` waits out the fence's grace, pauses the background work, copies the whole content into
 *   the replaced history of a new epoch (epochs.ts: a restore never erases), records the epoch (who,
 *   when, which backup by its SHA-256), moves the fence to `replacing`, replaces the content
 *   (transfer.ts `replaceStore`), gives every user present before and after the credentials it had
 *   before (identity/credentials.ts: no password changed since the backup comes back), opens the fence with the epoch and the token epoch moved on (every
 *   session and token that existed before stops working), refreshes what the process keeps of the old
 *   content (`refresh`), resumes the background work and removes the export's file. A failure before the
 *   fence moved to `replacing` leaves the store as it was (the fence opens again; a ConflictError or the
 *   failure itself); after, it is an UnavailableError (503) saying the store holds an unfinished restore
 *   and how to resume it (`import --resume --in <the file>`), the fence stays shut, the file is kept.
 */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import { rm } from "node:fs/promises";
import { PassThrough, pipeline as pipe, Transform, type Readable } from "node:stream";
import { ROOT_ID, type Actor } from "../access/actor.js";
import type { GlobalPermissions } from "../access/global.js";
import { ConflictError, ForbiddenError, UnavailableError, ValidationError } from "../errors.js";
import type { KvStore, Partition } from "../kv/contract.js";
import type { VerifyAllResult } from "../resources/audit/verify-all.js";
import type { Background } from "./background.js";
import { isSecret, keepCurrentCredentials } from "../identity/credentials.js";
import { archiveContent, listEpochs, recordEpoch, replacedView } from "./epochs.js";
import { FENCE_GRACE_MS, FENCE_LEASE_MS, type StoreFence } from "./fence.js";
import { keepErasures } from "./erasure.js";
import { CONTENT_KINDS } from "./kinds.js";
import { stageExport, type StagedRestore } from "./restore.js";
import { exportStore, replaceStore, restoreFinished, UNFINISHED_IMPORT, type ExportCounts, type Progress, type TransferCounts } from "./transfer.js";

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
  readonly done: Promise<ExportCounts>;
}

/** What a restore's check needs of a store opened over the scratch copy. */
export interface ScratchStore {
  readonly identity: { getUser(id: string): Promise<unknown> };
  /** The scratch store's own KvStore (its record chains are compared with the live store's). */
  readonly kv: KvStore;
  verifyAll(onResult?: (partition: Partition, result: { ok: boolean; firstBad?: { seq: number; reason: string } }) => void): Promise<VerifyAllResult>;
  close(): Promise<void>;
}

export interface BackupParts {
  /** The store without the fence: the restore's own writes. */
  readonly kv: KvStore;
  /** The store's fence (fence.ts), shut by a restore before it reads the upload. */
  readonly fence: StoreFence;
  readonly clock: () => number;
  readonly global: GlobalPermissions;
  /** The identities: which record chains of a backup are off the store's line of history. */
  readonly identity: { forkedIn(other: KvStore): Promise<Partition[]> };
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
    // Credentials (password hashes, sessions) go only to the operators' CLI, never to an HTTP caller.
    const done = exportStore(this.parts.kv, stream, onProgress, actor.system ? undefined : isSecret).then(
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
   * function is given); needs `global.restoreBackup`. Shuts the store's fence before the export is read.
   * A bad export is refused with a ValidationError naming why: the fence opens again and this store is
   * not touched. Until `apply()` or `discard()` the fence stays shut.
   */
  async stageRestore(actor: Actor, input: Readable | (() => Readable)): Promise<StagedRestore> {
    await this.assertMay(actor, "global.restoreBackup", "restore a backup");
    const { fence } = this.parts;
    await fence.shut(actor.id, `a restore by ${actor.id}`);
    const shutAt = performance.now();
    const renewing = setInterval(() => void fence.renew().catch(() => {}), FENCE_LEASE_MS / 3);
    renewing.unref();
    const stop = (): void => clearInterval(renewing);
    let staged: { file: string; counts: TransferCounts };
    let forked: Partition[] = [];
    const digest = createHash("sha256");
    try {
      const source = typeof input === "function" ? input() : input;
      const hashing = new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          digest.update(chunk);
          callback(null, chunk);
        },
      });
      // A failure of the source reaches the staging through the pipeline (which destroys `hashing` with it).
      staged = await stageExport(
        this.parts.restoreDir,
        pipe(source, hashing, () => {}),
        async (scratch) => {
          forked = await this.#check(scratch);
        },
      );
    } catch (e) {
      stop();
      await fence.open().catch(() => {});
      throw e;
    }
    const sha256 = digest.digest("hex");
    let settled = false;
    return {
      ...staged,
      sha256,
      apply: async (onProgress) => {
        if (settled) throw new ConflictError("this staged restore is applied or discarded already", "store");
        settled = true;
        try {
          return await this.#apply(actor, staged, sha256, shutAt, forked, onProgress);
        } finally {
          stop();
        }
      },
      discard: async () => {
        stop();
        await rm(staged.file, { force: true });
        if (!settled) await fence.open();
        settled = true;
      },
    };
  }

  /** Refuses an export that cannot be restored (see stageRestore); answers the record chains it holds off the store's line. */
  async #check(scratchKv: KvStore): Promise<Partition[]> {
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
      // The fence is shut: the live chains do not move until the restore is applied or discarded.
      return await this.parts.identity.forkedIn(scratch.kv);
    } finally {
      await scratch.close();
    }
  }

  async #apply(
    actor: Actor,
    staged: { file: string; counts: TransferCounts },
    sha256: string,
    shutAt: number,
    forked: readonly Partition[],
    onProgress?: Progress,
  ): Promise<TransferCounts> {
    if (this.#restoring) throw new ConflictError("a restore is running already", "store");
    this.#restoring = true;
    const { background, fence, kv } = this.parts;
    let replacing = false;
    try {
      // A write that read the fence open just before it shut lands within the grace: wait it out.
      const grace = FENCE_GRACE_MS - (performance.now() - shutAt);
      if (grace > 0) await new Promise((resolve) => setTimeout(resolve, grace));
      await background.pause();
      const state = await fence.read();
      const last = (await listEpochs(kv)).at(-1)?.epoch ?? 0;
      const epoch = Math.max(state.epoch, last) + 1;
      // Nothing is dropped before the whole content is kept as the replaced history of this epoch.
      const replaced = await archiveContent(kv, epoch, CONTENT_KINDS);
      const header = await exportedAt(staged.file);
      await recordEpoch(kv, {
        epoch,
        by: actor.system ? "system" : actor.id,
        at: new Date(this.parts.clock()).toISOString(),
        backup: { sha256, exportedAt: header, partitions: staged.counts.partitions, entries: staged.counts.entries },
        replaced,
        ...(forked.length > 0 ? { forkedRecords: forked } : {}),
      });
      // Every erasure the live store holds is in the register (kept on restore) before its content goes.
      await keepErasures(kv);
      await fence.replacing();
      replacing = true;
      const counts = await replaceStore(kv, staged.file, epoch, onProgress);
      await finishRestore(kv, fence, epoch);
      await this.parts.refresh();
      background.resume();
      await rm(staged.file, { force: true });
      return counts;
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      if (!replacing) {
        // Nothing of the content changed: the store is as it was.
        await fence.open().catch(() => {});
        background.resume();
        await rm(staged.file, { force: true });
        throw new UnavailableError(`the restore failed before it changed the store, which is as it was: ${why}`);
      }
      throw new UnavailableError(
        `the restore failed after it began to replace the store (${why}); the store is not served until the restore is resumed: ${UNFINISHED_IMPORT} (the export is ${staged.file})`,
      );
    } finally {
      this.#restoring = false;
      background.kick();
    }
  }
}

/**
 * The end of a restore of `epoch` whose import is done (here, or by `import --resume` after a kill):
 * every user present before and after gets the credentials it had before the restore (from the
 * replaced history of the epoch), the fence opens on the epoch with the token epoch moved on, then the
 * pending restore is forgotten. Each step may be run again after a kill.
 */
export async function finishRestore(kv: KvStore, fence: StoreFence, epoch: number): Promise<void> {
  await keepCurrentCredentials(replacedView(kv, epoch), kv);
  await fence.open(true, epoch);
  await restoreFinished(kv);
}

/** The time an export names in its header line (null when it names none). */
async function exportedAt(file: string): Promise<string | null> {
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  try {
    for await (const line of lines) {
      const at = (JSON.parse(line) as { at?: unknown }).at;
      return typeof at === "string" ? at : null;
    }
  } catch {
    return null;
  } finally {
    lines.close();
  }
  return null;
}
