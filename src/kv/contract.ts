/**
 * The storage contract every backend implements.
 *
 * A partition is named by a tuple whose first item is its kind (`["project", "p1"]`). It is the unit of
 * atomicity and locality: `commit` applies a batch atomically within one partition, and `scan` reads an
 * ordered range of one partition. Keys inside a partition are tuples (see tuple.ts); values are bytes.
 *
 * Every stored key has a version: a positive integer that grows every time the key is written. Within a
 * partition, all puts of one commit get the same version, the partition's commit sequence number, so a
 * version also tells which commit wrote the key.
 */
import { ValidationError } from "../errors.js";
import { decode, encode, encodeNested, encodeNestedThen, encodeWithPrefix, TupleError, type Tuple, type TupleItem } from "./tuple.js";

export type Partition = Tuple;
export type Key = Tuple;

/**
 * The ops of a commit. A put, delete or check made by `KeyedPut`, `KeyedDelete` or `KeyedCheck` below
 * carries its key's encoding, made from the key when the op is made: the resource writer encodes each
 * key its commands write to read it back before the commit (log/writer.ts), and the backend then takes
 * those bytes instead of encoding the key a second time (batch.ts, `carriedKey`). No caller can hand a
 * backend bytes of its own for a key: an op carries bytes only in a private field of those classes.
 */
export type Op =
  | { readonly type: "put"; readonly key: Key; readonly value: Uint8Array }
  | { readonly type: "delete"; readonly key: Key }
  /** Deletes every key that extends `prefix` (and `prefix` itself). */
  | { readonly type: "deletePrefix"; readonly prefix: Key }
  /** Deletes every key in [start, end). */
  | { readonly type: "deleteRange"; readonly start: Key; readonly end: Key }
  /**
   * A precondition: `version: null` means "the key is absent", a number means "the key is present at
   * exactly this version". Checks are evaluated before any write of the batch; one failing check
   * fails the whole batch with a ConflictError and nothing is applied.
   */
  | { readonly type: "check"; readonly key: Key; readonly version: number | null };

export interface CommitResult {
  /** The version given to every key this commit put (the partition's new commit sequence). */
  readonly version: number;
}

export interface ScanOptions {
  /** Every key extending this tuple. Exclusive with start/end. */
  readonly prefix?: Key;
  /** Inclusive lower bound. */
  readonly start?: Key;
  /** Exclusive upper bound. */
  readonly end?: Key;
  /** At most this many entries (default 1000). */
  readonly limit?: number;
  /** Descending key order. */
  readonly reverse?: boolean;
  /** A cursor from a previous page of the same scan: continue after it. */
  readonly after?: string | null;
}

export interface ScanPage {
  readonly entries: Entry[];
  /** Pass as `after` to read the next page; null when the range is exhausted. */
  readonly cursor: string | null;
}

export interface PartitionPage {
  readonly partitions: Partition[];
  readonly cursor: string | null;
}

export interface KvStore {
  /** A short name of the backend ("memory", "lmdb", "redis", "redis-cluster", "redis-sentinel", "postgres"). */
  readonly backend: string;
  get(partition: Partition, key: Key): Promise<Entry | undefined>;
  /**
   * Optional (a backend whose reads need no I/O wait: memory, LMDB): `get`, answered synchronously, with
   * the same result and the same errors (thrown instead of rejected). The read path's fast path (a get
   * of one resource with no promise in between); use it through `getNow` below, which falls back to `get`.
   */
  getSync?(partition: Partition, key: Key): Entry | undefined;
  /**
   * Optional (memory, LMDB: where `getSync` is): the partition's commit sequence now, synchronously: 0
   * before its first commit, the sequence while the partition is listed (`listPartitions`: written since
   * its last drop), its negative once dropped. Every commit that writes the partition, by any process on
   * the store, and every drop of it change the answer, and no answer comes back (the sequence only grows):
   * an unchanged answer means no key of the partition changed in between, so what was decided from the
   * partition's keys read after a first answer still holds at an equal later one (read the sequence first,
   * then the keys). A drop does not move the sequence itself: the version a commit answers is the
   * sequence it moved the partition to, on every backend alike.
   */
  partitionVersionSync?(partition: Partition): number;
  getMany(partition: Partition, keys: readonly Key[]): Promise<(Entry | undefined)[]>;
  scan(partition: Partition, options?: ScanOptions): Promise<ScanPage>;
  /**
   * Optional (a backend whose reads need no I/O wait: memory, LMDB): `scan`, answered synchronously and
   * handing each entry to `visit` instead of collecting them: its key bytes (relative to the partition)
   * and its value, as views that are valid only during that call (the backend may hand out its own read
   * buffers, overwritten by the next entry, and by any read of the store the visit makes: copy what is
   * kept, and read the store only after what the visit needs of them). Returns the page's cursor, as `scan`'s.
   * For a reader that looks at every value once and keeps nothing of it (verify: a copy of each value of
   * a partition was most of what its read cost). Use it through `scanEach` below, which falls back to `scan`.
   */
  scanViews?(partition: Partition, options: ScanOptions, visit: (keyBytes: Buffer, value: Buffer) => void): string | null;
  /**
   * Optional (memory, LMDB: where `scanViews` is): how many entries `scan` with these options would page
   * through, counting no further than `limit` (so `limit + 1` tells a range longer than `limit`),
   * synchronously, with no key or value read into JavaScript (LMDB counts in its cursor). For a reader
   * that must know a range's size before it builds anything of it (the whole list, reads.ts).
   */
  countSync?(partition: Partition, options: ScanOptions): number;
  /** Applies `ops` atomically: all or nothing. Throws ConflictError when a check fails. */
  commit(partition: Partition, ops: readonly Op[]): Promise<CommitResult>;
  /**
   * Optional (a backend whose commits become visible before they are durable: LMDB): `commit`, resolving
   * as soon as the commit is visible to every reader, with `durable` resolving once it is on disk (or
   * rejecting when the disk fails it). Commits become durable in the order they became visible. Use it
   * through `commitStaged` below, which falls back to `commit` (then `durable` is already resolved).
   */
  commitVisible?(partition: Partition, ops: readonly Op[]): Promise<CommitResult & { readonly durable: Promise<void> }>;
  /**
   * Optional (a backend that can run synchronous code inside its write transaction: memory, LMDB): ONE
   * atomic commit over several partitions, with the ops computed inside the transaction. `build` runs
   * there, reading the store as that transaction sees it (no other commit of any process can come
   * between its reads and the writes), and returns each partition's ops (each partition at most once).
   * Every check of every partition is evaluated before any write; a failing check, an invalid op or a
   * throw of `build` applies nothing. Each partition written gets its next commit sequence number:
   * `versions[i]` is the version of `batches[i]`'s puts. Resolves once visible, with `durable` as
   * `commitVisible`'s. Use it through `commitAcross` below (undefined where the backend has none: the
   * caller then keeps its protocol of one commit per partition).
   */
  commitAcross?(build: (tx: TxReader) => readonly PartitionOps[]): Promise<{ readonly versions: readonly number[]; readonly durable: Promise<void> }>;
  /**
   * Lists the partitions of a kind (the first item of their tuple) that have been written and not
   * dropped, in key order, paginated. A partition enters the index on its first commit with a put.
   */
  listPartitions(kind: string, options?: { limit?: number; after?: string | null }): Promise<PartitionPage>;
  /**
   * Removes every key of the partition and its index entry. The partition's commit sequence is kept, so
   * the versions of a re-created partition continue where the old ones stopped and never repeat.
   */
  dropPartition(partition: Partition): Promise<void>;
  close(): Promise<void>;
}

/** One partition's ops in a commit across partitions (`KvStore.commitAcross`). */
export interface PartitionOps {
  readonly partition: Partition;
  readonly ops: readonly Op[];
}

/** The reads of a transaction function (`KvStore.commitAcross`): the store as the write transaction sees it. */
export interface TxReader {
  get(partition: Partition, key: Key): Entry | undefined;
}

/** A stored key/value pair. The key tuple is decoded lazily from its bytes. */
export class Entry {
  #key: Tuple | undefined;
  constructor(
    /** The encoded key, relative to the partition. */
    readonly keyBytes: Buffer,
    readonly value: Buffer,
    readonly version: number,
  ) {}
  get key(): Tuple {
    return (this.#key ??= decode(this.keyBytes));
  }
}

export const DEFAULT_SCAN_LIMIT = 1000;

/**
 * The largest encoded key any backend accepts: the partition's nested encoding plus the key's encoding.
 * LMDB refuses keys above 1978 bytes (its default page size); the headroom is for a backend's own
 * bytes around a key (reserved prefixes, range ends, hash tags). Larger keys are a ValidationError on
 * field "key" in every backend, so a huge id is a clear 400, never a crash.
 */
export const MAX_KEY_BYTES = 1900;

/** Validates and encodes a partition name (ValidationError on field "partition"). */
export function encodePartition(partition: Partition): Buffer {
  assertPartition(partition);
  let bytes: Buffer;
  try {
    bytes = encodeNested(partition);
  } catch (e) {
    if (e instanceof TupleError) throw new ValidationError(`invalid partition: ${e.message}`, "partition");
    throw e;
  }
  if (bytes.length > MAX_KEY_BYTES) {
    throw new ValidationError(`partition name too long: ${bytes.length} encoded bytes, at most ${MAX_KEY_BYTES}`, "partition");
  }
  return bytes;
}

/**
 * Encodes a key of a partition whose encoding is `partitionLength` bytes long and enforces
 * MAX_KEY_BYTES (ValidationError on `field`, "key" unless told).
 */
export function encodeKey(partitionLength: number, key: Key, field = "key"): Buffer {
  let bytes: Buffer;
  try {
    bytes = encode(key);
  } catch (e) {
    if (e instanceof TupleError) throw new ValidationError(e.message, field);
    throw e;
  }
  assertKeySize(partitionLength, bytes.length, field);
  return bytes;
}

/**
 * An op that carries its key's encoding (`Op`), `encodeKey(partitionLength, key)` made when the op is
 * made, so the two agree. The bytes and the key they encode are private fields: no code outside these
 * classes can set them, and a JavaScript object of the op's shape carries none (a private field's
 * presence is a brand no plain object has). Checking it costs a few nanoseconds, where a registry of
 * encoded buffers (a WeakMap) cost about as much as the encoding it saves.
 */
abstract class KeyedOp {
  readonly #key: Key;
  readonly #bytes: Buffer;
  /** The key, as an own field like a plain op's (a copy of the op keeps it, and is a plain op). */
  readonly key: Key;

  constructor(partitionLength: number, key: Key) {
    this.#bytes = encodeKey(partitionLength, key);
    this.#key = key;
    this.key = key;
  }

  /** The key's encoding, relative to the partition (held to MAX_KEY_BYTES with `partitionLength` when made). */
  get keyBytes(): Buffer {
    return this.#bytes;
  }

  /** `op`'s key bytes when it is a keyed op whose key is still the one they encode, else undefined. */
  static carried(op: object): Buffer | undefined {
    return #bytes in op && op.key === op.#key ? op.#bytes : undefined;
  }
}

export class KeyedPut extends KeyedOp {
  readonly type = "put";
  constructor(
    partitionLength: number,
    key: Key,
    readonly value: Uint8Array,
  ) {
    super(partitionLength, key);
  }
}

export class KeyedDelete extends KeyedOp {
  readonly type = "delete";
}

export class KeyedCheck extends KeyedOp {
  readonly type = "check";
  constructor(
    partitionLength: number,
    key: Key,
    readonly version: number | null,
  ) {
    super(partitionLength, key);
  }
}

/**
 * The key bytes an op carries (a `KeyedPut`, `KeyedDelete` or `KeyedCheck` whose key was not replaced
 * since), else undefined: the caller then encodes the op's key.
 */
export function carriedKey(op: Op): Buffer | undefined {
  return KeyedOp.carried(op);
}

/**
 * The full key of a record, encodeNested(partition) ++ encode(key), validated like encodePartition and
 * encodeKey; the key's own bytes are `full.subarray(partitionLength)`.
 */
export function encodeRecordKey(partition: Partition, key: Key): { full: Buffer; partitionLength: number } {
  assertPartition(partition);
  let r: { full: Buffer; partitionLength: number };
  try {
    r = encodeNestedThen(partition, key);
  } catch (e) {
    if (!(e instanceof TupleError)) throw e;
    encodePartition(partition); // throws on field "partition" when the partition is the bad part
    throw new ValidationError(e.message, "key");
  }
  if (r.partitionLength > MAX_KEY_BYTES) encodePartition(partition);
  assertKeySize(r.partitionLength, r.full.length - r.partitionLength);
  return r;
}

/** prefix ++ encode(key), where prefix is an encoded partition; validated like encodeKey. */
export function encodeKeyAfter(prefix: Buffer, key: Key, field = "key"): Buffer {
  let full: Buffer;
  try {
    full = encodeWithPrefix(prefix, key);
  } catch (e) {
    if (e instanceof TupleError) throw new ValidationError(e.message, field);
    throw e;
  }
  assertKeySize(prefix.length, full.length - prefix.length, field);
  return full;
}

export function assertKeySize(partitionLength: number, keyLength: number, field = "key"): void {
  if (partitionLength + keyLength > MAX_KEY_BYTES) {
    throw new ValidationError(`key too long: ${partitionLength + keyLength} encoded bytes with its partition, at most ${MAX_KEY_BYTES}`, field);
  }
}

/** `kv.get`: answered synchronously where the backend can (`KvStore.getSync`), else the promise of `get`. */
export function getNow(kv: KvStore, partition: Partition, key: Key): Entry | undefined | Promise<Entry | undefined> {
  return kv.getSync ? kv.getSync(partition, key) : kv.get(partition, key);
}

const DURABLE = Promise.resolve();

/** A commit that resolves once visible, with `durable` for its flush (`KvStore.commitVisible`), on any backend. */
export async function commitStaged(kv: KvStore, partition: Partition, ops: readonly Op[]): Promise<CommitResult & { readonly durable: Promise<void> }> {
  if (kv.commitVisible) return kv.commitVisible(partition, ops);
  const { version } = await kv.commit(partition, ops);
  return { version, durable: DURABLE };
}

/**
 * A cursor is "." followed by the base64url of the key it stands after. The mark keeps it non-empty,
 * so the empty key (a valid key) has a cursor no reader can mistake for "no cursor", and it makes a
 * cursor of another format an error instead of a silent misreading.
 */
const CURSOR_MARK = ".";

export function cursorOf(keyBytes: Uint8Array): string {
  return CURSOR_MARK + Buffer.from(keyBytes).toString("base64url");
}

export function cursorBytes(cursor: string): Buffer {
  if (typeof cursor !== "string" || cursor.length > 4 * MAX_KEY_BYTES || !/^\.[A-Za-z0-9_-]*$/.test(cursor)) {
    throw new CursorError();
  }
  return Buffer.from(cursor.slice(CURSOR_MARK.length), "base64url");
}

export class CursorError extends ValidationError {
  constructor() {
    super("invalid cursor", "cursor");
  }
}

/** Iterates a whole range page by page (bounded memory). */
export async function* scanAll(kv: KvStore, partition: Partition, options: Omit<ScanOptions, "after"> = {}): AsyncGenerator<Entry> {
  let after: string | null = null;
  do {
    const page: ScanPage = await kv.scan(partition, { ...options, after });
    yield* page.entries;
    after = page.cursor;
  } while (after !== null);
}

/**
 * Visits every entry of a range in key order, page by page (`options.limit` entries a page), each entry's
 * key bytes and value as views valid only during the call (`KvStore.scanViews`, where the backend has it;
 * else `scan`'s pages, whose entries are copies). A visit that returns false ends the scan: the rest of
 * its page is not visited and no further page is read.
 */
export async function scanEach(kv: KvStore, partition: Partition, options: Omit<ScanOptions, "after">, visit: (keyBytes: Buffer, value: Buffer) => unknown): Promise<void> {
  let stopped = false;
  const each = (keyBytes: Buffer, value: Buffer): void => {
    if (!stopped && visit(keyBytes, value) === false) stopped = true;
  };
  let after: string | null = null;
  do {
    if (kv.scanViews) after = await Promise.resolve(kv.scanViews(partition, { ...options, after }, each));
    else {
      const page: ScanPage = await kv.scan(partition, { ...options, after });
      for (const e of page.entries) each(e.keyBytes, e.value);
      after = page.cursor;
    }
  } while (after !== null && !stopped);
}

/** Iterates every partition of a kind. */
export async function* allPartitions(kv: KvStore, kind: string, pageSize = 500): AsyncGenerator<Partition> {
  let after: string | null = null;
  do {
    const page: PartitionPage = await kv.listPartitions(kind, { limit: pageSize, after });
    yield* page.partitions;
    after = page.cursor;
  } while (after !== null);
}

/** Validates a partition name: a non-empty tuple whose first item is a non-empty string. */
export function assertPartition(partition: Partition): void {
  if (!Array.isArray(partition) || partition.length === 0 || typeof partition[0] !== "string" || partition[0] === "") {
    throw new ValidationError("a partition is a tuple whose first item is its kind (a non-empty string)", "partition");
  }
}

export function kindOf(partition: Partition): string {
  return partition[0] as string;
}

export type { Tuple, TupleItem };
