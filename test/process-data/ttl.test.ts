import { SYSTEM } from "../../src/access/actor.js";
import { afterEach, beforeEach, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { NotFoundError } from "../../src/errors.js";
import { keys } from "../../src/process-data/keys.js";
import type { ProcessData } from "../../src/process-data/service.js";
import { forEachBackend, type BackendHandle } from "../conformance/backends.js";
import { collect, fixedClock, formioForm, rawDump, service, type Clock } from "./helpers.js";

const FS = "bpm-form-submissions";
const HOUR = 3_600_000;

forEachBackend((backend) => {
  let h: BackendHandle;
  let pd: ProcessData;
  let clock: Clock;
  beforeEach(async () => {
    h = await backend.create();
    clock = fixedClock();
    pd = await service(h.kv, clock);
  });
  afterEach(async () => {
    await h.destroy();
  });

  it("hides an expired record from get and list at once, and the sweep reclaims its storage", async () => {
    const pid = randomUUID();
    const short = keys.task(pid, "short");
    const long = keys.task(pid, "long");
    const forever = keys.batchSignature(pid, 0);
    const r = await pd.put(SYSTEM, FS, short, { data: 1 }, { ttlMs: 1000 });
    expect(r.expiresAt).toBe(clock.now + 1000);
    await pd.put(SYSTEM, FS, long, { data: 2 }, { ttlMs: 3 * HOUR });
    await pd.put(SYSTEM, FS, forever, { data: 3 });
    const msg = await pd.createStartMessage(SYSTEM, "d", { data: {} }, { ttlMs: 500 });
    await pd.put(SYSTEM, "bpm-form-scripts", "s.js", { formScript: "x" }, { ttlMs: 2000 });

    clock.now += 999;
    expect((await pd.get(SYSTEM, FS, short)).fields.data).toBe(1);
    clock.now += 1;
    // Expired: gone from reads before any sweep ran.
    await expect(pd.get(SYSTEM, FS, short)).rejects.toBeInstanceOf(NotFoundError);
    await expect(pd.get(SYSTEM, "bpm-message-payloads", msg.key)).rejects.toBeInstanceOf(NotFoundError);
    expect((await collect((c) => pd.list(SYSTEM, FS, { cursor: c, limit: 1 }))).items.map((i) => i.key).sort()).toEqual([forever, long].sort());
    expect((await pd.listByProcessInstance(SYSTEM, pid)).items.map((i) => i.key).sort()).toEqual([forever, long].sort());
    expect((await pd.list(SYSTEM, "bpm-message-payloads")).items).toEqual([]);
    expect(await pd.delete(SYSTEM, FS, short)).toBe(false);
    expect((await pd.get(SYSTEM, "bpm-form-scripts", "s.js")).fields).toMatchObject({ formScript: "x" });

    // The sweep at `now` removes what expired (short was deleted above: a stale entry), nothing else.
    const swept = await pd.sweepExpired();
    expect(swept).toEqual({ removed: 1, entries: 2, more: false });
    const raw = await rawDump(h.kv);
    const rawKeys = raw.map((e) => JSON.stringify(e.entry.key));
    expect(rawKeys.some((k) => k.includes(msg.key))).toBe(false);
    expect(rawKeys.some((k) => k.includes(short))).toBe(false);
    expect(rawKeys.some((k) => k.includes(long))).toBe(true);

    // Far in the future: everything with a TTL is reclaimed, the expiry index is empty and dropped.
    clock.now += 10 * HOUR;
    expect(await pd.sweepExpired()).toEqual({ removed: 2, entries: 2, more: false });
    const left = await rawDump(h.kv);
    expect(left.filter((e) => e.partition[0] === "pd-expiry")).toEqual([]);
    expect(left.map((e) => e.entry.key[0]).sort()).toEqual([forever, forever].sort()); // record + its pointer
    expect((await h.kv.listPartitions("pd-expiry")).partitions).toEqual([]);
  });

  it("a rewrite without TTL keeps the record past its old expiry; a rewrite with a new TTL moves it", async () => {
    const pid = randomUUID();
    const k = keys.task(pid, "t");
    await pd.put(SYSTEM, FS, k, { data: 1 }, { ttlMs: 1000 });
    await pd.put(SYSTEM, FS, k, { data: 2 });
    const j = keys.task(pid, "j");
    await pd.put(SYSTEM, FS, j, { data: 1 }, { ttlMs: 1000 });
    await pd.put(SYSTEM, FS, j, { data: 2 }, { ttlMs: 5000 });
    clock.now += 2000;
    expect((await pd.get(SYSTEM, FS, k)).fields.data).toBe(2);
    expect((await pd.get(SYSTEM, FS, j)).fields.data).toBe(2);
    expect(await pd.sweepExpired()).toEqual({ removed: 0, entries: 2, more: false });
    expect((await pd.get(SYSTEM, FS, k)).fields.data).toBe(2);
    clock.now += 3000;
    await expect(pd.get(SYSTEM, FS, j)).rejects.toBeInstanceOf(NotFoundError);
    expect(await pd.sweepExpired()).toEqual({ removed: 1, entries: 1, more: false });
    expect((await pd.list(SYSTEM, FS)).items.map((i) => i.key)).toEqual([k]);
  });

  it("sweeps in bounded steps", async () => {
    for (let i = 0; i < 25; i++) await pd.createFormSchema(SYSTEM, { formData: formioForm(`f${i}`) }, { ttlMs: 10 + i });
    clock.now += HOUR;
    let removed = 0;
    let calls = 0;
    for (;;) {
      const r = await pd.sweepExpired(clock.now, { limit: 10 });
      removed += r.removed;
      calls++;
      expect(r.entries).toBeLessThanOrEqual(10);
      if (!r.more) break;
    }
    expect(removed).toBe(25);
    expect(calls).toBeGreaterThanOrEqual(3);
    expect((await pd.list(SYSTEM, "bpm-form-schemas")).items).toEqual([]);
  });
});
