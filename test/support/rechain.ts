/**
 * History rewritten by hand, as someone who can write the store would do it: event `seq` of a
 * partition is edited and every event after it re-chained (sealed again over the new hash), the chain
 * head, the history index entries carrying the events and the ledger's anchor rewritten, so that the
 * partition alone looks sound (its chain and every key verify's replay derives). What the
 * checkpoints and the transparency log must catch (test/http/checkpoint.test.ts, test/fleet/witnesses.test.ts).
 */
import { createHash } from "node:crypto";
import { canonicalJson } from "../../src/kv/canonical.js";
import { scanAll, type Key, type KvStore, type Op, type Partition } from "../../src/kv/contract.js";
import { CHAIN, type RecordEvent } from "../../src/kv/record-chain.js";
import { encode } from "../../src/kv/tuple.js";
import { sealEvent, type ResourceEvent } from "../../src/resources/model/events.js";
import { families, layout } from "../../src/resources/model/layout.js";

export async function rewriteFrom(kv: KvStore, partition: Partition, seq: number, edit: (e: ResourceEvent) => void): Promise<void> {
  const head = JSON.parse((await kv.get(partition, layout.head))!.value.toString("utf8")) as { seq: number };
  let prev = seq > 1 ? (JSON.parse((await kv.get(partition, layout.log(seq - 1)))!.value.toString("utf8")) as ResourceEvent).hash : null;
  const ops: Op[] = [];
  // Each event's history index entry by seq (its last key item), to carry the rewritten bytes too.
  const indexed = new Map<number, Key>();
  for await (const e of scanAll(kv, partition, { prefix: families.h.pack([]) })) indexed.set(layout.seqOfHistory(e.key), e.key);
  for (let s = seq; s <= head.seq; s++) {
    const { hash: _old, ...e } = JSON.parse((await kv.get(partition, layout.log(s)))!.value.toString("utf8")) as ResourceEvent;
    if (s === seq) edit(e as ResourceEvent);
    const sealed = sealEvent({ ...e, prev });
    prev = sealed.hash;
    const bytes = Buffer.from(JSON.stringify(sealed));
    ops.push({ type: "put", key: layout.log(s), value: bytes });
    const entry = indexed.get(s);
    if (entry) ops.push({ type: "put", key: entry, value: bytes });
  }
  ops.push({ type: "put", key: layout.head, value: Buffer.from(JSON.stringify({ seq: head.seq, hash: prev })) });
  await kv.commit(partition, ops);
  await kv.commit(layout.ledger, [{ type: "put", key: layout.ledgerEntry(partition), value: Buffer.from(JSON.stringify({ seq: head.seq, hash: prev })) }]);
}

/**
 * A record chain (kv/record-chain.ts: the users, groups, grants) rewritten from scratch, as someone who
 * can write the store would do it: `edit` changes one record's value, and the chain is rebuilt from its
 * first event with that record's new hash, each event sealed again over the new hash before it, the
 * head and the ledger's anchor rewritten, so that the chain, the records and the ledger agree and
 * `verify` answers ok. What a checkpoint of the transparency log taken before must catch.
 */
export async function rechainRecord(kv: KvStore, partition: Partition, key: Key, edit: (record: Record<string, unknown>) => void): Promise<void> {
  const current = (await kv.get(partition, key))!.value;
  const record = JSON.parse(current.toString("utf8")) as Record<string, unknown>;
  edit(record);
  const bytes = Buffer.from(JSON.stringify(record));
  const name = encode(key).toString("base64");
  const sha = (b: Uint8Array | string) => createHash("sha256").update(b).digest("hex");
  const events: RecordEvent[] = [];
  for await (const e of scanAll(kv, partition, { prefix: CHAIN.pack(["log"]) })) events.push(JSON.parse(e.value.toString("utf8")) as RecordEvent);
  const last = events.findLastIndex((e) => e.changes.some(([k]) => k === name));
  let prev: string | null = null;
  const ops: Op[] = [{ type: "put", key, value: bytes }];
  for (const [i, { hash: _old, ...e }] of events.entries()) {
    const changes = i === last ? e.changes.map(([k, v]) => [k, k === name ? sha(bytes) : v] as const) : e.changes;
    const body: Omit<RecordEvent, "hash"> = { ...e, changes, prev };
    const sealed: RecordEvent = { ...body, hash: sha(canonicalJson(body)) };
    prev = sealed.hash;
    ops.push({ type: "put", key: CHAIN.pack(["log", e.seq]), value: Buffer.from(JSON.stringify(sealed)) });
  }
  ops.push({ type: "put", key: CHAIN.pack(["head"]), value: Buffer.from(JSON.stringify({ seq: events.length, hash: prev })) });
  await kv.commit(partition, ops);
  await kv.commit(layout.ledger, [{ type: "put", key: layout.ledgerEntry(partition), value: Buffer.from(JSON.stringify({ seq: events.length, hash: prev })) }]);
}
