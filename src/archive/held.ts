/**
 * Held files: content stored in the file store (content-addressed, deduplicated, refcounted) for a
 * holder outside the archive, e.g. a workflowitem's document. The holder's own record is the commit
 * point, in a partition the archive does not know, so the archive journals the hold and lets the
 * holder decide how it ends:
 *   1. journal ["hold", token] {owner, info, startedAt};
 *   2. stream the content into the staging partition (token, 0) and add the reference (token, 0) to
 *      the content's file (a content already stored keeps one copy);
 *   3. the holder commits its record (which names `token`), then `settleHold(token, true)` drops the
 *      staged chunks when the content was stored already and removes the journal entry; when the
 *      record was not committed, `settleHold(token, false)` removes the reference and the chunks.
 * A cut-off stream or a limit exceeded in 2 undoes 1-2 before `holdFile` throws. A process killed
 * anywhere leaves the journal entry: the holder's recovery asks `pendingHolds(owner)` and settles each
 * by whether its record exists. Releasing a held file later is `releaseFile(sha256, token)`; the last
 * reference's removal frees the chunks.
 */
import { createHash, randomUUID } from "node:crypto";
import { FlowstoreError, ValidationError } from "../errors.js";
import { scanAll } from "../kv/contract.js";
import { layout } from "./layout.js";
import type { ArchiveContext } from "./config.js";
import { addRef, removeRef, stagedFile, stageFile, type FileContent } from "./files.js";
import { fromJson, JOURNAL, journalDelete, journalPut } from "./journal.js";
import { SizeBudget } from "./limits.js";
import { dropUnlessStore } from "./write.js";

export interface HeldFile {
  /** Names the hold and the file reference: the holder keeps it in its record. */
  readonly token: string;
  readonly sha256: string;
  readonly size: number;
}

export interface PendingHold {
  readonly token: string;
  readonly owner: string;
  readonly info: unknown;
  readonly startedAt: number;
}

const holdKey = layout.journalHold;

export interface HoldOptions {
  /** The largest content accepted (bytes); over it a TooLargeError naming it. */
  readonly maxBytes: number;
  /** Names what is limited in the TooLargeError ("a document"). */
  readonly what: string;
  /** The field a failed stream is reported on. */
  readonly field: string;
  /** The token (default: a random UUID); the holder may use it as its record's id. */
  readonly token?: string;
}

export async function holdFile(ctx: ArchiveContext, owner: string, info: unknown, content: FileContent, options: HoldOptions): Promise<HeldFile> {
  const { kv } = ctx;
  const token = options.token ?? randomUUID();
  ctx.active.add(token);
  try {
    await journalPut(kv, holdKey(token), { owner, info, startedAt: Date.now() });
    try {
      const staged = await stageFile(kv, [token, 0], content, new SizeBudget(options.maxBytes, options.what), options.field);
      await addRef(kv, staged, [token, 0]);
      return { token, sha256: staged.sha256, size: staged.size };
    } catch (e) {
      await undoHold(ctx, token).catch(() => {});
      throw e;
    }
  } finally {
    ctx.active.delete(token);
  }
}

async function undoHold(ctx: ArchiveContext, token: string): Promise<void> {
  const staged = await stagedFile(ctx.kv, [token, 0]);
  if (staged) await removeRef(ctx.kv, staged.sha256, [token, 0], ctx.active);
  await dropUnlessStore(ctx.kv, token, 0, staged?.sha256);
  await journalDelete(ctx.kv, holdKey(token));
}

/** Ends a hold: kept (its holder's record was committed) or undone. Idempotent. */
export async function settleHold(ctx: ArchiveContext, token: string, committed: boolean): Promise<void> {
  if (!committed) return undoHold(ctx, token);
  await dropUnlessStore(ctx.kv, token, 0, (await stagedFile(ctx.kv, [token, 0]))?.sha256);
  await journalDelete(ctx.kv, holdKey(token));
}

/** Removes the reference `token` from a held file (freeing its chunks when it was the last). Idempotent. */
export async function releaseFile(ctx: ArchiveContext, sha256: string, token: string): Promise<void> {
  await removeRef(ctx.kv, sha256, [token, 0], ctx.active);
}

/** Holds of `owner` not settled, started more than `olderThanMs` ago and not running in this process. */
export async function pendingHolds(ctx: ArchiveContext, owner: string, olderThanMs: number): Promise<PendingHold[]> {
  const cutoff = Date.now() - olderThanMs;
  const out: PendingHold[] = [];
  for await (const e of scanAll(ctx.kv, JOURNAL, { prefix: layout.journalHolds, limit: 500 })) {
    const token = layout.journalEntryOf(e.key).token;
    const v = fromJson<{ owner: string; info: unknown; startedAt: number }>(e.value);
    if (v.owner === owner && v.startedAt <= cutoff && !ctx.active.has(token)) out.push({ token, ...v });
  }
  return out;
}

/** The sha-256 and size of a stream, counted against a limit, storing nothing (to check content against a hash). */
export async function hashContent(content: AsyncIterable<Uint8Array | string>, options: Omit<HoldOptions, "token">): Promise<{ sha256: string; size: number }> {
  const budget = new SizeBudget(options.maxBytes, options.what);
  const hash = createHash("sha256");
  try {
    for await (const piece of content) {
      const bytes = typeof piece === "string" ? Buffer.from(piece, "utf8") : piece;
      budget.add(bytes.byteLength);
      hash.update(bytes);
    }
  } catch (e) {
    if (e instanceof FlowstoreError) throw e;
    throw new ValidationError(`the file stream failed before its end: ${(e as Error)?.message ?? e}`, options.field);
  }
  return { sha256: hash.digest("hex"), size: budget.used };
}
