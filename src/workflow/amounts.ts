/**
 * What a workflowitem contributes to its subproject's sums (resources/model/sums.ts): its amount, in
 * the bucket (amountType, status, currency, date). The subproject keeps the sum per bucket in the
 * commit of every write of its items, so budget analytics (analytics.ts) read O(buckets), not O(items).
 *
 * - amountType: `allocated` (TruBudget's assigned budget) or `disbursed`; an item of amountType N/A or
 *   without an amount contributes nothing.
 * - status: `open` or `closed`: TruBudget counts closed items only; open ones are kept apart, not lost.
 * - currency: the item's, or "" when it has none (the subproject's currency then, resolved on read).
 * - date: the day the amount is dated (its exchange rate's date): the billing date as written (closing
 *   sets it when absent), else the close time's day, else the creation's (UTC), as YYYY-MM-DD.
 */
import type { SumContribution, SumsDecl } from "../resources/model/sums.js";
import { normalizeAmount } from "./money.js";

/** The measures of an item's amount (its amountType) and of a budget. */
export const AMOUNT_MEASURES = ["allocated", "disbursed"] as const;
export type AmountMeasure = (typeof AMOUNT_MEASURES)[number];

/** A workflowitem's bucket, as the sums store it. */
export interface ItemBucket {
  readonly measure: AmountMeasure;
  readonly status: string;
  /** "" when the item names no currency (its subproject's). */
  readonly currency: string;
  readonly date: string;
}

/** The day an item's amount is dated: billing date, else close time, else creation (YYYY-MM-DD). */
export function amountDate(data: Record<string, unknown>, createdAt: string): string {
  for (const v of [data.billingDate, data.closedAt, createdAt]) {
    if (typeof v === "string" && /^\d{4}-\d{2}-\d{2}/.test(v)) return v.slice(0, 10);
  }
  return createdAt.slice(0, 10);
}

/** The workflowitem's declared sums: its amount, when it has one, in its bucket. */
export const workflowitemSums: SumsDecl = ({ data, meta }): SumContribution[] => {
  const measure = data.amountType;
  if ((measure !== "allocated" && measure !== "disbursed") || typeof data.amount !== "string") return [];
  const status = typeof data.status === "string" ? data.status : "open";
  const currency = typeof data.currency === "string" ? data.currency : "";
  // Stored amounts are canonical (commands normalize them); a raw write's grouping commas are read the same way.
  return [{ bucket: [measure, status, currency, amountDate(data, meta.createdAt)], amount: normalizeAmount(data.amount) as string }];
};

/** A stored bucket read back (null for a bucket of another shape). */
export function itemBucket(bucket: readonly string[]): ItemBucket | null {
  const [measure, status, currency, date] = bucket;
  if (bucket.length !== 4 || (measure !== "allocated" && measure !== "disbursed")) return null;
  return { measure, status: status!, currency: currency!, date: date! };
}
