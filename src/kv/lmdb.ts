/**
 * The LMDB backend (package `lmdb`, lmdb-js): the embedded default. One LMDB environment in a data
 * directory, one database in it with binary keys and values and lmdb-js's per-entry versions.
 *
 * Key layout (first byte decides; the tuple codec's nested-tuple code is 0x05, so no user key can take
 * the reserved prefixes):
 *   0x05 …                      user data: encodeNested(partition) ++ encode(key); a partition is one
 *                               contiguous range [P, P ++ 0xff). Value = the stored bytes; the entry's
 *                               lmdb-js version = the contract's version.
 *   0x01 ++ encodeNested(p)     the partition's commit sequence (8-byte big-endian float64)
 *   0x02 ++ encodeNested(p)     the partition index entry (empty value); a kind's partitions are the
 *                               range [0x02 ++ encodeNestedPrefix([kind]), … ++ 0xff)
 *
 * Durability. lmdb-js resolves a write's promise when its transaction is committed (visible); with
 * `overlappingSync` (its default on Linux/macOS, kept here) the fsync of that transaction happens after
 * the commit, outside the write lock, and `db.flushed` resolves when it is on disk. A durable commit
 * (the default, `durable: true`) therefore awaits both its transaction and the flush of the batch it
 * joined. `durable: false` resolves on commit: the database stays consistent after a crash (LMDB's
 * meta pages), but the last commits before an OS crash or power loss may be lost. (A process kill
 * loses nothing either way: committed pages are in the OS page cache.)
 *
 * Group commit. Every commit is an lmdb-js asynchronous transaction callback; lmdb-js runs all callbacks
 * queued in the same event turn in one LMDB write transaction and one flush, so concurrent commits share
 * the disk flush instead of queueing behind each other. Each callback is a child transaction
 * (`childTransaction`), so one failing commit (a ConflictError) is rolled back alone.
 *
 * Several processes may open the same directory: LMDB serializes writers with its lock file and every
 * reader sees committed data. They must run the same lmdb-js options (this module fixes them).
 */
import { mkdirSync } from "node:fs";
import { open, type RootDatabase } from "lmdb";
import { ConflictError, UnavailableError, ValidationError } from "../errors.js";
import { prepareBatch } from "./batch.js";
import {
  CursorError,
  cursorBytes,
  cursorOf,
  DEFAULT_SCAN_LIMIT,
  encodeKeyAfter,
  encodePartition,
  encodeRecordKey,
  Entry,
  MAX_KEY_BYTES,
  type CommitResult,
  type Key,
  type KvStore,
  type Op,
  type Partition,
  type PartitionPage,
  type ScanOptions,
  type ScanPage,
} from "./contract.js";
import { resolveRange } from "./range.js";
import { decode, encodeNestedPrefix, type Tuple } from "./tuple.js";

export interface LmdbOptions {
  /** Resolve a commit only once it is flushed to disk (default true). */
  readonly durable?: boolean;
  /** Initial map size in bytes (lmdb-js grows it as needed). */
  readonly mapSize?: number;
}

const SEQ = 0x01;
const INDEX = 0x02;
const TOP = Buffer.from([0xff]);
const ZERO = Buffer.from([0x00]);
const EMPTY = Buffer.alloc(0);
/** Keys removed per step of a range delete (collected first, then removed: no cursor over a changing tree). */
const DELETE_CHUNK = 1024;

type Db = RootDatabase<Buffer, Buffer>;

/** The lmdb-js options every process opening a flowstore directory must share. */
export function lmdbOpenOptions(dir: string, options: LmdbOptions = {}) {
  return {
    path: dir,
    keyEncoding: "binary" as const,
    encoding: "binary" as const,
    useVersions: true,
    ...(options.mapSize ? { mapSize: options.mapSize } : {}),
  };
}

export class LmdbKv implements KvStore {
  readonly backend = "lmdb";
  readonly #db: Db;
  readonly #durable: boolean;
  #closed = false;

  private constructor(db: Db, durable: boolean, readonly dir: string) {
    this.#db = db;
    this.#durable = durable;
  }

  /** Opens (creating if needed) the store in `dir`. */
  static open(dir: string, options: LmdbOptions = {}): LmdbKv {
    if (typeof dir !== "string" || dir === "") throw new ValidationError("an LMDB store needs a directory", "store");
    let db: Db;
    try {
      mkdirSync(dir, { recursive: true });
      db = open<Buffer, Buffer>(lmdbOpenOptions(dir, options)) as Db;
    } catch (e) {
      throw new UnavailableError(`cannot open the LMDB store in ${dir}: ${(e as Error).message}`);
    }
    return new LmdbKv(db, options.durable ?? true, dir);
  }

  /** The underlying lmdb-js database, for benchmarks and tools. */
  get raw(): Db {
    return this.#db;
  }

  #check(): void {
    if (this.#closed) throw new UnavailableError("the store is closed");
  }

  async get(partition: Partition, key: Key): Promise<Entry | undefined> {
    this.#check();
    const { full, partitionLength } = encodeRecordKey(partition, key);
    const e = this.#db.getEntry(full);
    return e ? new Entry(full.subarray(partitionLength), e.value, e.version!) : undefined;
  }

  async getMany(partition: Partition, keys: readonly Key[]): Promise<(Entry | undefined)[]> {
    this.#check();
    if (!Array.isArray(keys)) throw new ValidationError("keys must be an array", "keys");
    const p = encodePartition(partition);
    const plen = p.length;
    const encoded = keys.map((k) => encodeKeyAfter(p, k));
    // Synchronous reads in one event turn share one read transaction: one consistent snapshot.
    return encoded.map((full) => {
      const e = this.#db.getEntry(full);
      return e ? new Entry(full.subarray(plen), e.value, e.version!) : undefined;
    });
  }

  async scan(partition: Partition, options: ScanOptions = {}): Promise<ScanPage> {
    this.#check();
    const p = encodePartition(partition);
    const { start, end, limit, reverse } = resolveRange(options, p.length);
    if (Buffer.compare(start, end) >= 0) return { entries: [], cursor: null };
    const lo = Buffer.concat([p, start]);
    const hi = Buffer.concat([p, end]);
    const range = reverse
      ? this.#db.getRange({ start: hi, end: lo, reverse: true, exclusiveStart: true, inclusiveEnd: true, limit: limit + 1, versions: true })
      : this.#db.getRange({ start: lo, end: hi, limit: limit + 1, versions: true });
    const entries: Entry[] = [];
    const plen = p.length;
    let more = false;
    for (const { key, value, version } of range) {
      if (entries.length === limit) {
        more = true;
        break;
      }
      entries.push(new Entry(key.subarray(plen), value, version!));
    }
    return { entries, cursor: more ? cursorOf(entries[entries.length - 1]!.keyBytes) : null };
  }

  async commit(partition: Partition, ops: readonly Op[]): Promise<CommitResult> {
    this.#check();
    const batch = prepareBatch(partition, ops);
    const db = this.#db;
    const p = batch.partition;
    const full = (k: Buffer) => Buffer.concat([p, k]);
    const checks = batch.checks.map((c) => ({ key: full(c.key), rel: c.key, version: c.version }));
    const writes = batch.writes.map((w) =>
      w.type === "range" ? { type: w.type, start: full(w.start), end: full(w.end) } : { ...w, key: full(w.key) },
    );
    const seqKey = Buffer.concat([Buffer.from([SEQ]), p]);
    const indexKey = Buffer.concat([Buffer.from([INDEX]), p]);
    const done = db.childTransaction(() => {
      // Every check before any write: a failing one throws here and the child transaction is aborted.
      for (const c of checks) {
        const e = db.getEntry(c.key);
        if (c.version === null ? e !== undefined : e?.version !== c.version) {
          throw new ConflictError(
            c.version === null
              ? `precondition failed: key ${describeKey(c.rel)} exists`
              : `precondition failed: key ${describeKey(c.rel)} is not at version ${c.version}`,
          );
        }
      }
      const prev = db.get(seqKey);
      const version = (prev ? prev.readDoubleBE(0) : 0) + 1;
      const seq = Buffer.allocUnsafe(8);
      seq.writeDoubleBE(version, 0);
      db.putSync(seqKey, seq);
      for (const w of writes) {
        if (w.type === "put") db.putSync(w.key, w.value, version);
        else if (w.type === "delete") db.removeSync(w.key);
        else deleteRange(db, w.start, w.end);
      }
      if (batch.hasPut && !db.doesExist(indexKey)) db.putSync(indexKey, EMPTY);
      return version;
    }) as Promise<number>;
    const flushed = this.#durable ? this.#flushed() : undefined;
    const version = await done;
    if (flushed) await flushed;
    return { version };
  }

  /** Resolves when the batch now being gathered (the one a commit queued this turn joined) is on disk. */
  #flushed(): Promise<void> {
    // `db.flushed` is a thenable evaluated when `then` is called: call it now, in this turn.
    return new Promise((resolve, reject) => this.#db.flushed.then(() => resolve(), reject));
  }

  async listPartitions(kind: string, options: { limit?: number; after?: string | null } = {}): Promise<PartitionPage> {
    this.#check();
    if (typeof kind !== "string" || kind === "") throw new ValidationError("kind must be a non-empty string", "kind");
    const limit = options.limit ?? DEFAULT_SCAN_LIMIT;
    if (!Number.isSafeInteger(limit) || limit < 1) throw new ValidationError("limit must be a positive integer", "limit");
    const prefix = Buffer.concat([Buffer.from([INDEX]), encodeNestedPrefix([kind])]);
    if (prefix.length > MAX_KEY_BYTES) return { partitions: [], cursor: null };
    let start = prefix;
    if (options.after) {
      const after = cursorBytes(options.after);
      if (after.length > MAX_KEY_BYTES) throw new CursorError();
      const next = Buffer.concat([Buffer.from([INDEX]), after, ZERO]);
      if (Buffer.compare(next, start) > 0) start = next;
    }
    const partitions: Partition[] = [];
    let last: Buffer | undefined;
    let more = false;
    for (const key of this.#db.getKeys({ start, end: Buffer.concat([prefix, TOP]), limit: limit + 1 })) {
      if (partitions.length === limit) {
        more = true;
        break;
      }
      last = key.subarray(1);
      partitions.push(decode(last)[0] as Tuple);
    }
    return { partitions, cursor: more && last ? cursorOf(last) : null };
  }

  async dropPartition(partition: Partition): Promise<void> {
    this.#check();
    const p = encodePartition(partition);
    const db = this.#db;
    const done = db.childTransaction(() => {
      // The commit sequence (SEQ) stays: versions of a partition name never repeat after a drop.
      deleteRange(db, p, Buffer.concat([p, TOP]));
      db.removeSync(Buffer.concat([Buffer.from([INDEX]), p]));
    });
    const flushed = this.#durable ? this.#flushed() : undefined;
    await done;
    if (flushed) await flushed;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#db.close();
  }
}

/** Removes every key in [start, end) inside the current write transaction. */
function deleteRange(db: Db, start: Buffer, end: Buffer): void {
  if (Buffer.compare(start, end) >= 0) return;
  for (;;) {
    const keys = Array.from(db.getKeys({ start, end, limit: DELETE_CHUNK }));
    for (const k of keys) db.removeSync(k);
    if (keys.length < DELETE_CHUNK) return;
  }
}

function describeKey(k: Buffer): string {
  return JSON.stringify(decode(k), (_, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString("hex") : v));
}
