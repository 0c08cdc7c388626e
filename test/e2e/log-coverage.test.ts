/**
 * The explorer's transparency-log coverage (web/src/log-coverage.tsx, issue 27) in Debian's Chromium
 * against a real server over LMDB, whose log two witnesses cosign: a project's history says its latest
 * event is not covered while no cosigned checkpoint reaches it, then, once both witnesses cosigned, that
 * it is "covered by a checkpoint cosigned by 2 witnesses"; the inclusion proof shows on request (the
 * server's proof: leaf index, tree size, hashes) and hides again; the page has no axe-core violation
 * either way.
 */
import { createPublicKey } from "node:crypto";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryKv } from "../../src/kv/memory.js";
import { newKeyPem, parseVkey, privateKeyFromPem, rawPublicKey, SIG_COSIGNATURE_V1, vkey } from "../../src/tlog/note.js";
import { Witness } from "../../src/tlog/witness.js";
import { ROOT_PASSWORD, type Running } from "../http/harness.js";
import { axeViolations, hasChromium, loggedIn, startExplorer, type Explorer } from "./browser.js";

function signer(name: string) {
  const privateKey = privateKeyFromPem(newKeyPem());
  return { name, privateKey, vkey: vkey(name, SIG_COSIGNATURE_V1, rawPublicKey(createPublicKey(privateKey))) };
}

describe.skipIf(!hasChromium)("the explorer's transparency-log coverage", () => {
  const signers = [signer("witness.example/one"), signer("witness.example/two")];
  let explorer: Explorer | undefined;
  let server: Running;
  let browser: Browser;
  let page: Page;
  let witnesses: Witness[];

  beforeAll(async () => {
    // The log is appended by the test (appendPending), so it decides what the tree and the witnesses hold.
    explorer = await startExplorer({ logWitnesses: signers.map((s) => s.vkey) });
    ({ server, browser } = explorer);
    const logKey = parseVkey((await server.root.log.info()).vkey);
    witnesses = signers.map((s) => new Witness({ log: server.base, logKey, signer: s, state: new MemoryKv() }));
    await server.root.projects.create({ id: "roads", displayName: "Roads of Olinda" });
    await server.app.flowstore.log.tree.appendPending();
    // Cosigned before the next write: the project's latest event is in the log but not covered yet.
    for (const w of witnesses) expect(await w.step()).toMatchObject({ outcome: "cosigned", posted: true });
    await server.root.project("roads").update({ description: "Paving the old town" });
    await server.app.flowstore.log.tree.appendPending();
    ({ page } = await loggedIn(browser, server.base, "root", ROOT_PASSWORD));
  });

  afterAll(async () => {
    await explorer?.close();
  });

  /** The project's history, loaded afresh (by way of the project list: the coverage is read when it shows). */
  const openHistory = async (): Promise<void> => {
    await page.goto(`${server.base}/#/projects`);
    await page.locator("tr[data-id]").first().waitFor();
    await page.goto(`${server.base}/#/projects/roads`);
    await page.locator(".resource-head[data-level=project]").waitFor();
    await page.getByRole("tab", { name: "History" }).click();
    await page.locator(".log-coverage [role=status]").waitFor();
  };

  it("says whether the latest event is covered by a cosigned checkpoint, and by how many witnesses", async () => {
    await openHistory();
    const status = page.locator(".log-coverage [role=status]");
    expect(await status.getAttribute("data-covered")).toBe("no");
    expect(await status.textContent()).toMatch(/no cosigned checkpoint covers it yet \(cosigned up to \d+ leaves\)/);
    expect(await axeViolations(page)).toEqual([]);

    for (const w of witnesses) expect(await w.step()).toMatchObject({ outcome: "cosigned", posted: true });
    await openHistory();
    expect(await status.getAttribute("data-covered")).toBe("yes");
    expect(await status.getAttribute("data-witnesses")).toBe("2");
    expect(await status.textContent()).toMatch(/^The latest event \(leaf \d+ of the transparency log\) is covered by a checkpoint cosigned by 2 witnesses\.$/);
    expect(await axeViolations(page)).toEqual([]);
  });

  it("shows the inclusion proof on request, the server's, and hides it again", async () => {
    await openHistory();
    const button = page.getByRole("button", { name: "Show the inclusion proof" });
    expect(await button.getAttribute("aria-expanded")).toBe("false");
    await button.click();
    const shown = page.locator(".log-proof");
    await shown.waitFor();
    const proof = JSON.parse((await shown.textContent()) ?? "") as { index: number; size: number; proof: string[]; checkpoint: string };
    const history = await server.root.project("roads").history();
    const latest = Math.max(...history.items.map((e) => e.seq));
    expect(proof).toEqual(await server.root.log.inclusion({ kind: "project", id: "roads", seq: latest }));
    expect(await page.getByRole("button", { name: "Hide the inclusion proof" }).getAttribute("aria-expanded")).toBe("true");
    expect(await axeViolations(page)).toEqual([]);
    await page.getByRole("button", { name: "Hide the inclusion proof" }).click();
    expect(await shown.count()).toBe(0);
  });
});
