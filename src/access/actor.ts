/**
 * Who is acting. Users and groups are identities; a user acts with the groups it belongs to. The
 * `system` actor (operators' tools, migrations) bypasses permission checks.
 */
export interface Actor {
  readonly id: string;
  readonly groups: readonly string[];
  readonly system?: boolean;
  /**
   * Why the actor writes what it writes now (a request's `Flowstore-Reason` header): recorded as `reason`
   * in every event of its writes (resources/log/writer.ts). Absent when none was given.
   */
  readonly reason?: string;
}

export const SYSTEM: Actor = Object.freeze({ id: "system", groups: [], system: true });

/**
 * The first user, created on an empty store with every global intent. It tops the administrator
 * hierarchy: only root (or the system actor) changes root's password, disables it, or revokes its grants.
 */
export const ROOT_ID = "root";

/** True for the system actor and for root: the two that administer every account. */
export const isTop = (actor: Actor): boolean => actor.system === true || actor.id === ROOT_ID;

export function userActor(id: string, groups: readonly string[] = []): Actor {
  return { id, groups };
}

/** Intent → identities (user or group ids) holding it. */
export type Permissions = Record<string, string[]>;

/** A copy whose holder lists may be changed without touching the original's (cheaper than structuredClone on every create). */
export function copyPermissions(permissions: Permissions): Permissions {
  // a loop, not fromEntries(entries().map()): every create copies a type's whole intent table (a CPU profile's 1% of an HTTP create)
  const out: Permissions = {};
  for (const intent of Object.keys(permissions)) out[intent] = permissions[intent]!.slice();
  return out;
}

/** True when the actor, or one of its groups, is listed for the intent (system always). */
export function allows(permissions: Permissions | undefined, actor: Actor, intent: string): boolean {
  if (actor.system) return true;
  const holders = permissions?.[intent];
  if (!holders || holders.length === 0) return false;
  if (holders.includes(actor.id)) return true;
  for (const g of actor.groups) if (holders.includes(g)) return true;
  return false;
}
