/**
 * The recovery sweep: finishes or undoes what a killed process left in the journal. Run it at startup.
 * Operations this process is running are skipped, and so are those younger than `olderThanMs` (set it
 * above the longest write when other processes share the store).
 */
import { scanAll, type Key } from "../kv/contract.js";
import { layout } from "./layout.js";
import type { ArchiveContext } from "./config.js";
import { deleteCommitted, finishDelete, type DeleteEntry } from "./delete.js";
import { chunkPartition, dropMd5Alias, getFileMeta, sameStore, type StoreId } from "./files.js";
import { fromJson, JOURNAL, journalDelete } from "./journal.js";
import { settleUpload } from "./write.js";

export interface RecoveryReport {
  uploadsRolledBack: number;
  uploadsCompleted: number;
  deletesCompleted: number;
  deletesAbandoned: number;
  freesCompleted: number;
}

export async function recover(ctx: ArchiveContext, options: { olderThanMs?: number } = {}): Promise<RecoveryReport> {
  const { kv, active } = ctx;
  const cutoff = Date.now() - (options.olderThanMs ?? 0);
  const report: RecoveryReport = { uploadsRolledBack: 0, uploadsCompleted: 0, deletesCompleted: 0, deletesAbandoned: 0, freesCompleted: 0 };
  // Collect first (the sweep deletes journal entries as it goes).
  const entries: { key: readonly unknown[]; value: Buffer }[] = [];
  for await (const e of scanAll(kv, JOURNAL, { limit: 500 })) entries.push({ key: e.key, value: e.value });
  for (const { key, value } of entries) {
    const { family: kind, token, sha256: freed, wellFormed } = layout.journalEntryOf(key as Key);
    const { startedAt } = fromJson<{ startedAt: number }>(value);
    if (active.has(token) || startedAt > cutoff) continue;
    if (kind === "upload") {
      if (!wellFormed) continue;
      const outcome = await settleUpload(kv, token, active);
      if (outcome === "completed") report.uploadsCompleted++;
      else if (outcome === "rolledBack") report.uploadsRolledBack++;
    } else if (kind === "delete") {
      const entry = fromJson<DeleteEntry>(value);
      if (await deleteCommitted(kv, entry)) {
        await finishDelete(kv, entry, active);
        report.deletesCompleted++;
      } else report.deletesAbandoned++;
      await journalDelete(kv, key as string[]);
    } else if (kind === "free") {
      const sha256 = freed!;
      const { store, md5 } = fromJson<{ store: StoreId; md5?: string }>(value);
      const meta = await getFileMeta(kv, sha256);
      if (!meta || !sameStore(meta.store, store)) await kv.dropPartition(chunkPartition(store));
      if (md5) await dropMd5Alias(kv, md5, sha256);
      await journalDelete(kv, key as string[]);
      report.freesCompleted++;
    }
  }
  return report;
}
