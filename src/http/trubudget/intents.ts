/**
 * TruBudget's global intent names (its api/src/authz/intents.ts) against flowstore's (the intent
 * registry): the same names. Each of TruBudget's global intents that a single node has is one of
 * flowstore's, granted and revoked on its own (`global.enableUser`, `global.disableUser`,
 * `global.listAssignments` and `global.grantAllPermissions` were part of others until issue 28; a store
 * written before holds them through a migration, compose/open.ts). The network intents are TruBudget's
 * only: a single node has no network to administer.
 *
 * TruBudget's intent names for projects, subprojects and workflowitems (below) are derived from flowstore's
 * declaration (workflow/schema.ts) rather than listed again: TruBudget's intents of a type are the
 * native ones minus those TruBudget does not have, with one rename. TruBudget has no separate view
 * intent for a workflowitem: its `workflowitem.list` is what lets a user see an item whole, which is
 * flowstore's `workflowitem.viewDetails` (flowstore's own `workflowitem.list`, seeing the item redacted
 * in its place, has no TruBudget name).
 */
import { Type, type TLiteral, type TUnion } from "@sinclair/typebox";
import type { Permissions } from "../../access/actor.js";
import { ValidationError } from "../../errors.js";
import type { ResourceStore } from "../../resources/store.js";
import type { WorkflowSchema } from "../../workflow/schema.js";

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

/** The TruBudget global intents a holder of `held` (flowstore's intents) has: the network intents are held by nobody. */
export function trubudgetIntents(held: Iterable<string>): string[] {
  const has = new Set(held);
  return TRUBUDGET_GLOBAL_INTENTS.filter((i) => !i.startsWith("network.") && has.has(i));
}

/** TruBudget's view of the global permissions (intent → identities) from flowstore's: its intents only. */
export function trubudgetPermissions(permissions: Readonly<Record<string, readonly string[]>>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const intent of TRUBUDGET_GLOBAL_INTENTS) {
    const holders = permissions[intent];
    if (holders && holders.length > 0) out[intent] = [...holders];
  }
  return out;
}

/** The flowstore intent to grant or revoke for a TruBudget one: a network intent is refused at `field`. */
export function grantableIntent(intent: string, field: string): string {
  if (intent.startsWith("network.")) throw new ValidationError(`${intent} cannot be granted: flowstore is a single node, with no network to administer`, field);
  return intent;
}

// ---------------------------------------------------------------- projects, subprojects, workflowitems

export type Level = "project" | "subproject" | "workflowitem";

/** TruBudget's name → flowstore's, where they differ. */
const RENAMED: Readonly<Record<string, string>> = { "workflowitem.list": "workflowitem.viewDetails" };
const NATIVE_TO_TB: Readonly<Record<string, string>> = Object.fromEntries(Object.entries(RENAMED).map(([tb, native]) => [native, tb]));
/** Native intents TruBudget has no name for: deleting (TruBudget never deletes) and the native list of a workflowitem. */
const NATIVE_ONLY = (level: Level): string[] => [`${level}.delete`, ...(level === "workflowitem" ? ["workflowitem.list"] : [])];
/** TruBudget does not list a close intent among a resource's permissions (its ExposableIntent). */
const closeIntent = (level: Level): string => `${level}.close`;

export const toNativeIntent = (intent: string): string => RENAMED[intent] ?? intent;

export interface TbIntents {
  /** TruBudget's intents of each level, in flowstore's declaration order. */
  readonly of: Readonly<Record<Level, readonly string[]>>;
  /** The TruBudget intents a caller holds, given flowstore's allowed intents of the resource. */
  allowed(level: Level, native: readonly string[] | undefined): string[];
  /** A resource's permissions under TruBudget's names, close intents left out as TruBudget does. */
  permissions(level: Level, native: Permissions): Record<string, string[]>;
  /** The request schema of a grant's or revoke's `intent`: TruBudget's names of the level. */
  schema(level: Level): TUnion<TLiteral<string>[]>;
}

export function tbIntents(store: ResourceStore<WorkflowSchema>): TbIntents {
  const levels: Level[] = ["project", "subproject", "workflowitem"];
  const of = Object.fromEntries(
    levels.map((level) => {
      const drop = new Set(NATIVE_ONLY(level));
      const names = store.schema
        .type(level)
        .intents.all.filter((i) => !drop.has(i))
        .map((i) => NATIVE_TO_TB[i] ?? i);
      return [level, names];
    }),
  ) as Record<Level, string[]>;
  return {
    of,
    allowed(level, native) {
      if (!native) return [];
      const held = new Set(native);
      return of[level].filter((i) => held.has(toNativeIntent(i)));
    },
    permissions(level, native) {
      const out: Record<string, string[]> = {};
      for (const i of of[level]) {
        if (i === closeIntent(level)) continue;
        const holders = native[toNativeIntent(i)];
        if (holders && holders.length > 0) out[i] = [...holders];
      }
      return out;
    },
    schema: (level) => Type.Union(of[level].map((i) => Type.Literal(i))),
  };
}
