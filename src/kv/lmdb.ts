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
import { existsSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { open, type RootDatabase } from "lmdb";
import { ConfigurationError, ConflictError, UnavailableError, ValidationError } from "../errors.js";
import { makePrivateDirSync, makePrivateFilesSync } from "../private-files.js";
import { prepareBatch, type PreparedBatch } from "./batch.js";
import { insufficientStorage, probeLackOfSpace } from "./storage-full.js";
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
  type PartitionOps,
  type PartitionPage,
  type ScanOptions,
  type ScanPage,
  type TxReader,
} from "./contract.js";
import { resolveRange } from "./range.js";
import { decode, encodeNestedPrefix, type Tuple } from "./tuple.js";

export interface LmdbOptions {
  /** Resolve a commit only once it is flushed to disk (default true). */
  readonly durable?: boolean;
  /** Initial map size in bytes (lmdb-js grows it as needed). */
  readonly mapSize?: number;
  /** Create the store when the directory holds none (default true); false refuses a missing store. */
  readonly create?: boolean;
}

/** The LMDB files of a store directory (created 0600). */
const DATA_FILE = "data.mdb";
const LOCK_FILE = "lock.mdb";

const SEQ = 0x01;
const INDEX = 0x02;
const TOP = Buffer.from([0xff]);
const ZERO = Buffer.from([0x00]);
const EMPTY = Buffer.alloc(0);
const DURABLE = Promise.resolve();
/** Keys removed per step of a range delete (collected first, then removed: no cursor over a changing tree). */
const DELETE_CHUNK = 1024;

type Db = RootDatabase<Buffer, Buffer>;

/** The lmdb-js options every process opening a flowstore directory must share. */
export function lmdbOpenOptions(dir: string, options: LmdbOptions = {}) {
  return {
    path: dir,
    // lmdb-js takes a path with an extension (`/tmp/tmp.X1y2`, `data.v2`) for a file: a flowstore store
    // is always a directory.
    noSubdir: false,
    keyEncoding: "binary" as const,
    encoding: "binary" as const,
    useVersions: true,
    ...(options.mapSize ? { mapSize: options.mapSize } : {}),
  };
}

/**
 * Copies of what lmdb-js reads (its shared read buffer is overwritten by the next read), made with
 * Buffer.allocUnsafe: Node's pool for small ones. lmdb-js's own copy for binary keys and values is
 * Uint8Array.prototype.slice, which gives every copy above 64 bytes a backing store of its own: about
 * 2.4 µs for a 700-byte record against 0.13 µs pooled, and a list of 1,000 reads 2,000 of them (profile
 * of the uncached list, issue 25). The stored bytes are the same: only the reading side's copies change.
 */
function copyOut(from: Uint8Array, start: number, end: number): Buffer {
  if (viewing) return Buffer.from(from.buffer, from.byteOffset + start, end - start);
  const out = Buffer.allocUnsafe(end - start);
  out.set(from.subarray(start, end));
  return out;
}
/**
 * True only while `scanViews` steps its cursor: lmdb-js's reads then hand out views of its own buffers
 * (the shared read buffer, the key buffer), valid until the next step, instead of copies. Set around
 * each step alone, so a read made by a visitor gets its copy as any other.
 */
let viewing = false;
const copying = {
  /** Values: written as given (Buffers), read as pooled copies (lmdb-js hands `decode` its shared buffer, whose `length` it set to the value's). */
  encoder: { encode: (value: Buffer) => value, decode: (bytes: Buffer) => copyOut(bytes, 0, bytes.length) },
  /** Keys: binary, written in place, read as pooled copies (lmdb-js's binary key handling, its read aside). */
  keyEncoder: {
    writeKey: (key: Uint8Array, target: Uint8Array, start: number) => (target.set(key, start), start + key.length),
    readKey: copyOut,
  },
  keyEncoding: undefined,
};

export class LmdbKv implements KvStore {
  readonly backend = "lmdb";
  readonly #db: Db;
  readonly #durable: boolean;
  #closed = false;

  private constructor(
    db: Db,
    durable: boolean,
    readonly dir: string,
  ) {
    this.#db = db;
    this.#durable = durable;
  }

  /** Opens (creating if needed) the store in `dir`. */
  static open(dir: string, options: LmdbOptions = {}): LmdbKv {
    if (typeof dir !== "string" || dir === "") throw new ValidationError("an LMDB store needs a directory", "store");
    if (options.create === false && !existsSync(join(dir, DATA_FILE))) {
      throw new ConfigurationError(existsSync(dir) ? `${dir} holds no flowstore store (no ${DATA_FILE})` : `there is no store in ${dir}: the directory does not exist`, "store");
    }
    let db: Db;
    try {
      // LMDB creates its files 0644 (mdb_env_open's mode in lmdb-js); they hold every record, so the
      // directory is 0700 and the files 0600.
      makePrivateDirSync(dir);
      db = openShared(realpathSync(dir), () => open<Buffer, Buffer>({ ...lmdbOpenOptions(dir, options), ...copying }) as Db);
      guardLmdbCommitRejections();
      makePrivateFilesSync([join(dir, DATA_FILE), join(dir, LOCK_FILE)]);
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
    return this.getSync(partition, key);
  }

  /** lmdb-js reads are synchronous (a memory-mapped B-tree): `get` with no promise. */
  getSync(partition: Partition, key: Key): Entry | undefined {
    this.#check();
    const { full, partitionLength } = encodeRecordKey(partition, key);
    const e = this.#db.getEntry(full);
    return e ? new Entry(full.subarray(partitionLength), e.value, e.version!) : undefined;
  }

  partitionVersionSync(partition: Partition): number {
    this.#check();
    // lmdb-js's shared read buffer, read at once: no copy of the 8 bytes.
    const keys = this.#seqKeys(partition);
    const stored = this.#db.getBinaryFast(keys.seq);
    const seq = stored ? stored.readDoubleBE(0) : 0;
    // listed (written since its last drop): the sequence; dropped or never written: its negative
    if (seq === 0) return 0;
    return this.#db.doesExist(keys.index) ? seq : -seq;
  }

  /** The last partition whose sequence was read (its items as they were then) and the keys of its sequence and index entry. */
  #lastSeq: { readonly items: readonly unknown[]; readonly keys: { readonly seq: Buffer; readonly index: Buffer } } | undefined;

  /**
   * The keys of a partition's sequence and index entry, encoded again unless the partition holds the same strings and
   * numbers as the one asked last (a request asks for the identity partition's every time): items are
   * compared, not the array, so a partition array changed in place is encoded anew.
   */
  #seqKeys(partition: Partition): { readonly seq: Buffer; readonly index: Buffer } {
    const last = this.#lastSeq;
    if (last && last.items.length === partition.length && partition.every((item, i) => (typeof item === "string" || typeof item === "number") && Object.is(item, last.items[i])))
      return last.keys;
    const p = encodePartition(partition);
    const keys = { seq: seqKeyOf(p), index: Buffer.concat([Buffer.from([INDEX]), p]) };
    this.#lastSeq = { items: [...partition], keys };
    return keys;
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

  /**
   * `KvStore.countSync`: lmdb-js's cursor skips and counts natively (no value, and at most one key, handed
   * to JavaScript). Its count ignores `limit` (it would walk the whole range), so the `limit`-th entry is
   * looked for first (its cursor skips `limit - 1` entries): when there is one the answer is `limit`,
   * else the range holds fewer and is counted.
   */
  countSync(partition: Partition, options: ScanOptions): number {
    this.#check();
    const p = encodePartition(partition);
    const { start, end, limit } = resolveRange(options, p.length);
    if (Buffer.compare(start, end) >= 0) return 0;
    const range = { start: Buffer.concat([p, start]), end: Buffer.concat([p, end]) };
    for (const _ of this.#db.getKeys({ ...range, offset: limit - 1, limit: 1 })) return limit;
    return this.#db.getKeysCount(range);
  }

  /** `scan` with no copy of any key or value (`KvStore.scanViews`): each entry a view of lmdb-js's read buffers, valid during its visit. */
  scanViews(partition: Partition, options: ScanOptions, visit: (keyBytes: Buffer, value: Buffer) => void): string | null {
    this.#check();
    const p = encodePartition(partition);
    const { start, end, limit, reverse } = resolveRange(options, p.length);
    if (Buffer.compare(start, end) >= 0) return null;
    const lo = Buffer.concat([p, start]);
    const hi = Buffer.concat([p, end]);
    const range = reverse
      ? this.#db.getRange({ start: hi, end: lo, reverse: true, exclusiveStart: true, inclusiveEnd: true, limit: limit + 1 })
      : this.#db.getRange({ start: lo, end: hi, limit: limit + 1 });
    const plen = p.length;
    const it = range[Symbol.iterator]();
    let n = 0;
    let last: Buffer | null = null;
    try {
      for (;;) {
        let step: IteratorResult<{ key: Buffer; value: Buffer }>;
        viewing = true;
        try {
          step = it.next();
        } finally {
          viewing = false;
        }
        if (step.done) return null;
        const keyBytes = step.value.key.subarray(plen);
        if (n === limit) return cursorOf(last!);
        n++;
        // the cursor of a full page: the last visited key, copied before the visit (its view is overwritten
        // by the next step, and by any read the visit makes)
        if (n === limit) last = Buffer.from(keyBytes);
        visit(keyBytes, step.value.value);
      }
    } finally {
      it.return?.();
    }
  }

  async commit(partition: Partition, ops: readonly Op[]): Promise<CommitResult> {
    const { version, durable } = await this.commitVisible(partition, ops);
    await durable;
    return { version };
  }

  /**
   * The commit, resolved once its transaction is committed (visible), with `durable` the flush of the
   * batch it joined. LMDB flushes transactions in commit order, so a later commit's flush covers every
   * earlier one.
   */
  async commitVisible(partition: Partition, ops: readonly Op[]): Promise<CommitResult & { durable: Promise<void> }> {
    this.#check();
    const batch = prepareBatch(partition, ops);
    const db = this.#db;
    const { versions, durable } = await this.#transact(() => {
      // Every check before any write: a failing one throws here and the child transaction is aborted.
      checkBatch(db, batch);
      return [writeBatch(db, batch)];
    });
    return { version: versions[0]!, durable };
  }

  /**
   * One atomic commit over several partitions (the contract's `commitAcross`): `build` runs inside the
   * write transaction (LMDB's write lock is held, across processes), its reads see that transaction, and
   * its batches are checked, all of them, before any is written. It joins the event turn's transaction and
   * flush as every commit does.
   */
  async commitAcross(build: (tx: TxReader) => readonly PartitionOps[]): Promise<{ versions: readonly number[]; durable: Promise<void> }> {
    this.#check();
    const db = this.#db;
    const reader: TxReader = {
      get(partition, key) {
        const { full, partitionLength } = encodeRecordKey(partition, key);
        const e = db.getEntry(full);
        return e ? new Entry(full.subarray(partitionLength), e.value, e.version!) : undefined;
      },
    };
    return this.#transact(() => {
      const batches = build(reader).map((b) => prepareBatch(b.partition, b.ops));
      const seen = new Set<string>();
      for (const b of batches) {
        const id = b.partition.toString("latin1");
        if (seen.has(id)) throw new ValidationError("a partition appears twice in one commit", "partition");
        seen.add(id);
      }
      for (const b of batches) checkBatch(db, b);
      return batches.map((b) => writeBatch(db, b));
    });
  }

  /** Runs `apply` as a child transaction of the event turn's write transaction; visible, then durable. */
  async #transact(apply: () => number[]): Promise<{ versions: number[]; durable: Promise<void> }> {
    const done = this.#db.childTransaction(apply) as Promise<number[]>;
    const flushed = this.#durable ? this.#flushed() : DURABLE;
    // A failed transaction rejects the flush too, possibly before `done`: never leave it unhandled.
    flushed.catch(() => undefined);
    let versions: number[];
    try {
      versions = await done;
    } catch (e) {
      throw await commitFailure(e, this.dir);
    }
    return {
      versions,
      durable: flushed.catch(async (e: unknown) => {
        throw await commitFailure(e, this.dir);
      }),
    };
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
    await closeShared(this.#db);
  }
}

/**
 * One lmdb-js environment per store directory per process, shared by every LmdbKv opened on it and closed
 * with the last of them. LMDB's rule (an environment is opened once per process), and a deadlock otherwise:
 * lmdb-js opens a database in a synchronous write transaction, which waits on LMDB's write lock on the
 * JS thread; while a second environment's write thread holds that lock it waits for its transaction
 * callbacks to run on the same JS thread, so neither moves again (seen in CI: a test reopening a store
 * while a server on it committed hung with no timeout able to fire).
 */
const environments = new Map<string, { db: Db; users: number }>();
function openShared(path: string, openDb: () => Db): Db {
  const open = environments.get(path);
  if (open) {
    open.users++;
    return open.db;
  }
  const db = openDb();
  environments.set(path, { db, users: 1 });
  return db;
}
async function closeShared(db: Db): Promise<void> {
  for (const [path, open] of environments) {
    if (open.db !== db) continue;
    if (--open.users > 0) return;
    environments.delete(path);
    break;
  }
  await db.close();
}

/** errno EIO, as lmdb-js reports it in `code`. */
const EIO = 5;
const LMDB_COMMIT_FAILED = "Commit failed (see commitError for details)";
let guarded = false;

/**
 * lmdb-js rejects one more promise per failed write transaction than its callers see: the batch's
 * commit promise, made and dropped in its event-turn batching, which nobody can hold. Unhandled, it
 * would end the process (Node's default), so a full disk would kill the server. This guard, installed
 * once when a store is opened, takes exactly those rejections (and their cause, which `commitFailure`
 * reports to the failed commits themselves); any other unhandled rejection keeps Node's default: it is
 * thrown, unless the application has a handler of its own.
 */
function guardLmdbCommitRejections(): void {
  if (guarded) return;
  guarded = true;
  process.on("unhandledRejection", function lmdbCommitGuard(reason) {
    const commitError = (reason as { commitError?: Promise<unknown> } | null)?.commitError;
    if (reason instanceof Error && reason.message === LMDB_COMMIT_FAILED && typeof commitError?.then === "function") {
      commitError.catch(() => undefined);
      return;
    }
    if (process.listeners("unhandledRejection").every((l) => l === lmdbCommitGuard)) throw reason;
  });
}

/**
 * What a failed commit throws. When LMDB's write transaction fails (no space, a file size limit, the map
 * full), lmdb-js rejects each of its commits with "Commit failed" whose `commitError` is a promise
 * rejected with the cause, in the same turn; nothing else handles that promise, and an unhandled
 * rejection ends the process. It is handled here, and a lack of space becomes an
 * InsufficientStorageError (507). The transaction was aborted whole: nothing of the commit is applied.
 */
/** How long a failed commit waits for lmdb-js's cause before probing for a lack of space itself. */
const COMMIT_CAUSE_WAIT_MS = 1000;

async function commitFailure(error: unknown, dir: string): Promise<unknown> {
  const pending = (error as { commitError?: unknown } | null)?.commitError;
  if (!pending || typeof (pending as Promise<unknown>).then !== "function") return insufficientStorage(error) ?? error;
  // Usually settled when the commit's rejection is seen, but not always on a loaded machine (a 500 in CI
  // where a macrotask bounded the wait): a second bounds it, then the cause is probed as for EIO.
  let timer: NodeJS.Timeout | undefined;
  const cause = await Promise.race([
    (pending as Promise<unknown>).then(
      () => undefined,
      (c: unknown) => c,
    ),
    new Promise<undefined>((resolve) => (timer = setTimeout(resolve, COMMIT_CAUSE_WAIT_MS, undefined))),
  ]).finally(() => clearTimeout(timer));
  const full = insufficientStorage(cause);
  if (full) return full;
  // LMDB reports a short write as EIO: at a size limit or on a full disk, that is a lack of space too.
  const code = (cause as { code?: unknown } | undefined)?.code;
  const what = cause === undefined || code === EIO ? probeLackOfSpace(dir, join(dir, "data.mdb")) : null;
  if (what) return insufficientStorage({ code: what });
  if (cause instanceof Error) return new UnavailableError(`the LMDB commit failed: ${cause.message}`);
  return error;
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

/** Throws ConflictError when a check of the batch fails (inside a write transaction). */
function checkBatch(db: Db, batch: PreparedBatch): void {
  for (const c of batch.checks) {
    const e = db.getEntry(Buffer.concat([batch.partition, c.key]));
    if (c.version === null ? e !== undefined : e?.version !== c.version) {
      throw new ConflictError(
        c.version === null ? `precondition failed: key ${describeKey(c.key)} exists` : `precondition failed: key ${describeKey(c.key)} is not at version ${c.version}`,
      );
    }
  }
}

/** The key of an (encoded) partition's commit sequence. */
const seqKeyOf = (p: Buffer): Buffer => Buffer.concat([Buffer.from([SEQ]), p]);

/** A partition's commit sequence (0: never committed). */
function seqOf(db: Db, seqKey: Buffer): number {
  const stored = db.get(seqKey);
  return stored ? stored.readDoubleBE(0) : 0;
}

function seqBytes(seq: number): Buffer {
  const bytes = Buffer.allocUnsafe(8);
  bytes.writeDoubleBE(seq, 0);
  return bytes;
}

/** Writes the batch under the partition's next commit sequence number (inside a write transaction); returns it. */
function writeBatch(db: Db, batch: PreparedBatch): number {
  const p = batch.partition;
  const full = (k: Buffer) => Buffer.concat([p, k]);
  const seqKey = seqKeyOf(p);
  const version = seqOf(db, seqKey) + 1;
  db.putSync(seqKey, seqBytes(version));
  for (const w of batch.writes) {
    if (w.type === "put") db.putSync(full(w.key), w.value, version);
    else if (w.type === "delete") db.removeSync(full(w.key));
    else deleteRange(db, full(w.start), full(w.end));
  }
  const indexKey = Buffer.concat([Buffer.from([INDEX]), p]);
  if (batch.hasPut && !db.doesExist(indexKey)) db.putSync(indexKey, EMPTY);
  return version;
}
