/**
 * Exchange rates as data (issue 26, part 4): a rate from one currency to another, valid from a date on
 * (`1 from = rate to`, an exact decimal string), entered by holders of the global intent
 * `global.writeExchangeRates` (root and the system actor always may) or imported from the ECB's CSV
 * (eurofxref-hist.csv: `Date,USD,JPY,…`, one row per day, rates from EUR). The rate at a date is the
 * latest rate on or before it.
 *
 * The rates live in one partition (`["rates"]`): key [from, to, date] → {rate, by, at}. A rate written
 * again replaces the old one (the value records who wrote it and when). The partition carries a record
 * chain (kv/record-chain.ts, as the users, groups and grants do): every commit appends an event naming
 * each rate it wrote and the SHA-256 of its value, so `verify` replays the chain and names the partition
 * when a stored rate differs from it (an edit made past the store). Every commit also puts the version
 * key, so a reader keeps each pair's rates in memory (sorted by date, one binary search per lookup), and
 * analytics keep their converted totals, until the next write, whichever process wrote.
 *
 * A write is one commit, whatever its size (an ECB history since 1999 is about 200,000 rates): a
 * write or import that fails or is killed leaves the rates as they were, never a prefix of the file. It
 * puts only the rates that are new or changed: the ECB's file is the whole history, re-imported daily,
 * and rewriting every rate would append a ~20 MB chain event each time.
 */
import { Type, type Static } from "@sinclair/typebox";
import { ConflictError, ForbiddenError, ValidationError } from "../errors.js";
import { isTop, type Actor } from "../access/actor.js";
import type { GlobalPermissions } from "../access/global.js";
import { scanAll, type KvStore, type Op, type Partition } from "../kv/contract.js";
import { adoptRecords, anchorRecords, asActor, verifyRecordChain, withRecordChain, type RecordAnchor, type RecordChainResult, type RecordChainSpec } from "../kv/record-chain.js";
import { PartitionKind, Subspace } from "../kv/subspace.js";
import { isValidDate, PositiveDecimal } from "./money.js";

/** The global intent of writing exchange rates, declared once here (the registry gathers it in compose/intents.ts). */
export const RATES_INTENTS = ["global.writeExchangeRates"] as const;

declare module "../access/intents.js" {
  interface DeclaredIntents {
    rates: (typeof RATES_INTENTS)[number];
  }
}

const RATES = new PartitionKind("rates");
/** The rates: [from, to, date] → {rate, by, at}. */
const RATE = new Subspace(["r"]);
/** Put by every commit: its version tells a reader whether its cached pairs are current. */
const VERSION = new Subspace(["v"]);
export const RATES_KINDS: readonly string[] = [RATES.kind];
/** Where a rate is stored: its partition and its key (for the tools and tests that read or edit the store itself). */
export const RATES_LAYOUT = { partition: RATES.partition(), rate: (from: string, to: string, date: string) => RATE.pack([from, to, date]) } as const;
/** The rates' record chain: it covers every rate (the version key is not a record). */
export const RATES_CHAIN: RecordChainSpec = { holds: (p) => RATES.holds(p), covers: (key) => RATE.contains(key) };

/** A currency of a rate: three capital letters (historical codes such as the ECB's CYP are accepted). */
const RateCurrency = Type.String({ pattern: "^[A-Z]{3}$", description: 'a currency code, e.g. "USD"' });
const Day = Type.String({ pattern: "^\\d{4}-\\d{2}-\\d{2}$", description: "the first day it is valid (YYYY-MM-DD)" });

export const ExchangeRate = Type.Object(
  {
    from: RateCurrency,
    to: RateCurrency,
    date: Day,
    rate: Type.String({ pattern: PositiveDecimal.pattern, description: "how many `to` one `from` is worth, as an exact decimal string" }),
  },
  { additionalProperties: false, $id: "ExchangeRate" },
);
export type ExchangeRate = Static<typeof ExchangeRate>;

/** A stored rate as read: the rate and who wrote it when. */
export const StoredRate = Type.Object(
  { from: RateCurrency, to: RateCurrency, date: Day, rate: Type.String(), by: Type.String(), at: Type.String() },
  { additionalProperties: false, $id: "StoredRate" },
);
export type StoredRate = Static<typeof StoredRate>;

/** How often a write whose stored rates changed before its commit (another writer) reads them again. */
const PUT_ATTEMPTS = 10;

const CURRENCY_RE = /^[A-Z]{3}$/;
const DAY_RE = /^\d{4}-\d{2}-\d{2}$/;
const RATE_RE = new RegExp(PositiveDecimal.pattern!);

/** Refuses a rate that is not one (ValidationError naming its field under `field`). */
function checkRate(r: ExchangeRate, field: string): void {
  if (r === null || typeof r !== "object") throw new ValidationError(`${field} must be {from, to, date, rate}`, field);
  for (const f of ["from", "to"] as const)
    if (typeof r[f] !== "string" || !CURRENCY_RE.test(r[f])) throw new ValidationError(`${field}.${f} must be a currency code`, `${field}.${f}`);
  if (r.from === r.to) throw new ValidationError(`${field}: a rate converts between two currencies`, `${field}.to`);
  if (typeof r.date !== "string" || !DAY_RE.test(r.date) || !isValidDate(r.date)) throw new ValidationError(`${field}.date must be a day (YYYY-MM-DD)`, `${field}.date`);
  if (typeof r.rate !== "string" || !RATE_RE.test(r.rate)) throw new ValidationError(`${field}.rate must be a positive decimal string`, `${field}.rate`);
}

/**
 * The ECB's CSV (eurofxref-hist.csv layout): a header `Date,USD,JPY,…` (a trailing comma allowed), then
 * one row per day; a cell `N/A` or empty has no rate. Every rate is from EUR. A malformed line is a
 * ValidationError naming it (field `csv`).
 */
export function parseEcbCsv(text: string): ExchangeRate[] {
  const lines = text.split(/\r?\n/).filter((l) => l.trim() !== "");
  if (lines.length === 0) throw new ValidationError("the CSV is empty: its first line must be Date,USD,JPY,…", "csv");
  const header = lines[0]!.split(",").map((c) => c.trim());
  if (header[0] !== "Date") throw new ValidationError("the CSV's first line must start with \"Date\" (the ECB's eurofxref-hist.csv layout)", "csv");
  const columns = header.slice(1);
  columns.forEach((c, i) => {
    if (c !== "" && (!CURRENCY_RE.test(c) || c === "EUR")) throw new ValidationError(`the CSV's column ${i + 2} (${JSON.stringify(c)}) is no currency code`, "csv");
  });
  const out: ExchangeRate[] = [];
  for (let n = 1; n < lines.length; n++) {
    const cells = lines[n]!.split(",").map((c) => c.trim());
    const date = cells[0]!;
    if (!DAY_RE.test(date) || !isValidDate(date)) throw new ValidationError(`the CSV's line ${n + 1} does not start with a day (YYYY-MM-DD)`, "csv");
    if (cells.length > header.length) throw new ValidationError(`the CSV's line ${n + 1} has ${cells.length} cells, its header ${header.length}`, "csv");
    columns.forEach((to, i) => {
      const cell = cells[i + 1] ?? "";
      if (to === "" || cell === "" || cell === "N/A") return;
      if (!RATE_RE.test(cell)) throw new ValidationError(`the CSV's line ${n + 1}, column ${to}: ${JSON.stringify(cell)} is no positive decimal`, "csv");
      out.push({ from: "EUR", to, date, rate: cell });
    });
  }
  return out;
}

/** A pair's rates in memory: dates ascending and their rates. */
interface PairRates {
  readonly dates: string[];
  readonly rates: string[];
}

export class ExchangeRates {
  /** The pairs read at one version of the rates (a reader of an older version fills its own map, never this one). */
  #cache: { version: number | null; pairs: Map<string, PairRates> } = { version: -1, pairs: new Map() };

  /** The store, its rates partition's commits chained (RATES_CHAIN). */
  private readonly kv: KvStore;

  /**
   * `anchor`: where the rates' record chain is anchored (the ledger and the change feed, as the identities'
   * are: kv/record-chain.ts), so the transparency log takes its events in and a cosigned checkpoint pins them.
   */
  constructor(
    private readonly base: KvStore,
    private readonly global: GlobalPermissions,
    private readonly clock: () => number = Date.now,
    private readonly anchor: () => RecordAnchor | undefined = () => undefined,
  ) {
    this.kv = withRecordChain(base, [RATES_CHAIN], { clock, anchor });
  }

  /** Starts the chain of rates written before it (one event adopting them); nothing when there are none or the chain exists. */
  async adoptRecords(): Promise<void> {
    await adoptRecords(this.base, RATES.partition(), RATES_CHAIN, { clock: this.clock, anchor: this.anchor });
  }

  /** Anchors the rates' chain when its head is past its ledger entry (written before the anchor, or a crash in between). */
  async anchorRecords(): Promise<void> {
    const anchor = this.anchor();
    if (anchor) await anchorRecords(this.base, RATES.partition(), anchor);
  }

  /** True for the partition that carries the rates' record chain (the transparency log reads its events there). */
  recordChained(partition: Partition): boolean {
    return RATES_CHAIN.holds(partition);
  }

  /**
   * The rates' partition of the store `over` against its record chain (checked 0: no rate was ever
   * written): this store's, or the view of another epoch (a history a restore replaced).
   */
  async verifyRecords(
    over: KvStore,
    anchored?: (partition: Partition) => Promise<{ seq: number; hash: string } | null>,
  ): Promise<{ partition: Partition; result: RecordChainResult }[]> {
    const partition = RATES.partition();
    return [{ partition, result: await verifyRecordChain(over, partition, RATES_CHAIN, await anchored?.(partition)) }];
  }

  /** Refuses an actor that may not write rates: root and the system actor may, others with the intent. */
  async #assertMay(actor: Actor): Promise<void> {
    if (isTop(actor)) return;
    if (!(await this.global.has(actor, "global.writeExchangeRates"))) throw new ForbiddenError(`${actor.id} lacks the intent global.writeExchangeRates`);
  }

  /**
   * Writes rates (each replacing the rate of its pair and date), all checked before any is written, in
   * one commit: all of them or none. Only the rates that are new or whose `rate` differs from the stored
   * one are written (the last of a pair and date given twice counts), so the chain's event names real
   * changes only, and importing the same ECB file again writes nothing and appends no event. The commit
   * checks the version the stored rates were read at (a write in between reads them again). Returns how
   * many were written.
   */
  async put(actor: Actor, rates: readonly ExchangeRate[], field = "rates"): Promise<number> {
    await this.#assertMay(actor);
    if (!Array.isArray(rates)) throw new ValidationError(`${field} must be a list of rates`, field);
    rates.forEach((r, i) => checkRate(r, `${field}.${i}`));
    const at = new Date(this.clock()).toISOString();
    // Currencies are three letters and days ten characters: the concatenation names a pair and day.
    const wanted = new Map<string, ExchangeRate>();
    for (const r of rates) wanted.set(`${r.from}${r.to}${r.date}`, r);
    for (let attempt = 1; ; attempt++) {
      const stored = await this.reader();
      const ops: Op[] = [];
      for (const r of wanted.values()) {
        const now = await stored.at(r.from, r.to, r.date);
        if (now?.date === r.date && now.rate === r.rate) continue;
        ops.push({ type: "put", key: RATE.pack([r.from, r.to, r.date]), value: Buffer.from(JSON.stringify({ rate: r.rate, by: actor.id, at }), "utf8") });
      }
      const written = ops.length;
      if (written === 0) return 0;
      ops.push({ type: "check", key: VERSION.pack(), version: stored.version }, { type: "put", key: VERSION.pack(), value: Buffer.alloc(0) });
      try {
        await asActor(actor, () => this.kv.commit(RATES.partition(), ops)); // its chain's event names who wrote the rates
        return written;
      } catch (e) {
        if (!(e instanceof ConflictError) || attempt >= PUT_ATTEMPTS) throw e;
      }
    }
  }

  /** Imports the ECB's CSV (parseEcbCsv): every rate in it, from EUR, that is new or changed (put). Returns how many were written. */
  importEcbCsv(actor: Actor, text: string): Promise<number> {
    return this.#assertMay(actor).then(() => this.put(actor, parseEcbCsv(text), "csv"));
  }

  /**
   * The stored rates of a pair, oldest first, at most `limit` (1000 at most), from the day `since` on
   * and up to the day `until` (both inclusive); `last`: only the latest of them (the rate valid at `until`).
   */
  async list(from: string, to: string, options: { since?: string; until?: string; limit?: number; last?: boolean } = {}): Promise<StoredRate[]> {
    const limit = options.last ? 1 : Math.min(options.limit ?? 1000, 1000);
    const out: StoredRate[] = [];
    const start = RATE.pack(options.since ? [from, to, options.since] : [from, to]);
    // [from, to, day, true] sorts after the day's own key and before the next day's.
    const end = RATE.pack(options.until ? [from, to, options.until, true] : [from, to, true]);
    const page = await this.kv.scan(RATES.partition(), { start, end, limit, reverse: options.last === true });
    for (const e of page.entries) {
      const v = JSON.parse(e.value.toString("utf8")) as { rate: string; by: string; at: string };
      out.push({ from, to, date: RATE.unpack(e.key)[2] as string, rate: v.rate, by: v.by, at: v.at });
    }
    return out;
  }

  /**
   * A reader of rates as of now: `at(from, to, date)` is the latest rate of the pair on or before the day
   * (null when there is none); `version` is the rates' version it read (null: none written), which every write moves. The pairs it reads are kept in memory until the rates are written again.
   */
  async reader(): Promise<{ readonly version: number | null; at(from: string, to: string, date: string): Promise<{ rate: string; date: string } | null> }> {
    const version = (await this.kv.get(RATES.partition(), VERSION.pack()))?.version ?? null;
    if (version !== this.#cache.version) this.#cache = { version, pairs: new Map() };
    const pairs = this.#cache.pairs;
    const load = async (from: string, to: string): Promise<PairRates> => {
      const k = `${from}${to}`;
      let p = pairs.get(k);
      if (!p) {
        const dates: string[] = [];
        const rates: string[] = [];
        for await (const e of scanAll(this.kv, RATES.partition(), { prefix: RATE.pack([from, to]), limit: 5000 })) {
          dates.push(RATE.unpack(e.key)[2] as string);
          rates.push((JSON.parse(e.value.toString("utf8")) as { rate: string }).rate);
        }
        pairs.set(k, (p = { dates, rates }));
      }
      return p;
    };
    return {
      version,
      async at(from, to, date) {
        const { dates, rates } = await load(from, to);
        // The last date <= the day: binary search.
        let lo = 0;
        let hi = dates.length;
        while (lo < hi) {
          const mid = (lo + hi) >> 1;
          if (dates[mid]! <= date) lo = mid + 1;
          else hi = mid;
        }
        return lo === 0 ? null : { rate: rates[lo - 1]!, date: dates[lo - 1]! };
      },
    };
  }
}
