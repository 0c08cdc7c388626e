/**
 * What the e2e suites share: Debian's Chromium driven by playwright-core, and a page logged in to the
 * explorer as a given user (optionally with the change feed blocked, or in a given locale).
 */
import { existsSync } from "node:fs";
import type { Browser, BrowserContext, Page } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";
export const hasChromium = existsSync(CHROMIUM);
if (!hasChromium && process.env.CI) throw new Error(`${CHROMIUM} is missing: the e2e suite needs Debian's chromium (apt-get install -y chromium)`);

export const LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

export interface PageOptions {
  /** Abort the change feed's requests: the page keeps what it loaded. */
  readonly blockEvents?: boolean;
  /** The browser's locale (navigator.language); default en-US. */
  readonly locale?: string;
}

/** A new browser context and page, logged in to the explorer at `base` as `user`. */
export async function loggedIn(browser: Browser, base: string, user: string, password: string, options: PageOptions = {}): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, locale: options.locale ?? "en-US" });
  if (options.blockEvents) await context.route("**/api/v1/events", (r) => r.abort());
  const page = await context.newPage();
  await page.goto(`${base}/`);
  await page.fill("input[name=username]", user);
  await page.fill("input[name=password]", password);
  await page.click("button[type=submit]");
  await page.getByRole("heading", { name: "Projects" }).waitFor();
  return { context, page };
}
