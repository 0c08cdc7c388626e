/**
 * The explorer's TruBudget-parity pages end to end (issue 14), in Chromium against a real server on
 * 127.0.0.1 over LMDB: documents of a workflowitem (upload with progress, download, validate, delete;
 * read-only when closed), the notification inbox with its unread badge live from the change feed,
 * actions offered from `allowedIntents`, amounts in the reader's locale, and user and group
 * administration. Every step waits for an element or an answer, never for a time.
 */
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT_PASSWORD, type Running } from "../http/harness.js";
import { hasChromium, loggedIn, startExplorer, type Explorer } from "./browser.js";

const P = "parity";
/** The server's document size limit here (the default is 100 MiB). */
const MAX_DOCUMENT = 2 * 1024 * 1024;
const S = "docs";
const itemUrl = (w: string) => `/#/projects/${P}/subprojects/${S}/workflowitems/${w}`;

describe.skipIf(!hasChromium)("web explorer: documents, notifications, allowedIntents, locale, user administration", () => {
  let explorer: Explorer | undefined;
  let server: Running;
  let browser: Browser;
  let page: Page;
  const sub = () => server.root.project(P).subproject(S);
  const docsOf = (w: string) => sub().workflowitem(w).documents;

  /** Opens a workflowitem's panel on `pg` and answers the panel. */
  async function openItem(pg: Page, w: string) {
    await pg.goto(server.base + itemUrl(w));
    const panel = pg.getByRole("complementary", { name: "Workflowitem" });
    await panel.locator(".resource-head[data-level=workflowitem]").waitFor();
    return panel;
  }

  beforeAll(async () => {
    // The server projects notifications from the feed (follow), as `flowstore serve` does.
    explorer = await startExplorer({ notifications: { follow: true }, documents: { maxBytes: MAX_DOCUMENT } });
    ({ server, browser } = explorer);
    await server.root.projects.create({ id: P, displayName: "Parity", projectedBudgets: [{ organization: "KfW", value: "250000.00", currencyCode: "BRL" }] } as never);
    await server.root.project(P).subprojects.create({ id: S, displayName: "Documents", currency: "EUR", workflowMode: "unordered" } as never);
    for (const [id, extra] of [
      ["invoice", { amountType: "allocated", amount: "1234567.5", currency: "EUR" }],
      ["other", { amountType: "N/A" }],
      ["done", { amountType: "N/A" }],
    ] as const) {
      await sub().workflowitems.create({ id, displayName: `Item ${id}`, ...extra } as never);
    }
    await docsOf("done").upload({ fileName: "final.txt", content: new Blob(["the final report"]) });
    await sub().workflowitem("done").assign("root");
    await sub().workflowitem("done").close();
    page = (await loggedIn(browser, server.base, "root", ROOT_PASSWORD)).page;
  });

  afterAll(async () => {
    await explorer?.close();
  });

  it("documents: upload with progress, list, download, validate, delete", async () => {
    const content = randomBytes(1.5 * 1024 * 1024);
    const sha = createHash("sha256").update(content).digest("hex");
    const panel = await openItem(page, "invoice");
    await panel.getByRole("tab", { name: "Documents" }).click();
    await panel.getByText("No documents.").waitFor();
    const form = panel.getByRole("form", { name: "Upload a document" });
    await form.getByLabel("File").setInputFiles({ name: "report.pdf", mimeType: "application/pdf", buffer: content });
    await form.getByLabel("Comment (optional)").fill("signed copy");
    await form.getByRole("button", { name: "Upload" }).click();
    // The bytes sent are counted from the upload's progress events (a multipart body a little over 1.5 MiB).
    await expect(form.getByRole("status").textContent()).resolves.toMatch(/^Uploaded report\.pdf \(1\.5 MiB; 1\.5 MiB sent\)\.$/);
    const row = panel.locator(".documents tr[data-id]", { hasText: "report.pdf" });
    await expect(row.locator(".hash").textContent()).resolves.toBe(sha);
    await expect(row.locator(".comment").textContent()).resolves.toBe("signed copy");
    const stored = await docsOf("invoice").list();
    expect(stored).toEqual([expect.objectContaining({ fileName: "report.pdf", hash: sha, size: content.length, comment: "signed copy", createdBy: "root" })]);

    const [download] = await Promise.all([page.waitForEvent("download"), row.getByRole("button", { name: "Download report.pdf" }).click()]);
    expect(download.suggestedFilename()).toBe("report.pdf");
    expect(readFileSync((await download.path())!).equals(content)).toBe(true);

    const validate = row.getByLabel("Validate report.pdf");
    await validate.setInputFiles({ name: "copy.pdf", mimeType: "application/pdf", buffer: content });
    await row.getByRole("status").filter({ hasText: "✓ the file matches" }).waitFor();
    const tampered = Buffer.from(content);
    tampered[12345] = tampered[12345]! ^ 1;
    await validate.setInputFiles({ name: "tampered.pdf", mimeType: "application/pdf", buffer: tampered });
    await row.getByRole("status").filter({ hasText: "✗ the file does not match" }).waitFor();

    await row.getByRole("button", { name: "Delete report.pdf" }).click();
    await row.waitFor({ state: "detached" });
    expect(await docsOf("invoice").list()).toEqual([]);
    const history = await sub().workflowitem("invoice").history({ order: "desc", limit: 5 });
    expect(history.items.map((e) => e.type)).toContain("workflowitem.document_deleted");
  });

  it("documents: an external link (a bad one refused at its field); a file over the limit refused naming it, nothing stored", async () => {
    const panel = await openItem(page, "other");
    await panel.getByRole("tab", { name: "Documents" }).click();
    const link = panel.getByRole("form", { name: "Add a link" });
    await link.getByLabel("Link name").fill("Tender notice");
    await link.getByLabel("Link", { exact: true }).fill("ftp://example.org/notice");
    await link.getByRole("button", { name: "Add link" }).click();
    await link.locator(".field-error[data-field=link]").waitFor();
    await link.getByLabel("Link", { exact: true }).fill("https://example.org/notice");
    await link.getByRole("button", { name: "Add link" }).click();
    await expect(panel.locator(".documents tr[data-id] a", { hasText: "Tender notice" }).getAttribute("href")).resolves.toBe("https://example.org/notice");

    const form = panel.getByRole("form", { name: "Upload a document" });
    await form.getByLabel("File").setInputFiles({ name: "huge.bin", mimeType: "application/octet-stream", buffer: Buffer.alloc(MAX_DOCUMENT + 1024, 7) });
    await form.getByRole("button", { name: "Upload" }).click();
    await expect(form.getByRole("alert").textContent()).resolves.toContain(String(MAX_DOCUMENT));
    expect((await docsOf("other").list()).map((d) => d.fileName)).toEqual(["Tender notice"]);
  });

  it("documents of a closed workflowitem are read-only: listed and downloadable, no upload, no delete", async () => {
    const panel = await openItem(page, "done");
    await panel.getByRole("tab", { name: "Documents" }).click();
    await panel.getByText("The workflowitem is closed: its documents are read-only.").waitFor();
    const [download] = await Promise.all([page.waitForEvent("download"), panel.getByRole("button", { name: "Download final.txt" }).click()]);
    expect(readFileSync((await download.path())!, "utf8")).toBe("the final report");
    expect(await panel.getByRole("form", { name: "Upload a document" }).count()).toBe(0);
    expect(await panel.getByRole("form", { name: "Add a link" }).count()).toBe(0);
    expect(await panel.getByRole("button", { name: "Delete final.txt" }).count()).toBe(0);
  });

  it("offers the actions the server's allowedIntents allow, per workflowitem", async () => {
    await server.root.users.create({ id: "vic", displayName: "Vic", password: "vic password 123" });
    await server.root.project(P).grant("project.viewDetails", "vic");
    await sub().grant("subproject.viewDetails", "vic");
    for (const w of ["invoice", "other"]) await sub().workflowitem(w).grant("workflowitem.viewDetails", "vic");
    await sub().workflowitem("invoice").grant("workflowitem.update", "vic");
    const vicClient = server.client();
    await vicClient.login("vic", "vic password 123");
    const allowed = async (w: string) => ((await vicClient.project(P).subproject(S).workflowitem(w).get()) as { allowedIntents?: string[] }).allowedIntents ?? [];
    expect(await allowed("invoice")).toEqual(expect.arrayContaining(["workflowitem.viewDetails", "workflowitem.update"]));
    expect(await allowed("other")).not.toContain("workflowitem.update");

    const vic = await loggedIn(browser, server.base, "vic", "vic password 123");
    try {
      let panel = await openItem(vic.page, "invoice");
      await panel.getByRole("button", { name: "Edit", exact: true }).waitFor();
      expect(await panel.getByLabel("Assign to").count()).toBe(0);
      await panel.getByRole("tab", { name: "Documents" }).click();
      await panel.getByRole("form", { name: "Upload a document" }).waitFor();

      panel = await openItem(vic.page, "other");
      await panel.getByRole("tab", { name: "Documents" }).click();
      // Listed (viewDetails), but neither added to nor deleted from without workflowitem.update.
      await panel.locator(".documents tr[data-id]", { hasText: "Tender notice" }).waitFor();
      expect(await panel.getByRole("button", { name: /^Delete / }).count()).toBe(0);
      expect(await panel.getByRole("form", { name: "Upload a document" }).count()).toBe(0);
      expect(await panel.getByRole("form", { name: "Add a link" }).count()).toBe(0);
      expect(await panel.getByRole("button", { name: "Edit", exact: true }).count()).toBe(0);
      expect(await panel.getByLabel("Assign to").count()).toBe(0);
    } finally {
      await vic.context.close();
    }
  });

  it("formats amounts for the reader's locale, without rounding", async () => {
    const de = new Intl.NumberFormat("de-DE", { minimumFractionDigits: 1, maximumFractionDigits: 1 }).format(1234567.5);
    expect(de).toBe("1.234.567,5");
    await page.goto(`${server.base}/#/projects/${P}/subprojects/${S}`);
    await page.locator('.wi[data-id="invoice"] .amount', { hasText: "1,234,567.5 EUR" }).waitFor();

    const reader = await loggedIn(browser, server.base, "root", ROOT_PASSWORD, { locale: "de-DE" });
    try {
      await reader.page.locator(`tr[data-id="${P}"]`, { hasText: "250.000,00 BRL" }).waitFor();
      await reader.page.goto(`${server.base}/#/projects/${P}/subprojects/${S}`);
      await expect(reader.page.locator('.wi[data-id="invoice"] .amount').textContent()).resolves.toBe(`${de} EUR`);
      const panel = await openItem(reader.page, "invoice");
      await expect(panel.locator(".facts .amount").textContent()).resolves.toBe(`${de} EUR`);
    } finally {
      await reader.context.close();
    }
  });

  it("notifications: the unread badge follows the change feed live; the inbox lists them, marks one or all read", async () => {
    await server.root.users.create({ id: "nina", displayName: "Nina", password: "nina password 123" });
    const nina = await loggedIn(browser, server.base, "nina", "nina password 123");
    try {
      const pg = nina.page;
      await pg.locator(".feed.live").waitFor();
      expect(await pg.locator(".inbox .unread").count()).toBe(0);

      // Assigning grants no intent (issue 29, finding 3): root lets nina see both items first, as TruBudget's
      // assign dialog grants the view. Grants notify no one.
      for (const w of ["invoice", "other"]) {
        for (const intent of ["workflowitem.list", "workflowitem.viewDetails", "workflowitem.viewHistory"]) await sub().workflowitem(w).grant(intent, "nina");
      }
      // Root's changes to what nina is assigned reach her badge without a reload.
      await sub().workflowitem("invoice").assign("nina");
      await pg.locator(".inbox .unread[data-count='1']").waitFor();
      await sub()
        .workflowitem("invoice")
        .update({ description: "Scanned and signed" } as never);
      await pg.locator(".inbox .unread[data-count='2']").waitFor();

      await pg.getByRole("link", { name: /^Notifications/ }).click();
      await pg.getByRole("heading", { name: "Notifications" }).waitFor();
      const rows = pg.locator("tr[data-id]");
      await expect.poll(() => rows.count()).toBe(2);
      await expect(rows.first().locator(".what").textContent()).resolves.toBe("updated by root");
      await expect(rows.nth(1).locator(".what").textContent()).resolves.toBe("assigned by root");

      // A new one appears in the open inbox, live, newest first.
      await sub().workflowitem("other").assign("nina");
      await expect.poll(() => rows.count()).toBe(3);
      await pg.locator(".inbox .unread[data-count='3']").waitFor();
      await expect(rows.first().textContent()).resolves.toContain("Item other");

      await rows.first().getByRole("button", { name: "Mark read: Item other" }).click();
      await pg.locator(".inbox .unread[data-count='2']").waitFor();
      await rows.first().getByText("read", { exact: true }).waitFor();
      expect((await server.client(await tokenOf(pg)).notifications.count()).unread).toBe(2);

      await pg.getByRole("button", { name: "Mark all read" }).click();
      await pg.locator(".inbox .unread").waitFor({ state: "detached" });
      expect(await server.client(await tokenOf(pg)).notifications.count()).toEqual({ unread: 0, total: 3 });

      // A notification leads to its resource.
      await rows.nth(1).getByRole("link", { name: "Item invoice" }).click();
      await pg.getByRole("complementary", { name: "Workflowitem" }).locator(".resource-head").waitFor();
      expect(pg.url()).toContain(itemUrl("invoice").slice(1));
    } finally {
      await nina.context.close();
    }
  });

  it("the unread badge is counted at login, without the change feed; one's own password changed ends the session", async () => {
    await server.root.users.create({ id: "pia", displayName: "Pia", password: "pia password 123" });
    await sub().workflowitem("invoice").assign("pia");
    await expect.poll(async () => (await server.client((await server.client().login("pia", "pia password 123")).token).notifications.count()).unread).toBe(1);
    const pia = await loggedIn(browser, server.base, "pia", "pia password 123", { blockEvents: true });
    try {
      const pg = pia.page;
      await pg.locator(".inbox .unread[data-count='1']").waitFor();
      expect(await pg.locator(".feed.live").count()).toBe(0);

      await pg.getByRole("link", { name: "pia", exact: true }).click();
      const form = pg.getByRole("form", { name: "Change my password" });
      await form.getByLabel("Current password").fill("not my password");
      await form.getByLabel("New password").fill("pia changed 789");
      await form.getByRole("button", { name: "Change password" }).click();
      await form.locator(".field-error[data-field=currentPassword]").waitFor();
      await form.getByLabel("Current password").fill("pia password 123");
      await form.getByRole("button", { name: "Change password" }).click();
      await pg.getByRole("form", { name: "Log in" }).waitFor();
      await expect(server.client().login("pia", "pia password 123")).rejects.toMatchObject({ status: 401 });
      await pg.fill("input[name=username]", "pia");
      await pg.fill("input[name=password]", "pia changed 789");
      await pg.click("button[type=submit]");
      // Logged in again, on the page the session ended on.
      await pg.getByRole("heading", { name: "pia", exact: true }).waitFor();
    } finally {
      await pia.context.close();
    }
  });

  it("user administration: create, disable refused while assigned (409 shown) then forced, enable, reset password, grant all global intents", async () => {
    await page.goto(`${server.base}/#/projects`);
    await page.getByRole("link", { name: "Users", exact: true }).click();
    await page.getByRole("heading", { name: "Users" }).waitFor();
    await page.getByRole("button", { name: "New user" }).click();
    const form = page.getByRole("form", { name: "New user" });
    await form.getByLabel("User id").fill("olga");
    await form.getByLabel("Name").fill("Olga");
    await form.getByLabel("Organization (optional)").fill("KfW");
    await form.getByLabel("Password").fill("short");
    await form.getByRole("button", { name: "Create user" }).click();
    await form.locator(".field-error[data-field=password]").waitFor();
    await form.getByLabel("Password").fill("olga password 123");
    await form.getByRole("button", { name: "Create user" }).click();
    const panel = page.getByRole("complementary", { name: "User" });
    await panel.locator(".user-state", { hasText: "enabled" }).waitFor();
    await page.locator("tr[data-id=olga]", { hasText: "KfW" }).waitFor();

    await sub().workflowitem("other").assign("olga");
    await page.reload();
    await panel.getByRole("link", { name: "Item other" }).waitFor();
    await panel.getByRole("button", { name: "Disable", exact: true }).click();
    const refused = panel.getByRole("alert");
    await expect(refused.textContent()).resolves.toContain(`workflowitem ${P}/${S}/other`);
    expect((await server.root.users.get("olga")).enabled).toBe(true);
    await refused.getByRole("button", { name: "Disable anyway" }).click();
    await panel.locator(".user-state", { hasText: "disabled" }).waitFor();
    expect((await server.root.users.get("olga")).enabled).toBe(false);
    await panel.getByRole("button", { name: "Enable" }).click();
    await panel.locator(".user-state", { hasText: "enabled" }).waitFor();
    expect((await server.root.users.get("olga")).enabled).toBe(true);

    const reset = panel.getByRole("form", { name: "Reset password" });
    await reset.getByLabel("New password").fill("olga renewed 456");
    await reset.getByRole("button", { name: "Reset password" }).click();
    await panel.getByRole("status").filter({ hasText: "password of olga is reset" }).waitFor();
    await expect(server.client().login("olga", "olga password 123")).rejects.toMatchObject({ status: 401 });
    await server.client().login("olga", "olga renewed 456");

    await panel.getByRole("button", { name: "Grant all global intents" }).click();
    await panel
      .getByRole("status")
      .filter({ hasText: /Granted \d+ global intents to olga/ })
      .waitFor();
    const perms = await server.root.globalPermissions.list();
    const intents = Object.keys(perms);
    expect(intents.length).toBeGreaterThan(3);
    for (const intent of intents) expect(perms[intent]).toContain("olga");
  });

  it("group administration: create a group, add and remove members, an unknown user refused", async () => {
    await page.getByRole("link", { name: "Groups", exact: true }).click();
    await page.getByRole("heading", { name: "Groups" }).waitFor();
    await page.getByRole("button", { name: "New group" }).click();
    const form = page.getByRole("form", { name: "New group" });
    await form.getByLabel("Group id").fill("auditors");
    await form.getByLabel("Name").fill("Auditors");
    await form.getByRole("button", { name: "Create group" }).click();
    const panel = page.getByRole("complementary", { name: "Group" });
    await panel.getByText("No members.").waitFor();

    const add = panel.getByRole("form", { name: "Add member" });
    await add.getByLabel("User").selectOption("olga");
    await add.getByRole("button", { name: "Add member" }).click();
    await panel.locator("li[data-member=olga]").waitFor();
    await page.locator("tr[data-id=auditors] td.num", { hasText: "1" }).waitFor();
    expect((await server.root.groups.get("auditors")).members).toEqual(["olga"]);

    // Members are picked among the users by name: no unknown id to type; none picked is said at the field.
    expect(await add.getByLabel("User").locator("option").allTextContents()).toContain("Olga (olga)");
    expect(await add.getByLabel("User").locator("option[value='nobody-here']").count()).toBe(0);
    await add.getByLabel("User").selectOption("");
    await add.getByRole("button", { name: "Add member" }).click();
    await expect(add.locator(".field-error[data-field=userId]").textContent()).resolves.toBe("User is required");
    expect((await server.root.groups.get("auditors")).members).toEqual(["olga"]);

    await panel.getByRole("button", { name: "Remove olga" }).click();
    await panel.locator("li[data-member=olga]").waitFor({ state: "detached" });
    expect((await server.root.groups.get("auditors")).members).toEqual([]);
  });
});

/** The access token of the explorer's session in `pg`. */
async function tokenOf(pg: Page): Promise<string> {
  return pg.evaluate(() => JSON.parse((globalThis as unknown as { sessionStorage: { getItem(k: string): string } }).sessionStorage.getItem("flowstore.session")).token as string);
}
