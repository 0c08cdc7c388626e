/**
 * analytics (issue 26, part 4): a project's budget analytics, in process, for a project of 10,000
 * workflowitems (10 subprojects of 1,000) with amounts in three currencies dated over 30 days, converted
 * to EUR at the dated ECB-style rates. Goal: < 5 ms a read. Rows, in one run: the same totals by brute
 * force (every workflowitem read, one list of 1,000 per subproject, and summed: what a read would cost
 * without the sums each subproject keeps at write time); the read with its cache off (the subprojects'
 * totals derived from their sums at every read: what the first read after a write costs); and the read
 * as served (the subprojects' converted totals cached per partition head and rates version).
 */
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { openFlowstore } from "../../src/compose/index.js";
import { BudgetAnalytics } from "../../src/workflow/analytics.js";
import { msBelow, type Workload } from "../harness.js";
import { pool } from "../peers/flowstore.js";

const SUBPROJECTS = 10;
const ITEMS = 10_000;
const DAYS = 30;
const CURRENCIES = ["EUR", "USD", "GBP"];

const day = (i: number) => new Date(Date.UTC(2025, 0, 1 + (i % DAYS))).toISOString().slice(0, 10);

export const analytics: Workload = {
  name: "analytics",
  description: `budget analytics of a project of ${ITEMS.toLocaleString("en")} workflowitems (${SUBPROJECTS} subprojects, 3 currencies, ${DAYS} days of rates), in process: totals per currency and converted to EUR`,
  async run(ctx) {
    const kv = await ctx.openStore();
    const store = await openFlowstore(kv, {});
    try {
      const mary = userActor("mary");
      await store.identity.createUser(SYSTEM, { id: "mary", displayName: "Mary", password: "a long enough password" });
      await store.global.grant(SYSTEM, "global.createProject", "mary");
      const csv = ["Date,USD,GBP", ...Array.from({ length: DAYS }, (_, i) => `${day(i)},${(1.02 + i / 1000).toFixed(4)},${(0.83 + i / 2000).toFixed(4)}`)].join("\n");
      await store.rates.importEcbCsv(SYSTEM, csv);
      await store.workflow.createProject(mary, { id: "p", displayName: "Big", projectedBudgets: [{ organization: "o", value: "5000000", currencyCode: "EUR" }] });
      for (let s = 0; s < SUBPROJECTS; s++) {
        await store.workflow.createSubproject(mary, "p", { id: `s${s}`, displayName: `Subproject ${s}`, currency: CURRENCIES[s % 3]!, workflowMode: "unordered" });
      }
      const n = Math.round(ITEMS * ctx.scale);
      const started = Date.now();
      // Half closed (created closed, as a migration brings them), half open; allocated and disbursed alternate.
      await pool(
        Array.from({ length: n }, (_, i) => i),
        64,
        (i) =>
          store.workflow.createWorkflowitem(
            i % 2 === 0 ? SYSTEM : mary,
            "p",
            `s${i % SUBPROJECTS}`,
            {
              id: `w${i}`,
              displayName: `Item ${i}`,
              amountType: i % 4 < 2 ? "allocated" : "disbursed",
              amount: `${(i * 37) % 100_000}.${String(i % 100).padStart(2, "0")}`,
              currency: CURRENCIES[(i >> 2) % 3]!,
              billingDate: day(i),
              assignee: "mary",
            } as never,
            i % 2 === 0 ? { origin: { createdAt: "2025-01-01T00:00:00Z", createdBy: "mary", closedAt: `${day(i)}T12:00:00Z` } } : {},
          ),
      );
      ctx.note(`${n.toLocaleString("en")} workflowitems created through the workflow commands (64 in flight) in ${((Date.now() - started) / 1000).toFixed(1)} s.`);

      const a = await store.analytics.project(mary, "p", { currency: "EUR", date: "2025-02-01" });
      if (a.subprojects.length !== SUBPROJECTS || a.total.converted?.missingRates.length !== 0) throw new Error("unexpected analytics answer");
      // The brute force must agree with the sums (per currency), or the comparison means nothing.
      const brute = async () => {
        const sums = new Map<string, bigint>();
        for (let s = 0; s < SUBPROJECTS; s++) {
          const { workflowitems } = await store.workflow.subprojectDetails(mary, "p", `s${s}`);
          for (const w of workflowitems.items) {
            if (w.data.status !== "closed" || w.data.amountType !== "disbursed") continue;
            const [int, frac = ""] = w.data.amount!.split(".");
            const k = w.data.currency!;
            sums.set(k, (sums.get(k) ?? 0n) + BigInt(int!) * 100n + BigInt(frac.padEnd(2, "0")));
          }
        }
        return sums;
      };
      const bruteSums = await brute();
      for (const c of a.total.byCurrency) {
        const [int, frac = ""] = c.disbursed.split(".");
        if (BigInt(int!) * 100n + BigInt(frac.padEnd(2, "0")) !== (bruteSums.get(c.currency) ?? 0n)) throw new Error(`the sums of ${c.currency} differ from the brute force`);
      }
      const buckets = a.subprojects.reduce((t, r) => t + r.byCurrency.length, 0);
      ctx.note(
        `The read answers ${a.subprojects.length} subproject rows (${buckets} currency rows) from the subprojects' sums: ${SUBPROJECTS} records and one range of (measure, status, currency, day) buckets (≈ ${SUBPROJECTS * 2 * 2 * 3 * DAYS} at most here), whatever the number of items.`,
      );

      const reference = "the same totals by brute force: every workflowitem read and summed (per subproject, a list of 1,000) (reads/s)";
      await ctx.measure(reference, {
        ops: 1,
        rounds: 3,
        note: "the reference: O(items), what a read costs without the sums kept at write time (per-currency disbursed only, no conversion)",
        round: async () => {
          await brute();
        },
      });
      // The same reads with the cache off: every read derives the subprojects' totals from their sums.
      const uncached = new BudgetAnalytics(store.resources, store.rates, Date.now, { cache: false });
      const uncachedRow = `project analytics of ${n.toLocaleString("en")} workflowitems, uncached: derived from the sums at every read (reads/s)`;
      await ctx.measure(uncachedRow, {
        ops: 50,
        reference,
        note: "what the first read after a write costs: O(subprojects + buckets), the subprojects' records and one range of their sums (≈ 3,600 buckets), each converted at its day's rate",
        goals: (ops) => [msBelow("a read", Number((1000 / ops).toFixed(2)), 5)],
        round: async () => {
          for (let i = 0; i < 50; i++) await uncached.project(mary, "p", { currency: "EUR", date: "2025-02-01" });
        },
      });
      await ctx.measure(`project analytics of ${n.toLocaleString("en")} workflowitems, per currency and converted to EUR at dated rates, as served (cached) (reads/s)`, {
        ops: 200,
        reference: uncachedRow,
        note: "goal < 5 ms a read (≥ 200 reads/s); the subprojects' converted totals cached per partition head version and rates version (any write, by any process, moves one of them): the head, the subprojects' records and the rates' version are read",
        goals: (ops) => [msBelow("a read", Number((1000 / ops).toFixed(3)), 5)],
        round: async () => {
          for (let i = 0; i < 200; i++) await store.analytics.project(mary, "p", { currency: "EUR", date: "2025-02-01" });
        },
      });
      const stats = store.analytics.cacheStats;
      ctx.note(
        `The served reads' subproject totals: ${stats.hits.toLocaleString("en")} found cached, ${stats.misses.toLocaleString("en")} derived from the sums (the first read).`,
      );
      await ctx.measure("subproject analytics (1,000 workflowitems), converted to EUR, as served (cached) (reads/s)", {
        ops: 200,
        round: async () => {
          for (let i = 0; i < 200; i++) await store.analytics.subproject(mary, "p", "s1", { currency: "EUR" });
        },
      });
    } finally {
      await store.close();
    }
  },
};
