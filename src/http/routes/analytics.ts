/**
 * Budget analytics and exchange rates over HTTP (issue 26, part 4; workflow/analytics.ts, rates.ts):
 *
 *   GET  /projects/{p}/analytics[?currency=EUR&date=YYYY-MM-DD&format=json|csv|xlsx]
 *   GET  /projects/{p}/subprojects/{s}/analytics[?…]    → the totals (JSON), or their export: CSV
 *                                                          (`Accept: text/csv` or `format=csv`) or XLSX
 *                                                          (`Accept: XLSX_TYPE` or `format=xlsx`)
 *   PUT  /exchange-rates                  {rates: [{from, to, date, rate}]} → {written}   global.writeExchangeRates
 *   POST /exchange-rates/ecb              the ECB's eurofxref-hist.csv (text/csv) → {written}  global.writeExchangeRates
 *   GET  /exchange-rates/{from}/{to}[?since&limit]  → {items}: the pair's rates, oldest first
 *   GET  /exchange-rates/{from}/{to}/at/{date}      → the rate valid at the day (the latest on or before it), 404 when none
 *
 * Analytics need the project's (subproject's) view intent; rates are read by any signed-in caller.
 */
import { Type } from "@sinclair/typebox";
import ExcelJS from "exceljs";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Actor } from "../../access/actor.js";
import { NotFoundError } from "../../errors.js";
import { Analytics, analyticsCsv, EXPORT_COLUMNS, exportLines, MEASURES, safeText, type Analytics as AnalyticsAnswer } from "../../workflow/analytics.js";
import { ExchangeRate, StoredRate } from "../../workflow/rates.js";
import { DEFAULT_BODY_LIMIT, largeBodySlots, RATES_CSV_LIMIT } from "../body-limits.js";
import type { RoutePlugin } from "../context.js";
import { problems } from "../problem.js";
import { servedLevel } from "./workflow.js";

export const XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
const CSV_TYPE = "text/csv; charset=utf-8";

const CURRENCY = { pattern: "^[A-Z]{3}$", description: 'an ISO 4217 currency code, e.g. "EUR"' };
const DAY = { pattern: "^\\d{4}-\\d{2}-\\d{2}$", description: "a day (YYYY-MM-DD)" };
const Currency = Type.String(CURRENCY);
const Day = Type.String(DAY);
export const AnalyticsQuery = Type.Object(
  {
    currency: Type.Optional(Type.String({ ...CURRENCY, description: "convert the totals to this currency, each amount at the rate of its date" })),
    date: Type.Optional(Type.String({ ...DAY, description: "the day projected budgets are converted at (default: today, UTC)" })),
    format: Type.Optional(Type.Union([Type.Literal("json"), Type.Literal("csv"), Type.Literal("xlsx")], { description: "instead of the Accept header" })),
  },
  { additionalProperties: false },
);
export const RatesBody = Type.Object({ rates: Type.Array(ExchangeRate, { maxItems: 100_000 }) }, { additionalProperties: false, $id: "ExchangeRates" });
export const RatesWritten = Type.Object({ written: Type.Integer({ minimum: 0 }) }, { $id: "ExchangeRatesWritten" });
export const RatePage = Type.Object({ items: Type.Array(StoredRate) }, { $id: "ExchangeRatePage" });
const Pair = Type.Object({ from: Currency, to: Currency });

/** Which representation a request asks for: `format`, else the Accept header (JSON unless it names CSV or XLSX only). */
function formatOf(request: FastifyRequest, format: string | undefined): "json" | "csv" | "xlsx" {
  if (format === "csv" || format === "xlsx" || format === "json") return format;
  const accept = request.headers.accept ?? "";
  if (/application\/json|\*\/\*/.test(accept) || accept === "") return "json";
  if (accept.includes(XLSX_TYPE)) return "xlsx";
  if (accept.includes("text/csv")) return "csv";
  return "json";
}

/** The export as an XLSX workbook (exceljs): a header row, text cells as text, measures as numbers with two places shown. */
async function analyticsXlsx(a: AnalyticsAnswer): Promise<Buffer> {
  const wb = new ExcelJS.Workbook();
  wb.creator = "flowstore";
  const ws = wb.addWorksheet("analytics");
  ws.columns = EXPORT_COLUMNS.map((c) => ({ header: c, key: c, width: c === "name" || c === "kind" ? 32 : 16 }));
  for (const l of exportLines(a)) {
    const row: Record<string, string | number | null> = {};
    for (const c of EXPORT_COLUMNS) {
      const v = l[c];
      row[c] = (MEASURES as readonly string[]).includes(c) ? (v === "" ? null : Number(v)) : safeText(v);
    }
    ws.addRow(row);
  }
  for (const m of MEASURES) ws.getColumn(m).numFmt = "#,##0.00";
  ws.getRow(1).font = { bold: true };
  return Buffer.from(await wb.xlsx.writeBuffer());
}

async function send(reply: FastifyReply, request: FastifyRequest, format: string | undefined, a: AnalyticsAnswer, name: string) {
  const f = formatOf(request, format);
  reply.header("cache-control", "no-store");
  if (f === "csv") return reply.type(CSV_TYPE).header("content-disposition", `attachment; filename="${name}.csv"`).send(analyticsCsv(a));
  if (f === "xlsx")
    return reply
      .type(XLSX_TYPE)
      .header("content-disposition", `attachment; filename="${name}.xlsx"`)
      .send(await analyticsXlsx(a));
  return reply.type("application/json").send(a);
}

const analyticsResponse = {
  200: {
    description: "the totals (JSON), or their export as CSV or XLSX",
    content: {
      "application/json": { schema: Analytics },
      "text/csv": { schema: Type.String() },
      [XLSX_TYPE]: { schema: { type: "string", format: "binary" } },
    },
  },
  ...problems(400, 403, 404, 406),
};

export const analyticsRoutes: RoutePlugin = async (app) => {
  const { analytics, rates } = app.flowstore;
  // The two levels' routes, one declaration each: the served level, its operation and how its ids are read.
  const levels = [
    {
      level: servedLevel("project"),
      operationId: "getProjectAnalytics",
      summary: "A project's budget totals (projected, assigned, disbursed) per currency and converted at dated exchange rates, per subproject; O(subprojects + buckets)",
      read: (actor: Actor, [p]: readonly string[], q: { currency?: string; date?: string }) => analytics.project(actor, p!, q),
    },
    {
      level: servedLevel("subproject"),
      operationId: "getSubprojectAnalytics",
      summary: "A subproject's budget totals (projected, assigned, disbursed) per currency and converted at dated exchange rates",
      read: (actor: Actor, [p, s]: readonly string[], q: { currency?: string; date?: string }) => analytics.subproject(actor, p!, s!, q),
    },
  ];
  for (const { level, operationId, summary, read } of levels) {
    app.get(
      `${level.item}/analytics`,
      { schema: { tags: level.tags, operationId, summary, params: level.params, querystring: AnalyticsQuery, response: analyticsResponse } },
      async (request, reply) => {
        const ids = level.refOf(request.params).ids;
        const { currency, date, format } = request.query;
        return send(reply, request, format, await read(request.actor, ids, { currency, date }), `${level.type.name}-${ids.at(-1)}-analytics`);
      },
    );
  }

  const tags = ["exchange-rates"];
  app.put(
    "/exchange-rates",
    {
      schema: {
        tags,
        operationId: "putExchangeRates",
        summary: "Write exchange rates (1 from = rate to, valid from the date on); each replaces its pair's rate of that date; needs global.writeExchangeRates",
        body: RatesBody,
        response: { 200: RatesWritten, ...problems(400, 403, 415) },
      },
    },
    async (request) => ({ written: await rates.put(request.actor, request.body.rates) }),
  );

  // The ECB's CSV is text: this scope (and only it) reads text/csv bodies.
  app.addContentTypeParser("text/csv", { parseAs: "string", bodyLimit: RATES_CSV_LIMIT }, (_request, body, done) => done(null, body));
  app.post(
    "/exchange-rates/ecb",
    {
      bodyLimit: RATES_CSV_LIMIT,
      // A CSV over the server's body limit takes one of the few large-body slots while it is read (body-limits.ts).
      preParsing: largeBodySlots(app.initialConfig.bodyLimit ?? DEFAULT_BODY_LIMIT),
      schema: {
        tags,
        operationId: "importEcbExchangeRates",
        summary: "Import the ECB's exchange rates CSV (eurofxref-hist.csv: Date,USD,JPY,…; rates from EUR); needs global.writeExchangeRates",
        body: { content: { "text/csv": { schema: Type.String() } } },
        response: { 200: RatesWritten, ...problems(400, 403, 413, 415) },
      },
    },
    async (request) => ({ written: await rates.importEcbCsv(request.actor, String(request.body ?? "")) }),
  );

  app.get(
    "/exchange-rates/:from/:to",
    {
      schema: {
        tags,
        operationId: "listExchangeRates",
        summary: "A currency pair's stored rates, oldest first",
        params: Pair,
        querystring: Type.Object({ since: Type.Optional(Day), limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 1000 })) }, { additionalProperties: false }),
        response: { 200: RatePage, ...problems(400) },
      },
    },
    async (request) => ({ items: await rates.list(request.params.from, request.params.to, request.query) }),
  );

  app.get(
    "/exchange-rates/:from/:to/at/:date",
    {
      schema: {
        tags,
        operationId: "getExchangeRateAt",
        summary: "The rate of a pair valid at a day: the latest on or before it",
        params: Type.Object({ from: Currency, to: Currency, date: Day }),
        response: { 200: StoredRate, ...problems(400, 404) },
      },
    },
    async (request) => {
      const { from, to, date } = request.params;
      const [found] = await rates.list(from, to, { until: date, last: true });
      if (!found) throw new NotFoundError(`no ${from}→${to} rate on or before ${date}`);
      return found;
    },
  );
};
