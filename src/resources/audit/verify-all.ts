/**
 * Verification of a whole store (what `flowstore verify` reports) and of a signed checkpoint against it,
 * over every chained partition kind, each verified by the resource store of the schema that declares it
 * (`audit.ts` verifies one partition; this walks them all).
 *
 * Rules:
 * - a partition without a chain (nothing logged, e.g. purged) has nothing to check and is not counted;
 * - with `since`, a partition for which it answers the head a previous verify left is verified
 *   incrementally (the chain, head and ledger after it; not the stored keys);
 * - each store's index of visible roots is checked against the records it names (a stray entry fails);
 * - a checkpoint is refused before any read when its shape, signature or signing key is wrong, or when
 *   its partition is not of a chained kind.
 */
import { allPartitions, type KvStore, type Partition } from "../../kv/contract.js";
import type { Verified, VerifyOptions } from "./audit.js";
import { checkCheckpoint, type Checkpoint } from "./checkpoint.js";
import type { VerifyResult } from "../model/events.js";

/** What verifies the partitions of one chained kind: the resource store of the schema declaring it. */
export interface ChainedKind {
  readonly kind: string;
  readonly store: {
    readonly audit: { verify(partition: Partition, options?: VerifyOptions): Promise<Verified> };
    verifyVisibility(): Promise<{ partition: Partition; result: VerifyResult }[]>;
  };
}

export interface VerifyAllResult {
  /** True when every chain verified. */
  readonly ok: boolean;
  /** Partitions with a chain, checked. */
  readonly partitions: number;
  /** Events checked across them. */
  readonly events: number;
  /** Partitions whose chain is broken. */
  readonly bad: number;
  /** Partitions verified incrementally, from the head a previous verify left (`since`). */
  readonly incremental: number;
}

/** A chain head verified earlier: an incremental verify checks the chain from it on. */
export interface VerifiedHead {
  readonly seq: number;
  readonly hash: string | null;
}

export interface VerifyAllOptions {
  /** The head a previous verify left for a partition, if any: it is then verified from there on. */
  readonly since?: (partition: Partition) => VerifiedHead | undefined;
}

/** Verifies every partition of every chained kind, then each store's index of visible roots. */
export async function verifyAll(
  kv: KvStore,
  chained: readonly ChainedKind[],
  onResult?: (partition: Partition, result: Verified) => void,
  options: VerifyAllOptions = {},
): Promise<VerifyAllResult> {
  const total = { ok: true, partitions: 0, events: 0, bad: 0, incremental: 0 };
  for (const { kind, store } of chained) {
    for await (const partition of allPartitions(kv, kind)) {
      const since = options.since?.(partition);
      const incremental = since !== undefined && since.seq > 0;
      const r = await store.audit.verify(partition, incremental ? { since, incremental } : {});
      if (incremental) total.incremental++;
      if (r.ok && r.checked === 0) continue;
      total.partitions++;
      total.events += r.checked;
      if (!r.ok) {
        total.ok = false;
        total.bad++;
      }
      onResult?.(partition, r);
    }
  }
  for (const store of new Set(chained.map((c) => c.store))) {
    for (const stray of await store.verifyVisibility()) {
      total.ok = false;
      total.bad++;
      onResult?.(stray.partition, stray.result);
    }
  }
  return total;
}

/**
 * Proves that a partition's current history extends a checkpoint kept earlier: its signature (by the key
 * with `trustedFingerprint` when given), the same hash at its seq, and the partition verified (with
 * `incremental`, only the chain after the checkpoint).
 */
export async function verifyCheckpoint(
  chained: readonly ChainedKind[],
  checkpoint: unknown,
  options: { trustedFingerprint?: string; incremental?: boolean } = {},
): Promise<VerifyResult> {
  const refused = checkCheckpoint(checkpoint, options.trustedFingerprint);
  if (refused) return { ok: false, checked: 0, firstBad: { seq: 0, reason: refused } };
  const c = checkpoint as Checkpoint;
  const owner = chained.find((k) => k.kind === c.partition[0]);
  if (!owner) return { ok: false, checked: 0, firstBad: { seq: 0, reason: `${JSON.stringify(c.partition[0])} is not a partition kind with a chain` } };
  return owner.store.audit.verify(c.partition, { since: { seq: c.seq, hash: c.hash }, incremental: options.incremental === true });
}
