/**
 * The explorer's Subscriptions page (issue 26, part 3) in Debian's Chromium against a real server on
 * 127.0.0.1 that delivers webhooks (the test server allows 127.0.0.1, where the receiver listens): create
 * a pull subscription and a webhook one through the form (the secret shown once), a refused internal URL
 * shown at its field, the lag of a subscription behind the feed, a failed delivery in the dead letters
 * and its replay to the example receiver (which checks the signature with the secret the page showed),
 * delete. No axe-core violation and no sideways scrolling at 390 and 1280 px; screenshots of both go to
 * test/e2e/screenshots/subscriptions-{390,1280}.png (gitignored).
 */
import { mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT_PASSWORD } from "../http/harness.js";
import { eventually } from "../support/eventually.js";
import { freePort } from "../support/ports.js";
import { startReceiver, type Receiver } from "../support/webhook-receiver.js";
import { axeViolations, hasChromium, loggedIn, overflowX, startExplorer, type Explorer } from "./browser.js";

const SHOTS = process.env.FLOWSTORE_SHOTS ?? resolve(dirname(fileURLToPath(import.meta.url)), "screenshots");

describe.skipIf(!hasChromium)("subscriptions in the explorer", () => {
  let explorer: Explorer | undefined;
  let receiver: Receiver | undefined;

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    explorer = await startExplorer({ subscriptions: { deliver: true, retryBaseMs: 20, maxAttempts: 2, intervalMs: 50, pollMs: 50, allow: ["127.0.0.1"] } });
    await explorer.server.root.projects.create({ id: "school", displayName: "School" });
  });
  afterAll(async () => {
    await receiver?.stop();
    await explorer?.close();
  });

  it("creates, shows lag and dead letters, replays one to the receiver, deletes; axe-clean at 390 and 1280 px", async () => {
    const { server } = explorer!;
    const { context, page } = await loggedIn(explorer!.browser, server.base, "root", ROOT_PASSWORD);
    try {
      await page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name: "Subscriptions" }).click();
      await page.getByRole("heading", { name: "Subscriptions", level: 1 }).waitFor();
      const form = page.getByRole("form", { name: "New subscription" });

      // A pull subscription of everything; the root's writes after it leave it behind the feed.
      await form.getByLabel("Name").fill("Everything");
      await form.getByRole("button", { name: "Create subscription" }).click();
      const everything = page.locator("ul.subscriptions > li", { has: page.getByRole("heading", { name: "Everything" }) });
      await everything.waitFor();
      expect(await everything.locator("dd.target").textContent()).toBe("to a program that pulls them");
      expect(await everything.locator("dd.filter").textContent()).toBe("every event");

      // An internal address is refused at its field, in words.
      await form.getByLabel("Name").fill("School's events");
      await form.getByLabel("Only under the project (its id, optional)").fill("school");
      await form.getByLabel("Only these kinds of event (optional)").fill("project.*");
      await form.getByLabel("Deliver to this webhook URL (optional)").fill("http://169.254.169.254/latest/meta-data/");
      await form.getByRole("button", { name: "Create subscription" }).click();
      expect(await form.locator('.field-error[data-field="webhook.url"]').textContent()).toContain("link-local");

      // Nothing listens yet at the webhook's port: deliveries fail into a dead letter.
      const port = await freePort();
      await form.getByLabel("Deliver to this webhook URL (optional)").fill(`http://127.0.0.1:${port}/hook`);
      await form.getByRole("button", { name: "Create subscription" }).click();
      const secret = (await page.locator(".notice.secret code").textContent())!;
      expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const school = page.locator("ul.subscriptions > li", { has: page.getByRole("heading", { name: "School's events" }) });
      expect(await school.locator("dd.filter").textContent()).toBe("every project event under project school");

      await server.root.project("school").update({ description: "a new roof" });
      await eventually(
        async () => {
          await page.reload();
          await school.waitFor();
          return (await school.locator(".dead-letters li").count()) > 0;
        },
        { what: "the dead letter shown", timeoutMs: 60_000, intervalMs: 250 },
      );
      expect(await school.locator(".dead-letters li").first().textContent()).toContain("after 2 attempts");
      expect(await everything.locator(".lag").textContent()).toMatch(/^[1-9]\d* behind$/);

      for (const width of [390, 1280]) {
        await page.setViewportSize({ width, height: 860 });
        expect(await axeViolations(page), `axe at ${width}`).toEqual([]);
        expect(await overflowX(page), `overflow at ${width}`).toBe(0);
        await page.screenshot({ path: join(SHOTS, `subscriptions-${width}.png`), fullPage: true });
      }

      // The receiver comes up with the secret the page showed; the replay reaches it, signed.
      receiver = await startReceiver({ secret, port, dir: explorer!.dir });
      await school.getByRole("button", { name: "Replay dead letter 1 of School's events" }).click();
      await page.getByText("Dead letter 1 was delivered and removed.").waitFor();
      expect(receiver.events().map((d) => d.event.type)).toContain("project.updated");
      // The notice comes before the page has read the dead letters again: the list empties once it has.
      await expect.poll(() => school.locator(".dead-letters li").count()).toBe(0);

      // Delete, confirmed in the browser's dialog.
      page.once("dialog", (d) => void d.accept());
      await everything.getByRole("button", { name: "Delete subscription Everything" }).click();
      await everything.waitFor({ state: "detached" });
      expect((await server.root.subscriptions.list()).map((s) => s.name)).toEqual(["School's events"]);
    } finally {
      await context.close();
    }
  });
});
