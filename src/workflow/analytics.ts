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
  /**
   * The item's own exchange rate to its subproject's currency (`1 currency = rate via.currency`), when it
   * applies (amounts.ts, `ownRate`): its conversion goes through it, then from the subproject's currency
   * at the dated rate of its day.
   */
  readonly via?: { readonly currency: string; readonly rate: string };
}

/** What a subproject's sums contribute (its items' buckets; "" currency: the subproject's). */
export function itemContributions(sums: readonly SumRow[], subprojectCurrency: string): Contribution[] {
  const out: Contribution[] = [];
  for (const s of sums) {
    const b = itemBucket(s.bucket);
    if (!b) continue;
    const closed = b.status === "closed";
    const measure: Measure = b.measure === "allocated" ? (closed ? "assigned" : "openAssigned") : closed ? "disbursed" : "openDisbursed";
    const currency = b.currency || subprojectCurrency;
    const via = b.rate !== undefined && currency !== subprojectCurrency ? { via: { currency: subprojectCurrency, rate: b.rate } } : {};
    out.push({ measure, currency, date: b.date, sum: s.sum, ...via });
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

/** The factors of one read, by (currency, day, own rate): each looked up once, whatever the rows that need it. */
export type FactorCache = Map<string, Promise<Fraction | null>>;

/**
 * A row's totals before rounding: the exact sums per currency (scaled by 10^18) and, when a currency is
 * asked, each measure's exact converted total (null: a rate lacked) with the rates that lacked. Totals
 * of disjoint parts add up exactly (`mergeTotals`); only `renderTotals` rounds.
 */
export interface ExactTotals {
  readonly byCurrency: ReadonlyMap<string, Readonly<Record<Measure, bigint>>>;
  readonly converted: Readonly<Record<Measure, Fraction | null>> | null;
  readonly missing: ReadonlyMap<string, MissingRate>;
}

const zeros = (): Record<Measure, bigint> => Object.fromEntries(MEASURES.map((m) => [m, 0n])) as Record<Measure, bigint>;

/**
 * The exact totals of contributions. A converted sum is kept per denominator (each factor's, times
 * 10^18: the sums' scale) while it grows, so adding a bucket is a bigint multiply and add; the distinct
 * denominators (one per rate) are added as fractions once, at the end.
 */
export async function exactTotals(contributions: readonly Contribution[], target: string | null, rateAt: RateAt, factors: FactorCache = new Map()): Promise<ExactTotals> {
  const byCurrency = new Map<string, Record<Measure, bigint>>();
  const scaled = contributions.map((c) => toScaled(c.sum));
  contributions.forEach((c, i) => {
    let t = byCurrency.get(c.currency);
    if (!t) byCurrency.set(c.currency, (t = zeros()));
    t[c.measure] += scaled[i]!;
  });
  if (target === null) return { byCurrency, converted: null, missing: new Map() };
  // measure → denominator of the factor → numerator (the sum's scaled value times the factor's numerator).
  const acc = new Map<Measure, Map<bigint, bigint>>(MEASURES.map((m) => [m, new Map()]));
  const lacking = new Set<Measure>();
  const missing = new Map<string, MissingRate>();
  // Each distinct factor looked up once (a bucket per day and currency shares its day's), then summed without a wait per bucket.
  const keys = contributions.map((c) => {
    const k = c.via ? `${c.currency}|${c.date}|${c.via.currency}|${c.via.rate}` : `${c.currency}|${c.date}`;
    if (!factors.has(k)) {
      // The dated leg: from the item's currency, or from its subproject's when its own rate took it there.
      const dated = factor(rateAt, c.via?.currency ?? c.currency, target, c.date);
      factors.set(k, c.via ? dated.then((f) => (f === null ? null : mul(fraction(c.via!.rate), f))) : dated);
    }
    return k;
  });
  const resolved = new Map<string, Fraction | null>();
  await Promise.all([...new Set(keys)].map(async (k) => resolved.set(k, await factors.get(k)!)));
  for (let i = 0; i < contributions.length; i++) {
    const c = contributions[i]!;
    const f = resolved.get(keys[i]!)!;
    if (f === null) {
      const from = c.via?.currency ?? c.currency;
      missing.set(`${from}|${c.date}`, { from, to: target, date: c.date });
      lacking.add(c.measure);
      continue;
    }
    const byDenominator = acc.get(c.measure)!;
    byDenominator.set(f.d, (byDenominator.get(f.d) ?? 0n) + scaled[i]! * f.n);
  }
  const exact = (m: Measure): Fraction | null => {
    if (lacking.has(m)) return null;
    let sum = ZERO;
    for (const [d, n] of acc.get(m)!) sum = add(sum, { n, d: d * SUM_UNIT });
    return sum;
  };
  return { byCurrency, converted: Object.fromEntries(MEASURES.map((m) => [m, exact(m)])) as Record<Measure, Fraction | null>, missing };
}

/** The exact totals of disjoint parts added up (a measure one part lacks a rate for is null). */
export function mergeTotals(parts: readonly ExactTotals[]): ExactTotals {
  const byCurrency = new Map<string, Record<Measure, bigint>>();
  const missing = new Map<string, MissingRate>();
  let converted: Record<Measure, Fraction | null> | null = null;
  for (const part of parts) {
    for (const [currency, t] of part.byCurrency) {
      const into = byCurrency.get(currency) ?? zeros();
      for (const m of MEASURES) into[m] += t[m];
      byCurrency.set(currency, into);
    }
    for (const [k, r] of part.missing) missing.set(k, r);
    if (part.converted) {
      const into: Record<Measure, Fraction | null> = converted ?? (Object.fromEntries(MEASURES.map((m) => [m, ZERO])) as Record<Measure, Fraction | null>);
      for (const m of MEASURES) {
        const a = into[m];
        const b = part.converted[m];
        into[m] = a === null || b === null ? null : add(a, b);
      }
      converted = into;
    }
  }
  return { byCurrency, converted, missing };
}

/** Exact totals as a row shows them: per currency (sorted, shortest exact decimals) and converted, rounded once. */
export function renderTotals(e: ExactTotals, target: string | null): Pick<AnalyticsRow, "byCurrency" | "converted"> {
  const rows: CurrencyTotals[] = [...e.byCurrency.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([currency, t]) => ({ currency, ...(Object.fromEntries(MEASURES.map((m) => [m, fromScaled(t[m])])) as Record<Measure, string>) }));
  if (target === null) return { byCurrency: rows };
  const c = e.converted;
  const converted = {
    currency: target,
    ...(Object.fromEntries(MEASURES.map((m) => [m, c === null ? roundHalfEven(ZERO) : c[m] === null ? null : roundHalfEven(c[m]!)])) as Record<Measure, string | null>),
    missingRates: [...e.missing.values()],
  };
  return { byCurrency: rows, converted };
}

/** A row's totals: per currency (exact sums), and converted when a currency is asked (exactTotals, rounded once). */
export async function totalsOf(
  contributions: readonly Contribution[],
  target: string | null,
  rateAt: RateAt,
  factors: FactorCache = new Map(),
): Promise<Pick<AnalyticsRow, "byCurrency" | "converted">> {
  return renderTotals(await exactTotals(contributions, target, rateAt, factors), target);
}

/**
 * The subprojects' item totals (exact, unrounded) derived from their sums, cached per project at one
 * version of its partition's chain head and one version of the rates, and per target currency. Every
 * write to the project's partition moves its head and every write of rates moves the rates' version,
 * whichever process or server wrote, so an entry is never served after a write: no invalidation message
 * is needed across a fleet. The bound is on what is held, the subprojects' totals (each per currency and
 * measure, exact): past `maxSubprojects` the least recently used entries (a project at a head, rates
 * version and currency) are evicted, but never the one just set, so a project larger than the bound is
 * still cached alone. A read at a new head reuses the totals of each subproject whose sums are named
 * as in the project's latest entry (reads' `sumsVersion`: the highest version of its sum entries and
 * their count) at the same currency, rates version and target: a write recomputes its own subproject.
 */
class TotalsCache {
  /** Subproject totals held at most, all entries together (each an exact sum per currency of its items and measure). */
  static readonly MAX_SUBPROJECTS = 20_000;
  readonly #entries = new Map<string, CacheEntry>();
  /** Per project, rates version and target: the key of its latest complete entry (what a read after a write reuses rows of). */
  readonly #latest = new Map<string, string>();
  /** The subproject totals held, all entries together. */
  #held = 0;
  hits = 0;
  misses = 0;

  constructor(private readonly maxSubprojects = TotalsCache.MAX_SUBPROJECTS) {}

  get held(): number {
    return this.#held;
  }

  key(project: string, head: number | null, ratesVersion: number | null, target: string | null): string | null {
    return head === null ? null : [project, head, ratesVersion ?? "", target ?? ""].join("\u0000");
  }

  get(key: string | null): CacheEntry | undefined {
    if (key === null) return undefined;
    const e = this.#entries.get(key);
    if (e) {
      this.#entries.delete(key);
      this.#entries.set(key, e);
    }
    return e;
  }

  /** The latest complete entry of the project at this rates version and target (at an older head), if still held. */
  previous(project: string, ratesVersion: number | null, target: string | null): CacheEntry | undefined {
    const k = this.#latest.get(latestKey(project, ratesVersion, target));
    return k === undefined ? undefined : this.#entries.get(k);
  }

  /**
   * Holds `totals` under `key` (only `sub`'s, unless null); `versions` (complete entries): each
   * subproject's sums version and currency the totals were derived at.
   */
  set(
    key: string | null,
    sub: string | null,
    totals: ReadonlyMap<string, ExactTotals>,
    complete: boolean,
    latest?: { project: string; ratesVersion: number | null; target: string | null; versions: ReadonlyMap<string, string> },
  ): void {
    if (key === null) return;
    const e = this.#entries.get(key) ?? { subs: new Map(), complete: false, versions: new Map(), latest: null };
    this.#held -= e.subs.size;
    for (const [id, t] of totals) if (sub === null || id === sub) e.subs.set(id, t);
    this.#held += e.subs.size;
    e.complete ||= complete;
    if (latest) {
      e.versions = latest.versions;
      e.latest = latestKey(latest.project, latest.ratesVersion, latest.target);
      this.#latest.set(e.latest, key);
    }
    this.#entries.delete(key);
    this.#entries.set(key, e);
    for (const [k, old] of this.#entries) {
      if (this.#held <= this.maxSubprojects || k === key) break;
      this.#entries.delete(k);
      this.#held -= old.subs.size;
      if (old.latest !== null && this.#latest.get(old.latest) === k) this.#latest.delete(old.latest);
    }
  }
}

interface CacheEntry {
  subs: Map<string, ExactTotals>;
  complete: boolean;
  /** Per subproject: its sums version and currency at derivation (complete entries). */
  versions: ReadonlyMap<string, string>;
  /** Its key in the latest entries, when it was set as one. */
  latest: string | null;
}

const latestKey = (project: string, ratesVersion: number | null, target: string | null): string => [project, ratesVersion ?? "", target ?? ""].join("\u0000");

const today = (now: number): string => new Date(now).toISOString().slice(0, 10);

export interface AnalyticsOptions {
  /** The currency to convert to (an ISO 4217 code); none: per currency only. */
  currency?: string;
  /** The day projected budgets are converted at (YYYY-MM-DD; default today, UTC). */
  date?: string;
}

export class BudgetAnalytics {
  /** Null when the store turned the cache off (the bench's uncached row). */
  readonly #cache: TotalsCache | null;

  constructor(
    private readonly store: ResourceStore<WorkflowSchema>,
    private readonly rates: ExchangeRates,
    private readonly clock: () => number = Date.now,
    options: { cache?: boolean; cacheSubprojects?: number } = {},
  ) {
    this.#cache = options.cache === false ? null : new TotalsCache(options.cacheSubprojects);
  }

  /**
   * How many subproject totals reads found cached and how many derived from the sums, and how many the
   * cache holds (for tests and metrics).
   */
  get cacheStats(): { hits: number; misses: number; held: number } {
    return { hits: this.#cache?.hits ?? 0, misses: this.#cache?.misses ?? 0, held: this.#cache?.held ?? 0 };
  }

  #options(options: AnalyticsOptions): { target: string | null; date: string } {
    const { currency, date } = options;
    if (currency !== undefined && !isCurrency(currency)) throw new ValidationError(`currency ${JSON.stringify(currency)} is not an ISO 4217 currency code`, "currency");
    if (date !== undefined && !/^\d{4}-\d{2}-\d{2}$/.test(date)) throw new ValidationError("date must be a day (YYYY-MM-DD)", "date");
    return { target: currency ?? null, date: date ?? today(this.clock()) };
  }

  /** The items' totals of each subproject read: derived from its sums when they were read, else the cached entry's. */
  async #itemTotals(
    children: readonly { id: string; currency: string; sums: readonly SumRow[] }[],
    cached: Map<string, ExactTotals> | undefined,
    target: string | null,
    rateAt: RateAt,
    factors: FactorCache,
  ): Promise<Map<string, ExactTotals>> {
    const out = new Map<string, ExactTotals>();
    for (const c of children) {
      const hit = cached?.get(c.id);
      if (hit) {
        if (this.#cache) this.#cache.hits++;
        out.set(c.id, hit);
      } else {
        if (this.#cache) this.#cache.misses++;
        out.set(c.id, await exactTotals(itemContributions(c.sums, c.currency), target, rateAt, factors));
      }
    }
    return out;
  }

  /** What a read starts from: the checked options, the rates as of now (one version for the whole read) and the cache. */
  async #begin(options: AnalyticsOptions) {
    const { target, date } = this.#options(options);
    const reader = await this.rates.reader();
    const rateAt: RateAt = (f, t, d) => reader.at(f, t, d);
    return { target, date, reader, rateAt, cache: this.#cache };
  }

  /** A project's analytics: its projected budgets, its subprojects' items, and a row per subproject the actor may view. */
  async project(actor: Actor, p: string, options: AnalyticsOptions = {}): Promise<Analytics> {
    const { target, date, reader, rateAt, cache } = await this.#begin(options);
    let key: string | null = null;
    let entry: CacheEntry | undefined;
    const { envelope, children, head } = await this.store.reads.childSums(actor, projectRef(p), "subproject", {
      withSums: (h) => {
        key = cache?.key(p, h, reader.version, target) ?? null;
        entry = cache?.get(key);
        return !entry?.complete;
      },
    });
    const factors: FactorCache = new Map();
    const subs = children.map((c) => ({ id: c.id, currency: c.envelope.data.currency as string, sums: c.sums }));
    let cached = entry?.complete ? entry.subs : undefined;
    let versions: Map<string, string> | undefined;
    if (cache && !cached) {
      // Read after a write: a subproject whose sums (and currency) are as the latest entry derived them keeps its totals.
      versions = new Map(children.map((c) => [c.id, `${c.sumsVersion}|${c.envelope.data.currency as string}`]));
      const prev = cache.previous(p, reader.version, target);
      cached = new Map();
      for (const [id, v] of versions) if (prev?.versions.get(id) === v && prev.subs.has(id)) cached.set(id, prev.subs.get(id)!);
    }
    const items = await this.#itemTotals(subs, cached, target, rateAt, factors);
    cache?.set(key ?? cache.key(p, head, reader.version, target), null, items, true, versions && { project: p, ratesVersion: reader.version, target, versions });
    const parts: ExactTotals[] = [await exactTotals(projectedContributions(envelope.data.projectedBudgets as ProjectedBudget[] | undefined, date), target, rateAt, factors)];
    const rows: AnalyticsRow[] = [];
    let hidden = 0;
    for (const c of children) {
      const own = items.get(c.id)!;
      parts.push(own);
      if (!c.viewable) {
        hidden++;
        continue;
      }
      const projected = await exactTotals(projectedContributions(c.envelope.data.projectedBudgets as ProjectedBudget[] | undefined, date), target, rateAt, factors);
      const currency = c.envelope.data.currency as string;
      rows.push({ id: c.id, displayName: String(c.envelope.data.displayName ?? c.id), currency, ...renderTotals(mergeTotals([projected, own]), target) });
    }
    const total: AnalyticsRow = { id: p, displayName: String(envelope.data.displayName ?? p), ...renderTotals(mergeTotals(parts), target) };
    return { projectId: p, currency: target, date, decimals: DECIMALS, total, subprojects: rows, hiddenSubprojects: hidden };
  }

  /** A subproject's analytics: its projected budgets and its items. */
  async subproject(actor: Actor, p: string, s: string, options: AnalyticsOptions = {}): Promise<Analytics> {
    const { target, date, reader, rateAt, cache } = await this.#begin(options);
    let key: string | null = null;
    let hit: ExactTotals | undefined;
    const { envelope, sums } = await this.store.reads.sums(actor, subprojectRef(p, s), {
      withSums: (h) => {
        key = cache?.key(p, h, reader.version, target) ?? null;
        hit = cache?.get(key)?.subs.get(s);
        return hit === undefined;
      },
    });
    const currency = envelope.data.currency as string;
    const factors: FactorCache = new Map();
    const items = await this.#itemTotals([{ id: s, currency, sums }], hit ? new Map([[s, hit]]) : undefined, target, rateAt, factors);
    if (!hit) cache?.set(key, s, items, false);
    const projected = await exactTotals(projectedContributions(envelope.data.projectedBudgets as ProjectedBudget[] | undefined, date), target, rateAt, factors);
    const total: AnalyticsRow = {
      id: s,
      displayName: String(envelope.data.displayName ?? s),
      currency,
      ...renderTotals(mergeTotals([projected, items.get(s)!]), target),
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
