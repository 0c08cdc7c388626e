/**
 * The memory backend: the executable specification of the storage contract. Everything lives in
 * JavaScript maps; keys are kept as latin1 strings of their encoded bytes, whose string order is the
 * byte order of the encoding.
 */
import { ConflictError, UnavailableError, ValidationError } from "../errors.js";
import { cursorBytes, cursorOf, DEFAULT_SCAN_LIMIT, encodeKey, encodePartition, Entry, kindOf } from "./contract.js";
import type { CommitResult, Key, KvStore, Op, Partition, PartitionOps, PartitionPage, ScanOptions, ScanPage, TxReader } from "./contract.js";
import { decode } from "./tuple.js";
import { resolveRange } from "./range.js";
import { prepareBatch, type PreparedBatch, type PreparedOp } from "./batch.js";

const DURABLE = Promise.resolve();

interface Rec {
  value: Buffer;
  version: number;
}

class PartitionData {
  seq = 0;
  readonly records = new Map<string, Rec>();
  #sorted: string[] | null = [];
  sorted(): string[] {
    return (this.#sorted ??= [...this.records.keys()].sort());
  }
  set(k: string, rec: Rec): void {
    if (!this.records.has(k)) this.#sorted = null;
    this.records.set(k, rec);
  }
  delete(k: string): void {
    if (this.records.delete(k)) this.#sorted = null;
  }
  clear(): void {
    this.records.clear();
    this.#sorted = [];
  }
}

const latin1 = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("latin1");

/** First index in sorted `arr` whose value is >= x. */
function lowerBound(arr: readonly string[], x: string): number {
  let lo = 0;
  let hi = arr.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (arr[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The data of a memory store; a new MemoryKv over the same data "reopens" it. */
export class MemoryData {
  readonly partitions = new Map<string, PartitionData>();
  readonly index = new Map<string, Map<string, Partition>>();
}

export class MemoryKv implements KvStore {
  readonly backend = "memory";
  readonly #partitions: Map<string, PartitionData>;
  readonly #index: Map<string, Map<string, Partition>>;
  #closed = false;

  constructor(readonly data: MemoryData = new MemoryData()) {
    this.#partitions = data.partitions;
    this.#index = data.index;
  }

  #check(): void {
    if (this.#closed) throw new UnavailableError("the store is closed");
  }

  #partition(partition: Partition | Buffer, create: boolean): PartitionData | undefined {
    const id = latin1(Buffer.isBuffer(partition) ? partition : encodePartition(partition));
    let data = this.#partitions.get(id);
    if (!data && create) {
      data = new PartitionData();
      this.#partitions.set(id, data);
    }
    return data;
  }

  async get(partition: Partition, key: Key): Promise<Entry | undefined> {
    return this.getSync(partition, key);
  }

  getSync(partition: Partition, key: Key): Entry | undefined {
    this.#check();
    const p = encodePartition(partition);
    const kb = encodeKey(p.length, key);
    const rec = this.#partition(p, false)?.records.get(latin1(kb));
    return rec ? new Entry(kb, rec.value, rec.version) : undefined;
  }

  partitionVersionSync(partition: Partition): number {
    this.#check();
    const seq = this.#partition(partition, false)?.seq ?? 0;
    // listed (written since its last drop): the sequence; dropped or never written: its negative
    if (seq === 0) return 0;
    return this.#index.get(kindOf(partition))?.has(latin1(encodePartition(partition))) ? seq : -seq;
  }

  async getMany(partition: Partition, keys: readonly Key[]): Promise<(Entry | undefined)[]> {
    this.#check();
    const p = encodePartition(partition);
    const data = this.#partition(p, false);
    return keys.map((key) => {
      const kb = encodeKey(p.length, key);
      const rec = data?.records.get(latin1(kb));
      return rec ? new Entry(kb, rec.value, rec.version) : undefined;
    });
  }

  async scan(partition: Partition, options: ScanOptions = {}): Promise<ScanPage> {
    this.#check();
    const p = encodePartition(partition);
    const { start, end, limit, reverse } = resolveRange(options, p.length);
    const data = this.#partition(p, false);
    if (!data) return { entries: [], cursor: null };
    const sorted = data.sorted();
    const lo = lowerBound(sorted, latin1(start));
    const hi = lowerBound(sorted, latin1(end));
    const entries: Entry[] = [];
    const step = reverse ? -1 : 1;
    let i = reverse ? hi - 1 : lo;
    while (i >= lo && i < hi && entries.length < limit) {
      const k = sorted[i]!;
      const rec = data.records.get(k)!;
      entries.push(new Entry(Buffer.from(k, "latin1"), rec.value, rec.version));
      i += step;
    }
    const more = i >= lo && i < hi;
    return { entries, cursor: more ? cursorOf(entries[entries.length - 1]!.keyBytes) : null };
  }

  /** `KvStore.countSync`: the distance between the range's bounds in the sorted keys. */
  countSync(partition: Partition, options: ScanOptions): number {
    this.#check();
    const p = encodePartition(partition);
    const { start, end, limit } = resolveRange(options, p.length);
    const data = this.#partition(p, false);
    if (!data || Buffer.compare(start, end) >= 0) return 0;
    const sorted = data.sorted();
    return Math.min(limit, Math.max(0, lowerBound(sorted, latin1(end)) - lowerBound(sorted, latin1(start))));
  }

  /** `scan`, synchronous, each entry handed to `visit` (`KvStore.scanViews`; the values are the stored buffers themselves, each key a Buffer made for its visit). */
  scanViews(partition: Partition, options: ScanOptions, visit: (keyBytes: Buffer, value: Buffer) => void): string | null {
    this.#check();
    const p = encodePartition(partition);
    const { start, end, limit, reverse } = resolveRange(options, p.length);
    const data = this.#partition(p, false);
    if (!data) return null;
    const sorted = data.sorted();
    const lo = lowerBound(sorted, latin1(start));
    const hi = lowerBound(sorted, latin1(end));
    const step = reverse ? -1 : 1;
    let i = reverse ? hi - 1 : lo;
    let n = 0;
    let last: Buffer | null = null;
    while (i >= lo && i < hi && n < limit) {
      last = Buffer.from(sorted[i]!, "latin1");
      visit(last, data.records.get(sorted[i]!)!.value);
      n++;
      i += step;
    }
    return i >= lo && i < hi ? cursorOf(last!) : null;
  }

  async commit(partition: Partition, ops: readonly Op[]): Promise<CommitResult> {
    this.#check();
    // Validate and encode everything before touching state, so a bad key fails the whole batch.
    const batch = prepareBatch(partition, ops);
    this.#checkBatch(batch);
    return { version: this.#write(partition, batch) };
  }

  /**
   * One atomic commit over several partitions (the contract's `commitAcross`): `build` reads the maps as
   * they are (nothing runs in between: it is synchronous), then every batch is validated and checked
   * before any is written.
   */
  async commitAcross(build: (tx: TxReader) => readonly PartitionOps[]): Promise<{ versions: readonly number[]; durable: Promise<void> }> {
    this.#check();
    const batches = build({ get: (partition, key) => this.getSync(partition, key) }).map((b) => ({ partition: b.partition, batch: prepareBatch(b.partition, b.ops) }));
    const seen = new Set<string>();
    for (const { batch } of batches) {
      if (seen.has(latin1(batch.partition))) throw new ValidationError("a partition appears twice in one commit", "partition");
      seen.add(latin1(batch.partition));
    }
    for (const { batch } of batches) this.#checkBatch(batch);
    return { versions: batches.map(({ partition, batch }) => this.#write(partition, batch)), durable: DURABLE };
  }

  #checkBatch(batch: PreparedBatch): void {
    const data = this.#partition(batch.partition, false);
    for (const check of batch.checks) {
      const op = { k: latin1(check.key), version: check.version };
      const rec = data?.records.get(op.k);
      if (op.version === null ? rec !== undefined : rec?.version !== op.version) {
        throw new ConflictError(
          op.version === null ? `precondition failed: key ${describeKey(op.k)} exists` : `precondition failed: key ${describeKey(op.k)} is not at version ${op.version}`,
        );
      }
    }
  }

  /** Applies a checked batch under the partition's next commit sequence number; returns it. */
  #write(partition: Partition, batch: PreparedBatch): number {
    const target = this.#partition(batch.partition, true)!;
    const version = ++target.seq;
    let wrote = false;
    for (const op of batch.writes.map(toMemoryOp)) {
      switch (op.type) {
        case "put":
          target.set(op.k, { value: op.value, version });
          wrote = true;
          break;
        case "delete":
          target.delete(op.k);
          break;
        case "range": {
          const sorted = target.sorted();
          const doomed = sorted.slice(lowerBound(sorted, op.start), lowerBound(sorted, op.end));
          for (const k of doomed) target.delete(k);
          break;
        }
      }
    }
    if (wrote) {
      const kind = kindOf(partition);
      let idx = this.#index.get(kind);
      if (!idx) this.#index.set(kind, (idx = new Map()));
      idx.set(latin1(batch.partition), partition.slice());
    }
    return version;
  }

  async listPartitions(kind: string, options: { limit?: number; after?: string | null } = {}): Promise<PartitionPage> {
    this.#check();
    if (typeof kind !== "string" || kind === "") throw new ValidationError("kind must be a non-empty string", "kind");
    const limit = options.limit ?? DEFAULT_SCAN_LIMIT;
    if (!Number.isSafeInteger(limit) || limit < 1) throw new ValidationError("limit must be a positive integer", "limit");
    const idx = this.#index.get(kind);
    if (!idx) return { partitions: [], cursor: null };
    const sorted = [...idx.keys()].sort();
    let i = options.after ? lowerBound(sorted, latin1(cursorBytes(options.after))) : 0;
    if (options.after && sorted[i] === latin1(cursorBytes(options.after))) i++;
    const page = sorted.slice(i, i + limit);
    const more = i + limit < sorted.length;
    return {
      partitions: page.map((k) => idx.get(k)!),
      cursor: more ? cursorOf(Buffer.from(page[page.length - 1]!, "latin1")) : null,
    };
  }

  async dropPartition(partition: Partition): Promise<void> {
    this.#check();
    const id = latin1(encodePartition(partition));
    // The commit sequence survives the drop: versions of a partition name never repeat, so caches keyed
    // by a version (chain heads, list pages) cannot mistake a re-created partition for the old one.
    this.#partitions.get(id)?.clear();
    this.#index.get(kindOf(partition))?.delete(id);
  }

  async close(): Promise<void> {
    this.#closed = true;
  }
}

type MemoryOp = { type: "put"; k: string; value: Buffer } | { type: "delete"; k: string } | { type: "range"; start: string; end: string };

function toMemoryOp(op: Exclude<PreparedOp, { type: "check" }>): MemoryOp {
  switch (op.type) {
    case "put":
      return { type: "put", k: latin1(op.key), value: Buffer.from(op.value) };
    case "delete":
      return { type: "delete", k: latin1(op.key) };
    case "range":
      return { type: "range", start: latin1(op.start), end: latin1(op.end) };
  }
}

function describeKey(k: string): string {
  return JSON.stringify(decode(Buffer.from(k, "latin1")), (_, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString("hex") : v));
}
