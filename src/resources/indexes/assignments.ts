/**
 * Assignments: for each identity, the resources whose declared `assigneeField` names it, in the
 * partition `["assigned", identity]` (layout.ts). The entry is written as a side op of the command that
 * sets or changes the assignee, before that command's commit (writer.ts `widenFirst`), and never
 * removed: a read checks each entry against the resource's record and leaves out what is gone or
 * assigned elsewhere, so the index is a hint that can only be wider than the truth, never narrower.
 */
import { scanAll, type KvStore } from "../../kv/contract.js";
import { layout } from "../model/layout.js";
import { RecordView } from "../model/record.js";
import { locate, type Located, type Ref } from "../model/ref.js";
import type { CompiledType, Schema } from "../model/schema.js";
import type { Tx } from "../log/writer.js";

/** The identity a resource's data assigns it to, or null. */
export function assigneeOf(t: CompiledType, data: Record<string, unknown> | null): string | null {
  const f = t.decl.assigneeField;
  const v = f && data ? data[f] : undefined;
  return typeof v === "string" && v !== "" ? v : null;
}

/**
 * Gives a resource's new assignee to its command's commit: the assignee's entry is put BEFORE the commit
 * (writer.ts `widenFirst`) and no entry is ever removed, so the index is wider than the truth, never
 * narrower, whatever crashes and whatever order pipelined groups settle in (a removal committed after a
 * commit could land after a later group's put of the same entry). A read checks each entry against the
 * record and leaves out those of a former assignee or of a deleted resource.
 */
export function writeAssignment(tx: Tx, l: Located, before: string | null, after: string | null): void {
  if (after === null || after === before) return;
  tx.widenFirst(layout.assigned(after), { type: "put", key: layout.assignedEntry(l.type.name, l.ref.ids), value: Buffer.alloc(0) });
}

export interface Assignment {
  readonly type: string;
  readonly ids: readonly string[];
  readonly displayName?: string;
  readonly status: string;
}

/** What is assigned to an identity now (every entry checked against its record), in key order. */
export async function assignmentsOf(kv: KvStore, schema: Schema, identity: string): Promise<Assignment[]> {
  const out: Assignment[] = [];
  for await (const e of scanAll(kv, layout.assigned(identity), { limit: 2000 })) {
    const ref: Ref = layout.refOfAssigned(e.key);
    const t = schema.types.get(ref.type);
    if (!t || ref.ids.length !== t.chain.length) continue; // another schema's
    const l = locate(schema, ref);
    const state = await kv.get(l.partition, layout.state(l));
    if (!state) continue;
    const envelope = new RecordView(state.value).envelope();
    if (assigneeOf(t, envelope.data) !== identity) continue;
    const displayName = envelope.data.displayName;
    out.push({ type: ref.type, ids: ref.ids, ...(typeof displayName === "string" ? { displayName } : {}), status: new RecordView(state.value).status });
  }
  return out;
}
