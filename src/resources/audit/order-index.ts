/**
 * The order index (layout's `x` family, ordering.ts) of partitions written before it existed, or of a
 * restored dump that does not carry it: rebuilt from the log, as the replay derives it (replay.ts), in
 * one commit through the partition's writer (guarded by the chain head like any write).
 *
 * A store written before the index existed is upgraded partition by partition with `rebuildOrderIndex`
 * (ResourceStore.rebuildOrderIndex); a restore always rebuilds it.
 */
import { allPartitions, scanAll, type Partition } from "../../kv/contract.js";
import { SYSTEM } from "../../access/actor.js";
import type { Core } from "../core/core.js";
import type { ResourceEvent } from "../model/events.js";
import { layout } from "../model/layout.js";
import { PartitionReplay } from "./replay.js";

/**
 * Rewrites a partition's order index, and its parents' sums (`g`, model/sums.ts: derived the same way,
 * and absent from partitions written before they existed), from its log. A log the replay refuses is
 * left alone (verify reports it).
 *
 * The log replayed is the one this command's group sees: the committed log (streamed from the store), then
 * the events the commands before it in its group appended, not committed yet (read through the Tx, from
 * the seq after the store's last on). Replaying the store's log alone would rewrite the index and sums
 * without what those commands contributed. The log is append-only (a group only adds keys past the head),
 * so the two parts are the whole of it.
 */
export async function rebuildOrderIndex(c: Core, partition: Partition): Promise<void> {
  await c.writer.run(partition, SYSTEM, async (tx) => {
    const replay = new PartitionReplay(c.schema, partition);
    try {
      let seq = 0;
      for await (const e of scanAll(c.kv, partition, { prefix: layout.logs, limit: 2000 })) {
        const event = JSON.parse(e.value.toString("utf8")) as ResourceEvent;
        replay.apply(event, e.value);
        seq = event.seq;
      }
      for (;;) {
        const bytes = await tx.get(layout.log(++seq));
        if (bytes === undefined) break;
        replay.apply(JSON.parse(bytes.toString("utf8")) as ResourceEvent, bytes);
      }
    } catch {
      return;
    }
    tx.deletePrefix(layout.orderIndexes);
    tx.deletePrefix(layout.allSums);
    for (const e of replay.entries()) if (e.key[0] === layout.orderIndexes[0] || e.key[0] === layout.allSums[0]) tx.put(e.key, e.value);
  });
}

/**
 * Gives every partition of the schema's owner types written before sums existed its sums (once per
 * store, owner type and version of the sums declarations: a marker records it; an import drops it,
 * compose/transfer.ts). Only schemas declaring sums have any. Idempotent.
 */
export async function buildSums(c: Core): Promise<number> {
  // Per owner type, the highest version of its types' sums declarations (sumsVersion): a marker of an older one (none: 1) is built again.
  const owners = new Map<string, number>();
  for (const t of c.schema.types.values()) if (t.decl.sums !== undefined) owners.set(t.owner, Math.max(owners.get(t.owner) ?? 1, t.decl.sumsVersion ?? 1));
  let n = 0;
  for (const [owner, version] of owners) {
    const marker = await c.kv.get(layout.sumsBuilt, layout.sumsBuiltEntry(owner));
    if (marker && ((JSON.parse(marker.value.toString("utf8")) as { version?: number }).version ?? 1) >= version) continue;
    for await (const p of allPartitions(c.kv, owner)) {
      if (!(await c.kv.get(p, layout.head))) continue;
      await rebuildOrderIndex(c, p);
      n++;
    }
    await c.kv.commit(layout.sumsBuilt, [
      { type: "put", key: layout.sumsBuiltEntry(owner), value: Buffer.from(JSON.stringify(version === 1 ? { built: true } : { built: true, version })) },
    ]);
  }
  return n;
}
