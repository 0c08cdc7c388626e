/**
 * Budget analytics (issue 26, part 4): a project's and a subproject's totals — projected (their
 * projected budgets), assigned and disbursed (their workflowitems' amounts, amountType `allocated` and
 * `disbursed`) — per currency and converted to a chosen currency at the dated exchange rates (rates.ts).
 *
 * Nothing here reads a workflowitem. Each subproject keeps the sums of its items' amounts per bucket
 * (amounts.ts: measure, status, currency, date), moved in the commit of every write of an item
 * (resources' sums, `g`), so a read is the project's record, its subprojects' records and one range of
 * their sums: O(subprojects + buckets), whatever the number of items. Conversion happens on read, from
 * the per-(currency, date) sums: each bucket's sum times the rate of its date, as an exact fraction;
 * a total is the exact sum of those fractions, rounded once (half to even) to `DECIMALS` places.
 *
 * Who sees what: the project's (or subproject's) view intent is required. A project's totals count
 * every subproject, as the project's own figures; its per-subproject rows list only the subprojects the
 * caller may view (the others are counted in `hiddenSubprojects`, their totals in the project's only).
 * TruBudget counts closed workflowitems only: `assigned` and `disbursed` are theirs; open items'
 * amounts are shown apart (`openAssigned`, `openDisbursed`).
 */
import { Type, type Static } from "@sinclair/typebox";
import type { Actor } from "../access/actor.js";
import type { ResourceStore, SumRow } from "../resources/store.js";
import { fromScaled, SCALE, toScaled } from "../resources/model/sums.js";
import { ValidationError } from "../errors.js";
import { itemBucket } from "./amounts.js";
import { isCurrency } from "./money.js";
import type { ExchangeRates } from "./rates.js";
import { projectRef, subprojectRef, type ProjectedBudget, type WorkflowSchema } from "./schema.js";

/** The places a converted total is rounded to (half to even). */
export const DECIMALS = 2;

/** The measures of a row, in the order they are shown and exported. */
export const MEASURES = ["projected", "assigned", "disbursed", "openAssigned", "openDisbursed"] as const;
export type Measure = (typeof MEASURES)[number];

const Money = Type.String({ description: "an exact decimal string" });
const measures = Object.fromEntries(MEASURES.map((m) => [m, Money])) as Record<Measure, typeof Money>;

export const CurrencyTotals = Type.Object({ currency: Type.String(), ...measures }, { additionalProperties: false, $id: "CurrencyTotals" });
export type CurrencyTotals = Static<typeof CurrencyTotals>;

export const MissingRate = Type.Object({ from: Type.String(), to: Type.String(), date: Type.String() }, { additionalProperties: false, $id: "MissingRate" });
export type MissingRate = Static<typeof MissingRate>;

export const ConvertedTotals = Type.Object(
  {
    currency: Type.String(),
    ...Object.fromEntries(MEASURES.map((m) => [m, Type.Union([Money, Type.Null()])])),
    missingRates: Type.Array(MissingRate, { description: "the rates a conversion lacked (its measure is null)" }),
  },
  { additionalProperties: false, $id: "ConvertedTotals" },
);
export type ConvertedTotals = { currency: string; missingRates: MissingRate[] } & Record<Measure, string | null>;

export const AnalyticsRow = Type.Object(
  {
    id: Type.String(),
    displayName: Type.String(),
    currency: Type.Optional(Type.String({ description: "the subproject's currency" })),
    byCurrency: Type.Array(CurrencyTotals),
    converted: Type.Optional(ConvertedTotals),
  },
  { additionalProperties: false, $id: "AnalyticsRow" },
);
export type AnalyticsRow = { id: string; displayName: string; currency?: string; byCurrency: CurrencyTotals[]; converted?: ConvertedTotals };

export const Analytics = Type.Object(
  {
    projectId: Type.String(),
    subprojectId: Type.Optional(Type.String()),
    currency: Type.Union([Type.String(), Type.Null()], { description: "the currency totals are converted to (null: none asked)" }),
    date: Type.String({ description: "the day projected budgets are converted at (items: at their own date)" }),
    decimals: Type.Integer({ description: "the places converted totals are rounded to (half to even)" }),
    total: AnalyticsRow,
    subprojects: Type.Array(AnalyticsRow, { description: "per subproject the caller may view (a project's analytics)" }),
    hiddenSubprojects: Type.Integer({ description: "subprojects counted in the total that the caller may not view" }),
  },
  { additionalProperties: false, $id: "Analytics" },
);
export type Analytics = {
  projectId: string;
  subprojectId?: string;
  currency: string | null;
  date: string;
  decimals: number;
  total: AnalyticsRow;
  subprojects: AnalyticsRow[];
  hiddenSubprojects: number;
};

// ------------------------------------------------------------------ exact arithmetic

/** An exact fraction n/d (d > 0). */
interface Fraction {
  n: bigint;
  d: bigint;
}

const DEC = /^(-)?(\d+)(?:\.(\d+))?$/;

export function fraction(s: string): Fraction {
  const m = DEC.exec(s);
  if (!m) throw new RangeError(`${JSON.stringify(s)} is not a decimal`);
  const frac = m[3] ?? "";
  const n = BigInt(m[2]! + frac);
  return { n: m[1] ? -n : n, d: 10n ** BigInt(frac.length) };
}

const gcd = (a: bigint, b: bigint): bigint => {
  a = a < 0n ? -a : a;
  while (b) [a, b] = [b, a % b];
  return a;
};
const norm = (f: Fraction): Fraction => {
  const g = gcd(f.n, f.d) || 1n;
  return { n: f.n / g, d: f.d / g };
};
export const add = (a: Fraction, b: Fraction): Fraction => norm({ n: a.n * b.d + b.n * a.d, d: a.d * b.d });
export const mul = (a: Fraction, b: Fraction): Fraction => norm({ n: a.n * b.n, d: a.d * b.d });
export const div = (a: Fraction, b: Fraction): Fraction => norm(b.n < 0n ? { n: -a.n * b.d, d: a.d * -b.n } : { n: a.n * b.d, d: a.d * b.n });
export const ZERO: Fraction = { n: 0n, d: 1n };
/** The scale of a sum (model/sums.ts): 10^18. */
const SUM_UNIT = 10n ** BigInt(SCALE);

/** A fraction rounded half to even to `places`, as a decimal string with exactly that many places. */
export function roundHalfEven(f: Fraction, places = DECIMALS): string {
  const scale = 10n ** BigInt(places);
  const num = f.n * scale;
  const neg = num < 0n;
  const a = neg ? -num : num;
  let q = a / f.d;
  const r2 = (a % f.d) * 2n;
  if (r2 > f.d || (r2 === f.d && q % 2n === 1n)) q += 1n;
  const digits = q.toString().padStart(places + 1, "0");
  const s = places === 0 ? digits : `${digits.slice(0, -places)}.${digits.slice(-places)}`;
  return neg && q !== 0n ? `-${s}` : s;
}

// ------------------------------------------------------------------ totals

/** One amount to count: a measure, its currency and the day it is dated (conversion's rate date). */
export interface Contribution {
  readonly measure: Measure;
  readonly currency: string;
  readonly date: string;
  readonly sum: string;
}

/** What a subproject's sums contribute (its items' buckets; "" currency: the subproject's). */
export function itemContributions(sums: readonly SumRow[], subprojectCurrency: string): Contribution[] {
  const out: Contribution[] = [];
  for (const s of sums) {
    const b = itemBucket(s.bucket);
    if (!b) continue;
    const closed = b.status === "closed";
    const measure: Measure = b.measure === "allocated" ? (closed ? "assigned" : "openAssigned") : closed ? "disbursed" : "openDisbursed";
    out.push({ measure, currency: b.currency || subprojectCurrency, date: b.date, sum: s.sum });
  }
  return out;
}

/** What projected budgets contribute, dated at `date` (they have no date of their own). */
export function projectedContributions(budgets: readonly ProjectedBudget[] | undefined, date: string): Contribution[] {
  return (budgets ?? []).map((b) => ({ measure: "projected", currency: b.currencyCode, date, sum: b.value }));
}

/** A rate lookup: the latest rate of a pair on or before a day. */
export type RateAt = (from: string, to: string, date: string) => Promise<{ rate: string } | null>;

/**
 * The factor that turns an amount in `from` into `to` at a day: the pair's rate, or the inverse of the
 * reverse pair's, or through EUR (the ECB's base); null when none is stored.
 */
export async function factor(rateAt: RateAt, from: string, to: string, date: string): Promise<Fraction | null> {
  if (from === to) return { n: 1n, d: 1n };
  const direct = await rateAt(from, to, date);
  if (direct) return fraction(direct.rate);
  const inverse = await rateAt(to, from, date);
  if (inverse) return div({ n: 1n, d: 1n }, fraction(inverse.rate));
  if (from !== "EUR" && to !== "EUR") {
    const [a, b] = await Promise.all([rateAt("EUR", from, date), rateAt("EUR", to, date)]);
    if (a && b) return div(fraction(b.rate), fraction(a.rate));
  }
  return null;
}

/** The factors of one read, by (currency, day): each looked up once, whatever the rows that need it. */
export type FactorCache = Map<string, Promise<Fraction | null>>;

/**
 * A row's totals: per currency (exact sums), and converted when a currency is asked. A converted sum is
 * kept per denominator (each factor's, times 10^18: the sums' scale) while it grows, so adding a bucket
 * is a bigint multiply and add; the distinct denominators (one per rate) are added as fractions once, at
 * the end, and the result rounded once.
 */
export async function totalsOf(
  contributions: readonly Contribution[],
  target: string | null,
  rateAt: RateAt,
  factors: FactorCache = new Map(),
): Promise<Pick<AnalyticsRow, "byCurrency" | "converted">> {
  const byCurrency = new Map<string, Record<Measure, bigint>>();
  const scaled = contributions.map((c) => toScaled(c.sum));
  contributions.forEach((c, i) => {
    let t = byCurrency.get(c.currency);
    if (!t) byCurrency.set(c.currency, (t = Object.fromEntries(MEASURES.map((m) => [m, 0n])) as Record<Measure, bigint>));
    t[c.measure] += scaled[i]!;
  });
  const rows: CurrencyTotals[] = [...byCurrency.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([currency, t]) => ({ currency, ...(Object.fromEntries(MEASURES.map((m) => [m, fromScaled(t[m])])) as Record<Measure, string>) }));
  if (target === null) return { byCurrency: rows };
  // measure → denominator of the factor → numerator (the sum's scaled value times the factor's numerator).
  const acc = new Map<Measure, Map<bigint, bigint>>(MEASURES.map((m) => [m, new Map()]));
  const lacking = new Set<Measure>();
  const missing = new Map<string, MissingRate>();
  for (let i = 0; i < contributions.length; i++) {
    const c = contributions[i]!;
    const k = `${c.currency}|${c.date}`;
    let p = factors.get(k);
    if (!p) factors.set(k, (p = factor(rateAt, c.currency, target, c.date)));
    const f = await p;
    if (f === null) {
      missing.set(k, { from: c.currency, to: target, date: c.date });
      lacking.add(c.measure);
      continue;
    }
    const byDenominator = acc.get(c.measure)!;
    byDenominator.set(f.d, (byDenominator.get(f.d) ?? 0n) + scaled[i]! * f.n);
  }
  const total = (m: Measure): string | null => {
    if (lacking.has(m)) return null;
    let sum = ZERO;
    for (const [d, n] of acc.get(m)!) sum = add(sum, { n, d: d * SUM_UNIT });
    return roundHalfEven(sum);
  };
  const converted = {
    currency: target,
    ...(Object.fromEntries(MEASURES.map((m) => [m, total(m)])) as Record<Measure, string | null>),
    missingRates: [...missing.values()],
  };
  return { byCurrency: rows, converted };
}

const today = (now: number): string => new Date(now).toISOString().slice(0, 10);

export interface AnalyticsOptions {
  /** The currency to convert to (an ISO 4217 code); none: per currency only. */
  currency?: string;
  /** The day projected budgets are converted at (YYYY-MM-DD; default today, UTC). */
  date?: string;
}

export class BudgetAnalytics {
  constructor(
    private readonly store: ResourceStore<WorkflowSchema>,
    private readonly rates: ExchangeRates,
    private readonly clock: () => number = Date.now,
  ) {}

  #options(options: AnalyticsOptions): { target: string | null; date: string } {
    const { currency, date } = options;
    if (currency !== undefined && !isCurrency(currency)) throw new ValidationError(`currency ${JSON.stringify(currency)} is not an ISO 4217 currency code`, "currency");
    if (date !== undefined && !/^\d{4}-\d{2}-\d{2}$/.test(date)) throw new ValidationError("date must be a day (YYYY-MM-DD)", "date");
    return { target: currency ?? null, date: date ?? today(this.clock()) };
  }

  /** A project's analytics: its projected budgets, its subprojects' items, and a row per subproject the actor may view. */
  async project(actor: Actor, p: string, options: AnalyticsOptions = {}): Promise<Analytics> {
    const { target, date } = this.#options(options);
    const { envelope, children } = await this.store.reads.childSums(actor, projectRef(p), "subproject");
    const reader = await this.rates.reader();
    const rateAt: RateAt = (f, t, d) => reader.at(f, t, d);
    const factors: FactorCache = new Map();
    const all: Contribution[] = projectedContributions(envelope.data.projectedBudgets as ProjectedBudget[] | undefined, date);
    const rows: AnalyticsRow[] = [];
    let hidden = 0;
    for (const c of children) {
      const sub = c.envelope;
      const currency = sub.data.currency as string;
      const items = itemContributions(c.sums, currency);
      all.push(...items);
      if (!c.viewable) {
        hidden++;
        continue;
      }
      const own = projectedContributions(sub.data.projectedBudgets as ProjectedBudget[] | undefined, date);
      rows.push({ id: c.id, displayName: String(sub.data.displayName ?? c.id), currency, ...(await totalsOf([...own, ...items], target, rateAt, factors)) });
    }
    const total: AnalyticsRow = { id: p, displayName: String(envelope.data.displayName ?? p), ...(await totalsOf(all, target, rateAt, factors)) };
    return { projectId: p, currency: target, date, decimals: DECIMALS, total, subprojects: rows, hiddenSubprojects: hidden };
  }

  /** A subproject's analytics: its projected budgets and its items. */
  async subproject(actor: Actor, p: string, s: string, options: AnalyticsOptions = {}): Promise<Analytics> {
    const { target, date } = this.#options(options);
    const { envelope, sums } = await this.store.reads.sums(actor, subprojectRef(p, s));
    const reader = await this.rates.reader();
    const currency = envelope.data.currency as string;
    const contributions = [...projectedContributions(envelope.data.projectedBudgets as ProjectedBudget[] | undefined, date), ...itemContributions(sums, currency)];
    const total: AnalyticsRow = {
      id: s,
      displayName: String(envelope.data.displayName ?? s),
      currency,
      ...(await totalsOf(contributions, target, (f, t, d) => reader.at(f, t, d))),
    };
    return { projectId: p, subprojectId: s, currency: target, date, decimals: DECIMALS, total, subprojects: [], hiddenSubprojects: 0 };
  }
}

// ------------------------------------------------------------------ export

/** The columns of an export (CSV, XLSX): one line per row and currency, then the row's converted line. */
export const EXPORT_COLUMNS = ["level", "id", "name", "currency", "kind", ...MEASURES] as const;

/** One exported line: text cells, then the measures as exact decimal strings ("" when a conversion lacked a rate). */
export type ExportLine = Record<(typeof EXPORT_COLUMNS)[number], string>;

/** An analytics answer as lines: the total first, then each subproject; per currency, then converted. */
export function exportLines(a: Analytics): ExportLine[] {
  const out: ExportLine[] = [];
  const level = a.subprojectId === undefined ? "project" : "subproject";
  const rows: [string, AnalyticsRow][] = [[level, a.total], ...a.subprojects.map((r): [string, AnalyticsRow] => ["subproject", r])];
  for (const [lvl, r] of rows) {
    for (const c of r.byCurrency) out.push({ level: lvl, id: r.id, name: r.displayName, currency: c.currency, kind: "sum", ...pick(c) });
    if (r.converted)
      out.push({ level: lvl, id: r.id, name: r.displayName, currency: r.converted.currency, kind: `converted at dated rates (${a.decimals} places)`, ...pick(r.converted) });
  }
  return out;
}

const pick = (m: Record<Measure, string | null>): Record<Measure, string> => Object.fromEntries(MEASURES.map((k) => [k, m[k] ?? ""])) as Record<Measure, string>;

/** A text cell a spreadsheet would take for a formula (=, +, -, @, tab, CR first) is prefixed with an apostrophe (OWASP's CSV injection advice). */
export const safeText = (s: string): string => (/^[=+\-@\t\r]/.test(s) ? `'${s}` : s);

/** RFC 4180 CSV of the export lines (CRLF, fields quoted when they hold a comma, quote or line break). */
export function analyticsCsv(a: Analytics): string {
  const field = (s: string): string => (/[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);
  const lines = [EXPORT_COLUMNS.join(",")];
  for (const l of exportLines(a)) {
    lines.push(EXPORT_COLUMNS.map((c) => field((MEASURES as readonly string[]).includes(c) ? l[c] : safeText(l[c]))).join(","));
  }
  return `${lines.join("\r\n")}\r\n`;
}
