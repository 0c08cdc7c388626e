/**
 * Epochs: a restore never erases. Before a restore drops the store's content, it copies every content
 * partition, byte for byte, into the replaced history (partition `["replaced", n, ...the partition]`,
 * a kind kept on restore), and records the restore as an epoch (partition ["epochs"], key ["epoch", n]):
 * who restored, when, which backup (the SHA-256 of the export as uploaded, its header's time, its
 * counts) and what it replaced (counts), each record naming the hash of the one before (a chain).
 *
 * `verify` walks the epochs: their chain, and each replaced history verified as the live store is (its
 * partitions' chains, their ledger anchors, every stored key against the replay of its log; its record
 * chains: users, groups, grants, inboxes), through a read-only view of it (`replacedView`). So the discontinuity shows forever: the replaced history is
 * there and verifiable, and the epoch says who replaced it with what.
 */
import { createHash } from "node:crypto";
import { canonicalJson } from "../kv/canonical.js";
import { allPartitions, scanAll, type KvStore, type Op, type Partition, type PartitionPage } from "../kv/contract.js";
import { keyFamilies, PartitionKind } from "../kv/subspace.js";
import { ConflictError } from "../errors.js";
import type { RecordChainResult } from "../kv/record-chain.js";
import { verifyAll, type ChainedKind } from "../resources/audit/verify-all.js";

/** The partition of the epoch records (kept on restore). */
const EPOCHS_PARTITION = new PartitionKind("epochs");
export const EPOCHS_KIND = EPOCHS_PARTITION.kind;
/** The replaced histories: `["replaced", epoch, ...partition]` (kept on restore). */
const REPLACED = new PartitionKind("replaced");
export const REPLACED_KIND = REPLACED.kind;

const EPOCHS: Partition = EPOCHS_PARTITION.partition();
const F = keyFamilies(["epoch"]);
const recordKey = (n: number) => F.epoch.pack([n]);

/** What a restore records: the epoch it starts. */
export interface EpochRecord {
  /** 1 for the first restore, then on. */
  readonly epoch: number;
  /** Who restored (the actor's id; "system" for the operators' CLI). */
  readonly by: string;
  readonly at: string;
  readonly backup: { readonly sha256: string; readonly exportedAt: string | null; readonly partitions: number; readonly entries: number };
  /** The content it replaced, kept in the replaced history of this epoch. */
  readonly replaced: { readonly partitions: number; readonly entries: number };
  /**
   * The record chains (users, groups, grants) the backup holds off the store's line of history (neither
   * a prefix of the other's: rewritten, from another store, or from before the chains); absent when none.
   */
  readonly forkedRecords?: readonly Partition[];
  /** The hash of the previous record (null for the first). */
  readonly previous: string | null;
  /** SHA-256 of this record's canonical JSON without `hash`. */
  readonly hash: string;
}

const BATCH = 500;

function hashOf(record: Omit<EpochRecord, "hash">): string {
  return createHash("sha256").update(canonicalJson(record)).digest("hex");
}

/** Every epoch record, in order. */
export async function listEpochs(kv: KvStore): Promise<EpochRecord[]> {
  const out: EpochRecord[] = [];
  for await (const e of scanAll(kv, EPOCHS, { prefix: F.epoch.pack() })) out.push(JSON.parse(e.value.toString("utf8")) as EpochRecord);
  return out.sort((a, b) => a.epoch - b.epoch);
}

/**
 * Copies every partition of `kinds` into the replaced history of epoch `n` (a copy left by a restore
 * that died midway is dropped first: the copy is redone whole). Returns what it copied.
 */
export async function archiveContent(kv: KvStore, n: number, kinds: readonly string[]): Promise<{ partitions: number; entries: number }> {
  for await (const p of listReplaced(kv, n)) await kv.dropPartition(p);
  const counts = { partitions: 0, entries: 0 };
  for (const kind of kinds) {
    for await (const partition of allPartitions(kv, kind)) {
      const target: Partition = REPLACED.partition(n, ...partition);
      let batch: Op[] = [];
      let copied = false;
      for await (const e of scanAll(kv, partition, { limit: 1000 })) {
        batch.push({ type: "put", key: e.key, value: e.value });
        counts.entries++;
        copied = true;
        if (batch.length >= BATCH) {
          await kv.commit(target, batch);
          batch = [];
        }
      }
      if (batch.length > 0) await kv.commit(target, batch);
      if (copied) counts.partitions++;
    }
  }
  return counts;
}

async function* listReplaced(kv: KvStore, n: number): AsyncGenerator<Partition> {
  const found: Partition[] = [];
  for await (const p of allPartitions(kv, REPLACED_KIND)) if (p[1] === n) found.push(p);
  yield* found;
}

/** Where the replaced history of each epoch so far holds its copy of `partition` (a copy may be empty). */
export async function replacedCopies(kv: KvStore, partition: Partition): Promise<Partition[]> {
  return (await replacedCopier(kv))(partition);
}

/** `replacedCopies` for many partitions, the epochs read once (as they stand now). */
export async function replacedCopier(kv: KvStore): Promise<(partition: Partition) => Partition[]> {
  const epochs = await listEpochs(kv);
  return (partition) => epochs.map((r) => REPLACED.partition(r.epoch, ...partition));
}

/** Appends the record of epoch `record.epoch` to the chain (refused when that epoch is recorded already). */
export async function recordEpoch(kv: KvStore, record: Omit<EpochRecord, "previous" | "hash">): Promise<EpochRecord> {
  const all = await listEpochs(kv);
  const last = all.at(-1);
  if (last && last.epoch >= record.epoch) throw new ConflictError(`epoch ${record.epoch} is recorded already`, "store");
  const unhashed = { ...record, previous: last?.hash ?? null };
  const full: EpochRecord = { ...unhashed, hash: hashOf(unhashed) };
  await kv.commit(EPOCHS, [
    { type: "check", key: recordKey(full.epoch), version: null },
    { type: "put", key: recordKey(full.epoch), value: Buffer.from(JSON.stringify(full)) },
  ]);
  return full;
}

/** Whether the epoch records form an unbroken chain (each one's hash, each naming the one before); the first break, if any. */
export function checkEpochChain(records: readonly EpochRecord[]): { ok: boolean; reason?: string } {
  let previous: string | null = null;
  for (const [i, r] of records.entries()) {
    const { hash, ...rest } = r;
    if (r.epoch !== i + 1) return { ok: false, reason: `epoch ${i + 1} is missing (found ${r.epoch})` };
    if (hashOf(rest) !== hash) return { ok: false, reason: `epoch ${r.epoch}: its record does not match its hash` };
    if (r.previous !== previous) return { ok: false, reason: `epoch ${r.epoch}: it does not name the record before it` };
    previous = hash;
  }
  return { ok: true };
}

/** The replaced history of epoch `n` as a store of its own, read-only (what verify reads it through). */
export function replacedView(kv: KvStore, n: number): KvStore {
  const at = (partition: Partition): Partition => REPLACED.partition(n, ...partition);
  const readOnly = (): never => {
    throw new ConflictError(`the replaced history of epoch ${n} is read-only`, "store");
  };
  const view: KvStore = {
    backend: `${kv.backend} (replaced epoch ${n})`,
    get: (partition, key) => kv.get(at(partition), key),
    getMany: (partition, keys) => kv.getMany(at(partition), keys),
    scan: (partition, options) => kv.scan(at(partition), options),
    async listPartitions(kind, options): Promise<PartitionPage> {
      // The whole list in one page: a view serves verification, which walks every partition anyway.
      if (options?.after) return { partitions: [], cursor: null };
      const partitions: Partition[] = [];
      for await (const p of allPartitions(kv, REPLACED_KIND)) if (p[1] === n && p[2] === kind) partitions.push(p.slice(2));
      return { partitions, cursor: null };
    },
    commit: async () => readOnly(),
    dropPartition: async () => readOnly(),
    close: async () => {},
  };
  if (kv.getSync) view.getSync = (partition, key) => kv.getSync!(at(partition), key);
  if (kv.scanViews) view.scanViews = (partition, options, visit) => kv.scanViews!(at(partition), options, visit);
  if (kv.countSync) view.countSync = (partition, options) => kv.countSync!(at(partition), options);
  if (kv.partitionVersionSync) view.partitionVersionSync = (partition) => kv.partitionVersionSync!(at(partition));
  return view;
}

/** One epoch as verify reports it: its record and its replaced history verified. */
export interface EpochVerified {
  readonly epoch: number;
  readonly by: string;
  readonly at: string;
  readonly backup: EpochRecord["backup"];
  readonly replaced: { readonly ok: boolean; readonly partitions: number; readonly events: number; readonly bad: number; readonly records: RecordsVerified };
  /** As the epoch's record says (`EpochRecord.forkedRecords`). */
  readonly forkedRecords?: readonly Partition[];
}

/** The record chains of a store (users, groups, grants, inboxes) as verify reports them. */
export interface RecordsVerified {
  readonly ok: boolean;
  /** Partitions with a record chain, checked. */
  readonly partitions: number;
  readonly events: number;
  /** Partitions whose chain or records failed. */
  readonly bad: number;
}

/** Sums up record-chain results (a partition with nothing to check is not counted), each one that counts reported to `onResult`. */
export function tallyRecords(
  results: readonly { readonly partition: Partition; readonly result: RecordChainResult }[],
  onResult?: (partition: Partition, result: RecordChainResult) => void,
): RecordsVerified {
  let ok = true;
  let partitions = 0;
  let events = 0;
  let bad = 0;
  for (const { partition, result } of results) {
    if (result.ok && result.checked === 0) continue;
    partitions++;
    events += result.checked;
    if (!result.ok) {
      ok = false;
      bad++;
    }
    onResult?.(partition, result);
  }
  return { ok, partitions, events, bad };
}

/** The epochs as verify reports them: ok when their chain holds and every replaced history verifies. */
export interface EpochsVerified {
  readonly ok: boolean;
  /** Why the chain of epoch records is broken, if it is. */
  readonly chain?: string;
  readonly list: readonly EpochVerified[];
}

/**
 * Verifies the epoch records' chain and each replaced history, through `verifiersOf` (the live store's
 * schemas over a view of it) and `recordsOf` (its record chains over the view).
 */
export async function verifyEpochs(
  kv: KvStore,
  verifiersOf: (view: KvStore) => readonly ChainedKind[],
  recordsOf: (view: KvStore) => Promise<readonly { readonly partition: Partition; readonly result: RecordChainResult }[]>,
): Promise<EpochsVerified> {
  const records = await listEpochs(kv);
  const chain = checkEpochChain(records);
  const list: EpochVerified[] = [];
  let ok = chain.ok;
  for (const r of records) {
    const view = replacedView(kv, r.epoch);
    const v = await verifyAll(view, verifiersOf(view));
    const records = tallyRecords(await recordsOf(view));
    ok &&= v.ok && records.ok;
    list.push({
      epoch: r.epoch,
      by: r.by,
      at: r.at,
      backup: r.backup,
      replaced: { ok: v.ok && records.ok, partitions: v.partitions, events: v.events, bad: v.bad + records.bad, records },
      ...(r.forkedRecords ? { forkedRecords: r.forkedRecords } : {}),
    });
  }
  return chain.ok ? { ok, list } : { ok, chain: chain.reason!, list };
}
