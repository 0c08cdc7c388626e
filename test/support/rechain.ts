/**
 * History rewritten by hand, as someone who can write the store would do it: event `seq` of a
 * partition is edited and every event after it re-chained (sealed again over the new hash), the chain
 * head and the ledger's anchor rewritten, so that the partition's chain alone looks sound. What the
 * checkpoints and the transparency log must catch (test/http/checkpoint.test.ts, test/fleet/witnesses.test.ts).
 */
import type { KvStore, Op, Partition } from "../../src/kv/contract.js";
import { sealEvent, type ResourceEvent } from "../../src/resources/model/events.js";
import { layout } from "../../src/resources/model/layout.js";

export async function rewriteFrom(kv: KvStore, partition: Partition, seq: number, edit: (e: ResourceEvent) => void): Promise<void> {
  const head = JSON.parse((await kv.get(partition, layout.head))!.value.toString("utf8")) as { seq: number };
  let prev = seq > 1 ? (JSON.parse((await kv.get(partition, layout.log(seq - 1)))!.value.toString("utf8")) as ResourceEvent).hash : null;
  const ops: Op[] = [];
  for (let s = seq; s <= head.seq; s++) {
    const { hash: _old, ...e } = JSON.parse((await kv.get(partition, layout.log(s)))!.value.toString("utf8")) as ResourceEvent;
    if (s === seq) edit(e as ResourceEvent);
    const sealed = sealEvent({ ...e, prev });
    prev = sealed.hash;
    ops.push({ type: "put", key: layout.log(s), value: Buffer.from(JSON.stringify(sealed)) });
  }
  ops.push({ type: "put", key: layout.head, value: Buffer.from(JSON.stringify({ seq: head.seq, hash: prev })) });
  await kv.commit(partition, ops);
  await kv.commit(layout.ledger, [{ type: "put", key: layout.ledgerEntry(partition), value: Buffer.from(JSON.stringify({ seq: head.seq, hash: prev })) }]);
}
