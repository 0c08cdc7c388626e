/**
 * Export and import of a whole store as NDJSON, streamed: every partition of every kind with its raw
 * entries (state, indexes and the hash-chained log alike), so an import into an empty store of any
 * backend reproduces the source byte for byte and its chains verify.
 *
 *   {"flowstore":"export","version":1,"backend":"lmdb","at":"…"[,"log":{epoch,start,frontier,last}]}
 *   {"partition":"<base64 of the encoded partition tuple>"}
 *   {"k":"<base64 key bytes>","v":"<base64 value>"}   … one line per entry of that partition
 *   {"end":{"partitions":n,"entries":m}}
 *
 * The transparency log is not content (a restore keeps it), so an export does not carry it; but when the
 * log has had a restore (an epoch past 0), the header says where the current epoch begins
 * (`TransparencyLog.epochStart`: the index of its first leaf and the subtree hashes of the tree before
 * it): the leaves of earlier epochs name histories the export does not hold, and with this an auditor
 * (`flowstore audit`) rebuilds the current epoch's leaves from the export on top of that tree.
 *
 * Process-data access tokens stay sealed (encrypted) in an export; they are never decrypted here.
 *
 * An import is all-or-nothing, or resumable: its marker (partition ["import"], key ["marker"], holding
 * the export's header line) is committed before any entry and deleted after the last. While it is
 * there the store is not served and does not verify; `import --resume` with the same export finishes
 * it: the export is deterministic, so an entry already stored byte for byte is skipped, one stored
 * differently refuses the resume (the store then needs a reset: remove it and import again).
 *
 * A restore (`replaceStore`) imports over a store that has content: it commits the marker together with
 * a wipe flag, the path of the export it reads and the restore's epoch, drops every content partition,
 * clears the flag, then imports. A kill anywhere in between leaves the marker, so the store is not
 * served, and `import --resume` with that export finishes it: it drops what is left first while the flag
 * is there. The epoch stays after the marker goes, until the restore is finished (backup.ts
 * `finishRestore`): a kill between the import's end and the fence's opening is resumed from it.
 */
import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import { once } from "node:events";
import { ValidationError } from "../errors.js";
import { allPartitions, scanAll, type Key, type KvStore, type Op, type Partition } from "../kv/contract.js";
import { decode, encode, encodeNested } from "../kv/tuple.js";
import { Feed } from "../resources/log/feed.js";
import { layout } from "../resources/model/layout.js";
import { TransparencyLog } from "../tlog/log.js";
import { keepErasures } from "./erasure.js";
import { CHAINED_KINDS, CONTENT_KINDS, IMPORT_MARKER } from "./kinds.js";

const MARKER_PARTITION = IMPORT_MARKER.partition;
const MARKER_KEY = IMPORT_MARKER.key;
const WIPE_KEY = IMPORT_MARKER.wipe;
const SOURCE_KEY = IMPORT_MARKER.source;
const RESTORE_KEY = IMPORT_MARKER.restore;

/** The marker of an unfinished import (the export's header it reads), or null when there is none. */
export async function unfinishedImport(kv: KvStore): Promise<Record<string, unknown> | null> {
  const e = await kv.get(MARKER_PARTITION, MARKER_KEY);
  return e ? (JSON.parse(e.value.toString("utf8")) as Record<string, unknown>) : null;
}

/** The export file an unfinished restore reads (what `import --resume --in` needs), or null. */
export async function importSource(kv: KvStore): Promise<string | null> {
  const e = await kv.get(MARKER_PARTITION, SOURCE_KEY);
  return e ? e.value.toString("utf8") : null;
}

/**
 * The epoch of a restore that began to replace the store and is not finished (its import may be done,
 * its credentials kept and fence opened not yet), or null.
 */
export async function pendingRestore(kv: KvStore): Promise<number | null> {
  const e = await kv.get(MARKER_PARTITION, RESTORE_KEY);
  return e ? (JSON.parse(e.value.toString("utf8")) as { epoch: number }).epoch : null;
}

/** Forgets the pending restore (its fence is open on its epoch). */
export async function restoreFinished(kv: KvStore): Promise<void> {
  await kv.commit(MARKER_PARTITION, [{ type: "delete", key: RESTORE_KEY }]);
}

/** What an operator is told about a store holding an unfinished import. */
export const UNFINISHED_IMPORT =
  "the store holds an unfinished import: finish it with `flowstore import --resume --in <the same export>`, or reset the store (remove it) and import again";

/** Called as a transfer goes: the partitions and entries carried so far, and the partitions visited (export). */
export type Progress = (done: { partitions: number; entries: number; visited?: number }) => void;

export interface TransferCounts {
  partitions: number;
  entries: number;
}

/**
 * What an export carried: its partitions and entries (the counts of its end line), and how many of those
 * partitions hold a hash chain (`chained`: the partitions `verify` checks, so both commands count them alike).
 */
export interface ExportCounts extends TransferCounts {
  chained: number;
}

const BATCH_ENTRIES = 500;
const BATCH_BYTES = 4 * 1024 * 1024;

async function write(out: Writable, line: string): Promise<void> {
  if (!out.write(line + "\n")) await once(out, "drain");
}

/**
 * Writes the export of `kv` to `out`. `omit` leaves entries out (a backup for an HTTP caller leaves out
 * the credentials: identity/credentials.ts); the counts are those of what was written.
 */
export async function exportStore(kv: KvStore, out: Writable, onProgress?: Progress, omit?: (partition: Partition, key: Key) => boolean): Promise<ExportCounts> {
  const counts = { partitions: 0, entries: 0 };
  let chained = 0;
  const epoch = await new TransparencyLog(kv, new Feed(kv)).epochStart();
  await write(out, JSON.stringify({ flowstore: "export", version: 1, backend: kv.backend, at: new Date().toISOString(), ...(epoch.epoch > 0 ? { log: epoch } : {}) }));
  let visited = 0;
  for (const kind of CONTENT_KINDS) {
    const isChained = CHAINED_KINDS.includes(kind);
    for await (const partition of allPartitions(kv, kind)) {
      visited++;
      // A partition whose keys were all deleted stays listed; it has nothing to carry over.
      let started = false;
      for await (const e of scanAll(kv, partition, { limit: 1000 })) {
        if (omit?.(partition, e.key)) continue;
        if (!started) await write(out, JSON.stringify({ partition: encode(partition).toString("base64") }));
        started = true;
        await write(out, `{"k":"${e.keyBytes.toString("base64")}","v":"${e.value.toString("base64")}"}`);
        counts.entries++;
      }
      if (started) {
        counts.partitions++;
        if (isChained) chained++;
      }
      onProgress?.({ ...counts, visited });
    }
  }
  await write(out, JSON.stringify({ end: counts }));
  return { ...counts, chained };
}

/** How many partitions of `kinds` the store lists (what an export or a verify will visit: their progress total). */
export async function countPartitions(kv: KvStore, kinds: readonly string[]): Promise<number> {
  let n = 0;
  for (const kind of kinds) for await (const _ of allPartitions(kv, kind)) n++;
  return n;
}

/**
 * True when the store holds no partition of any kind flowstore writes, but for what opening it writes by
 * itself (the "built" markers of the visibility index, resources/visibility.ts, and of the sums,
 * audit/order-index.ts): an import opens its target.
 */
export async function isEmpty(kv: KvStore): Promise<boolean> {
  const openedOnly = new Set([layout.visibleBuilt, layout.sumsBuilt].map((p) => encodeNested(p).toString("latin1")));
  for (const kind of CONTENT_KINDS) {
    const { partitions } = await kv.listPartitions(kind, { limit: 2 });
    if (partitions.some((p) => !openedOnly.has(encodeNested(p).toString("latin1")))) return false;
  }
  return true;
}

export async function importStore(kv: KvStore, input: Readable, onProgress?: Progress, options: { resume?: boolean } = {}): Promise<TransferCounts> {
  const marker = await unfinishedImport(kv);
  if (options.resume && !marker) throw new ValidationError("the store holds no unfinished import to resume", "resume");
  if (!options.resume && marker) throw new ValidationError(UNFINISHED_IMPORT, "store");
  if (!options.resume && !(await isEmpty(kv))) throw new ValidationError("the target store is not empty: import only into an empty store", "store");
  // The sums' marker the target's open wrote goes: an export written before sums existed carries none, and
  // the next open then gives its partitions their sums (one that carries it brings it back).
  if (!options.resume) await kv.dropPartition(layout.sumsBuilt);
  const resume = options.resume === true;
  if (resume && (await kv.get(MARKER_PARTITION, WIPE_KEY))) await wipeContent(kv);
  const counts = { partitions: 0, entries: 0 };
  let partition: Partition | null = null;
  let batch: Op[] = [];
  let bytes = 0;
  let header = false;
  let ended: TransferCounts | null = null;
  let lineNo = 0;
  const flush = async (): Promise<void> => {
    if (partition && batch.length > 0 && resume) batch = await missing(kv, partition, batch, lineNo);
    if (partition && batch.length > 0) await kv.commit(partition, batch);
    batch = [];
    bytes = 0;
  };
  const bad = (why: string): never => {
    throw new ValidationError(`line ${lineNo} of the export: ${why}`, "input");
  };
  const lines = createInterface({ input, crlfDelay: Infinity });
  for await (const line of lines) {
    lineNo++;
    if (line.trim() === "") continue;
    if (ended) bad("data after the end line");
    let obj: Record<string, unknown>;
    try {
      obj = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return bad("not JSON");
    }
    if (!header) {
      if (obj.flowstore !== "export" || obj.version !== 1) bad("not a flowstore export (version 1)");
      header = true;
      if (marker && JSON.stringify(marker) !== JSON.stringify(obj)) bad("not the export the unfinished import read (its header differs)");
      if (!marker)
        await kv.commit(MARKER_PARTITION, [
          { type: "check", key: MARKER_KEY, version: null },
          { type: "put", key: MARKER_KEY, value: Buffer.from(JSON.stringify(obj)) },
        ]);
      continue;
    }
    if (typeof obj.partition === "string") {
      await flush();
      if (partition) {
        counts.partitions++;
        onProgress?.(counts);
      }
      partition = decode(Buffer.from(obj.partition, "base64"));
    } else if (typeof obj.k === "string" && typeof obj.v === "string") {
      if (!partition) bad("an entry before any partition");
      const value = Buffer.from(obj.v, "base64");
      batch.push({ type: "put", key: decode(Buffer.from(obj.k, "base64")), value });
      counts.entries++;
      bytes += value.length;
      if (batch.length >= BATCH_ENTRIES || bytes >= BATCH_BYTES) await flush();
    } else if (obj.end && typeof obj.end === "object") {
      await flush();
      if (partition) counts.partitions++;
      ended = obj.end as TransferCounts;
    } else {
      bad("an unknown line");
    }
  }
  if (!header) bad("empty input");
  if (!ended) throw new ValidationError("the export ends before its end line: it was cut off", "input");
  if (ended.partitions !== counts.partitions || ended.entries !== counts.entries) {
    throw new ValidationError(`the export says ${ended.partitions} partitions / ${ended.entries} entries, it held ${counts.partitions} / ${counts.entries}`, "input");
  }
  // An erasure recorded before is put back before the store is served: an export taken before it brought the key.
  await keepErasures(kv, { imported: true });
  await kv.commit(MARKER_PARTITION, [
    { type: "delete", key: SOURCE_KEY },
    { type: "delete", key: MARKER_KEY },
  ]); // last: the store is whole
  onProgress?.(counts);
  return counts;
}

/** The puts of a resumed batch not yet stored; one stored with other bytes refuses the resume. */
async function missing(kv: KvStore, partition: Partition, batch: Op[], lineNo: number): Promise<Op[]> {
  const puts = batch as Extract<Op, { type: "put" }>[];
  const stored = await kv.getMany(
    partition,
    puts.map((op) => op.key),
  );
  return puts.filter((op, i) => {
    const e = stored[i];
    if (e && !e.value.equals(op.value)) {
      throw new ValidationError(`an entry before line ${lineNo} of the export is stored with other bytes: reset the store and import again`, "input");
    }
    return !e;
  });
}

/** Drops every content partition (what an export carries), then clears a restore's wipe flag. */
async function wipeContent(kv: KvStore): Promise<void> {
  for (const kind of CONTENT_KINDS) {
    // Listed first, dropped after: dropping while walking the index would move the walk's cursor.
    const partitions: Partition[] = [];
    for await (const p of allPartitions(kv, kind)) partitions.push(p);
    for (const p of partitions) await kv.dropPartition(p);
  }
  await kv.commit(MARKER_PARTITION, [{ type: "delete", key: WIPE_KEY }]);
}

/** The header line of an export file, parsed; a ValidationError when it is not one. */
export async function exportHeader(file: string): Promise<Record<string, unknown>> {
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  try {
    for await (const line of lines) {
      const header = JSON.parse(line) as Record<string, unknown>;
      if (header.flowstore === "export" && header.version === 1) return header;
      break;
    }
  } catch {
    // not JSON: refused below
  } finally {
    lines.close();
  }
  throw new ValidationError("line 1 of the export: not a flowstore export (version 1)", "input");
}

/**
 * Replaces the whole content of a store with the export in `file` (a restore of `epoch`): the marker,
 * the wipe flag, the file's path and the epoch first, in one commit, then the old content dropped, then
 * the import. Until
 * it returns the store holds the marker (not served, does not verify); after a kill, `importStore(kv,
 * <the file>, …, { resume: true })` finishes it. The file must stay until then. Check the export before
 * (an import into a scratch store): a bad one found here leaves the store wiped and marked.
 */
export async function replaceStore(kv: KvStore, file: string, epoch: number, onProgress?: Progress): Promise<TransferCounts> {
  const header = await exportHeader(file);
  if (await unfinishedImport(kv)) throw new ValidationError(UNFINISHED_IMPORT, "store");
  await kv.commit(MARKER_PARTITION, [
    { type: "check", key: MARKER_KEY, version: null },
    { type: "put", key: MARKER_KEY, value: Buffer.from(JSON.stringify(header)) },
    { type: "put", key: WIPE_KEY, value: Buffer.from("1") },
    { type: "put", key: SOURCE_KEY, value: Buffer.from(file) },
    { type: "put", key: RESTORE_KEY, value: Buffer.from(JSON.stringify({ epoch })) },
  ]);
  return importStore(kv, createReadStream(file), onProgress, { resume: true });
}
