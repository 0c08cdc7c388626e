/**
 * The exchange rates' record chain (workflow/rates.ts, kv/record-chain.ts), on LMDB: every write and
 * import of rates is chained and `verify` covers it; a rate edited in the store itself (past the chain)
 * fails `verify`, which names the rates' partition and the key; rates written before the chain are
 * adopted when the store opens.
 */
import { expect, it } from "vitest";
import { SYSTEM } from "../../src/access/actor.js";
import { openFlowstore, type Flowstore } from "../../src/compose/index.js";
import type { Partition } from "../../src/kv/contract.js";
import type { RecordChainResult } from "../../src/kv/record-chain.js";
import { RATES_LAYOUT } from "../../src/workflow/rates.js";
import { tempDir } from "../support/temp-dir.js";

const dir = tempDir("rates-chain", "each");

/** verifyAll's answer and what it reported for the rates' partition. */
async function verify(store: Flowstore): Promise<{ ok: boolean; rates: RecordChainResult[] }> {
  const rates: RecordChainResult[] = [];
  const r = await store.verifyAll((p: Partition, result) => {
    if (p[0] === "rates") rates.push(result as RecordChainResult);
  });
  return { ok: r.ok, rates };
}

it("writes and imports of rates are chained and verify; a hand-edited rate fails verify, naming the rates' partition and the rate", async () => {
  const store = await openFlowstore(`lmdb:${dir()}`, {});
  try {
    await store.rates.put(SYSTEM, [{ from: "EUR", to: "USD", date: "2025-01-02", rate: "1.0321" }]);
    await store.rates.importEcbCsv(SYSTEM, "Date,USD,JPY\n2025-01-03,1.0299,163.2\n2025-01-02,1.0322,163.5\n");
    expect(await verify(store)).toEqual({ ok: true, rates: [{ ok: true, checked: 2 }] });

    // The rate of a day changed in the store itself, as an editor of the files would.
    const key = RATES_LAYOUT.rate("EUR", "USD", "2025-01-02");
    const stored = (await store.kv.get(RATES_LAYOUT.partition, key))!.value;
    await store.kv.commit(RATES_LAYOUT.partition, [{ type: "put", key, value: Buffer.from(JSON.stringify({ ...JSON.parse(stored.toString()), rate: "0.5" })) }]);
    const bad = await verify(store);
    expect(bad.ok).toBe(false);
    expect(bad.rates).toEqual([{ ok: false, checked: 2, firstBad: { seq: 0, reason: "a record differs from its chain", key: JSON.stringify(key) } }]);
    // The analytics would have converted at it: the edit is what verify exists to show.
    expect((await (await store.rates.reader()).at("EUR", "USD", "2025-01-02"))?.rate).toBe("0.5");

    // Put back as it was, the partition verifies again; a rate the chain never saw does not.
    await store.kv.commit(RATES_LAYOUT.partition, [{ type: "put", key, value: stored }]);
    expect((await verify(store)).ok).toBe(true);
    const forged = RATES_LAYOUT.rate("EUR", "GBP", "2025-01-02");
    await store.kv.commit(RATES_LAYOUT.partition, [{ type: "put", key: forged, value: Buffer.from(JSON.stringify({ rate: "0.8", by: "root", at: "2025-01-02T00:00:00Z" })) }]);
    expect((await verify(store)).rates).toEqual([{ ok: false, checked: 2, firstBad: { seq: 0, reason: "a record the chain does not hold", key: JSON.stringify(forged) } }]);
  } finally {
    await store.close();
  }
});

it("rates written before the chain are adopted when the store opens, and verify", async () => {
  const first = await openFlowstore(`lmdb:${dir()}`, {});
  // Written past the chain, as a store of the previous version wrote them (no chain in the partition).
  await first.kv.commit(RATES_LAYOUT.partition, [
    { type: "put", key: RATES_LAYOUT.rate("EUR", "USD", "2024-12-31"), value: Buffer.from(JSON.stringify({ rate: "1.0389", by: "root", at: "2025-01-01T00:00:00Z" })) },
  ]);
  expect((await verify(first)).ok).toBe(false);
  await first.close();
  const reopened = await openFlowstore(`lmdb:${dir()}`, {});
  try {
    expect(await verify(reopened)).toEqual({ ok: true, rates: [{ ok: true, checked: 1 }] });
    expect((await reopened.rates.list("EUR", "USD")).map((r) => r.rate)).toEqual(["1.0389"]);
  } finally {
    await reopened.close();
  }
});
