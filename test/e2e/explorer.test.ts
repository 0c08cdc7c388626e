/**
 * The web explorer end to end: Debian's Chromium driven by playwright-core against a real server on
 * 127.0.0.1 over LMDB in a temp directory, serving the bundle built by esbuild in beforeAll.
 * Screenshots of each main page go to test/e2e/screenshots/ (gitignored).
 */
import { mkdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT_PASSWORD, type Running } from "../http/harness.js";
import { axeViolations, hasChromium, loggedIn, startExplorer, type Explorer, type PageOptions } from "./browser.js";

// Browser globals used inside page.evaluate callbacks (this file is type-checked without the DOM lib).
declare const sessionStorage: { getItem(key: string): string | null; setItem(key: string, value: string): void };
declare function requestAnimationFrame(callback: () => void): number;

const HERE = dirname(fileURLToPath(import.meta.url));
const SHOTS = resolve(HERE, "screenshots");

const P = "water";
const S = "phase-1";
const subprojectPath = (p: string, s: string) => `/api/v1/projects/${encodeURIComponent(p)}/subprojects/${encodeURIComponent(s)}`;

describe.skipIf(!hasChromium)("web explorer in Chromium", () => {
  let explorer: Explorer | undefined;
  let server: Running;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;

  /** The workflowitem ids in the order the page shows them. */
  async function shownOrder(pg: Page): Promise<string[]> {
    return pg.$$eval(".vrow", (rows) =>
      rows
        .map((r) => ({ pos: Number(r.getAttribute("aria-posinset")), id: r.querySelector(".wi")?.getAttribute("data-id") ?? "" }))
        .sort((a, b) => a.pos - b.pos)
        .map((r) => r.id),
    );
  }

  async function serverOrder(): Promise<string[]> {
    const page = await server.root.request<{ items: { id: string }[] }>("GET", `${subprojectPath(P, S)}/workflowitems`);
    return page.items.map((i) => i.id);
  }

  const newPage = (user: string, password: string, options: PageOptions = {}) => loggedIn(browser, server.base, user, password, options);

  const shot = (pg: Page, name: string) => pg.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    explorer = await startExplorer();
    ({ server, browser } = explorer);
    // Amounts are shown as the reader's locale writes them: this suite reads them in en-US.
    ctx = await browser.newContext({ viewport: { width: 1280, height: 860 }, locale: "en-US" });
    page = await ctx.newPage();
  });

  afterAll(async () => {
    await explorer?.close();
  });

  it("serves the page beside the API: /, the bundle, /health and /docs", async () => {
    const index = await fetch(`${server.base}/`);
    expect(index.status).toBe(200);
    expect(index.headers.get("content-type")).toContain("text/html");
    expect(index.headers.get("content-security-policy")).toContain("default-src 'self'");
    expect(await index.text()).toContain("/ui/app.js");
    const js = await fetch(`${server.base}/ui/app.js`);
    expect(js.headers.get("content-type")).toContain("javascript");
    expect((await fetch(`${server.base}/ui/..%2Fdata`)).status).toBe(404);
    expect((await fetch(`${server.base}/health`)).status).toBe(200);
    expect((await fetch(`${server.base}/docs`, { redirect: "manual" })).status).toBeLessThan(400);
    expect((await fetch(`${server.base}/openapi.json`)).status).toBe(200);
  });

  it("logs in (a wrong password is refused) and keeps the token out of the URL", async () => {
    await page.goto(`${server.base}/`);
    await page.getByRole("form", { name: "Log in" }).waitFor();
    await shot(page, "login");
    await page.fill("input[name=username]", "root");
    await page.fill("input[name=password]", "wrong password");
    await page.click("button[type=submit]");
    await expect(page.getByRole("alert").textContent()).resolves.toContain("Wrong username or password");
    await page.fill("input[name=password]", ROOT_PASSWORD);
    await page.click("button[type=submit]");
    await page.getByRole("heading", { name: "Projects" }).waitFor();
    expect(page.url()).not.toMatch(/ey[A-Za-z0-9_-]{10,}/);
    expect(await page.evaluate(() => JSON.parse(sessionStorage.getItem("flowstore.session") ?? "{}").user)).toBe("root");
  });

  it("creates a project tree, showing the server's validation errors at the field", async () => {
    await page.getByRole("button", { name: "New project" }).click();
    const form = page.getByRole("form", { name: "New project" });
    await form.getByLabel("Id (optional)").fill(P);
    await form.getByLabel("Name").fill("Water supply Recife");
    await form.getByLabel("Organization").fill("City of Recife");
    await form.getByLabel("Value").fill("12000.00");
    await form.getByLabel("Currency").fill("XYZ");
    await form.getByRole("button", { name: "Create project" }).click();
    // The server names the field; the page shows its message beside that input.
    await expect(form.locator(".field-error[data-field='projectedBudgets.0.currencyCode']").textContent()).resolves.toMatch(/currency/i);
    await form.getByLabel("Currency").fill("BRL");
    await form.getByRole("button", { name: "Create project" }).click();
    await page.locator(".resource-head[data-level=project]").waitFor();
    await expect(page.locator(".budgets").textContent()).resolves.toContain("12,000.00");

    await page.getByRole("button", { name: "New subproject" }).click();
    const sub = page.getByRole("form", { name: "New subproject" });
    await sub.getByLabel("Id (optional)").fill(S);
    await sub.getByLabel("Name").fill("Phase 1: pipes");
    await sub.getByLabel("Currency").fill("BRL");
    await sub.getByLabel("Mode").selectOption("ordered");
    await sub.getByRole("button", { name: "Create subproject" }).click();
    await page.locator(".resource-head[data-level=subproject]").waitFor();

    for (const [id, name] of [
      ["survey", "Site survey"],
      ["tender", "Tender"],
      ["contract", "Contract"],
    ]) {
      await page.getByRole("button", { name: "New workflowitem" }).click();
      const wi = page.getByRole("form", { name: "New workflowitem" });
      await wi.getByLabel("Id (optional)").fill(id!);
      await wi.getByLabel("Name").fill(name!);
      if (id === "survey") {
        // An amount with amountType N/A: refused by a domain rule, shown at the amount field.
        await wi.getByLabel("Amount", { exact: true }).fill("100.00");
        await wi.getByRole("button", { name: "Create workflowitem" }).click();
        await expect(wi.locator(".field-error[data-field=amount]").textContent()).resolves.toContain("amountType is N/A");
        await wi.getByLabel("Amount", { exact: true }).fill("");
      }
      if (id === "contract") {
        await wi.getByLabel("Amount type").selectOption("allocated");
        await wi.getByLabel("Amount", { exact: true }).fill("45000.00");
      }
      await wi.getByRole("button", { name: "Create workflowitem" }).click();
      await page.locator(`.wi[data-id="${id}"]`).waitFor();
    }
    expect(await shownOrder(page)).toEqual(["survey", "tender", "contract"]);
    expect(await serverOrder()).toEqual(["survey", "tender", "contract"]);
  });

  it("reorders by drag and drop and by keyboard; the order persists after a reload", async () => {
    await page.locator('.wi[data-id="contract"]').dragTo(page.locator('.wi[data-id="survey"]'));
    await page.locator(".notice[data-kind=ok]").waitFor();
    await expect.poll(() => serverOrder()).toEqual(["contract", "survey", "tender"]);
    expect(await shownOrder(page)).toEqual(["contract", "survey", "tender"]);

    await page.getByRole("button", { name: "Move Tender up" }).focus();
    await page.keyboard.press("Enter");
    await expect.poll(() => serverOrder()).toEqual(["contract", "tender", "survey"]);

    await page.reload();
    await page.locator('.wi[data-id="survey"]').waitFor();
    expect(await shownOrder(page)).toEqual(["contract", "tender", "survey"]);
    await page.locator(".feed.live").waitFor();
    await shot(page, "subproject");
    // The README's picture: refreshed only when asked (FLOWSTORE_DOCS_SCREENSHOT=1), so runs leave the tree clean.
    if (process.env.FLOWSTORE_DOCS_SCREENSHOT === "1") await page.screenshot({ path: resolve(HERE, "../../docs/subproject.png") });
  });

  it("a stale reorder from a second browser context is refused and shown as a conflict, with the current order", async () => {
    // Context B misses the live feed (blocked), so it keeps the order it loaded.
    const b = await newPage("root", ROOT_PASSWORD, { blockEvents: true });
    try {
      await b.page.goto(`${server.base}/#/projects/${P}/subprojects/${S}`);
      await b.page.locator('.wi[data-id="survey"]').waitFor();
      expect(await shownOrder(b.page)).toEqual(["contract", "tender", "survey"]);

      // A reorders first.
      await page.locator('.wi[data-id="survey"]').dragTo(page.locator('.wi[data-id="contract"]'));
      await expect.poll(() => serverOrder()).toEqual(["survey", "contract", "tender"]);

      // B's move is based on a version the server no longer has.
      await b.page.locator('.wi[data-id="tender"]').dragTo(b.page.locator('.wi[data-id="contract"]'));
      await expect(b.page.locator(".notice[data-kind=conflict]").textContent()).resolves.toContain("Someone else reordered");
      await expect.poll(() => shownOrder(b.page)).toEqual(["survey", "contract", "tender"]);
      expect(await serverOrder()).toEqual(["survey", "contract", "tender"]);
      await shot(b.page, "subproject-conflict");
    } finally {
      await b.context.close();
    }
  });

  it("shows another user's change live, without a reload", async () => {
    await expect.poll(() => shownOrder(page)).toEqual(["survey", "contract", "tender"]);
    await server.root.request("PATCH", `${subprojectPath(P, S)}/workflowitems/tender`, { body: { displayName: "Public tender" } });
    await page.locator('.wi[data-id="tender"] .name', { hasText: "Public tender" }).waitFor();
  });

  it("a close refused by a rule shows the server's reason; a reject reason is kept", async () => {
    // Ordered mode: "contract" cannot close while "survey", before it, is open.
    await page.locator('.wi[data-id="contract"] a.name').click();
    const panel = page.getByRole("complementary", { name: "Workflowitem" });
    await panel.locator(".resource-head[data-level=workflowitem]").waitFor();
    await shot(page, "workflowitem");
    await panel.getByRole("button", { name: "Close workflowitem", exact: true }).click();
    const alert = panel.getByRole("alert");
    const refused = await server.root.request("POST", `${subprojectPath(P, S)}/workflowitems/contract/close`, { body: {} }).then(
      () => "closed",
      (e: { problem: { detail: string } }) => e.problem.detail,
    );
    expect(refused).not.toBe("closed");
    await expect(alert.textContent()).resolves.toContain(refused);

    // Edit: a bad amount is refused at its field; a good one is saved. Then assign.
    await panel.getByRole("button", { name: "Edit" }).click();
    const edit = panel.getByRole("form", { name: "Update workflowitem" });
    await edit.getByLabel("Amount", { exact: true }).fill("12,5");
    await edit.getByRole("button", { name: "Save" }).click();
    await expect(edit.locator(".field-error[data-field=amount]").textContent()).resolves.toBeTruthy();
    await edit.getByLabel("Amount", { exact: true }).fill("47000.00");
    await edit.getByRole("button", { name: "Save" }).click();
    await page.locator('.wi[data-id="contract"] .amount', { hasText: "47,000.00 BRL" }).waitFor();
    await panel.getByLabel("Assign to").selectOption("root");
    await panel.getByRole("button", { name: "Assign workflowitem" }).click();
    await panel.getByRole("button", { name: "Edit" }).waitFor();
    const contract = await server.root.request<{ data: { amount: string; assignee: string } }>("GET", `${subprojectPath(P, S)}/workflowitems/contract`);
    expect(contract.data.amount).toBe("47000.00");

    // Rejecting the first item with a reason closes it, and the reason is shown.
    await page.locator('.wi[data-id="survey"] a.name').click();
    const first = page.getByRole("complementary", { name: "Workflowitem" });
    await first.getByLabel("Reject reason (optional)").fill("Survey done by the city already");
    await first.getByRole("button", { name: "Reject workflowitem" }).click();
    await expect(first.locator(".reject-reason").textContent()).resolves.toBe("Survey done by the city already");
    await page.locator('.wi[data-id="survey"] .badge.closed').waitFor();
  });

  it("shows the history timeline and the permissions panel (grant and revoke)", async () => {
    await page.goto(`${server.base}/#/projects/${P}`);
    await page.getByRole("tab", { name: "History" }).click();
    await expect(page.locator(".timeline li").first().textContent()).resolves.toContain("root");
    await expect(page.locator(".timeline").textContent()).resolves.toContain("created");
    await shot(page, "project-history");

    await server.root.users.create({ id: "eve", displayName: "Eve Viewer", password: "eve password 123" });
    await page.getByRole("tab", { name: "Permissions" }).click();
    const perms = page.locator(".permissions");
    for (const intent of ["project.list", "project.viewDetails", "project.update"]) {
      await perms.getByLabel("Permission", { exact: true }).selectOption(intent);
      await perms.getByLabel("User or group").selectOption("eve");
      await perms.getByRole("button", { name: "Grant", exact: true }).click();
      await perms.locator(`tr[data-intent="${intent}"]`).locator(".chip", { hasText: "Eve Viewer (eve)" }).waitFor();
    }
    await perms.getByRole("button", { name: "Revoke Edit from Eve Viewer (eve)" }).click();
    await perms.getByRole("button", { name: "Revoke Edit from Eve Viewer (eve)" }).waitFor({ state: "detached" });
    const map = await server.root.request<Record<string, string[]>>("GET", `/api/v1/projects/${P}/permissions`);
    expect(map["project.viewDetails"]).toContain("eve");
    expect(map["project.update"] ?? []).not.toContain("eve");
    await shot(page, "project-permissions");
  });

  it("renders an update's diff in the history: field, old and new amount with its currency, who and the reason given", async () => {
    const item = `${subprojectPath(P, S)}/workflowitems/contract`;
    const before = await server.root.request<{ data: { amount: string } }>("GET", item);
    await server.root.request("PATCH", item, { body: { amount: "48,500.00" }, headers: { "flowstore-reason": encodeURIComponent("Price index 2026") } });
    await server.root.request("PATCH", item, { body: { description: "Pipes and fittings" } });
    await page.goto(`${server.base}/#/projects/${P}/subprojects/${S}/workflowitems/contract`);
    const panel = page.getByRole("complementary", { name: "Workflowitem" });
    await panel.getByRole("tab", { name: "History" }).click();
    const shown = (await panel.locator(".timeline .change").allTextContents()).map((t) => t.replace(/\s+/g, " ").trim());
    const amount = Number(before.data.amount).toLocaleString("en-US", { minimumFractionDigits: 2 });
    // The newest first: the description added (no old value), then the amount changed with the reason given.
    expect(shown.slice(0, 2)).toEqual(["description (none) → Pipes and fittings (root)", `amount ${amount} → 48,500.00 BRL (root, reason: Price index 2026)`]);
    await shot(page, "workflowitem-history-diff");
    expect(await axeViolations(page)).toEqual([]);
  });

  it("a user without permission sees no action, and the server refuses a forged request", async () => {
    const eve = await newPage("eve", "eve password 123");
    try {
      await eve.page.locator(`tr[data-id="${P}"] a`).waitFor();
      // eve holds no global.createProject (GET /me says so): no "New project".
      expect(await eve.page.getByRole("button", { name: "New project" }).count()).toBe(0);
      // The page offers what the project's allowedIntents allow (close: only its assignee); eve may not read its permission list.
      const permissions = eve.page.waitForResponse((r) => r.url().endsWith(`/projects/${P}/permissions`));
      await eve.page.goto(`${server.base}/#/projects/${P}`);
      expect((await permissions).status()).toBe(403);
      await eve.page.locator(".resource-head[data-level=project]").waitFor();
      await eve.page.evaluate(() => new Promise<void>((r) => requestAnimationFrame(() => r())));
      for (const name of ["Edit", "Assign project", "Close project", "New subproject"]) {
        expect(await eve.page.getByRole("button", { name, exact: true }).count()).toBe(0);
      }
      await shot(eve.page, "project-no-permission");

      // Items eve may not view keep their place in the order, shown as redacted.
      const sp = `/api/v1/projects/${P}/subprojects/${S}`;
      await server.root.request("POST", `${sp}/permissions/grant`, { body: { intent: "subproject.viewDetails", identity: "eve" } });
      await server.root.request("POST", `${sp}/workflowitems/tender/permissions/grant`, { body: { intent: "workflowitem.viewDetails", identity: "eve" } });
      await eve.page.goto(`${server.base}/#/projects/${P}/subprojects/${S}`);
      await eve.page.locator('.wi[data-id="tender"] a.name').waitFor();
      expect(await shownOrder(eve.page)).toEqual(await serverOrder());
      await expect(eve.page.locator('.wi[data-id="contract"] .name').textContent()).resolves.toBe("redacted workflowitem contract");
      expect(await eve.page.locator('.wi[data-id="contract"] a').count()).toBe(0);
      expect(await eve.page.getByRole("button", { name: /^Move / }).count()).toBe(0);
      expect(await eve.page.getByRole("button", { name: "New workflowitem" }).count()).toBe(0);
      await shot(eve.page, "subproject-redacted");
      const forged = await eve.page.evaluate(async (p) => {
        const { token } = JSON.parse(sessionStorage.getItem("flowstore.session")!);
        const res = await fetch(`/api/v1/projects/${p}/close`, { method: "POST", headers: { authorization: `Bearer ${token}` } });
        return { status: res.status, type: res.headers.get("content-type") };
      }, P);
      expect(forged.status).toBe(403);
      expect(forged.type).toContain("application/problem+json");
      expect((await server.root.request<{ data: { status: string } }>("GET", `/api/v1/projects/${P}`)).data.status).toBe("open");
    } finally {
      await eve.context.close();
    }
  });

  it("renders 10,000 workflowitems through a virtualized list", async () => {
    const root = await server.app.flowstore.identity.actorFor("root");
    const wf = server.app.flowstore.workflow;
    await wf.createSubproject(root, P, { id: "big", displayName: "Ten thousand", currency: "EUR" } as never);
    for (let start = 0; start < 10_000; start += 1000) {
      await Promise.all(
        Array.from({ length: 1000 }, (_, k) => {
          const i = start + k;
          return wf.createWorkflowitem(root, P, "big", { id: `w${String(i).padStart(5, "0")}`, displayName: `Step ${i + 1}`, amountType: "N/A" } as never);
        }),
      );
    }
    await page.goto(`${server.base}/#/projects/${P}/subprojects/big`);
    await page.getByRole("heading", { name: /Workflowitems \(10000\)/ }).waitFor({ timeout: 60_000 });
    const rendered = await page.locator(".vrow").count();
    expect(rendered).toBeGreaterThan(5);
    expect(rendered).toBeLessThan(60);
    await page.locator(".vlist").evaluate((el) => (el.scrollTop = el.scrollHeight));
    await page.locator('.wi[data-id="w09999"]').waitFor();
    expect(await page.locator(".vrow").count()).toBeLessThan(60);
    // Still usable at the bottom: move the last item up, and the server has it.
    await page.getByRole("button", { name: "Move Step 10000 up" }).click();
    await page.locator(".notice[data-kind=ok]").waitFor();
    const ordering = await server.root.request<{ ordering: string[] }>("GET", `${subprojectPath(P, "big")}/workflowitem-ordering`);
    expect(ordering.ordering.slice(-2)).toEqual(["w09999", "w09998"]);
    await shot(page, "subproject-10000");
  });

  it("browses process data read-only, never showing access tokens", async () => {
    await server.root.request("POST", "/api/v1/global/permissions/grant", { body: { intent: "global.readProcessData", identity: "root" } }).catch(() => {});
    await server.root.request("POST", "/api/v1/global/permissions/grant", { body: { intent: "global.writeProcessData", identity: "root" } }).catch(() => {});
    const secret = "tok-e2e-0123456789-SECRET";
    await server.root.request("PUT", "/api/v1/process-data/form-submissions/process/pi-7/task/approve", {
      body: { id: "sub-1", accessToken: secret, data: { amount: "12.50", approved: true } },
    });
    await page.goto(`${server.base}/#/process-data/bpm-form-submissions`);
    await page.getByRole("link", { name: "process/pi-7/task/approve" }).click();
    const record = page.getByRole("complementary", { name: "Record" });
    await expect(record.locator("pre").textContent()).resolves.toContain('"approved": true');
    expect(await page.content()).not.toContain(secret);
    await shot(page, "process-data");
  });

  it("lists projects a page at a time, searched and sorted on the server", async () => {
    const root = await server.app.flowstore.identity.actorFor("root");
    await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        server.app.flowstore.workflow.createProject(root, { id: `bulk-${String(i).padStart(2, "0")}`, displayName: `Bulk project ${i}`, tags: i === 7 ? ["lucky"] : [] } as never),
      ),
    );
    await page.goto(`${server.base}/#/projects`);
    await page.locator("tr[data-id]").first().waitFor();
    expect(await page.locator("tr[data-id]").count()).toBe(25);
    const search = page.getByRole("searchbox", { name: "Search projects" });
    // The server searches every project, not only the loaded page: bulk-29 is not among the first 25.
    await search.fill("name:project tag:lucky");
    await expect.poll(() => page.locator("tr[data-id]").allTextContents()).toEqual([expect.stringContaining("Bulk project 7")]);
    await search.fill("29");
    await expect.poll(() => page.locator("tr[data-id]").allTextContents()).toEqual([expect.stringContaining("Bulk project 29")]);
    await search.fill("water supply");
    await expect.poll(() => page.locator("tr[data-id]").count()).toBe(1);
    await search.fill("");
    await expect.poll(() => page.locator("tr[data-id]").count()).toBe(25);
    await page.getByRole("button", { name: "Load more projects" }).click();
    await expect.poll(() => page.locator("tr[data-id]").count()).toBe(31);
    expect(await page.getByRole("button", { name: "Load more projects" }).count()).toBe(0);
    // Sorted by name, newest order last: the server's order, page by page.
    await page.getByRole("combobox", { name: "Sort projects" }).selectOption("displayName");
    await page.getByRole("combobox", { name: "Sort order" }).selectOption("desc");
    const top = (await server.root.projects.search({ sort: "displayName", order: "desc", limit: 1 })).items[0]!;
    await expect.poll(() => page.locator("tr[data-id]").first().getAttribute("data-id")).toBe(top.id);
    const names = await page.locator("tr[data-id] td:first-child").allTextContents();
    expect(names.length).toBe(25);
    expect(names).toEqual([...names].sort((a, b) => (a.toLowerCase() < b.toLowerCase() ? 1 : a.toLowerCase() > b.toLowerCase() ? -1 : 0)));
    await shot(page, "projects");
  });

  it("browses the archive by unique id and by day: document view and file download", async () => {
    for (const intent of ["global.readArchive", "global.writeArchive"]) {
      await server.root.request("POST", "/api/v1/global/permissions/grant", { body: { intent, identity: "root" } }).catch(() => {});
    }
    const form = new FormData();
    form.append("uniqueId", "invoice-42");
    form.append("document", JSON.stringify({ $workflowStatus: ["approved"], amount: [1250.5], customer: ["Recife Water"] }));
    const content = "scanned invoice bytes ".repeat(100);
    form.append("file", new Blob([content], { type: "application/pdf" }), "invoice.pdf");
    const res = await fetch(`${server.base}/api/v1/archive/snapshots`, { method: "POST", headers: { authorization: `Bearer ${server.root.token}` }, body: form });
    expect(res.status).toBe(201);
    const snap = (await res.json()) as { id: string; modified: string };

    await page.goto(`${server.base}/#/archive`);
    await page.getByLabel("Unique id").fill("invoice-42");
    await page.getByRole("button", { name: "Find" }).click();
    await page.getByRole("link", { name: snap.id }).click();
    const view = page.getByRole("complementary", { name: "Snapshot" });
    await expect(view.locator("pre").textContent()).resolves.toContain("Recife Water");
    const [download] = await Promise.all([page.waitForEvent("download"), view.getByRole("button", { name: "invoice.pdf" }).click()]);
    expect(download.suggestedFilename()).toBe("invoice.pdf");
    expect(readFileSync(await download.path(), "utf8")).toBe(content);
    await shot(page, "archive");

    await page.getByLabel("Modified on").fill(snap.modified.slice(0, 10));
    await page.getByRole("button", { name: "List" }).click();
    await page.getByRole("link", { name: snap.id }).waitFor();
  });

  it("logs out: the login form again and no token left in the tab", async () => {
    await page.getByRole("button", { name: "Log out" }).click();
    await page.getByRole("form", { name: "Log in" }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem("flowstore.session"))).toBeNull();
  });

  it("a token the server refuses ends the session: the login form again, the tab's token gone", async () => {
    await page.evaluate(() => sessionStorage.setItem("flowstore.session", JSON.stringify({ token: "not-a-token", user: "root", groups: [], intents: [] })));
    await page.reload();
    await page.getByRole("form", { name: "Log in" }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem("flowstore.session"))).toBeNull();
  });
});
