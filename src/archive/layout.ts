/**
 * The key layout of the archive: the only code of this folder that names partitions and keys, built on
 * kv's Subspace (see docs/architecture.md). Each partition kind is declared here once, as a constant;
 * snapshots.ts, files.ts and journal.ts describe what their keys hold.
 *
 *   ["archive", uniqueId]                    ["snap", millis] header · ["doc", millis, i] document piece · ["upload", uploadId] millis
 *   ["archive-date", day]                    [millis, uniqueId] or [indexed, uniqueId, millis] → summary
 *   ["archive-file", sha256]                 ["meta"] · ["ref", uploadId, fileIndex]
 *   ["archive-chunks", uploadId, fileIndex]  [i] chunk bytes · ["done"] marker
 *   ["archive-md5", md5]                     [sha256] empty
 *   ["archive-journal"]                      ["upload", uploadId] · ["delete", snapshotId, token] · ["free", sha256, token] · ["hold", token]
 */
import type { Key, Partition } from "../kv/contract.js";
import { PartitionKind, Subspace } from "../kv/subspace.js";

/** The archive's partition kinds, each declared once. */
export const kinds = {
  snapshots: new PartitionKind("archive"),
  dates: new PartitionKind("archive-date"),
  files: new PartitionKind("archive-file"),
  chunks: new PartitionKind("archive-chunks"),
  md5: new PartitionKind("archive-md5"),
  journal: new PartitionKind("archive-journal"),
} as const;

const SNAP = new Subspace(["snap"]);
const DOC = new Subspace(["doc"]);
const UPLOAD = new Subspace(["upload"]);
const META = new Subspace(["meta"]);
const REF = new Subspace(["ref"]);
const DONE = new Subspace(["done"]);
const DELETE = new Subspace(["delete"]);
const FREE = new Subspace(["free"]);
const HOLD = new Subspace(["hold"]);
/** Keys with no family prefix: a chunk's index, an alias's sha256, a date entry. */
const BARE = new Subspace();

export const layout = {
  // a unique id's snapshots
  snapshotPartition: (uniqueId: string): Partition => kinds.snapshots.partition(uniqueId),
  snaps: SNAP.prefix as Key,
  snapKey: (millis: number): Key => SNAP.pack([millis]),
  millisOfSnap: (key: Key): number => SNAP.unpack(key)[0] as number,
  documentOf: (millis: number): Key => DOC.pack([millis]),
  documentPiece: (millis: number, i: number): Key => DOC.pack([millis, i]),
  uploadKey: (upload: string): Key => UPLOAD.pack([upload]),
  // the date index
  datePartition: (day: string): Partition => kinds.dates.partition(day),
  dateEntry: (millis: number, uniqueId: string): Key => BARE.pack([millis, uniqueId]),
  dateEntryIndexed: (indexed: number, uniqueId: string, millis: number): Key => BARE.pack([indexed, uniqueId, millis]),
  // stored files
  filePartition: (sha256: string): Partition => kinds.files.partition(sha256),
  meta: META.pack(),
  refs: REF.prefix as Key,
  refKey: ([upload, index]: readonly [string, number]): Key => REF.pack([upload, index]),
  refOf: (key: Key): [string, number] => REF.unpack(key) as [string, number],
  chunkPartition: ([upload, index]: readonly [string, number]): Partition => kinds.chunks.partition(upload, index),
  chunk: (i: number): Key => BARE.pack([i]),
  indexOfChunk: (key: Key): unknown => BARE.unpack(key)[0],
  done: DONE.pack(),
  md5Partition: (md5: string): Partition => kinds.md5.partition(md5),
  md5Alias: (sha256: string): Key => BARE.pack([sha256]),
  sha256OfAlias: (key: Key): string => BARE.unpack(key)[0] as string,
  // the journal
  journal: kinds.journal.partition(),
  journalUpload: (upload: string): Key => UPLOAD.pack([upload]),
  journalDelete: (snapshotId: string, token: string): Key => DELETE.pack([snapshotId, token]),
  journalFree: (sha256: string, token: string): Key => FREE.pack([sha256, token]),
  journalHold: (token: string): Key => HOLD.pack([token]),
  journalHolds: HOLD.prefix as Key,
  /** What a journal key records: its family and the token (and for "free", the sha256) it names. */
  journalEntryOf: (key: Key): { family: string; token: string; sha256?: string; wellFormed: boolean } => {
    const family = key[0] as string;
    if (family === "upload" || family === "hold") return { family, token: key[1] as string, wellFormed: key.length === 2 };
    return { family, token: key[2] as string, ...(family === "free" ? { sha256: key[1] as string } : {}), wellFormed: key.length === 3 };
  },
} as const;

/** The archive's partition kinds by name, in declaration order. */
export const ARCHIVE_KIND_NAMES: readonly string[] = Object.values(kinds).map((k) => k.kind);
