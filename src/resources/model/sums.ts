/**
 * Sums a parent keeps of its nested children's amounts (a type's declared `sums`, schema.ts): each child
 * contributes signed decimal amounts to buckets (a tuple of strings the declaration chooses, e.g.
 * measure, currency, date); the parent holds, per bucket, the exact sum and the number of contributions
 * (layout's `g` family, absent at 0). Every write that changes a child's data moves its parent's entries
 * in the same commit (writes.ts, lifecycle.ts), and the replay derives them from the live children
 * (replay.ts), so `verify` checks them as it checks every other key. A read of a parent's totals is one
 * range read of O(buckets), whatever the number of children.
 *
 * Amounts are decimal strings added as bigints scaled by 10^18 (the most fraction digits an amount has),
 * never as floats; a sum is stored in its shortest exact form.
 */
import type { Meta } from "./wire.js";

/** One contribution of a resource: an amount (a decimal string, signed) to a bucket. */
export interface SumContribution {
  readonly bucket: readonly string[];
  readonly amount: string;
}

/**
 * What a type declares: the contributions of one of its resources (none, e.g. while it has no amount),
 * from its data and meta (an envelope's; typed here by their own shapes, not through record.ts, which
 * reaches schema.ts, which imports this declaration: the four files made a circle).
 */
export type SumsDecl = (resource: { readonly data: Record<string, unknown>; readonly meta: Meta }) => readonly SumContribution[];

/** A bucket's total: the exact sum and how many contributions it holds. */
export interface SumEntry {
  readonly sum: string;
  readonly n: number;
}

export const SCALE = 18;
const UNIT = 10n ** BigInt(SCALE);
const DECIMAL = /^(-)?(\d+)(?:\.(\d{1,18}))?$/;

/** A decimal string as a bigint scaled by 10^18; throws on anything else. */
export function toScaled(s: string): bigint {
  const m = DECIMAL.exec(s);
  if (!m) throw new RangeError(`${JSON.stringify(s)} is not a decimal amount`);
  const v = BigInt(m[2]!) * UNIT + BigInt((m[3] ?? "").padEnd(SCALE, "0"));
  return m[1] ? -v : v;
}

/** The shortest exact decimal string of a value scaled by 10^18 ("-12.5", "0", "1000"). */
export function fromScaled(v: bigint): string {
  const neg = v < 0n;
  const a = neg ? -v : v;
  const int = (a / UNIT).toString();
  const frac = (a % UNIT).toString().padStart(SCALE, "0").replace(/0+$/, "");
  return `${neg ? "-" : ""}${int}${frac ? `.${frac}` : ""}`;
}

/** A bucket's identity as one string (a map key): its items joined by NUL. */
export const bucketId = (bucket: readonly string[]): string => bucket.join("\u0000");

/** Contributions grouped by bucket: summed, with their count (signed: -1 per contribution taken away). */
export function group(contributions: readonly SumContribution[], sign: 1 | -1, into = new Map<string, { bucket: readonly string[]; sum: bigint; n: number }>()) {
  for (const c of contributions) {
    const k = bucketId(c.bucket);
    const e = into.get(k) ?? { bucket: c.bucket, sum: 0n, n: 0 };
    into.set(k, { bucket: c.bucket, sum: e.sum + BigInt(sign) * toScaled(c.amount), n: e.n + sign });
  }
  return into;
}

export function encodeSum(sum: bigint, n: number): Buffer {
  return Buffer.from(JSON.stringify({ sum: fromScaled(sum), n }), "utf8");
}

export function decodeSum(b: Buffer): { sum: bigint; n: number } {
  const v = JSON.parse(b.toString("utf8")) as SumEntry;
  return { sum: toScaled(v.sum), n: v.n };
}
