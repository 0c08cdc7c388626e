/**
 * Manual ordering of a child collection (as TruBudget orders the workflowitems of a subproject). The
 * ordering is a list of child ids stored with the parent. The effective order: ids of the ordering that
 * still exist, in that order; then every other child by creation time, ties by id. Pure functions; the store supplies the data.
 */
import { ValidationError } from "../../errors.js";
import type { TupleItem } from "../../kv/tuple.js";

export interface OrderedChild {
  readonly id: string;
  readonly createdAtMs: number;
}

export function effectiveOrder<C extends OrderedChild>(ordering: readonly string[], children: readonly C[]): C[] {
  // Each id's first place in the ordering (a map of the ordering, usually far shorter than the children),
  // then one pass over the children: a child the ordering names takes its place (the last child of an id,
  // should two share one), every other one is left for the rest.
  const placeOf = new Map<string, number>();
  for (const id of ordering) if (!placeOf.has(id)) placeOf.set(id, placeOf.size);
  const places: (C | undefined)[] = new Array<C | undefined>(placeOf.size);
  const rest: C[] = [];
  for (const c of children) {
    const at = placeOf.size === 0 ? undefined : placeOf.get(c.id);
    if (at === undefined) rest.push(c);
    else places[at] = c;
  }
  const out: C[] = [];
  for (const c of places) if (c) out.push(c);
  const before = (a: C, b: C): number => a.createdAtMs - b.createdAtMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  // Children usually come in creation order already (ids that grow with time): skip the sort then.
  let sorted = true;
  for (let i = 1; i < rest.length && sorted; i++) sorted = before(rest[i - 1]!, rest[i]!) <= 0;
  if (!sorted) rest.sort(before);
  for (const c of rest) out.push(c);
  return out;
}

/** A child as the closed-first order needs it: when it was closed, or null while it is not. */
export interface ClosableChild extends OrderedChild {
  readonly closedAtMs: number | null;
}

/**
 * The closed-first effective order (TruBudget's): closed children first, by close time (ties by
 * creation, then id), then the open ones in `effectiveOrder`.
 */
export function closedFirstOrder<C extends ClosableChild>(ordering: readonly string[], children: readonly C[]): C[] {
  const closed = children.filter((c) => c.closedAtMs !== null);
  const open = children.filter((c) => c.closedAtMs === null);
  closed.sort((a, b) => a.closedAtMs! - b.closedAtMs! || a.createdAtMs - b.createdAtMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return [...closed, ...effectiveOrder(ordering, open)];
}

/** Checks a new ordering: an array of distinct ids, each naming a current child. */
export function validateOrdering(ordering: unknown, childIds: ReadonlySet<string>): string[] {
  if (!Array.isArray(ordering)) throw new ValidationError("ordering must be an array of ids", "ordering");
  const seen = new Set<string>();
  ordering.forEach((id, i) => {
    if (typeof id !== "string") throw new ValidationError(`ordering[${i}] must be a string`, `ordering[${i}]`);
    if (seen.has(id)) throw new ValidationError(`ordering names ${JSON.stringify(id)} twice`, `ordering[${i}]`);
    if (!childIds.has(id)) throw new ValidationError(`ordering names ${JSON.stringify(id)}, which is not a child`, `ordering[${i}]`);
    seen.add(id);
  });
  return ordering as string[];
}

/**
 * The order index (layout's `x` family) keeps the effective order at write time, so that a page of it is
 * one range read: the ordering's i-th id under `[0, i]` while it names a live child, every other child
 * under `[1, ...restSortKey(child)]`. Key order is the effective order above: the listed part first, by
 * place; then the rest by creation time, ties by id (compared as JS compares strings: UTF-16 code units,
 * hence the big-endian UTF-16 bytes).
 *
 * HOOK for another declared order (e.g. TruBudget's "closed items first, by close time"): such an option
 * supplies its own sort key here (from the child's header fields) and must then also move a child's
 * entry when a command changes a field the key reads (a close), in the same commit (writes.ts `mutate`).
 * Seed 002's order reads only creation time and id, which never change, so only creates, deletes and
 * reorders touch the index today.
 */
export function restSortKey(child: OrderedChild): TupleItem[] {
  return [child.createdAtMs, Buffer.from(child.id, "utf16le").swap16()];
}

/** The order index of a collection, as `[listed place or null, child]` pairs in effective order (a replay builds it from this). */
export function orderIndexOf<C extends OrderedChild>(ordering: readonly string[], children: readonly C[]): { listedAt: number | null; child: C }[] {
  if (ordering.length === 0) return children.map((child) => ({ listedAt: null, child })); // none listed: no lookup of each child
  const byId = new Map(children.map((c) => [c.id, c] as const));
  const out: { listedAt: number | null; child: C }[] = [];
  const listed = new Set<string>();
  ordering.forEach((id, i) => {
    const c = byId.get(id);
    if (c && !listed.has(id)) {
      out.push({ listedAt: i, child: c });
      listed.add(id);
    }
  });
  for (const c of children) if (!listed.has(c.id)) out.push({ listedAt: null, child: c });
  return out;
}
