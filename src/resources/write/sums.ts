/**
 * Keeps a parent's sums (model/sums.ts, layout's `g` family) in the commit of each write of a child
 * whose type declares `sums`: the child's contributions before the write are taken away and those after
 * it added, bucket by bucket, so a parent's entry always equals the sum over its live children (what the
 * replay derives and `verify` compares).
 */
import type { Envelope } from "../model/record.js";
import type { Located } from "../model/ref.js";
import { layout } from "../model/layout.js";
import { bucketId, decodeSum, encodeSum, group, type SumContribution } from "../model/sums.js";
import type { Tx } from "../log/writer.js";

/** Moves the parent's sums from the child's state `before` to `after` (null: not there). */
export async function moveSums(tx: Tx, l: Located, before: Pick<Envelope, "data" | "meta"> | null, after: Pick<Envelope, "data" | "meta"> | null): Promise<void> {
  const sums = l.type.decl.sums;
  if (!sums || l.depth === 0) return;
  const was = before ? sums(before) : [];
  const now = after ? sums(after) : [];
  // The same contributions before and after (an update of a field no sum reads): nothing moves, and no
  // amount is parsed. Compared as written, in order; any other difference is summed below.
  if (sameContributions(was, now)) return;
  const delta = group(now, 1, group(was, -1));
  const parentPairs = l.pairs.slice(0, -2);
  for (const { bucket, sum, n } of delta.values()) {
    if (sum === 0n && n === 0) continue;
    const key = layout.sumEntry(l.depth - 1, parentPairs, bucket);
    const raw = await tx.get(key);
    const current = raw ? decodeSum(raw) : { sum: 0n, n: 0 };
    const next = { sum: current.sum + sum, n: current.n + n };
    if (next.n <= 0) tx.delete(key);
    else tx.put(key, encodeSum(next.sum, next.n));
  }
}

/** True when `a` and `b` are the same contributions in the same order: the same buckets and the same amounts as written. */
function sameContributions(a: readonly SumContribution[], b: readonly SumContribution[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i]!.amount !== b[i]!.amount || bucketId(a[i]!.bucket) !== bucketId(b[i]!.bucket)) return false;
  return true;
}
