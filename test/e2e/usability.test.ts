/**
 * The explorer for a newcomer (issue 30), in Debian's Chromium against a real server over LMDB: every
 * page fits a phone (360 and 390 px) and a desktop (1280 px) without sideways scrolling and has no
 * axe-core violation; forms check their fields before sending and say a refusal in words; users and
 * groups are picked by name and permissions are named and explained; each action says what it acts
 * on; the subproject's history holds its workflowitems' events and the order it set; a favicon; "By id"
 * sorts as a reader expects. Screenshots at 390 and 1280 px go to FLOWSTORE_SHOTS (default
 * test/e2e/screenshots, gitignored).
 */
import { mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, Page, Request } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT_PASSWORD, type Running } from "../http/harness.js";
import { axeViolations, hasChromium, loggedIn, overflowX, startExplorer, type Explorer } from "./browser.js";

declare function requestAnimationFrame(callback: () => void): number;

const SHOTS = process.env.FLOWSTORE_SHOTS ?? resolve(dirname(fileURLToPath(import.meta.url)), "screenshots");
const P = "water";
const S = "phase-1";
const EVE = "eve password 123";

describe.skipIf(!hasChromium)("the explorer for a newcomer", () => {
  let explorer: Explorer | undefined;
  let server: Running;
  let browser: Browser;
  let page: Page;
  let evePage: Page;

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    explorer = await startExplorer({ notifications: { follow: true } });
    ({ server, browser } = explorer);
    const root = server.root;
    for (const intent of ["global.readProcessData", "global.writeProcessData", "global.readArchive", "global.writeArchive"]) {
      await root.globalPermissions.grant(intent as never, "root").catch(() => {});
    }
    await root.users.create({ id: "eve", displayName: "Eve Viewer", password: EVE });
    await root.groups.create({ id: "auditors", displayName: "Auditors" });
    await root.groups.addMember("auditors", "eve");
    await root.projects.create({
      id: P,
      displayName: "Water supply Recife",
      description: "Pipes and pumps",
      projectedBudgets: [{ organization: "City of Recife", value: "12000.00", currencyCode: "BRL" }],
    });
    const sub = root.project(P).subproject(S);
    await root.project(P).subprojects.create({ id: S, displayName: "Phase 1: pipes", currency: "BRL", workflowMode: "ordered" });
    await sub.workflowitems.create({ id: "survey", displayName: "Site survey", amountType: "N/A" });
    await sub.workflowitems.create({ id: "tender", displayName: "Public tender for the pipes of the northern district", amountType: "N/A" });
    await sub.workflowitems.create({ id: "contract", displayName: "Contract", amountType: "allocated", amount: "45000.00", currency: "BRL" });
    await sub.setOrdering(["contract", "survey", "tender"]);
    await sub.assign("root");
    await sub.workflowitem("contract").assign("root");
    await sub.workflowitem("contract").update({ description: "Signed copy pending" });
    ({ page } = await loggedIn(browser, server.base, "root", ROOT_PASSWORD));
    // Something in eve's inbox (projected from the change feed, which her page follows): root assigns her the survey.
    ({ page: evePage } = await loggedIn(browser, server.base, "eve", EVE));
    await evePage.locator(".feed.live").waitFor();
    for (const intent of ["workflowitem.list", "workflowitem.viewDetails", "workflowitem.viewHistory"]) await sub.workflowitem("survey").grant(intent, "eve");
    await sub.workflowitem("survey").assign("eve");
    await evePage.locator(".inbox .unread").waitFor();
    await root.request("PUT", "/api/v1/process-data/form-submissions/process/pi-7/task/approve", { body: { id: "sub-1", data: { amount: "12.50" } } });
  });

  afterAll(async () => {
    await explorer?.close();
  });

  it("every page fits 360, 390 and 1280 px without scrolling sideways and has no axe-core violation", async () => {
    const rootPage = page;
    const wi = `/projects/${P}/subprojects/${S}/workflowitems/contract`;
    const pages: { name: string; path: string; ready: string; tab?: string; eve?: true }[] = [
      { name: "projects", path: "/projects", ready: "tr[data-id]" },
      { name: "project", path: `/projects/${P}`, ready: ".resource-head[data-level=project]" },
      { name: "project-permissions", path: `/projects/${P}`, ready: ".resource-head[data-level=project]", tab: "Permissions" },
      { name: "subproject", path: `/projects/${P}/subprojects/${S}`, ready: ".wi[data-id=contract]" },
      { name: "subproject-history", path: `/projects/${P}/subprojects/${S}`, ready: ".wi[data-id=contract]", tab: "History" },
      { name: "workflowitem", path: wi, ready: ".resource-head[data-level=workflowitem]" },
      { name: "workflowitem-documents", path: wi, ready: ".resource-head[data-level=workflowitem]", tab: "Documents" },
      { name: "process-data", path: "/process-data/bpm-form-submissions", ready: "tr a" },
      { name: "archive", path: "/archive", ready: "form" },
      { name: "notifications", path: "/notifications", ready: "tr[data-id]", eve: true },
      { name: "subscriptions", path: "/subscriptions", ready: 'form[aria-label="New subscription"]' },
      { name: "users", path: "/users/eve", ready: ".user-state" },
      { name: "groups", path: "/groups/auditors", ready: "li[data-member]" },
      { name: "me", path: "/me", ready: "form" },
    ];
    const found: Record<string, unknown> = {};
    for (const width of [360, 390, 1280]) {
      for (const p of pages) {
        const page = p.eve ? evePage : rootPage;
        await page.setViewportSize({ width, height: 860 });
        await page.goto(`${server.base}/#${p.path}`);
        await page.locator(p.ready).first().waitFor();
        if (p.tab) await page.getByRole("tab", { name: p.tab }).last().click();
        await page.evaluate(() => new Promise<void>((r) => requestAnimationFrame(() => r())));
        await page.screenshot({ path: join(SHOTS, `${p.name}-${width}.png`), fullPage: true });
        const wider = await overflowX(page);
        if (wider > 0) found[`${p.name} at ${width}px is ${wider}px wider than the viewport`] = true;
        // Colours and names do not change with the width: axe runs once per page, at 390 px.
        if (width === 390) for (const v of await axeViolations(page)) found[`${p.name}: ${v.id} (${v.impact}) ${v.help}`] = v.targets.slice(0, 3);
      }
    }
    await rootPage.setViewportSize({ width: 1280, height: 860 });
    expect(found).toEqual({});
    // 39 page loads and 13 audits: bounded, with room for a loaded machine.
  }, 240_000);

  it("checks a form before sending it, and says the server's refusal in words at the field", async () => {
    const posts: string[] = [];
    const onRequest = (r: Request) => {
      if (r.method() === "POST" && r.url().endsWith("/api/v1/projects")) posts.push(r.url());
    };
    page.on("request", onRequest);
    try {
      await page.goto(`${server.base}/#/projects`);
      await page.getByRole("button", { name: "New project" }).click();
      const form = page.getByRole("form", { name: "New project" });
      await form.getByLabel("Organization").fill("City of Recife");
      await form.getByLabel("Value").fill("12,5");
      await form.getByLabel("Currency").fill("eur");
      await form.getByRole("button", { name: "Create project" }).click();
      // Checked in the page against the server's own schema: nothing sent, every field said in words.
      const error = (field: string) => form.locator(`.field-error[data-field='${field}']`);
      await expect(error("displayName").textContent()).resolves.toBe("Name is required");
      await expect(error("projectedBudgets.0.value").textContent()).resolves.toBe("Budget value must be a decimal number like 1200.50");
      await expect(error("projectedBudgets.0.currencyCode").textContent()).resolves.toBe("Budget currency must be an ISO 4217 currency code like EUR");
      expect(await form.getByLabel("Value").getAttribute("aria-invalid")).toBe("true");
      expect(posts).toEqual([]);
      // A rule only the server knows (XYZ is no ISO 4217 code): sent, refused, and said with the field's name.
      await form.getByLabel("Name").fill("Bridges");
      await form.getByLabel("Value").fill("1200.50");
      await form.getByLabel("Currency").fill("XYZ");
      await form.getByRole("button", { name: "Create project" }).click();
      await expect(error("projectedBudgets.0.currencyCode").textContent()).resolves.toBe('Budget currency "XYZ" is not an ISO 4217 currency code');
      expect(posts.length).toBe(1);
      expect(await page.content()).not.toContain("body.projectedBudgets");
    } finally {
      page.off("request", onRequest);
    }
  });

  it("grants by picking a user or group by name, with each permission named and explained", async () => {
    await page.goto(`${server.base}/#/projects/${P}`);
    await page.getByRole("tab", { name: "Permissions" }).click();
    const perms = page.locator(".permissions");
    const intent = perms.getByLabel("Permission", { exact: true });
    const who = perms.getByLabel("User or group");
    // The choices are names, not ids: users and groups apart (the directory is read when the form shows).
    await who.locator("optgroup[label=Users] option", { hasText: "Eve Viewer (eve)" }).waitFor({ state: "attached", timeout: 20_000 });
    expect(await who.locator("optgroup[label=Users] option").allTextContents()).toContain("Eve Viewer (eve)");
    expect(await who.locator("optgroup[label=Groups] option").allTextContents()).toContain("Auditors (group auditors)");
    expect(await intent.locator("option").allTextContents()).toContain("View details: Read the project's fields, budgets and documents.");
    await intent.selectOption("project.viewDetails");
    await who.selectOption("auditors");
    await perms.getByRole("button", { name: "Grant", exact: true }).click();
    const row = perms.locator("tr[data-intent='project.viewDetails']");
    await expect(row.locator("th").textContent()).resolves.toBe("View detailsRead the project's fields, budgets and documents.");
    await row.locator(".chip", { hasText: "Auditors (group auditors)" }).waitFor();
    const map = await server.root.request<Record<string, string[]>>("GET", `/api/v1/projects/${P}/permissions`);
    expect(map["project.viewDetails"]).toContain("auditors");
    await perms.getByRole("button", { name: "Revoke View details from Auditors (group auditors)" }).click();
    await row.locator(".chip", { hasText: "Auditors" }).waitFor({ state: "detached" });

    // The assignee too is picked by name.
    await page.goto(`${server.base}/#/projects/${P}/subprojects/${S}/workflowitems/tender`);
    const panel = page.getByRole("complementary", { name: "Workflowitem" });
    await panel.getByLabel("Assign to").selectOption("auditors");
    await panel.getByRole("button", { name: "Assign workflowitem" }).click();
    await panel.locator(".assignee", { hasText: "Auditors (group auditors)" }).waitFor();
    expect((await server.root.project(P).subproject(S).workflowitem("tender").get()).data.assignee).toBe("auditors");
  });

  it("names each action by what it acts on: close the subproject or the workflowitem, move an item by its name", async () => {
    await page.goto(`${server.base}/#/projects/${P}/subprojects/${S}/workflowitems/contract`);
    const panel = page.getByRole("complementary", { name: "Workflowitem" });
    await panel.locator(".resource-head[data-level=workflowitem]").waitFor();
    await page.getByRole("button", { name: "Close subproject" }).waitFor();
    expect(await panel.getByRole("button", { name: "Close workflowitem" }).count()).toBe(1);
    expect(await page.getByRole("button", { name: "Close", exact: true }).count()).toBe(0);
    await panel.getByLabel("Reject reason (optional)").fill("Not needed");
    expect(await panel.getByRole("button", { name: "Reject workflowitem" }).count()).toBe(1);
    await page.getByRole("button", { name: "Move Site survey up" }).click();
    await page.locator(".notice[data-kind=ok]", { hasText: 'Moved "Site survey" to position 1' }).waitFor();
    expect(await page.getByRole("button", { name: /^Move (survey|tender|contract) / }).count()).toBe(0);
  });

  it("shows the subproject's history with its workflowitems' events, and the order an ordering set", async () => {
    await page.goto(`${server.base}/#/projects/${P}/subprojects/${S}`);
    await page.getByRole("tab", { name: "History" }).click();
    const timeline = page.locator(".timeline");
    await timeline.locator("li", { hasText: "ordering set: Site survey, Contract, Public tender" }).waitFor();
    await timeline.locator("li", { hasText: "ordering set: Contract, Site survey, Public tender" }).waitFor();
    // The workflowitem's own events, by its name; an update as its diff (field, old → new, who).
    await timeline.locator("li", { hasText: "Contract" }).filter({ hasText: "description (none) → Signed copy pending (root)" }).waitFor();
    await timeline.locator("li", { hasText: "Site survey" }).filter({ hasText: "created" }).first().waitFor();
  });

  it("has a favicon, and sorts by id as a reader expects", async () => {
    const href = await page.locator("link[rel=icon]").getAttribute("href");
    const icon = await fetch(`${server.base}${href}`);
    expect(icon.status).toBe(200);
    expect(icon.headers.get("content-type")).toContain("image/svg+xml");
    for (const id of ["item-10", "Item-9", "item-2"]) await server.root.projects.create({ id, displayName: `Numbered ${id}` });
    await page.goto(`${server.base}/#/projects`);
    await page.getByRole("combobox", { name: "Sort projects" }).selectOption({ label: "By id" });
    const ids = () => page.locator("tr[data-id]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-id")));
    await expect.poll(ids).toEqual(["item-2", "Item-9", "item-10", P]);
    await page.getByRole("combobox", { name: "Sort order" }).selectOption("desc");
    await expect.poll(ids).toEqual([P, "item-10", "Item-9", "item-2"]);
  });
});
