/**
 * The order index (layout's `x` family, ordering.ts) of partitions written before it existed, or of a
 * restored dump that does not carry it: rebuilt from the log, as the replay derives it (replay.ts), in
 * one commit through the partition's writer (guarded by the chain head like any write).
 *
 * A store written before the index existed is upgraded partition by partition with `rebuildOrderIndex`
 * (ResourceStore.rebuildOrderIndex); a restore always rebuilds it.
 */
import { scanAll, type Partition } from "../../kv/contract.js";
import { SYSTEM } from "../../access/actor.js";
import type { Core } from "../core/core.js";
import type { ResourceEvent } from "../model/events.js";
import { layout } from "../model/layout.js";
import { PartitionReplay } from "./replay.js";

/** Rewrites a partition's order index from its log. A log the replay refuses is left alone (verify reports it). */
export async function rebuildOrderIndex(c: Core, partition: Partition): Promise<void> {
  await c.writer.run(partition, SYSTEM, async (tx) => {
    const replay = new PartitionReplay(c.schema, partition);
    try {
      for await (const e of scanAll(c.kv, partition, { prefix: layout.logs, limit: 2000 })) replay.apply(JSON.parse(e.value.toString("utf8")) as ResourceEvent);
    } catch {
      return;
    }
    tx.deletePrefix(layout.orderIndexes);
    for (const e of replay.entries()) if (e.key[0] === layout.orderIndexes[0]) tx.put(e.key, e.value);
  });
}
