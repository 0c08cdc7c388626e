/**
 * What the TruBudget routes of projects, subprojects, workflowitems and notifications share: the ids
 * TruBudget names them by (`projectId`, `subprojectId`, `workflowitemId`, in the query of a read and in
 * `data` of a write), the domain's field errors renamed to TruBudget's field paths, and whole lists read
 * page by page (TruBudget answers lists whole).
 */
import { Type, type TObject, type TOptional, type TProperties, type TSchema } from "@sinclair/typebox";
import { allows, ROOT_ID, SYSTEM, type Actor } from "../../access/actor.js";
import { ConflictError, FlowstoreError } from "../../errors.js";
import type { Page } from "../../resources/core/core.js";
import type { Ref } from "../../resources/model/ref.js";
import type { ResourceStore } from "../../resources/store.js";
import type { WorkflowSchema } from "../../workflow/schema.js";
import type { Served } from "./expose.js";
import { ResourceId } from "../../resources/model/wire.js";
import { PAGE_LIMIT } from "../../resources/model/wire.js";
import { PreconditionError } from "./envelope.js";
import type { Level } from "./intents.js";

export const LEVELS: readonly Level[] = ["project", "subproject", "workflowitem"];

/** The id parameters naming a resource of each level, outermost first. */
export const ID_FIELDS = {
  project: ["projectId"],
  subproject: ["projectId", "subprojectId"],
  workflowitem: ["projectId", "subprojectId", "workflowitemId"],
} as const satisfies Record<Level, readonly string[]>;

export type Ids = { projectId: string; subprojectId?: string; workflowitemId?: string };

/** The id fields of a level `L`; of a union of levels, those of any of them. */
type IdField<L extends Level> = (typeof ID_FIELDS)[L][number];
/** The id fields every level of `L` has (the levels nest: those of its outermost). */
type CommonIdField<L extends Level> = "project" extends L ? IdField<"project"> : "subproject" extends L ? IdField<"subproject"> : IdField<L>;
/**
 * The id properties of a level's schema, as types: each required for one level; for a union of levels
 * (a route declared per level in a loop), the ids every one of them has required, the others optional.
 */
export type IdProperties<L extends Level> = { [F in CommonIdField<L>]: typeof ResourceId } & { [F in Exclude<IdField<L>, CommonIdField<L>>]: TOptional<typeof ResourceId> };

/** `{projectId, …}` of a level plus `more`, every id required (TruBudget's querystrings and bodies). */
export function idsWith<L extends Level, P extends TProperties = Record<never, never>>(level: L, more: P = {} as P): TObject<IdProperties<L> & P> {
  const ids: TProperties = Object.fromEntries(ID_FIELDS[level].map((f) => [f, ResourceId]));
  return Type.Object({ ...ids, ...more } as IdProperties<L> & P, { additionalProperties: false });
}

export function refOf(level: Level, ids: Ids): Ref {
  return { type: level, ids: ID_FIELDS[level].map((f) => ids[f as keyof Ids]!) };
}

/**
 * Runs a domain call, renaming the field its errors name to where TruBudget's request carries it (the
 * domain names `data.assignee` of its own input; TruBudget's create sends it as `data.project.assignee`).
 */
export async function fieldsAt<T>(rename: (field: string) => string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    if (e instanceof FlowstoreError && e.field !== undefined) {
      const to = rename(e.field);
      if (to !== e.field) {
        const message = e.message.includes(e.field) ? e.message.split(e.field).join(to) : `${to}: ${e.message}`;
        Object.defineProperty(e, "field", { value: to });
        Object.defineProperty(e, "message", { value: message });
      }
    }
    throw e;
  }
}

/** Renames the domain's `data.x` (and a bare `x`) to `data.<under>.x`. */
export const under = (path: string) => (field: string) => (field.startsWith("data.") ? `data.${path}.${field.slice(5)}` : field === "data" ? `data.${path}` : field);

/** Every item of a paged read, page after page (TruBudget's lists are whole). */
export async function readAll<T>(page: (cursor: string | null, limit: number) => Promise<Page<T>>): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | null = null;
  do {
    const p: Page<T> = await page(cursor, PAGE_LIMIT.max);
    out.push(...p.items);
    cursor = p.nextCursor;
  } while (cursor !== null);
  return out;
}

/** The JSON items of a paged read of records, parsed. */
export const parsed = <T>(items: readonly Buffer[]): T[] => items.map((b) => JSON.parse(b.toString("utf8")) as T);

/**
 * TruBudget's `offset`/`limit` over a whole list in chronological order (its history and notification
 * lists): the offset counts from the start, or from the end when negative; no limit is everything.
 */
export function sliceOf<T>(items: readonly T[], offset: number, limit: number | undefined): T[] {
  const from = offset < 0 ? Math.max(0, items.length + offset) : offset;
  return items.slice(from, limit === undefined ? undefined : from + limit);
}

/** TruBudget's `offset` and `limit` query parameters (strings of integers; a limit is positive). */
export const OffsetLimit = {
  offset: Type.Optional(Type.Integer({ description: "index of the first entry; negative counts from the end" })),
  limit: Type.Optional(Type.Integer({ minimum: 1 })),
};

/** The given fields, each optional (TruBudget's optional fields, typed as flowstore declares them). */
export const optional = <T extends Record<string, TSchema>>(props: T): { [K in keyof T]: TOptional<T[K]> } =>
  Object.fromEntries(Object.entries(props).map(([k, v]) => [k, Type.Optional(v)])) as { [K in keyof T]: TOptional<T[K]> };

/**
 * TruBudget's root reads every project, subproject and workflowitem whole: its project_list.ts,
 * subproject_list.ts, workflowitem_list.ts and *_get.ts let "root" past every view check (root is the
 * node's operator there). On the adapter, root's reads of the three levels are the system actor's.
 * Only reads: flowstore checks root's writes as anyone's, so the intents root is shown stay its own
 * (`ownIntents`; TruBudget shows root every intent because it lets root write everywhere).
 */
export const readerOf = (actor: Actor): Actor => (actor.id === ROOT_ID && actor.system !== true ? SYSTEM : actor);

/**
 * Items read by `readerOf(actor)` with allowedIntents, with the allowedIntents `actor` holds: unchanged
 * when the reader was the actor itself; for root, each recomputed from the resource's permissions.
 */
export async function ownIntents(store: ResourceStore<WorkflowSchema>, actor: Actor, level: Level, parent: readonly string[], items: Served[]): Promise<Served[]> {
  if (readerOf(actor) === actor) return items;
  const all = store.schema.type(level).intents.all;
  return Promise.all(
    items.map(async (r) => {
      const permissions = await store.reads.listPermissions(SYSTEM, { type: level, ids: [...parent, r.id] });
      return { ...r, allowedIntents: all.filter((i) => allows(permissions, actor, i)) };
    }),
  );
}

/**
 * TruBudget's redacted workflowitem keeps its `rejectReason` and `tags` (its workflowitem.ts `redact()`);
 * flowstore's redacted record holds id, status and creation time only, so for each redacted item of
 * `items` these two fields are read from the record (as the system actor) into its data.
 */
export async function keptWhenRedacted(store: ResourceStore<WorkflowSchema>, parent: readonly [string, string], items: Served[]): Promise<Served[]> {
  return Promise.all(
    items.map(async (r) => {
      if (!r.redacted) return r;
      const { json } = await store.reads.getJson(SYSTEM, { type: "workflowitem", ids: [...parent, r.id] });
      const { data } = JSON.parse(json.toString("utf8")) as Served;
      return { ...r, data: { ...r.data, rejectReason: data.rejectReason, tags: data.tags } };
    }),
  );
}

/** TruBudget's rule: root (the node's operator) creates no project, subproject or workflowitem (a PreconditionError, 412). */
export function notRoot(actor: Actor, level: Level): void {
  if (actor.id === "root") throw new PreconditionError(`user 'root' is not allowed to create ${level}s`);
}

/** TruBudget's rule: one projected budget per organization and currency in a new project or subproject (AlreadyExists, 409). */
export function uniqueBudgets(budgets: readonly { organization: string; currencyCode: string }[] | undefined, field: string): void {
  const seen = new Set<string>();
  for (const [i, b] of (budgets ?? []).entries()) {
    const key = JSON.stringify([b.organization, b.currencyCode]);
    if (seen.has(key)) throw new ConflictError(`projected budget for ${b.organization} in ${b.currencyCode} already exists`, `${field}[${i}]`);
    seen.add(key);
  }
}
