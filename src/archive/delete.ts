/**
 * Deleting a snapshot: journal ["delete", id, token]; commit the removal of header, document and upload
 * link in the unique id's partition (the commit point, guarded by the header's version); then remove the
 * date index entry and each file reference (freeing content no other snapshot holds); drop the journal.
 */
import { randomUUID } from "node:crypto";
import { ConflictError, NotFoundError } from "../errors.js";
import type { KvStore } from "../kv/contract.js";
import { layout } from "./layout.js";
import type { ArchiveContext } from "./config.js";
import { removeRef } from "./files.js";
import { journalDelete, journalPut } from "./journal.js";
import { deleteDateIndex, getHeader, requireHeader, snapKey, snapshotPartition, uploadKey, type SnapshotHeader } from "./snapshots.js";

export interface DeleteEntry {
  readonly uniqueId: string;
  readonly millis: number;
  /** The time the date index holds it under (see SnapshotHeader.indexed). */
  readonly indexed?: number;
  readonly upload: string;
  readonly files: readonly string[];
  readonly startedAt: number;
}

export async function deleteSnapshot(ctx: ArchiveContext, snapshotId: unknown): Promise<void> {
  const { header, version } = await requireHeader(ctx.kv, snapshotId);
  await deleteHeader(ctx, header, version);
}

export async function deleteHeader(ctx: ArchiveContext, header: SnapshotHeader, version: number): Promise<void> {
  const { kv } = ctx;
  const token = randomUUID();
  const journalKey = layout.journalDelete(header.id, token);
  const entry: DeleteEntry = {
    uniqueId: header.uniqueId,
    millis: header.millis,
    ...(header.indexed === undefined ? {} : { indexed: header.indexed }),
    upload: header.upload,
    files: header.files.map((f) => f.sha256),
    startedAt: Date.now(),
  };
  ctx.active.add(token);
  try {
    await journalPut(kv, journalKey, entry);
    try {
      await kv.commit(snapshotPartition(header.uniqueId), [
        { type: "check", key: snapKey(header.millis), version },
        { type: "delete", key: snapKey(header.millis) },
        { type: "deletePrefix", prefix: layout.documentOf(header.millis) },
        { type: "delete", key: uploadKey(header.upload) },
      ]);
    } catch (e) {
      // A conflict: someone else deleted it. Any other error may hide an applied commit: the journal
      // entry stays for `recover`, which checks whether the header is gone.
      if (!(e instanceof ConflictError)) throw e;
      await journalDelete(kv, journalKey);
      throw new NotFoundError(`snapshot ${header.id} does not exist`);
    }
    await finishDelete(kv, entry, ctx.active);
    await journalDelete(kv, journalKey);
  } finally {
    ctx.active.delete(token);
  }
}

/** The steps after the commit point; idempotent, so recovery can run them again. */
export async function finishDelete(kv: KvStore, entry: DeleteEntry, active: Set<string>): Promise<void> {
  await deleteDateIndex(kv, entry);
  for (let i = 0; i < entry.files.length; i++) await removeRef(kv, entry.files[i]!, [entry.upload, i], active);
}

/** True when the delete journaled as `entry` passed its commit point. */
export async function deleteCommitted(kv: KvStore, entry: DeleteEntry): Promise<boolean> {
  const found = await getHeader(kv, entry.uniqueId, entry.millis);
  return !found || found.header.upload !== entry.upload;
}
