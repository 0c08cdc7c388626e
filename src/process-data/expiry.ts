/**
 * The expiry index: a record written with a TTL gets an entry `[expiresAt, keyspace, key]` in the
 * partition `["pd-expiry", hourStart]` of its expiry hour, written before the record itself (a crash in
 * between leaves a stale entry, never an immortal record). Reads check expiry themselves, so an expired
 * record is gone at once; the sweep only reclaims storage.
 *
 * The sweep walks the hour partitions in order up to `now`, hands every due entry to `reclaim` (which
 * deletes the record if it still carries that expiry), deletes the entries it handled, and drops an hour
 * partition once it is empty and its hour ended more than an hour ago (the grace covers writers whose
 * clock is a little behind). Work per call is bounded by `limit` entries.
 */
import { allPartitions, type KvStore, type Op, type Partition } from "../kv/contract.js";
import type { Keyspace } from "./keys.js";
import { layout } from "./layout.js";

const HOUR = 3_600_000;

export function expiryPartition(expiresAt: number): Partition {
  return layout.expiry(Math.floor(expiresAt / HOUR) * HOUR);
}

export function expiryEntry(expiresAt: number, keyspace: Keyspace, key: string): Op {
  return { type: "put", key: layout.expiryEntry(expiresAt, keyspace, key), value: new Uint8Array(0) };
}

export interface SweepResult {
  /** Records deleted because they had expired. */
  removed: number;
  /** Expiry entries handled (a record rewritten or deleted since leaves a stale entry). */
  entries: number;
  /** True when the limit stopped the sweep before it reached `now`: call again. */
  more: boolean;
}

export async function sweepExpiryIndex(
  kv: KvStore,
  now: number,
  limit: number,
  reclaim: (keyspace: Keyspace, key: string, expiresAt: number) => Promise<boolean>,
): Promise<SweepResult> {
  let removed = 0;
  let entries = 0;
  for await (const partition of allPartitions(kv, layout.expiryKind)) {
    const hourStart = layout.hourOfExpiry(partition);
    if (hourStart > now) break;
    for (;;) {
      if (entries >= limit) return { removed, entries, more: true };
      const page = await kv.scan(partition, { end: layout.expiryDue(now), limit: Math.min(500, limit - entries) });
      if (page.entries.length === 0) break;
      const done: Op[] = [];
      for (const entry of page.entries) {
        const [expiresAt, keyspace, key] = layout.entryOfExpiry(entry.key);
        if (await reclaim(keyspace, key, expiresAt)) removed++;
        done.push({ type: "delete", key: entry.key });
      }
      await kv.commit(partition, done);
      entries += page.entries.length;
    }
    if (hourStart + 2 * HOUR <= now) {
      const rest = await kv.scan(partition, { limit: 1 });
      if (rest.entries.length === 0) await kv.dropPartition(partition);
    }
  }
  return { removed, entries, more: false };
}
