/**
 * Snapshots and their indexes.
 *
 * One partition per unique id, snapshots in time order (as Imixs-Archive keeps one snapshot series per process instance):
 *   ["archive", uniqueId]   ["snap", millis]        SnapshotHeader (JSON)
 *                           ["doc", millis, i]      document JSON bytes, in 1 MiB pieces
 *                           ["upload", uploadId]    millis — ties a write's upload id to its snapshot
 * The date index, one partition per UTC day (no single hot partition), by the document's modified item
 * (Imixs indexes `$modified`; the item is declared per archive) or, without one, the snapshot time:
 *   ["archive-date", "YYYY-MM-DD"]   [indexed, uniqueId, millis]   SnapshotSummary (JSON)
 *                                    [millis, uniqueId]            (snapshots written before the item was indexed)
 */
import { NotFoundError, ValidationError } from "../errors.js";
import { scanAll, type Key, type KvStore, type Op, type Partition } from "../kv/contract.js";
import { layout } from "./layout.js";
import { decodeDocument, type ArchiveDocument } from "./document.js";
import { dayOf, parseSnapshotId, snapshotIdOf, validateDay, validateUniqueId } from "./ids.js";
import { fromJson, toJson } from "./journal.js";
import { refsOf } from "./files.js";
import { MiB } from "./limits.js";

export const DOC_PIECE = MiB;
export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 1000;

export const snapshotPartition = layout.snapshotPartition;
export const datePartition = layout.datePartition;
export const snapKey = layout.snapKey;
export const uploadKey = layout.uploadKey;

export interface ArchivedFile {
  readonly name: string;
  readonly size: number;
  readonly sha256: string;
  /** The MD5 of the content (Imixs clients name files by it); absent on files archived before it was kept. */
  readonly md5?: string;
}

/** What is stored under ["snap", millis]. File i of `files` is referenced as (upload, i). */
export interface SnapshotHeader {
  readonly id: string;
  readonly uniqueId: string;
  readonly millis: number;
  /** Document bytes plus file bytes. */
  readonly size: number;
  readonly upload: string;
  readonly files: readonly ArchivedFile[];
  /** The time the date index holds it under (the document's modified item, else `millis`); absent on older snapshots. */
  readonly indexed?: number;
}

export interface SnapshotSummary {
  readonly id: string;
  readonly uniqueId: string;
  /** ISO 8601, UTC. */
  readonly modified: string;
  readonly size: number;
}

export interface Snapshot extends SnapshotSummary {
  readonly document: ArchiveDocument;
  readonly files: readonly ArchivedFile[];
}

export interface Page<T> {
  readonly items: T[];
  readonly nextCursor: string | null;
}

export interface PageOptions {
  readonly cursor?: string | null;
  readonly limit?: number;
  /** `asc` (default): oldest first; `desc`: newest first. */
  readonly order?: "asc" | "desc";
}

export function summaryOf(h: SnapshotHeader): SnapshotSummary {
  return { id: h.id, uniqueId: h.uniqueId, modified: new Date(h.millis).toISOString(), size: h.size };
}

function pageLimit(limit: unknown): number {
  if (limit === undefined) return DEFAULT_PAGE;
  if (typeof limit !== "number" || !Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE) {
    throw new ValidationError(`limit is an integer from 1 to ${MAX_PAGE}`, "limit");
  }
  return limit;
}

/** The ops that store a snapshot (header, document pieces, upload link), guarded by "id not taken". */
export function snapshotOps(header: SnapshotHeader, document: Buffer): Op[] {
  const ops: Op[] = [
    { type: "check", key: snapKey(header.millis), version: null },
    { type: "put", key: snapKey(header.millis), value: toJson(header) },
    { type: "put", key: uploadKey(header.upload), value: toJson(header.millis) },
  ];
  for (let i = 0, off = 0; off < document.length || i === 0; i++, off += DOC_PIECE) {
    ops.push({ type: "put", key: layout.documentPiece(header.millis, i), value: document.subarray(off, off + DOC_PIECE) });
  }
  return ops;
}

export async function getHeader(kv: KvStore, uniqueId: string, millis: number) {
  const e = await kv.get(snapshotPartition(uniqueId), snapKey(millis));
  return e && { header: fromJson<SnapshotHeader>(e.value), version: e.version };
}

export async function requireHeader(kv: KvStore, snapshotId: unknown) {
  const { uniqueId, millis } = parseSnapshotId(snapshotId);
  const found = await getHeader(kv, uniqueId, millis);
  if (!found) throw new NotFoundError(`snapshot ${snapshotId as string} does not exist`);
  return found;
}

/** The newest snapshot time of a unique id, if any. */
export async function latestMillis(kv: KvStore, uniqueId: string): Promise<number | undefined> {
  const page = await kv.scan(snapshotPartition(uniqueId), { prefix: layout.snaps, reverse: true, limit: 1 });
  const last = page.entries[0];
  return last === undefined ? undefined : layout.millisOfSnap(last.key);
}

export async function readSnapshot(kv: KvStore, snapshotId: unknown): Promise<Snapshot> {
  const { header } = await requireHeader(kv, snapshotId);
  return { ...summaryOf(header), document: decodeDocument(await readDocumentBytes(kv, header)), files: header.files };
}

/** What places a snapshot in the date index. */
export type DateIndexed = Pick<SnapshotHeader, "uniqueId" | "millis" | "indexed">;

function dateIndexEntry(h: DateIndexed): { partition: Partition; key: Key } {
  return h.indexed === undefined
    ? { partition: datePartition(dayOf(h.millis)), key: layout.dateEntry(h.millis, h.uniqueId) }
    : { partition: datePartition(dayOf(h.indexed)), key: layout.dateEntryIndexed(h.indexed, h.uniqueId, h.millis) };
}

export async function putDateIndex(kv: KvStore, header: SnapshotHeader): Promise<void> {
  const { partition, key } = dateIndexEntry(header);
  await kv.commit(partition, [{ type: "put", key, value: toJson(summaryOf(header)) }]);
}

export async function deleteDateIndex(kv: KvStore, h: DateIndexed): Promise<void> {
  const { partition, key } = dateIndexEntry(h);
  await kv.commit(partition, [{ type: "delete", key }]);
}

/** The header's document, whole. */
export async function readDocumentBytes(kv: KvStore, header: SnapshotHeader): Promise<Buffer> {
  const pieces: Buffer[] = [];
  for await (const e of scanAll(kv, snapshotPartition(header.uniqueId), { prefix: layout.documentOf(header.millis), limit: 16 })) pieces.push(e.value);
  return Buffer.concat(pieces);
}

/** Snapshot summaries of a unique id, oldest first (`order: "desc"`: newest first), paginated. */
export async function findByUniqueId(kv: KvStore, uniqueId: unknown, options: PageOptions = {}): Promise<Page<SnapshotSummary>> {
  validateUniqueId(uniqueId);
  if (options.order !== undefined && options.order !== "asc" && options.order !== "desc") throw new ValidationError("order is asc or desc", "order");
  const page = await kv.scan(snapshotPartition(uniqueId), {
    prefix: layout.snaps,
    reverse: options.order === "desc",
    limit: pageLimit(options.limit),
    after: options.cursor ?? null,
  });
  return { items: page.entries.map((e) => summaryOf(fromJson<SnapshotHeader>(e.value))), nextCursor: page.cursor };
}

/** Snapshot summaries of one UTC day, in time order, paginated. */
export async function findByDate(kv: KvStore, date: unknown, options: PageOptions = {}): Promise<Page<SnapshotSummary>> {
  validateDay(date);
  const page = await kv.scan(datePartition(date), { limit: pageLimit(options.limit), after: options.cursor ?? null });
  return { items: page.entries.map((e) => fromJson<SnapshotSummary>(e.value)), nextCursor: page.cursor };
}

/**
 * The snapshots holding a stored content, by its references (files.ts `refsOf`): each reference that
 * names its snapshot's unique id and whose upload became a snapshot there. Held files and references
 * written before they named their unique id are not found.
 */
export async function* snapshotsHolding(kv: KvStore, sha256: string): AsyncGenerator<{ uniqueId: string; snapshotId: string }> {
  for await (const { store, holder } of refsOf(kv, sha256)) {
    if (typeof holder.uniqueId !== "string") continue;
    const e = await kv.get(snapshotPartition(holder.uniqueId), uploadKey(store[0]));
    if (e) yield { uniqueId: holder.uniqueId, snapshotId: snapshotIdOf(holder.uniqueId, fromJson<number>(e.value)) };
  }
}

export { snapshotIdOf };
