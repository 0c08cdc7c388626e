/**
 * Budget analytics' cache (workflow/analytics.ts): the subprojects' converted totals are kept per
 * project partition head version and rates version, on a real LMDB store. A repeated read finds them; a
 * write of an item or of a rate is never followed by a cached answer, whether this handle wrote or
 * another handle on the same directory did (as another process of a fleet would). A store whose sums
 * were built under an older version of the workflowitem's sums declaration gets them again at open.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { openFlowstore, type Flowstore } from "../../src/compose/index.js";
import { layout } from "../../src/resources/model/layout.js";
import { eventually } from "../support/eventually.js";
import { tempDir } from "../support/temp-dir.js";

const dir = tempDir("analytics-cache");
const oldDir = tempDir("analytics-sums-version");
const mary = userActor("mary");
let a: Flowstore;
let b: Flowstore;

beforeAll(async () => {
  a = await openFlowstore(`lmdb:${dir()}`, {});
  await a.identity.createUser(SYSTEM, { id: "mary", displayName: "Mary", password: "a long enough password" });
  await a.global.grant(SYSTEM, "global.createProject", "mary");
  await a.rates.put(SYSTEM, [{ from: "EUR", to: "USD", date: "2025-01-01", rate: "1.5" }]);
  await a.workflow.createProject(mary, { id: "p", displayName: "P" });
  await a.workflow.createSubproject(mary, "p", { id: "s", displayName: "S", currency: "EUR", workflowMode: "unordered" });
  await a.workflow.createSubproject(mary, "p", { id: "t", displayName: "T", currency: "EUR", workflowMode: "unordered" });
  b = await openFlowstore(`lmdb:${dir()}`, {});
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

const item = (id: string, amount: string) => ({ id, displayName: id, amountType: "allocated", amount, billingDate: "2025-01-02" }) as never;
/** The project's open assigned total in USD, as `store` answers it. */
const usd = async (store: Flowstore) => (await store.analytics.project(mary, "p", { currency: "USD" })).total.converted!.openAssigned;

it("a repeated read is served from the cache; a write of an item or of a rate through the same handle is not followed by a cached answer", async () => {
  await a.workflow.createWorkflowitem(mary, "p", "s", item("w1", "100"));
  expect(await usd(a)).toBe("150.00");
  const first = a.analytics.cacheStats;
  expect(await usd(a)).toBe("150.00");
  // Both subprojects' totals found, none derived again.
  expect(a.analytics.cacheStats).toEqual({ hits: first.hits + 2, misses: first.misses });
  // A subproject's read finds its row of the project's entry.
  expect((await a.analytics.subproject(mary, "p", "s", { currency: "USD" })).total.converted!.openAssigned).toBe("150.00");
  expect(a.analytics.cacheStats).toEqual({ hits: first.hits + 3, misses: first.misses });

  // A write of an item moves the partition's head: derived again, and counted.
  await a.workflow.createWorkflowitem(mary, "p", "t", item("w2", "10"));
  expect(await usd(a)).toBe("165.00");
  expect(a.analytics.cacheStats.misses).toBe(first.misses + 2);

  // A write of a rate moves the rates' version: converted again at the new rate of the items' day.
  await a.rates.put(SYSTEM, [{ from: "EUR", to: "USD", date: "2025-01-02", rate: "2" }]);
  expect(await usd(a)).toBe("220.00");
  expect(a.analytics.cacheStats.misses).toBe(first.misses + 4);
  // Another target currency is an entry of its own.
  expect((await a.analytics.project(mary, "p", { currency: "EUR" })).total.converted!.openAssigned).toBe("110.00");
  expect((await a.verifyAll()).ok).toBe(true);
});

it("a write through another handle on the same LMDB directory (another process of a fleet) is not followed by a cached answer", async () => {
  const before = await usd(a);
  expect(await usd(a)).toBe(before); // cached in a
  await b.workflow.createWorkflowitem(mary, "p", "s", item("w3", "1"));
  // A read of a's sees b's commit from its next read transaction on; from then on, never the cached total.
  await eventually(async () => (await usd(a)) === "222.00", { what: "a's analytics to count b's item" });
  expect(await usd(a)).toBe("222.00");
  await b.rates.put(SYSTEM, [{ from: "EUR", to: "USD", date: "2025-01-02", rate: "3" }]);
  await eventually(async () => (await usd(a)) === "333.00", { what: "a's analytics to convert at b's rate" });
  expect(await usd(a)).toBe("333.00");
  expect((await a.analytics.subproject(mary, "p", "s", { currency: "USD" })).total.converted!.openAssigned).toBe("303.00");
});

it("a store whose sums were built before an item's own rate was counted gets them again once at open (sumsVersion), and verifies", async () => {
  const old = await openFlowstore(`lmdb:${oldDir()}`, {});
  await old.identity.createUser(SYSTEM, { id: "mary", displayName: "Mary", password: "a long enough password" });
  await old.global.grant(SYSTEM, "global.createProject", "mary");
  await old.workflow.createProject(mary, { id: "q", displayName: "Q" });
  await old.workflow.createSubproject(mary, "q", { id: "s", displayName: "S", currency: "EUR", workflowMode: "unordered" });
  // In USD at its own rate: 1 USD = 0.9 EUR.
  await old.workflow.createWorkflowitem(mary, "q", "s", { id: "w", displayName: "w", amountType: "allocated", amount: "100", currency: "USD", exchangeRate: "0.9" } as never);
  // As the store was before: the partition's sums gone (as a version that did not count them left them) and the marker of version 1.
  await old.kv.commit(["project", "q"], [{ type: "deletePrefix", prefix: layout.allSums }]);
  await old.kv.commit(layout.sumsBuilt, [{ type: "put", key: layout.sumsBuiltEntry("project"), value: Buffer.from(JSON.stringify({ built: true })) }]);
  expect((await old.resources.audit.verify(["project", "q"])).ok).toBe(false);
  await old.close();

  const reopened = await openFlowstore(`lmdb:${oldDir()}`, {});
  try {
    expect((await reopened.resources.audit.verify(["project", "q"])).ok).toBe(true);
    const a = await reopened.analytics.project(mary, "q", { currency: "EUR" });
    expect(a.total.converted!.openAssigned).toBe("90.00");
    expect(a.total.byCurrency.map((c) => [c.currency, c.openAssigned])).toEqual([["USD", "100"]]);
  } finally {
    await reopened.close();
  }
});
