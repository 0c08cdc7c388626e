/** Retention: keep the newest N snapshots of a unique id; older ones go, with their unshared files. */
import { scanAll } from "../kv/contract.js";
import { layout } from "./layout.js";
import type { ArchiveContext } from "./config.js";
import { deleteHeader } from "./delete.js";
import { validateUniqueId } from "./ids.js";
import { fromJson } from "./journal.js";
import { snapshotPartition, type SnapshotHeader } from "./snapshots.js";
import { NotFoundError, ValidationError } from "../errors.js";

/** Deletes every snapshot of `uniqueId` but the newest `keepNewest`; returns how many went. */
export async function applyRetention(ctx: ArchiveContext, uniqueId: unknown, keepNewest = ctx.keepNewest): Promise<number> {
  validateUniqueId(uniqueId);
  if (keepNewest === undefined) return 0;
  if (!Number.isSafeInteger(keepNewest) || keepNewest < 1) throw new ValidationError("keepNewest is a positive integer", "keepNewest");
  let seen = 0;
  const doomed: { header: SnapshotHeader; version: number }[] = [];
  for await (const e of scanAll(ctx.kv, snapshotPartition(uniqueId), { prefix: layout.snaps, reverse: true, limit: 100 })) {
    if (++seen > keepNewest) doomed.push({ header: fromJson<SnapshotHeader>(e.value), version: e.version });
  }
  let deleted = 0;
  for (const { header, version } of doomed) {
    try {
      await deleteHeader(ctx, header, version);
      deleted++;
    } catch (e) {
      if (!(e instanceof NotFoundError)) throw e; // deleted concurrently: fine
    }
  }
  return deleted;
}
