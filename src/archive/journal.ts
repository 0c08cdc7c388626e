/**
 * The archive's journal: one small partition recording multi-partition operations in flight, so that a
 * process killed mid-way leaves something the recovery sweep can finish or undo.
 *
 * Keys (partition `["archive-journal"]`):
 *   ["upload", uploadId]              {uniqueId, startedAt}   a snapshot write in progress
 *   ["delete", snapshotId, token]     {uniqueId, millis, upload, files, startedAt}  a delete in progress
 *   ["free", sha256, token]           {store, md5?, startedAt} a file's chunks (and MD5 alias) are being freed
 *   ["hold", token]                   {owner, info, startedAt} a held file not yet settled (held.ts; its
 *                                                             holder's recovery settles it, not `recover`)
 * An entry is removed when its operation is complete. Only operations in flight live here, so the
 * partition stays small.
 */
import type { Key, KvStore, Partition } from "../kv/contract.js";
import { layout } from "./layout.js";

export const JOURNAL: Partition = layout.journal;

export function toJson(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value), "utf8");
}

export function fromJson<T>(bytes: Buffer): T {
  return JSON.parse(bytes.toString("utf8")) as T;
}

export async function journalPut(kv: KvStore, key: Key, value: unknown): Promise<void> {
  await kv.commit(JOURNAL, [{ type: "put", key, value: toJson(value) }]);
}

export async function journalDelete(kv: KvStore, key: Key): Promise<void> {
  await kv.commit(JOURNAL, [{ type: "delete", key }]);
}

export async function journalDeletePrefix(kv: KvStore, prefix: Key): Promise<void> {
  await kv.commit(JOURNAL, [{ type: "deletePrefix", prefix }]);
}
