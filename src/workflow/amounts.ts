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
 * - rate (a fifth item, only when the item gives one that applies, `ownRate`): the item's own
 *   `exchangeRate` to its subproject's currency, as written. Analytics then convert the amount to the
 *   subproject's currency at that rate, not at the dated one (analytics.ts).
 */
import type { SumContribution, SumsDecl } from "../resources/model/sums.js";
import { normalizeAmount, PositiveDecimal } from "./money.js";

const RATE_RE = new RegExp(PositiveDecimal.pattern!);

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
  /** The item's own exchange rate to its subproject's currency, when it gives one that applies (`ownRate`). */
  readonly rate?: string;
}

/**
 * The item's own exchange rate, when it applies: TruBudget's `exchangeRate` says what one unit of the
 * item's currency is worth in its subproject's currency. It applies when the item names a currency
 * (one without is in the subproject's) and the rate is not 1: the commands fill in 1 ("1.0") when an
 * item with an amount gives none, as TruBudget does, so a 1:1 rate between two currencies is read as
 * "none given" and the dated rates apply (a currency pegged 1:1, BMD or PAB to USD, loses nothing: its
 * dated rate is 1 too when stored). Whether the currency differs from the subproject's is decided on
 * read (the sums do not know the subproject's currency): an item in its subproject's currency needs no
 * rate, whatever it gives.
 */
export function ownRate(data: Record<string, unknown>): string | undefined {
  const rate = data.exchangeRate;
  if (typeof data.currency !== "string" || data.currency === "" || typeof rate !== "string") return undefined;
  return RATE_RE.test(rate) && !/^1(\.0*)?$/.test(rate) ? rate : undefined;
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
  const rate = ownRate(data);
  const bucket = [measure, status, currency, amountDate(data, meta.createdAt), ...(rate === undefined ? [] : [rate])];
  return [{ bucket, amount: normalizeAmount(data.amount) as string }];
};

/** A stored bucket read back (null for a bucket of another shape). */
export function itemBucket(bucket: readonly string[]): ItemBucket | null {
  const [measure, status, currency, date, rate] = bucket;
  if ((bucket.length !== 4 && bucket.length !== 5) || (measure !== "allocated" && measure !== "disbursed")) return null;
  return { measure, status: status!, currency: currency!, date: date!, ...(rate === undefined ? {} : { rate }) };
}
