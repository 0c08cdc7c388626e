/**
 * Manual ordering of a child collection (seed 002). The ordering is a list of child ids stored with the
 * parent. The effective order: ids of the ordering that still exist, in that order; then every other
 * child by creation time, ties by id. Pure functions; the store supplies the data.
 */
import { ValidationError } from "../errors.js";

export interface OrderedChild {
  readonly id: string;
  readonly createdAtMs: number;
}

export function effectiveOrder<C extends OrderedChild>(ordering: readonly string[], children: readonly C[]): C[] {
  const byId = new Map<string, C>();
  for (const c of children) byId.set(c.id, c);
  const out: C[] = [];
  const placed = new Set<string>();
  for (const id of ordering) {
    const c = byId.get(id);
    if (c && !placed.has(id)) {
      out.push(c);
      placed.add(id);
    }
  }
  const rest = placed.size === 0 ? children.slice() : children.filter((c) => !placed.has(c.id));
  const before = (a: C, b: C): number => a.createdAtMs - b.createdAtMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  // Children usually come in creation order already (ids that grow with time): skip the sort then.
  let sorted = true;
  for (let i = 1; i < rest.length && sorted; i++) sorted = before(rest[i - 1]!, rest[i]!) <= 0;
  if (!sorted) rest.sort(before);
  for (const c of rest) out.push(c);
  return out;
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
