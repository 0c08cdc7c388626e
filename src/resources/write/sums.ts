/**
 * Keeps a parent's sums (model/sums.ts, layout's `g` family) in the commit of each write of a child
 * whose type declares `sums`: the child's contributions before the write are taken away and those after
 * it added, bucket by bucket, so a parent's entry always equals the sum over its live children (what the
 * replay derives and `verify` compares).
 */
import type { Envelope } from "../model/record.js";
import type { Located } from "../model/ref.js";
import { layout } from "../model/layout.js";
import { decodeSum, encodeSum, group } from "../model/sums.js";
import type { Tx } from "../log/writer.js";

/** Moves the parent's sums from the child's state `before` to `after` (null: not there). */
export async function moveSums(tx: Tx, l: Located, before: Pick<Envelope, "data" | "meta"> | null, after: Pick<Envelope, "data" | "meta"> | null): Promise<void> {
  const sums = l.type.decl.sums;
  if (!sums || l.depth === 0) return;
  const delta = group(after ? sums(after) : [], 1, group(before ? sums(before) : [], -1));
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
