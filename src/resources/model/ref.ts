/**
 * Resource addresses. A partition is owned by a root or flat resource (`[ownerType, ownerId]`); its
 * nested descendants live inside it. Below the owner a resource is addressed by its (type, id) pairs,
 * e.g. `subproject s1, workflowitem w1` → `["subproject","s1","workflowitem","w1"]`. Which keys a
 * located resource occupies is the layout's business (layout.ts), not its callers'.
 */
import type { Partition } from "../../kv/contract.js";
import { ValidationError } from "../../errors.js";
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
    throw new ValidationError(`a ${type.name} is addressed by ${type.chain.length} id(s) (${type.chain.join(" → ")})`, "ids");
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

/** The ref of a nested resource's parent (same partition); null for a partition owner. */
export function parentRef(schema: Schema, ref: Ref): Ref | null {
  const t = schema.type(ref.type);
  if (t.depth === 0) return null;
  return { type: t.decl.parent!, ids: ref.ids.slice(0, -1) };
}

/** Where a resource's events name it: its chain from the partition owner down. */
export function pathOf(l: Located): { type: string; id: string }[] {
  return l.type.chain.map((type, i) => ({ type, id: l.ref.ids[i]! }));
}
