/**
 * What the e2e suites share: a real server on 127.0.0.1 over LMDB in a temp directory serving the
 * bundle built by esbuild, Debian's Chromium driven by playwright-core, and a page logged in to the
 * explorer as a given user (optionally with the change feed blocked, or in a given locale).
 */
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { buildWeb } from "../../web/build.js";
import { startServer, type Running, type StartOptions } from "../http/harness.js";
import { makeTempDirSync, removeTempDirSync } from "../support/temp-dir.js";

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

export interface Explorer {
  readonly dir: string;
  readonly kv: LmdbKv;
  readonly server: Running;
  readonly browser: Browser;
  close(): Promise<void>;
}

/** Builds the bundle, serves it beside the API over fresh LMDB files, and launches Chromium. */
export async function startExplorer(options: StartOptions = {}): Promise<Explorer> {
  const dir = makeTempDirSync("e2e");
  let kv: LmdbKv | undefined;
  let server: Running | undefined;
  let browser: Browser | undefined;
  const close = async () => {
    await browser?.close();
    // This process's own fetch() keeps idle keep-alive connections that app.close() would otherwise wait
    // out (up to Fastify's 72 s keep-alive timeout, seen here): the browser is gone, drop them.
    server?.app.server.closeAllConnections();
    await server?.close();
    await kv?.close();
    removeTempDirSync(dir);
  };
  try {
    const { outdir } = await buildWeb(join(dir, "web"));
    // Real LMDB files; commits not flushed to disk, which these suites do not test.
    kv = LmdbKv.open(join(dir, "data"), { durable: false });
    server = await startServer(kv, { webRoot: outdir, ...options });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS });
    return { dir, kv, server, browser, close };
  } catch (e) {
    await close();
    throw e;
  }
}

/** The page's document, inside page.evaluate (this file is type-checked without the DOM lib). */
declare const document: { documentElement: { scrollWidth: number; clientWidth: number } };

/** axe-core's engine, read once: run in the page through the DevTools protocol (the page's CSP allows no inline script). */
let axeSource: string | undefined;

export interface AxeViolation {
  readonly id: string;
  readonly impact: string | null;
  readonly help: string;
  readonly targets: string[];
}

/** The WCAG 2.x A/AA violations axe-core finds on the page as it is now. */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  axeSource ??= readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
  const loaded = await page.evaluate("typeof window.axe === 'object'");
  if (!loaded) await page.evaluate(`${axeSource}\n;0`);
  return page.evaluate(async () => {
    const axe = (globalThis as any).axe;
    const result = await axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] } });
    return result.violations.map((v: any) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n: any) => n.target.join(" ")) }));
  });
}

/** How far the page is wider than its viewport (0 when nothing scrolls sideways). */
export function overflowX(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
}
