/**
 * TruBudget's global intent names (its api/src/authz/intents.ts) against flowstore's (the intent
 * registry). Most are the same; where TruBudget splits what flowstore holds as one intent, the TruBudget
 * name is an alias: holding flowstore's intent is holding every alias of it. An alias is shown (in
 * allowedIntents and global.listPermissions) but not granted or revoked alone: that would grant or take
 * more than was asked, so such a grant is refused naming the intent to use.
 */
import { ValidationError } from "../../errors.js";

/** TruBudget's global intents that flowstore holds under another name. */
export const GLOBAL_ALIASES: Readonly<Record<string, string>> = {
  "global.enableUser": "global.createUser",
  "global.disableUser": "global.createUser",
  "global.listAssignments": "global.createUser",
  "global.grantAllPermissions": "global.grantPermission",
};

/** TruBudget's global intents (network.* among them: a single node has no network to administer). */
export const TRUBUDGET_GLOBAL_INTENTS = [
  "global.listPermissions",
  "global.grantPermission",
  "global.grantAllPermissions",
  "global.revokePermission",
  "global.createProject",
  "global.createUser",
  "global.enableUser",
  "global.disableUser",
  "global.listAssignments",
  "global.createGroup",
  "network.registerNode",
  "network.list",
  "network.listActive",
  "network.voteForPermission",
  "network.approveNewOrganization",
  "network.approveNewNodeForExistingOrganization",
  "network.declineNode",
] as const;

/** The flowstore intent behind a TruBudget one (itself when not an alias). */
export const flowstoreIntent = (intent: string): string => GLOBAL_ALIASES[intent] ?? intent;

/**
 * The TruBudget global intents a holder of `held` (flowstore's intents) has: the held ones TruBudget
 * knows, and their aliases. The network intents are held by nobody (there is no network).
 */
export function trubudgetIntents(held: Iterable<string>): string[] {
  const has = new Set(held);
  return TRUBUDGET_GLOBAL_INTENTS.filter((i) => !i.startsWith("network.") && has.has(flowstoreIntent(i)));
}

/** TruBudget's view of the global permissions (intent → identities) from flowstore's. */
export function trubudgetPermissions(permissions: Readonly<Record<string, readonly string[]>>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const intent of TRUBUDGET_GLOBAL_INTENTS) {
    const holders = permissions[flowstoreIntent(intent)];
    if (holders && holders.length > 0) out[intent] = [...holders];
  }
  return out;
}

/** The flowstore intent to grant or revoke for a TruBudget one; an alias or a network intent is refused at `field`. */
export function grantableIntent(intent: string, field: string): string {
  if (intent.startsWith("network.")) throw new ValidationError(`${intent} cannot be granted: flowstore is a single node, with no network to administer`, field);
  const target = GLOBAL_ALIASES[intent];
  if (target !== undefined) {
    throw new ValidationError(`${intent} is part of ${target} in flowstore and cannot be granted or revoked alone: grant or revoke ${target}`, field);
  }
  return intent;
}
