/**
 * Budget analytics (issue 26, part 4): the totals a subproject keeps at write time (its sums, moved in the
 * commit of every item write) equal a brute-force sum over the items as they are, per currency and
 * converted at the dated rates (the latest rate on or before each item's date; an item's own exchange
 * rate to its subproject's currency where it applies), whatever the writes; the cached totals (keyed by
 * the partition's head and the rates' version) are never served after a write of an item or a rate; and
 * the partition still verifies (the replay of the log derives the same sums).
 */
import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { openFlowstore, type Flowstore } from "../../src/compose/index.js";
import { ForbiddenError, ValidationError } from "../../src/errors.js";
import { add, BudgetAnalytics, DECIMALS, type Analytics, div, fraction, mul, roundHalfEven, ZERO } from "../../src/workflow/analytics.js";
import { parseEcbCsv } from "../../src/workflow/rates.js";
import { projectRef, subprojectRef, workflowitemRef } from "../../src/workflow/schema.js";

let store: Flowstore;
let n = 0;
const mary = userActor("mary");

/** A memory store with the users mary and jane; mary may create projects. */
async function fresh(): Promise<Flowstore> {
  const s = await openFlowstore("memory:", {});
  for (const id of ["mary", "jane"]) await s.identity.createUser(SYSTEM, { id, displayName: id, password: "a long enough password" });
  await s.global.grant(SYSTEM, "global.createProject", "mary");
  return s;
}

beforeAll(async () => {
  store = await fresh();
});
afterAll(async () => store?.close());

const CURRENCIES = ["EUR", "USD", "JPY"] as const;
const DAYS = ["2025-01-01", "2025-01-02", "2025-01-05", "2025-02-01", "2025-03-10"] as const;
const decimal = fc.tuple(fc.boolean(), fc.bigInt({ min: 0n, max: 10n ** 12n }), fc.integer({ min: 0, max: 4 })).map(([neg, v, places]) => {
  const s = v.toString().padStart(places + 1, "0");
  const out = places === 0 ? s : `${s.slice(0, -places)}.${s.slice(-places)}`;
  return neg && v !== 0n ? `-${out}` : out;
});
const positive = fc
  .tuple(fc.integer({ min: 1, max: 99999 }), fc.integer({ min: 0, max: 4 }))
  .map(([v, p]) => (p === 0 ? String(v) : `${Math.floor(v / 10 ** p)}.${String(v % 10 ** p).padStart(p, "0")}`))
  .filter((s) => !/^0(\.0*)?$/.test(s));
const rate = fc.record({ from: fc.constantFrom(...CURRENCIES), to: fc.constantFrom(...CURRENCIES), date: fc.constantFrom(...DAYS), rate: positive }).filter((r) => r.from !== r.to);
const itemFields = fc.record({
  amountType: fc.constantFrom("allocated", "disbursed", "N/A"),
  amount: decimal,
  currency: fc.option(fc.constantFrom(...CURRENCIES), { nil: undefined }),
  billingDate: fc.option(fc.constantFrom(...DAYS), { nil: undefined }),
  // TruBudget's own rate to the subproject's currency; "1.0" is what the commands fill in when none is given.
  exchangeRate: fc.option(fc.constantFrom("1.0", "1", "0.5", "2.25", "163.7"), { nil: undefined }),
});
const op = fc.oneof(
  fc.record({ kind: fc.constant("create" as const), sub: fc.nat(2), fields: itemFields }),
  fc.record({ kind: fc.constant("update" as const), pick: fc.nat(), fields: itemFields }),
  fc.record({ kind: fc.constant("close" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("delete" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("deleteSub" as const), sub: fc.nat(2) }),
);

/** The item's fields as a command takes them (N/A: no amount fields). */
function body(f: { amountType: string; amount: string; currency?: string; billingDate?: string; exchangeRate?: string }): Record<string, unknown> {
  if (f.amountType === "N/A") return { amountType: "N/A" };
  return {
    amountType: f.amountType,
    amount: f.amount,
    ...(f.currency ? { currency: f.currency } : {}),
    ...(f.billingDate ? { billingDate: f.billingDate } : {}),
    ...(f.exchangeRate ? { exchangeRate: f.exchangeRate } : {}),
  };
}

/** The rate of a pair at a day, by brute force over every rate written (the last write of a pair and day wins). */
function rateAt(rates: readonly { from: string; to: string; date: string; rate: string }[], from: string, to: string, day: string): string | null {
  let best: { date: string; rate: string } | null = null;
  for (const r of rates) if (r.from === from && r.to === to && r.date <= day && (!best || r.date >= best.date)) best = r;
  return best?.rate ?? null;
}

function factorOf(rates: Parameters<typeof rateAt>[0], from: string, to: string, day: string) {
  if (from === to) return { n: 1n, d: 1n };
  const direct = rateAt(rates, from, to, day);
  if (direct) return fraction(direct);
  const inverse = rateAt(rates, to, from, day);
  if (inverse) return div({ n: 1n, d: 1n }, fraction(inverse));
  const a = from !== "EUR" && to !== "EUR" ? rateAt(rates, "EUR", from, day) : null;
  const b = from !== "EUR" && to !== "EUR" ? rateAt(rates, "EUR", to, day) : null;
  return a && b ? div(fraction(b), fraction(a)) : null;
}

it("a project's totals equal a brute-force sum over its items, per currency and converted at dated rates, and the partition verifies", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(rate, { maxLength: 12 }),
      fc.array(rate, { maxLength: 3 }),
      fc.array(op, { minLength: 1, maxLength: 25 }),
      fc.constantFrom(...CURRENCIES),
      async (rates, later, ops, target) => {
        const p = `p${++n}`;
        // A store of its own per case: the rates are exactly this case's (a pair's later rate of a day replaces the earlier).
        const own = await fresh();
        const store = own;
        const written = [...rates, ...later];
        await store.rates.put(SYSTEM, rates);
        await store.workflow.createProject(mary, { id: p, displayName: p, projectedBudgets: [{ organization: "o", value: "100.5", currencyCode: "USD" }] });
        const subs = ["s0", "s1", "s2"];
        const subCurrency: Record<string, string> = { s0: "EUR", s1: "USD", s2: "JPY" };
        for (const s of subs) await store.workflow.createSubproject(mary, p, { id: s, displayName: s, currency: subCurrency[s]!, workflowMode: "unordered" });
        const items: { s: string; w: string }[] = [];
        let w = 0;
        for (const [k, o] of ops.entries()) {
          // Half way, a read fills the cache (and a read again must find it), then rates may change: every later
          // write of an item or a rate must move what the final read is keyed by.
          if (k === Math.floor(ops.length / 2)) {
            await store.analytics.project(mary, p, { currency: target, date: "2025-02-15" });
            const before = store.analytics.cacheStats;
            await store.analytics.project(mary, p, { currency: target, date: "2025-02-15" });
            expect(store.analytics.cacheStats.misses).toBe(before.misses);
            await store.rates.put(SYSTEM, later);
          }
          const live = items.filter((i) => subs.includes(i.s));
          const at = (k: number) => live[k % Math.max(1, live.length)];
          try {
            if (o.kind === "create" && subs.includes(`s${o.sub}`)) {
              const id = `w${++w}`;
              await store.workflow.createWorkflowitem(mary, p, `s${o.sub}`, { id, displayName: id, ...body(o.fields) } as never);
              items.push({ s: `s${o.sub}`, w: id });
            } else if (o.kind === "update" && at(o.pick)) {
              const { s, w: id } = at(o.pick)!;
              await store.workflow.update(mary, workflowitemRef(p, s, id), body(o.fields));
            } else if (o.kind === "close" && at(o.pick)) {
              const { s, w: id } = at(o.pick)!;
              await store.workflow.closeWorkflowitem(mary, p, s, id);
            } else if (o.kind === "delete" && at(o.pick)) {
              const { s, w: id } = at(o.pick)!;
              await store.workflow.delete(mary, workflowitemRef(p, s, id));
              items.splice(items.indexOf(at(o.pick)!), 1);
            } else if (o.kind === "deleteSub" && subs.includes(`s${o.sub}`)) {
              await store.workflow.delete(mary, subprojectRef(p, `s${o.sub}`));
              subs.splice(subs.indexOf(`s${o.sub}`), 1);
            }
          } catch (e) {
            // A refused write (an update of a closed item) changes nothing; nothing else may fail.
            if (!(e instanceof ValidationError || e instanceof ForbiddenError || (e as Error).name === "ConflictError")) throw e;
          }
        }

        const answer: Analytics = await store.analytics.project(mary, p, { currency: target, date: "2025-02-15" });
        // The same answer uncached, from the sums alone.
        const uncached = new BudgetAnalytics(store.resources, store.rates, Date.now, { cache: false });
        expect(await uncached.project(mary, p, { currency: target, date: "2025-02-15" })).toEqual(answer);

        // Brute force: every live item of every live subproject, read whole.
        type M = "projected" | "assigned" | "disbursed" | "openAssigned" | "openDisbursed";
        const byCurrency = new Map<string, Record<M, ReturnType<typeof fraction>>>();
        const conv: Record<M, ReturnType<typeof fraction> | null> = { projected: ZERO, assigned: ZERO, disbursed: ZERO, openAssigned: ZERO, openDisbursed: ZERO };
        /** `own`: the item's own rate to its subproject's currency `via` (used instead of the dated rate of that leg). */
        const count = (m: M, currency: string, amount: string, day: string, own?: { rate: string; via: string }) => {
          const t = byCurrency.get(currency) ?? { projected: ZERO, assigned: ZERO, disbursed: ZERO, openAssigned: ZERO, openDisbursed: ZERO };
          t[m] = add(t[m], fraction(amount));
          byCurrency.set(currency, t);
          const dated = factorOf(written, own ? own.via : currency, target, day);
          const f = own && dated ? mul(fraction(own.rate), dated) : dated;
          if (f === null) conv[m] = null;
          else if (conv[m] !== null) conv[m] = add(conv[m]!, mul(fraction(amount), f));
        };
        count("projected", "USD", "100.5", "2025-02-15");
        for (const s of subs) {
          const { workflowitems } = await store.workflow.subprojectDetails(mary, p, s);
          for (const item of workflowitems.items) {
            const d = item.data;
            if (d.amountType === "N/A" || d.amount === undefined) continue;
            const closed = d.status === "closed";
            const m: M = d.amountType === "allocated" ? (closed ? "assigned" : "openAssigned") : closed ? "disbursed" : "openDisbursed";
            const day = (d.billingDate ?? d.closedAt ?? item.meta.createdAt).slice(0, 10);
            // The rule (amounts.ts ownRate): an item in another currency than its subproject's, with a rate other than 1, converts at it.
            const rate = d.exchangeRate;
            const own = d.currency && d.currency !== subCurrency[s] && rate && !/^1(\.0*)?$/.test(rate) ? { rate, via: subCurrency[s]! } : undefined;
            count(m, d.currency ?? subCurrency[s]!, d.amount, day, own);
          }
        }
        const dec = (f: ReturnType<typeof fraction>) => roundHalfEven(f, 12);
        const got = Object.fromEntries(answer.total.byCurrency.map((c) => [c.currency, c]));
        expect(Object.keys(got).sort()).toEqual([...byCurrency.keys()].sort());
        for (const [currency, t] of byCurrency) {
          for (const m of Object.keys(t) as M[]) expect(dec(fraction(got[currency]![m]))).toBe(dec(t[m]));
        }
        for (const m of Object.keys(conv) as M[]) expect(answer.total.converted![m]).toBe(conv[m] === null ? null : roundHalfEven(conv[m]!, DECIMALS));
        // The write-time sums are what the log replays to: the partition verifies.
        expect((await store.resources.audit.verify(["project", p])).ok).toBe(true);
        await own.close();
      },
    ),
    { numRuns: 20 },
  );
});

it("a subproject's row in its project equals its own analytics; only viewable subprojects get a row, hidden ones still count", async () => {
  const p = "pv";
  await store.workflow.createProject(mary, { id: p, displayName: "visible" });
  await store.workflow.createSubproject(mary, p, { id: "a", displayName: "A", currency: "EUR" });
  await store.workflow.createSubproject(mary, p, { id: "b", displayName: "B", currency: "EUR" });
  // No currency (the subproject's, EUR); TruBudget closes an item with an amount only once it names its currency, so it stays open.
  await store.workflow.createWorkflowitem(mary, p, "a", { id: "w", displayName: "w", amountType: "allocated", amount: "1,000.25", billingDate: "2025-01-02" } as never);
  await store.workflow.createWorkflowitem(mary, p, "b", { id: "w", displayName: "w", amountType: "disbursed", amount: "5", currency: "USD" } as never);
  await store.workflow.grant(mary, projectRef(p), "project.viewDetails", "jane");
  await store.workflow.grant(mary, subprojectRef(p, "b"), "subproject.viewDetails", "jane");
  const jane = userActor("jane");
  const whole = await store.analytics.project(mary, p);
  expect(whole.total.byCurrency).toEqual([
    { currency: "EUR", projected: "0", assigned: "0", disbursed: "0", openAssigned: "1000.25", openDisbursed: "0" },
    { currency: "USD", projected: "0", assigned: "0", disbursed: "0", openAssigned: "0", openDisbursed: "5" },
  ]);
  const sub = await store.analytics.subproject(mary, p, "a");
  expect(whole.subprojects.find((r) => r.id === "a")!.byCurrency).toEqual(sub.total.byCurrency);
  const seen = await store.analytics.project(jane, p);
  expect(seen.subprojects.map((r) => r.id)).toEqual(["b"]);
  expect(seen.hiddenSubprojects).toBe(1);
  expect(seen.total.byCurrency).toEqual(whole.total.byCurrency);
  await expect(store.analytics.project(userActor("nobody"), p)).rejects.toThrow();
  await expect(store.analytics.project(mary, p, { currency: "XYZ" })).rejects.toMatchObject({ field: "currency" });
});

it("exchange rates: the rate at a day is the latest on or before it; the ECB's CSV imports; only holders of the intent write", async () => {
  const csv = "Date,USD,JPY,CYP,\n2025-01-03,1.0299,163.2,N/A,\n2025-01-02,1.0321,163.5,,\n";
  expect(parseEcbCsv(csv)).toEqual([
    { from: "EUR", to: "USD", date: "2025-01-03", rate: "1.0299" },
    { from: "EUR", to: "JPY", date: "2025-01-03", rate: "163.2" },
    { from: "EUR", to: "USD", date: "2025-01-02", rate: "1.0321" },
    { from: "EUR", to: "JPY", date: "2025-01-02", rate: "163.5" },
  ]);
  expect(() => parseEcbCsv("Day,USD\n")).toThrow(ValidationError);
  expect(() => parseEcbCsv("Date,USD\n2025-01-02,1,5\n")).toThrow(ValidationError);
  expect(() => parseEcbCsv("Date,USD\n2025-01-02,abc\n")).toThrow(/line 2/);
  await expect(store.rates.importEcbCsv(userActor("jane"), csv)).rejects.toBeInstanceOf(ForbiddenError);
  await store.global.grant(SYSTEM, "global.writeExchangeRates", "jane");
  expect(await store.rates.importEcbCsv(userActor("jane"), csv.replace(/USD/g, "GBP").replace(/JPY/g, "CHF"))).toBe(4);
  const reader = await store.rates.reader();
  expect(await reader.at("EUR", "GBP", "2025-01-01")).toBeNull();
  expect(await reader.at("EUR", "GBP", "2025-01-02")).toEqual({ rate: "1.0321", date: "2025-01-02" });
  expect(await reader.at("EUR", "GBP", "2030-01-01")).toEqual({ rate: "1.0299", date: "2025-01-03" });
  expect((await store.rates.list("EUR", "GBP", { until: "2025-01-02", last: true })).map((r) => r.rate)).toEqual(["1.0321"]);
  await expect(store.rates.put(SYSTEM, [{ from: "EUR", to: "EUR", date: "2025-01-01", rate: "1" }])).rejects.toMatchObject({ field: "rates.0.to" });
  await expect(store.rates.put(SYSTEM, [{ from: "EUR", to: "USD", date: "2025-02-30", rate: "1" }])).rejects.toMatchObject({ field: "rates.0.date" });
  await expect(store.rates.put(SYSTEM, [{ from: "EUR", to: "USD", date: "2025-02-03", rate: "-1" }])).rejects.toMatchObject({ field: "rates.0.rate" });
});
