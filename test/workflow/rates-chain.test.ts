/**
 * The exchange rates' record chain (workflow/rates.ts, kv/record-chain.ts), on LMDB: every write and
 * import of rates is chained and `verify` covers it; a rate edited in the store itself (past the chain)
 * fails `verify`, which names the rates' partition and the key; rates written before the chain are
 * adopted when the store opens; a write or import puts only the rates that are new or changed, so the
 * same file imported again writes nothing and appends no chain event.
 */
import { expect, it } from "vitest";
import { SYSTEM } from "../../src/access/actor.js";
import { openFlowstore, type Flowstore } from "../../src/compose/index.js";
import type { KvStore, Partition } from "../../src/kv/contract.js";
import { CHAIN, recordEvents, type RecordChainResult, type RecordEvent } from "../../src/kv/record-chain.js";
import { encode } from "../../src/kv/tuple.js";
import { ExchangeRates, RATES_LAYOUT } from "../../src/workflow/rates.js";
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

/** The rates' chain: its length (the head's seq) and its last event. */
async function chainOf(store: Flowstore): Promise<{ seq: number; last: RecordEvent }> {
  const head = JSON.parse((await store.kv.get(RATES_LAYOUT.partition, CHAIN.pack(["head"])))!.value.toString()) as { seq: number };
  const last = JSON.parse((await store.kv.get(RATES_LAYOUT.partition, CHAIN.sub("log").pack([head.seq])))!.value.toString()) as RecordEvent;
  return { seq: head.seq, last };
}

it("an import puts only new or changed rates: the same CSV again writes 0 and appends no chain event; one rate changed writes 1", async () => {
  const store = await openFlowstore(`lmdb:${dir()}`, {});
  try {
    const csv = "Date,USD,JPY,\n2025-01-03,1.0299,161.92,\n2025-01-02,1.0321,163.56,\n2025-01-01,N/A,163.10,\n";
    expect(await store.rates.importEcbCsv(SYSTEM, csv)).toBe(5);
    const first = await chainOf(store);
    expect(first.last.changes).toHaveLength(5);
    const version = (await store.rates.reader()).version;

    expect(await store.rates.importEcbCsv(SYSTEM, csv)).toBe(0);
    expect((await chainOf(store)).seq).toBe(first.seq);
    // Nothing committed: the rates' version (what analytics caches are keyed by) did not move either.
    expect((await store.rates.reader()).version).toBe(version);

    // One rate changed and one day added: exactly those two are written, and the event names them.
    const changed = csv.replace("2025-01-02,1.0321", "2025-01-02,1.0330");
    expect(await store.rates.importEcbCsv(SYSTEM, changed)).toBe(1);
    const second = await chainOf(store);
    expect(second.seq).toBe(first.seq + 1);
    expect(second.last.changes.map(([k]) => k)).toEqual([encode(RATES_LAYOUT.rate("EUR", "USD", "2025-01-02")).toString("base64")]);
    expect(await store.rates.importEcbCsv(SYSTEM, `${changed}2025-01-06,1.0400,162.00,\n`)).toBe(2);
    expect((await chainOf(store)).last.changes).toHaveLength(2);

    // A pair and day given twice counts once, at its last rate; the same rate through put writes 0.
    expect(
      await store.rates.put(SYSTEM, [
        { from: "EUR", to: "USD", date: "2025-01-03", rate: "1.5" },
        { from: "EUR", to: "USD", date: "2025-01-03", rate: "1.0299" },
      ]),
    ).toBe(0);
    expect(await store.rates.put(SYSTEM, [{ from: "EUR", to: "USD", date: "2025-01-03", rate: "1.0300" }])).toBe(1);
    expect((await store.rates.list("EUR", "USD", { since: "2025-01-02", until: "2025-01-03" })).map((r) => r.rate)).toEqual(["1.0330", "1.0300"]);
    expect(await verify(store)).toEqual({ ok: true, rates: [{ ok: true, checked: first.seq + 3 }] });
  } finally {
    await store.close();
  }
});

it("a write whose compared rates change before its commit (another writer) compares again: its rate is written, not lost as unchanged", async () => {
  const store = await openFlowstore(`lmdb:${dir()}`, {});
  try {
    const x = { from: "EUR", to: "USD", date: "2025-01-02", rate: "1.0" } as const;
    await store.rates.put(SYSTEM, [x]);
    // The real store, with another writer's commit of x (at 2.0) landing between this writer's read and its commit.
    const kv = store.kv;
    let other = false;
    const racing: KvStore = {
      backend: kv.backend,
      get: (p, k) => kv.get(p, k),
      getMany: (p, keys) => kv.getMany(p, keys),
      scan: (p, o) => kv.scan(p, o),
      async commit(p, ops) {
        if (!other) {
          other = true;
          await store.rates.put(SYSTEM, [{ ...x, rate: "2.0" }]);
        }
        return kv.commit(p, ops);
      },
      listPartitions: (kind, o) => kv.listPartitions(kind, o),
      dropPartition: (p) => kv.dropPartition(p),
      close: () => kv.close(),
    };
    const writer = new ExchangeRates(racing, store.global);
    // x as stored when read (1.0: not to be written) and a new rate; x is 2.0 by the commit: compared again, both are written.
    expect(await writer.put(SYSTEM, [x, { ...x, date: "2025-01-03" }])).toBe(2);
    expect(other).toBe(true);
    expect((await store.rates.list("EUR", "USD")).map((r) => [r.date, r.rate])).toEqual([
      ["2025-01-02", "1.0"],
      ["2025-01-03", "1.0"],
    ]);
    expect((await verify(store)).ok).toBe(true);
  } finally {
    await store.close();
  }
});

it("a rates write is anchored in the ledger and the feed, where the transparency log takes it in; a tail cut back fails on the anchor", async () => {
  const store = await openFlowstore(`lmdb:${dir()}`, {});
  try {
    await store.rates.put(SYSTEM, [{ from: "EUR", to: "USD", date: "2025-01-02", rate: "1.0321" }]);
    await store.rates.put(SYSTEM, [{ from: "EUR", to: "USD", date: "2025-01-03", rate: "1.0299" }]);
    const p = RATES_LAYOUT.partition;
    const head = JSON.parse((await store.kv.get(p, CHAIN.pack(["head"])))!.value.toString("utf8")) as { seq: number; hash: string };
    expect(await store.resources.writer.readLedger(p)).toEqual(head);
    await store.log.tree.appendPending();
    const [event] = await recordEvents(store.kv, p, head.seq, head.seq);
    const index = await store.log.tree.indexOf(p, head.seq);
    expect(index).not.toBeNull();
    expect((await store.log.tree.leaf(index!)).hash).toBe(event!.hash);
    expect(await verify(store)).toEqual({ ok: true, rates: [{ ok: true, checked: 2 }] });
    // The chain's tail cut back with its rate (a consistent rewrite of the partition alone): the ledger names it.
    const [before] = await recordEvents(store.kv, p, head.seq - 1, head.seq - 1);
    await store.kv.commit(p, [
      { type: "delete", key: CHAIN.pack(["log", head.seq]) },
      { type: "delete", key: RATES_LAYOUT.rate("EUR", "USD", "2025-01-03") },
      { type: "put", key: CHAIN.pack(["head"]), value: Buffer.from(JSON.stringify({ seq: before!.seq, hash: before!.hash })) },
    ]);
    const bad = await verify(store);
    expect(bad.ok).toBe(false);
    expect(bad.rates[0]).toMatchObject({ ok: false, firstBad: { reason: expect.stringMatching(/its tail was cut/) } });
  } finally {
    await store.close();
  }
});
