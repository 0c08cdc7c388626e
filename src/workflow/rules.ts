/**
 * The lifecycle rules of projects, subprojects and workflowitems, as pure functions over plain data.
 * Commands call them inside the write, with the state they read there; each throws a typed error that
 * names what is wrong, and nothing is written when one does.
 */
import { ConflictError, ForbiddenError, ValidationError } from "../errors.js";
import type { Actor, Permissions } from "../resources/actor.js";
import { effectiveOrder, type OrderedChild } from "../resources/ordering.js";
import type { Envelope } from "../resources/record.js";
import type { ProjectedBudget } from "./schema.js";

type Data = Record<string, unknown>;

/** A closed resource cannot be changed. */
export function assertOpen(resource: Envelope): void {
  if (resource.data.status === "closed") {
    throw new ConflictError(`${resource.type} ${resource.id} is closed and cannot be changed`, "status");
  }
}

/** Fields an update may not touch: each has a command of its own. */
export function assertUpdatable(patch: Data): void {
  for (const [field, command] of [
    ["status", "close"],
    ["assignee", "assign"],
    ["projectedBudgets", "the projected budget commands"],
    ["rejectReason", "close"],
  ] as const) {
    if (field in patch) throw new ValidationError(`data.${field} cannot be updated; use ${command}`, `data.${field}`);
  }
}

export function assertChildrenClosed(parent: Envelope, children: { id: string; status: string }[], childType: string): void {
  const open = children.find((c) => c.status !== "closed");
  if (open) {
    throw new ConflictError(`${parent.type} ${parent.id} has an open ${childType} (${open.id}); close every ${childType} first`, "status");
  }
}

/** Adds or replaces the projected budget of an organization in a currency. */
export function withProjectedBudget(budgets: ProjectedBudget[] | undefined, b: ProjectedBudget): ProjectedBudget[] {
  const rest = (budgets ?? []).filter((x) => !(x.organization === b.organization && x.currencyCode === b.currencyCode));
  return [...rest, b];
}

export function withoutProjectedBudget(budgets: ProjectedBudget[] | undefined, organization: string, currencyCode: string): ProjectedBudget[] {
  const all = budgets ?? [];
  const rest = all.filter((x) => !(x.organization === organization && x.currencyCode === currencyCode));
  if (rest.length === all.length) {
    throw new ValidationError(`there is no projected budget of ${organization} in ${currencyCode}`, "organization");
  }
  return rest;
}

export interface CloseContext {
  actor: Actor;
  item: Envelope;
  subproject: Envelope;
  /** Every workflowitem of the subproject with its status, and the subproject's ordering. */
  siblings: (OrderedChild & { status: string })[];
  ordering: string[];
  rejectReason?: string;
}

/** Decides whether a workflowitem may be closed; returns the patch that closes it. */
export function decideCloseWorkflowitem(c: CloseContext): Data {
  assertOpen(c.item);
  const validator = c.subproject.data.validator;
  if (typeof validator === "string" && validator !== "" && !c.actor.system && c.actor.id !== validator) {
    throw new ForbiddenError(`only the validator ${validator} may close workflowitems of subproject ${c.subproject.id}`);
  }
  if (c.rejectReason === undefined && c.item.data.amountType !== "N/A") {
    for (const f of ["amount", "currency"] as const) {
      if (c.item.data[f] === undefined) {
        throw new ValidationError(`a workflowitem with amountType ${String(c.item.data.amountType)} needs data.${f} to be closed`, `data.${f}`);
      }
    }
  }
  if (c.subproject.data.workflowMode === "ordered") {
    const order = effectiveOrder(c.ordering, c.siblings);
    for (const s of order) {
      if (s.id === c.item.id) break;
      if (s.status !== "closed") {
        throw new ConflictError(`workflowitem ${s.id} comes before ${c.item.id} in the ordered subproject and is still open`, "status");
      }
    }
  }
  return c.rejectReason === undefined ? { status: "closed" } : { status: "closed", rejectReason: c.rejectReason };
}

const VIEW_INTENTS = ["workflowitem.list", "workflowitem.viewDetails", "workflowitem.viewHistory"];

/**
 * Who may see a new workflowitem. In a general subproject, everyone who may view the subproject; in a
 * restricted one, only its creator and its assignee (and whoever is granted later).
 */
export function workflowitemPermissions(defaults: Permissions, subproject: { envelope: Envelope; permissions: Permissions }, assignee: string | undefined): Permissions {
  const perms: Permissions = structuredClone(defaults);
  const add = (intent: string, who: string): void => {
    const list = (perms[intent] ??= []);
    if (!list.includes(who)) list.push(who);
  };
  if (subproject.envelope.data.workflowitemType !== "restricted") {
    for (const who of subproject.permissions["subproject.viewDetails"] ?? []) for (const i of VIEW_INTENTS) add(i, who);
  }
  if (assignee) for (const i of VIEW_INTENTS) add(i, assignee);
  return perms;
}

/** Permissions after assigning a workflowitem: the assignee sees it; in restricted mode the previous one no longer does. */
export function reassignPermissions(perms: Permissions, restricted: boolean, previous: string | undefined, next: string, creator: string): Permissions {
  const out: Permissions = structuredClone(perms);
  for (const i of VIEW_INTENTS) {
    const list = new Set(out[i] ?? []);
    if (restricted && previous && previous !== creator && previous !== next) list.delete(previous);
    list.add(next);
    out[i] = [...list];
  }
  return out;
}
