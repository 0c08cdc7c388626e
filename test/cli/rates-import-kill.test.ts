/**
 * An ECB import (`flowstore rates import-ecb`) SIGKILLed on LMDB: the import is one commit
 * (workflow/rates.ts), so the store holds all of the file's rates or none of them, never a prefix; the
 * rates' record chain still verifies; and the import run again finishes whole. Killed at two points: as
 * it says it begins its commit, and as soon as another reader of the store sees any of the file's rates
 * (an import committed in pieces, as the old one in chunks of 2,000, is then half done: that kill leaves
 * its prefix, and this test fails on it).
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect, it } from "vitest";
import { SYSTEM } from "../../src/access/actor.js";
import { openFlowstore, type Flowstore } from "../../src/compose/index.js";
import { eventually, GiveUp } from "../support/eventually.js";
import { tempDir } from "../support/temp-dir.js";
import { run } from "./spawn.js";

const tmp = tempDir("rates-kill", "each");
/** 6,000 days of 30 currencies: 180,000 rates, about the ECB's whole history since 1999. */
const DAYS = 6_000;
const CURRENCIES = Array.from({ length: 30 }, (_, i) => `X${String.fromCharCode(65 + Math.floor(i / 26))}${String.fromCharCode(65 + (i % 26))}`);
const day = (i: number) => new Date(Date.UTC(2000, 0, 1 + i)).toISOString().slice(0, 10);

/** The file's first rate (its newest day, in the first chunk a chunked import commits) and its last, in `store`. */
async function probe(store: Flowstore): Promise<boolean[]> {
  const probes = [
    [CURRENCIES[0]!, day(DAYS - 1)],
    [CURRENCIES.at(-1)!, day(DAYS - 1)],
    [CURRENCIES[0]!, day(0)],
    [CURRENCIES.at(-1)!, day(0)],
  ] as const;
  return Promise.all(probes.map(async ([to, d]) => (await store.rates.list("EUR", to, { since: d, until: d })).length === 1));
}

for (const when of ["as it begins its commit", "once another reader sees any of its rates"] as const)
  it(`killed ${when}, an ECB import leaves all of its rates or none; verify passes; run again, it finishes`, async () => {
    const dir = tmp();
    const data = join(dir, "data");
    const seed = await openFlowstore(`lmdb:${data}`, {});
    await seed.rates.put(SYSTEM, [{ from: "EUR", to: "USD", date: "1999-01-04", rate: "1.1789" }]);
    await seed.close();
    // The ECB's layout: newest day first, so a prefix of the file is its latest days.
    const rows = Array.from({ length: DAYS }, (_, k) => DAYS - 1 - k).map((i) => `${day(i)},${CURRENCIES.map((_, c) => (1 + c + i / 10_000).toFixed(4)).join(",")}`);
    const csv = join(dir, "eurofxref-hist.csv");
    await writeFile(csv, `Date,${CURRENCIES.join(",")}\n${rows.join("\n")}\n`);
    const total = DAYS * CURRENCIES.length;

    const r = run(["rates", "import-ecb", csv, "--data", data]);
    let exited = false;
    void r.exit.then(() => (exited = true));
    await eventually(
      () => {
        if (r.err().includes(`importing ${total} rates`)) return true;
        if (exited) throw new GiveUp(`the import exited first: ${r.err()} ${r.out()}`);
        return false;
      },
      { what: "the import to parse the file and begin its commit", timeoutMs: 120_000, intervalMs: 5 },
    );
    if (when === "once another reader sees any of its rates") {
      const reader = await openFlowstore(`lmdb:${data}`, {});
      try {
        await eventually(async () => exited || (await probe(reader)).some(Boolean), { what: "any of the file's rates to be readable", timeoutMs: 300_000, intervalMs: 1 });
      } finally {
        r.child.kill("SIGKILL");
        await reader.close();
      }
    } else r.child.kill("SIGKILL");
    const { signal } = await r.exit;

    const store = await openFlowstore(`lmdb:${data}`, {});
    try {
      const present = await probe(store);
      // All or none: a killed commit never shows a prefix (which of the two depends on when the kill landed).
      expect(new Set(present).size, `after ${signal ?? "exit"}: ${JSON.stringify(present)}`).toBe(1);
      const verified = await store.verifyAll();
      expect(verified.ok).toBe(true);
      expect((await store.rates.list("EUR", "USD")).map((x) => x.rate)).toEqual(["1.1789"]);
    } finally {
      await store.close();
    }

    const again = run(["rates", "import-ecb", csv, "--data", data]);
    const done = await again.exit;
    expect(done.code, again.err()).toBe(0);
    expect(JSON.parse(again.out())).toEqual({ written: total });
    const after = await openFlowstore(`lmdb:${data}`, {});
    try {
      expect((await after.rates.list("EUR", CURRENCIES[0]!, { since: day(0), until: day(0) })).map((x) => x.rate)).toEqual(["1.0000"]);
      expect((await after.rates.list("EUR", CURRENCIES.at(-1)!, { last: true })).map((x) => x.date)).toEqual([day(DAYS - 1)]);
      expect((await after.verifyAll()).ok).toBe(true);
    } finally {
      await after.close();
    }
  });
