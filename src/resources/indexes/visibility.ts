/**
 * The index of visible roots (sparse visibility): for each identity, user or group, the roots of each
 * type it may list (it holds the type's list or view intent), in the partition `["visible", identity]`
 * under `[type, id]` (layout.ts). A user's roots are the union of its own and its groups' entries, so a
 * first page costs a few bounded range reads, whatever the number of roots it may not see; a membership
 * change needs no index write.
 *
 * An entry's value is the root's row (createdAt, status and the type's declared query fields) and
 * whether that identity may view it, so search and sort over a caller's roots read the index alone
 * (query.ts). The entries are derived from the root's permissions and data: each command that writes a
 * root's record gives the change of its entries as side ops of its own commit (writer.ts `alsoCommit`),
 * committed before the command is acknowledged. `verify` (audit.ts) recomputes a root's entries from the
 * replay of its log and compares them, as it does every other index; a read checks the record's header
 * again, so an entry left behind by a crash never shows a root to whom may not list it.
 */
import { allPartitions, type KvStore, type Op, type Partition } from "../../kv/contract.js";
import type { Permissions } from "../../access/actor.js";
import { layout } from "../model/layout.js";
import { RecordView, type Envelope } from "../model/record.js";
import type { CompiledType, ListRow } from "../model/schema.js";
import type { Tx } from "../log/writer.js";

const EMPTY = Buffer.alloc(0);

/** The identities that may list a resource of type t: holders of its list or view intent. */
export function listersOf(t: CompiledType, permissions: Permissions): string[] {
  return [...new Set<string>([...(permissions[t.intents.list] ?? []), ...(permissions[t.intents.view] ?? [])])];
}

/** The status a record's header (and a redacted listing) shows. */
export function statusOf(t: CompiledType, data: Record<string, unknown>): string {
  const v = t.decl.statusField ? data[t.decl.statusField] : undefined;
  return typeof v === "string" ? v : "";
}

/** The row search and sort see of a resource: its declared query fields, in their declared order. */
export function rowOf(t: CompiledType, envelope: Envelope, viewable: boolean): ListRow {
  const data: Record<string, unknown> = {};
  if (viewable) for (const f of t.decl.query?.fields ?? []) if (envelope.data[f] !== undefined) data[f] = envelope.data[f];
  return { id: envelope.id, createdAt: envelope.meta.createdAt, status: statusOf(t, envelope.data), data };
}

/** A stored index entry: the row without its id (the key holds it) and whether the identity may view. */
interface IndexValue {
  createdAt: string;
  status: string;
  view: boolean;
  data: Record<string, unknown>;
}

/** The index entries of a root, identity → value, from its state and permissions (none when deleted). */
export function indexEntries(t: CompiledType, envelope: Envelope | null, permissions: Permissions | null): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  if (!envelope || !permissions || t.decl.parent !== null) return out;
  const viewers = new Set(permissions[t.intents.view] ?? []);
  const full = rowOf(t, envelope, true);
  for (const identity of listersOf(t, permissions)) {
    const view = viewers.has(identity);
    const value: IndexValue = { createdAt: full.createdAt, status: full.status, view, data: view ? full.data : {} };
    out.set(identity, Buffer.from(JSON.stringify(value), "utf8"));
  }
  return out;
}

/** The ops that turn a root's index entries from `before` into `after`, each on its identity's partition. */
export function visibilityOps(t: CompiledType, id: string, before: Map<string, Buffer>, after: Map<string, Buffer>): { partition: Partition; op: Op }[] {
  const key = layout.visibleRoot(t.name, id);
  const ops: { partition: Partition; op: Op }[] = [];
  const touch = (identity: string, op: Op): void => {
    const partition = layout.visible(identity);
    ops.push({ partition, op }, { partition, op: { type: "put", key: layout.visibleVersion, value: EMPTY } });
  };
  for (const [identity, value] of after) if (!before.get(identity)?.equals(value)) touch(identity, { type: "put", key, value });
  for (const identity of before.keys()) if (!after.has(identity)) touch(identity, { type: "delete", key });
  return ops;
}

/** Gives a root's index change to its command's commit (no-op for a resource that is not a root). */
export function writeVisibility(tx: Tx, t: CompiledType, id: string, before: Map<string, Buffer>, after: Map<string, Buffer>): void {
  if (t.decl.parent !== null) return;
  for (const { partition, op } of visibilityOps(t, id, before, after)) tx.alsoCommit(partition, op);
}

/** An index entry read back as the row a caller sees (redacted unless one of its identities may view). */
export function rowOfEntry(id: string, value: Buffer): { row: ListRow; view: boolean } {
  const v = JSON.parse(value.toString("utf8")) as IndexValue;
  return { row: { id, createdAt: v.createdAt, status: v.status, data: v.data }, view: v.view };
}

/**
 * Builds the index of visible roots of a schema's root types from their records, once per store (a
 * marker records it): a store written before the index existed gets it at its next open. Idempotent.
 */
export async function buildVisibility(kv: KvStore, types: readonly CompiledType[]): Promise<number> {
  let n = 0;
  for (const t of types) {
    if (t.decl.parent !== null) continue;
    if (await kv.get(layout.visibleBuilt, layout.visibleBuiltEntry(t.name))) continue;
    for await (const p of allPartitions(kv, t.name)) {
      const [state, access] = await kv.getMany(p, [layout.ownerState, layout.ownerAccess]);
      if (!state || !access) continue;
      const envelope = new RecordView(state.value).envelope();
      const { permissions } = JSON.parse(access.value.toString("utf8")) as { permissions: Permissions };
      const ops = visibilityOps(t, envelope.id, new Map(), indexEntries(t, envelope, permissions));
      // One commit per identity (its entry and its version key).
      const byIdentity = new Map<string, { partition: Partition; ops: Op[] }>();
      for (const { partition, op } of ops) {
        const k = layout.identityOfVisible(partition);
        if (!byIdentity.has(k)) byIdentity.set(k, { partition, ops: [] });
        byIdentity.get(k)!.ops.push(op);
      }
      await Promise.all([...byIdentity.values()].map((g) => kv.commit(g.partition, g.ops)));
      n++;
    }
    // The marker holds no time: stores holding the same data hold the same bytes (an export and its
    // import compare byte for byte).
    await kv.commit(layout.visibleBuilt, [{ type: "put", key: layout.visibleBuiltEntry(t.name), value: Buffer.from(JSON.stringify({ built: true })) }]);
  }
  return n;
}
