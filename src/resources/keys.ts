/**
 * The key layout of a resource partition. A partition is owned by a root or flat resource
 * (`[ownerType, ownerId]`); its nested descendants live inside it. Below the owner a resource is
 * addressed by its (type, id) pairs, e.g. `subproject s1, workflowitem w1` → `["subproject","s1","workflowitem","w1"]`.
 *
 * Families (the first tuple item):
 *   s  state:          ["s", depth, ...pairs]                 → record (see record.ts)
 *   a  access:         ["a", depth, ...pairs]                 → {permissions, parent} JSON (kept out of lists)
 *   c  flat children:  ["c", depth, ...pairs]                 → index entry of a child in another partition
 *   o  ordering:       ["o", depth, ...pairs, childType]      → JSON array of child ids
 *   h  history index:  ["h", depth, ...pairs, seq]            → empty (the event is in the log)
 *   l  log:            ["l", seq]                             → canonical event JSON (hash chain)
 *   m  meta:           ["m", "head"]                          → {seq, hash} of the chain
 *
 * The depth (number of pairs) leads the key so that the direct children of a resource are one
 * contiguous range (`["s", d+1, ...parentPairs, childType]`) that never passes grandchildren, and the
 * whole nested subtree of a resource at depth d is one prefix per level: `["s", l, ...pairs]` for l > d.
 */
import type { Key, Partition } from "../kv/contract.js";
import { ValidationError } from "../errors.js";
import { assertId, type CompiledType, type Schema } from "./schema.js";

/** A resource address: its type and the ids from its partition owner down to itself. */
export interface Ref {
  readonly type: string;
  readonly ids: readonly string[];
}

export interface Located {
  readonly type: CompiledType;
  readonly ref: Ref;
  readonly partition: Partition;
  /** (type, id) pairs below the owner. */
  readonly pairs: readonly string[];
  readonly depth: number;
}

export function locate(schema: Schema, ref: Ref): Located {
  const type = schema.type(ref.type);
  if (!Array.isArray(ref.ids) || ref.ids.length !== type.chain.length) {
    throw new ValidationError(
      `a ${type.name} is addressed by ${type.chain.length} id(s) (${type.chain.join(" → ")})`,
      "ids",
    );
  }
  ref.ids.forEach((id, i) => assertId(id, `${type.chain[i]}Id`));
  const pairs: string[] = [];
  for (let i = 1; i < type.chain.length; i++) pairs.push(type.chain[i]!, ref.ids[i]!);
  return { type, ref, partition: [type.owner, ref.ids[0]!], pairs, depth: type.depth };
}

/** The ref of a child of `parent` (null for a root). Flat children start a new chain. */
export function childRef(schema: Schema, parent: Ref | null, childType: string, id: string): Ref {
  const t = schema.type(childType);
  if (t.decl.parent === null) {
    if (parent !== null) throw new ValidationError(`${childType} is a root type and has no parent`, "parent");
    return { type: childType, ids: [id] };
  }
  if (!parent || parent.type !== t.decl.parent) {
    throw new ValidationError(`a ${childType} must be created under a ${t.decl.parent}`, "parent");
  }
  return t.decl.idStyle === "flat" ? { type: childType, ids: [id] } : { type: childType, ids: [...parent.ids, id] };
}

export const stateKey = (l: Located): Key => ["s", l.depth, ...l.pairs];
export const accessKey = (l: Located): Key => ["a", l.depth, ...l.pairs];
export const orderingKey = (l: Located, childType: string): Key => ["o", l.depth, ...l.pairs, childType];
export const historyPrefix = (l: Located): Key => ["h", l.depth, ...l.pairs];
export const historyKey = (l: Located, seq: number): Key => ["h", l.depth, ...l.pairs, seq];
export const logKey = (seq: number): Key => ["l", seq];
export const HEAD_KEY: Key = ["m", "head"];
/** Direct nested children of a given type. */
export const childrenPrefix = (l: Located, childType: string): Key => ["s", l.depth + 1, ...l.pairs, childType];
/** Index entries of flat children of a given type. */
export const flatChildrenPrefix = (l: Located, childType: string): Key => ["c", l.depth + 1, ...l.pairs, childType];
export const flatChildKey = (l: Located, childType: string, id: string): Key => ["c", l.depth + 1, ...l.pairs, childType, id];
