/**
 * Budget analytics and exchange rates through a real server (memory store, 127.0.0.1): rates written by
 * holders of global.writeExchangeRates (JSON, or the ECB's CSV), read back at a day; a project's and a
 * subproject's totals per currency and converted at each amount's dated rate, as JSON, CSV and XLSX
 * (read back with exceljs); bad input is a 400 naming the field with nothing written; a caller who may
 * not view the project gets 404; an Accept the route cannot answer gets 406.
 */
import ExcelJS from "exceljs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ProblemError, type FlowstoreClient } from "../../src/client/index.js";
import { MemoryKv } from "../../src/kv/memory.js";
import { raw, startServer, type Running } from "./harness.js";

let s: Running;
let alice: FlowstoreClient;
const ECB = "Date,USD,JPY,\n2025-01-03,1.0299,163.2,\n2025-01-02,1.0321,N/A,\n";
const problemOf = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => (e instanceof ProblemError ? e.problem : Promise.reject(e)),
  );
const auth = (c: FlowstoreClient, extra: Record<string, string> = {}) => ({ headers: { authorization: `Bearer ${c.token}`, ...extra } });

beforeAll(async () => {
  s = await startServer(new MemoryKv());
  alice = await s.userClient("alice");
  const p = s.root.project("p");
  await s.root.projects.create({ id: "p", displayName: "School", projectedBudgets: [{ organization: "Ministry", value: "1000", currencyCode: "USD" }] });
  await p.subprojects.create({ id: "s1", displayName: "Roof", currency: "EUR", workflowMode: "unordered" });
  await p.subprojects.create({ id: "s2", displayName: "Walls", currency: "USD", workflowMode: "unordered" });
  const s1 = p.subproject("s1").workflowitems;
  await s1.create({ id: "a", displayName: "Tiles", amountType: "allocated", amount: "1000.50", currency: "EUR", billingDate: "2025-01-02" });
  await s1.create({ id: "b", displayName: "Nails", amountType: "disbursed", amount: "200", currency: "USD", billingDate: "2025-01-03" });
  // No currency: the subproject's (EUR); it stays open (TruBudget closes an item with an amount once it names its currency).
  await s1.create({ id: "c", displayName: "Paint", amountType: "allocated", amount: "300" });
  await p.subproject("s2").workflowitems.create({ id: "d", displayName: "Bricks", amountType: "disbursed", amount: "1,000", currency: "USD", billingDate: "2025-01-02" });
  for (const [sp, w] of [
    ["s1", "a"],
    ["s1", "b"],
    ["s2", "d"],
  ] as const)
    await p.subproject(sp).workflowitem(w).close();
});
afterAll(async () => s?.close());

it("rates: only holders of global.writeExchangeRates write them; the ECB's CSV imports; the rate at a day is the latest on or before it", async () => {
  expect(await problemOf(alice.exchangeRates.importEcb(ECB))).toMatchObject({ status: 403 });
  await s.root.globalPermissions.grant("global.writeExchangeRates", "alice");
  expect(await alice.exchangeRates.importEcb(ECB)).toBe(3);
  // The same file again writes nothing (answered 0), and so does a rate already stored, through JSON.
  expect(await alice.exchangeRates.importEcb(ECB)).toBe(0);
  expect(await alice.exchangeRates.put([{ from: "EUR", to: "JPY", date: "2025-01-03", rate: "163.2" }])).toBe(0);
  expect((await alice.exchangeRates.at("EUR", "USD", "2025-01-02")).rate).toBe("1.0321");
  expect((await alice.exchangeRates.at("EUR", "USD", "2026-06-01")).rate).toBe("1.0299");
  expect(await problemOf(alice.exchangeRates.at("EUR", "USD", "2024-12-31"))).toMatchObject({ status: 404 });
  expect((await alice.exchangeRates.list("EUR", "USD")).map((r) => [r.date, r.rate, r.by])).toEqual([
    ["2025-01-02", "1.0321", "alice"],
    ["2025-01-03", "1.0299", "alice"],
  ]);
});

it("bad rates are a 400 naming the field, and nothing of the write is kept", async () => {
  const bad = await problemOf(
    alice.exchangeRates.put([
      { from: "EUR", to: "GBP", date: "2025-01-02", rate: "0.83" },
      { from: "EUR", to: "GBP", date: "2025-01-03", rate: "0,83" },
    ]),
  );
  expect(bad).toMatchObject({ status: 400 });
  expect(JSON.stringify(bad)).toContain("rate");
  expect(await problemOf(alice.exchangeRates.put([{ from: "EUR", to: "GBP", date: "2025-02-30", rate: "1" }]))).toMatchObject({ status: 400, field: "rates.0.date" });
  expect(await alice.exchangeRates.list("EUR", "GBP")).toEqual([]);
  expect(await problemOf(alice.exchangeRates.importEcb("Date,USD\n2025-01-02,abc\n"))).toMatchObject({ status: 400, field: "csv" });
  expect(await problemOf(alice.exchangeRates.importEcb("Day,USD\n"))).toMatchObject({ status: 400, field: "csv" });
});

it("a project's totals per currency and converted to EUR at each amount's dated rate, with a row per subproject", async () => {
  const a = await s.root.project("p").analytics({ currency: "EUR", date: "2025-01-05" });
  expect(a.total.byCurrency).toEqual([
    { currency: "EUR", projected: "0", assigned: "1000.5", disbursed: "0", openAssigned: "300", openDisbursed: "0" },
    { currency: "USD", projected: "1000", assigned: "0", disbursed: "1200", openAssigned: "0", openDisbursed: "0" },
  ]);
  // 1000 USD / 1.0299 (the 5th: the 3rd's rate); 200 / 1.0299 (the 3rd) + 1000 / 1.0321 (the 2nd).
  expect(a.total.converted).toEqual({
    currency: "EUR",
    projected: "970.97",
    assigned: "1000.50",
    disbursed: "1163.09",
    openAssigned: "300.00",
    openDisbursed: "0.00",
    missingRates: [],
  });
  expect(a.subprojects.map((r) => [r.id, r.currency, r.converted?.disbursed])).toEqual([
    ["s1", "EUR", "194.19"],
    ["s2", "USD", "968.90"],
  ]);
  const sub = await s.root.project("p").subproject("s2").analytics({ currency: "JPY" });
  // 1000 USD dated the 2nd: EUR→JPY has no rate that day (N/A), so no conversion: named, not guessed.
  expect(sub.total.converted).toMatchObject({ disbursed: null, missingRates: [{ from: "USD", to: "JPY", date: "2025-01-02" }] });
  expect(await problemOf(s.root.project("p").analytics({ currency: "XYZ" }))).toMatchObject({ status: 400, field: "currency" });
  expect(await problemOf(alice.project("p").analytics())).toMatchObject({ status: 404 });
});

it("CSV (Accept: text/csv or ?format=csv) and XLSX (?format=xlsx, read back with exceljs); 406 for a type it cannot answer", async () => {
  const csv = await raw(s.base, "GET", "/api/v1/projects/p/analytics?currency=EUR&date=2025-01-05", auth(s.root, { accept: "text/csv" }));
  expect(csv.status).toBe(200);
  expect(csv.type).toContain("text/csv");
  const lines = (csv.body as string).trim().split("\r\n");
  expect(lines[0]).toBe("level,id,name,currency,kind,projected,assigned,disbursed,openAssigned,openDisbursed");
  expect(lines).toContain("project,p,School,USD,sum,1000,0,1200,0,0");
  expect(lines).toContain("project,p,School,EUR,converted at dated rates (2 places),970.97,1000.50,1163.09,300.00,0.00");
  expect(await s.root.project("p").analyticsExport("csv", { currency: "EUR", date: "2025-01-05" })).toBe(csv.body);

  const bytes = (await s.root.project("p").analyticsExport("xlsx", { currency: "EUR", date: "2025-01-05" })) as Uint8Array;
  const wb = new ExcelJS.Workbook();
  await wb.xlsx.load(Buffer.from(bytes) as never);
  const ws = wb.getWorksheet("analytics")!;
  expect(ws.getRow(1).values).toEqual([undefined, "level", "id", "name", "currency", "kind", "projected", "assigned", "disbursed", "openAssigned", "openDisbursed"]);
  const rows = ws.getSheetValues().slice(2) as unknown[][];
  expect(rows.find((r) => r[1] === "project" && r[5] !== "sum")?.slice(6)).toEqual([970.97, 1000.5, 1163.09, 300, 0]);
  expect(rows).toHaveLength(lines.length - 1);

  expect((await raw(s.base, "GET", "/api/v1/projects/p/analytics", auth(s.root, { accept: "image/png" }))).status).toBe(406);
});
