/**
 * The explorer's budget analytics panel (issue 26, part 4) in Debian's Chromium against a real server on
 * 127.0.0.1: the project page's Analytics tab charts projected, assigned and disbursed per subproject
 * (SVG, converted to EUR at each amount's dated rate), shows the totals per currency and converted, has
 * no axe-core violation, and exports CSV through the browser's download. A screenshot at 1280 px goes to
 * test/e2e/screenshots/analytics-1280.png (gitignored).
 */
import { mkdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT_PASSWORD } from "../http/harness.js";
import { axeViolations, hasChromium, loggedIn, overflowX, startExplorer, type Explorer } from "./browser.js";

const SHOTS = process.env.FLOWSTORE_SHOTS ?? resolve(dirname(fileURLToPath(import.meta.url)), "screenshots");

describe.skipIf(!hasChromium)("budget analytics in the explorer", () => {
  let explorer: Explorer | undefined;

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    explorer = await startExplorer();
    const root = explorer.server.root;
    await root.exchangeRates.importEcb("Date,USD,\n2025-01-03,1.0299,\n2025-01-02,1.0321,\n");
    const p = root.project("school");
    await root.projects.create({ id: "school", displayName: "School", projectedBudgets: [{ organization: "Ministry", value: "5000", currencyCode: "EUR" }] });
    await p.subprojects.create({
      id: "roof",
      displayName: "Roof",
      currency: "EUR",
      workflowMode: "unordered",
      projectedBudgets: [{ organization: "Ministry", value: "3000", currencyCode: "EUR" }],
    });
    await p.subprojects.create({
      id: "walls",
      displayName: "Walls",
      currency: "USD",
      workflowMode: "unordered",
      projectedBudgets: [{ organization: "Ministry", value: "2000", currencyCode: "USD" }],
    });
    const roof = p.subproject("roof").workflowitems;
    await roof.create({ id: "tiles", displayName: "Tiles", amountType: "allocated", amount: "2500", currency: "EUR", billingDate: "2025-01-02" });
    await roof.create({ id: "nails", displayName: "Nails", amountType: "disbursed", amount: "1200", currency: "EUR", billingDate: "2025-01-03" });
    await p.subproject("walls").workflowitems.create({ id: "bricks", displayName: "Bricks", amountType: "disbursed", amount: "1,500", currency: "USD", billingDate: "2025-01-02" });
    for (const [s, w] of [
      ["roof", "tiles"],
      ["roof", "nails"],
      ["walls", "bricks"],
    ] as const)
      await p.subproject(s).workflowitem(w).close();
  });
  afterAll(async () => explorer?.close());

  it("charts the subprojects, shows the totals, passes axe, fits 1280 px and exports CSV", async () => {
    const { context, page } = await loggedIn(explorer!.browser, explorer!.server.base, "root", ROOT_PASSWORD);
    try {
      await page.goto(`${explorer!.server.base}/#/projects/school`);
      await page.getByRole("tab", { name: "Analytics" }).click();
      const chart = page.getByRole("img", { name: "Projected, assigned and disbursed per subproject, in EUR" });
      await chart.waitFor();
      // One group per subproject, three bars each.
      expect(await page.$$eval("svg.chart g[data-id]", (gs) => gs.map((g) => g.getAttribute("data-id")))).toEqual(["roof", "walls"]);
      expect(await page.locator("svg.chart g[data-id] rect").count()).toBe(6);
      // Walls: 1500 USD disbursed on the 2nd at 1.0321 = 1453.35 EUR.
      expect(await page.locator('svg.chart g[data-id="walls"]').textContent()).toContain("1,453.35");
      const converted = page.locator("table.analytics-totals tr.converted");
      expect(await converted.textContent()).toContain("All in EUR");
      expect(await page.locator('table.analytics-totals tr[data-currency="USD"]').textContent()).toContain("1,500");
      expect(await axeViolations(page)).toEqual([]);
      expect(await overflowX(page)).toBe(0);
      await page.screenshot({ path: join(SHOTS, "analytics-1280.png"), fullPage: true });

      const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Export CSV" }).click()]);
      expect(download.suggestedFilename()).toBe("project-school-analytics.csv");
      const csv = readFileSync((await download.path())!, "utf8");
      expect(csv.split("\r\n")[0]).toBe("level,id,name,currency,kind,projected,assigned,disbursed,openAssigned,openDisbursed");
      expect(csv).toContain("subproject,walls,Walls,USD,sum,2000,0,1500,0,0");
    } finally {
      await context.close();
    }
  });
});
