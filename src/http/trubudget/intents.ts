/**
 * TruBudget's intent names for projects, subprojects and workflowitems, derived from flowstore's
 * declaration (workflow/schema.ts) rather than listed again: TruBudget's intents of a type are the
 * native ones minus those TruBudget does not have, with one rename. TruBudget has no separate view
 * intent for a workflowitem: its `workflowitem.list` is what lets a user see an item whole, which is
 * flowstore's `workflowitem.viewDetails` (flowstore's own `workflowitem.list`, seeing the item redacted
 * in its place, has no TruBudget name).
 */
import { Type } from "@sinclair/typebox";
import type { Permissions } from "../../access/actor.js";
import type { ResourceStore } from "../../resources/store.js";
import type { WorkflowSchema } from "../../workflow/schema.js";

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
  schema(level: Level): ReturnType<typeof Type.Union>;
}

export function tbIntents(store: ResourceStore<WorkflowSchema>): TbIntents {
  const levels: Level[] = ["project", "subproject", "workflowitem"];
  const of = Object.fromEntries(
    levels.map((level) => {
      const drop = new Set(NATIVE_ONLY(level));
      const names = store.schema.type(level).intents.all.filter((i) => !drop.has(i)).map((i) => NATIVE_TO_TB[i] ?? i);
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
