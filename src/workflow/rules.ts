/**
 * The lifecycle rules of projects, subprojects and workflowitems, as pure functions over plain data.
 * Commands call them inside the write, with the state they read there; each throws a typed error that
 * names what is wrong, and nothing is written when one does.
 */
import { ConflictError, ForbiddenError, ValidationError } from "../errors.js";
import { copyPermissions, type Actor, type Permissions } from "../access/actor.js";
import { effectiveOrder, type OrderedChild } from "../resources/model/ordering.js";
import type { Envelope } from "../resources/model/record.js";
import type { TypeDecl } from "../resources/model/schema.js";
import type { ProjectedBudget } from "./schema.js";

type Data = Record<string, unknown>;

/** A closed resource cannot be changed. */
export function assertOpen(resource: Envelope): void {
  if (resource.data.status === "closed") {
    throw new ConflictError(`${resource.type} ${resource.id} is closed and cannot be changed`, "status");
  }
}

/** Fields an update may not touch: each has a command of its own (the type's `ownedFields`). */
export function assertUpdatable(decl: TypeDecl, patch: Data): void {
  for (const [field, { by }] of Object.entries(decl.ownedFields ?? {})) {
    if (field in patch) throw new ValidationError(`data.${field} cannot be updated; use ${by}`, `data.${field}`);
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

/**
 * Who may close a resource, and what else they need. The assignment rule is TruBudget's, for projects,
 * subprojects and workflowitems: the closer is the assignee, as a user or as a member of the assigned group;
 * for a workflowitem of a subproject with a validator, the validator, who must be the assignee as well.
 * Besides the assignment, the authority a close is checked under (by the command's authorization, before
 * this rule) is one of:
 *
 * - `intent` (flowstore's rule, the native API): the close intent `<type>.close`. Being assigned alone is
 *   not enough, and holding the close intent alone is not either (issue 29, finding 3).
 * - `assignment` (TruBudget's rule, its API): the view of the resource (`<type>.viewDetails`) alone.
 *   TruBudget has no close intent a user can be granted (its frontend grants an assignee the views and
 *   shows the close button to the assignee), so on its API the assignment is the authority; the view is
 *   required so that a caller who may not see the resource learns nothing of it (404).
 *
 * A closer who is not the assignee (or validator) is refused with a ForbiddenError on the field
 * `assignee` (TruBudget's adapter answers it as its PreconditionError, 412). The system actor (migrations,
 * operators) may close anything.
 */
export type CloseAuthority = "intent" | "assignment";

/** The intent a close is authorized under (see CloseAuthority). */
export function closeIntentOf(type: string, authority: CloseAuthority): string {
  return authority === "intent" ? `${type}.close` : `${type}.viewDetails`;
}

export function assertMayClose(actor: Actor, resource: Envelope, validator?: unknown): void {
  if (actor.system) return;
  if (typeof validator === "string" && validator !== "" && actor.id !== validator) {
    throw new ForbiddenError(`only the validator ${validator} may close workflowitems of this subproject`, "assignee");
  }
  const assignee = resource.data.assignee;
  if (typeof assignee !== "string" || (assignee !== actor.id && !actor.groups.includes(assignee))) {
    throw new ForbiddenError(`only the assignee${typeof assignee === "string" ? ` ${assignee}` : ""} may close ${resource.type} ${resource.id}`, "assignee");
  }
}

export interface CloseContext {
  actor: Actor;
  item: Envelope;
  subproject: Envelope;
  /** Every workflowitem of the subproject with its status, and the subproject's ordering. */
  siblings: (OrderedChild & { status: string })[];
  ordering: string[];
  rejectReason?: string;
  /** The time of the close (ISO 8601). */
  now: string;
}

/** Decides whether a workflowitem may be closed; returns the patch that closes it. */
export function decideCloseWorkflowitem(c: CloseContext): Data {
  assertMayClose(c.actor, c.item, c.subproject.data.validator);
  if (c.rejectReason === undefined && c.item.data.amountType !== "N/A") {
    for (const f of ["amount", "currency"] as const) {
      if (c.item.data[f] === undefined) {
        throw new ValidationError(`a workflowitem with amountType ${String(c.item.data.amountType)} needs data.${f} to be closed`, `data.${f}`);
      }
    }
  }
  if (c.subproject.data.workflowMode !== "unordered") {
    const order = effectiveOrder(c.ordering, c.siblings);
    for (const s of order) {
      if (s.id === c.item.id) break;
      if (s.status !== "closed") {
        throw new ConflictError(`workflowitem ${s.id} comes before ${c.item.id} in the ordered subproject and is still open`, "status");
      }
    }
  }
  // TruBudget sets the billing date to the time of closing when the item has an amount and none was set.
  const billingDate = c.item.data.amountType !== "N/A" && c.item.data.billingDate === undefined ? { billingDate: c.now } : {};
  return { status: "closed", closedAt: c.now, ...billingDate, ...(c.rejectReason === undefined ? {} : { rejectReason: c.rejectReason }) };
}

/**
 * The permissions a new child inherits from its parent, intent by intent as TruBudget maps them: the
 * parent's `<parent>.X` becomes the child's `<child>.X` where the child has that intent, and the
 * parent's create intent of the child becomes the child's create intent of its own children
 * (`project.createSubproject` → `subproject.createWorkflowitem`). Intents without a counterpart (a
 * subproject's budget and reorder intents for a workflowitem) are not inherited. They are added to the
 * creator's (who holds every intent).
 */
export function inheritPermissions(
  defaults: Permissions,
  parentType: string,
  childType: string,
  parentPermissions: Permissions,
  childIntents: readonly string[],
  createIntents: Readonly<Record<string, string>>,
): Permissions {
  const out = copyPermissions(defaults);
  const prefix = `${parentType}.`;
  for (const intent of Object.keys(parentPermissions)) {
    const mapped = createIntents[intent] ?? (intent.startsWith(prefix) ? `${childType}.${intent.slice(prefix.length)}` : null);
    if (!mapped || !childIntents.includes(mapped)) continue;
    const holders = (out[mapped] ??= []);
    for (const who of parentPermissions[intent]!) if (!holders.includes(who)) holders.push(who);
  }
  return out;
}

const LIST_INTENT = "workflowitem.list";

function add(perms: Permissions, intent: string, who: string): void {
  const list = (perms[intent] ??= []);
  if (!list.includes(who)) list.push(who);
}

/**
 * The permissions of a workflowitem once `assignee` is assigned to it by `issuer` (at creation too).
 * General: unchanged: assigning grants no intent (TruBudget leaves visibility to grants; issue 29,
 * finding 3: a holder of `workflowitem.assign` assigning itself must not gain view or close).
 * Restricted (TruBudget's): the assignee receives every workflowitem intent and the issuer, unless it is
 * the assignee, keeps only `workflowitem.list` (assigning one needs the grant intent, commands.ts).
 */
export function assignedPermissions(perms: Permissions, type: unknown, issuer: Actor, assignee: string, allIntents: readonly string[]): Permissions {
  const out = copyPermissions(perms);
  if (type !== "restricted") return out;
  for (const i of allIntents) add(out, i, assignee);
  if (!issuer.system && issuer.id !== assignee) {
    for (const i of allIntents) if (i !== LIST_INTENT) out[i] = (out[i] ?? []).filter((who) => who !== issuer.id);
  }
  return out;
}

/** The type a new workflowitem gets: the subproject's fixed type, which a different one given refuses; else the given one, else general. */
export function workflowitemTypeFor(subproject: Envelope, given: unknown): "general" | "restricted" {
  const fixed = subproject.data.workflowitemType as "general" | "restricted" | undefined;
  if (fixed !== undefined && given !== undefined && given !== fixed) {
    throw new ValidationError(`subproject ${subproject.id} only takes ${fixed} workflowitems`, "data.workflowitemType");
  }
  return fixed ?? (given === "restricted" ? "restricted" : "general");
}

/**
 * A workflowitem update as TruBudget applies it: `additionalData` is merged key by key (a key set to
 * null is removed), and an update to amountType `N/A` clears the fields that only make sense with an
 * amount. Returns the patch to apply (a field set to null is removed).
 */
export function updatePatch(current: Envelope, patch: Data, amountFields: readonly string[]): Data {
  const out: Data = { ...patch };
  if (patch.additionalData !== undefined && patch.additionalData !== null) {
    if (typeof patch.additionalData !== "object" || Array.isArray(patch.additionalData)) throw new ValidationError("data.additionalData must be an object", "data.additionalData");
    const merged: Data = { ...((current.data.additionalData as Data | undefined) ?? {}) };
    for (const [k, v] of Object.entries(patch.additionalData as Data)) {
      if (v === null) delete merged[k];
      else merged[k] = v;
    }
    out.additionalData = merged;
  }
  if (patch.amountType === "N/A") for (const f of amountFields) if (patch[f] === undefined) out[f] = null;
  return out;
}
