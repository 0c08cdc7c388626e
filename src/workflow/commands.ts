/**
 * The workflow commands: what a user of a TruBudget-style system does with projects, subprojects and
 * workflowitems. Each command checks its intent and rules inside the write of the project's partition
 * (through ResourceStore.writes: mutate, create), so checks and writes are one atomic step. Reads are one range
 * read each; nothing replays history.
 */
import { ForbiddenError, NotFoundError, ValidationError } from "../errors.js";
import { allows, type Actor } from "../access/actor.js";
import type { Permissions } from "../access/actor.js";
import type { ResourceEvent } from "../resources/model/events.js";
import type { Envelope } from "../resources/model/record.js";
import type { Ref } from "../resources/model/ref.js";
import type { HistoryOptions, Page, PageOptions, ResourceStore } from "../resources/store.js";
import type { Documents } from "./documents.js";
import { DEFAULT_EXCHANGE_RATE, normalizeAmount } from "./money.js";
import {
  AMOUNT_FIELDS,
  projectRef,
  REJECT_REASON_MAX,
  subprojectRef,
  workflowitemRef,
  type ProjectData,
  type ProjectedBudget,
  type SubprojectData,
  type WorkflowitemData,
  type WorkflowSchema,
} from "./schema.js";
import {
  assertChildrenClosed,
  assertMayClose,
  type CloseAuthority,
  closeIntentOf,
  assertOpen,
  assertUpdatable,
  assignedPermissions,
  decideCloseWorkflowitem,
  inheritPermissions,
  updatePatch,
  withoutProjectedBudget,
  withProjectedBudget,
  workflowitemTypeFor,
} from "./rules.js";

export { projectRef, subprojectRef, workflowitemRef };

type Without<T, K extends keyof T> = Omit<T, K>;
export type ProjectInput = Without<ProjectData, "status"> & { id?: string };
export type SubprojectInput = Without<SubprojectData, "status"> & { id?: string };
export type WorkflowitemInput = Without<WorkflowitemData, "status" | "rejectReason" | "closedAt"> & { id?: string };
type BudgetType = "project" | "subproject";

/**
 * Where assignees are looked up (the identity domain): an assignee must be a group, or a user that is
 * enabled (TruBudget refuses to assign a disabled user). Without one, assignees are not checked.
 */
/** How a close is authorized (rules.ts CloseAuthority): the close intent (default) or TruBudget's assignment rule. */
export interface CloseOptions {
  readonly authority?: CloseAuthority;
}

export interface AssigneeDirectory {
  exists(id: string): Promise<boolean>;
  getUser(id: string): Promise<{ enabled: boolean }>;
}

/**
 * How a migration (the system actor only) brings a resource over from another system: its original
 * creation time and creator, and whether (and when) it was closed. The event log records the import as
 * it happened; the resource's meta carries the original values.
 */
export interface Origin {
  createdAt: string;
  createdBy: string;
  /** The time it was closed (closed resources are created closed). */
  closedAt?: string;
}

export interface CreateCommandOptions {
  origin?: Origin;
  /**
   * Store the assignee as given, without looking it up (TruBudget's rule for subprojects: only a
   * workflowitem's creation checks its assignee). Taken by subproject creation only.
   */
  uncheckedAssignee?: boolean;
}

/** Parent → child intents that do not map by name (TruBudget's mapping). */
const CREATE_INTENTS: Record<string, string> = { "project.createSubproject": "subproject.createWorkflowitem" };

function splitId<T extends { id?: string }>(input: T): [string | undefined, Omit<T, "id">] {
  if (input === null || typeof input !== "object" || Array.isArray(input)) throw new ValidationError("the body must be an object of fields", "data");
  const { id, ...rest } = input;
  return [id, rest];
}

/** The id at `i` of a parent's ref (a declared child type always has its parent). */
function idOf(parent: Ref | null, i: number): string {
  const id = parent?.ids[i];
  if (id === undefined) throw new ValidationError("the parent is required", "parent");
  return id;
}

export class Workflow {
  constructor(
    readonly store: ResourceStore<WorkflowSchema>,
    readonly directory?: AssigneeDirectory,
    /** Whose file references a delete releases (the documents of what it deletes). */
    readonly documents?: Pick<Documents, "deleteReleasing">,
  ) {}

  // ------------------------------------------------------------------ create

  /**
   * The create command of each declared type, keyed by its name (what a declared create route runs):
   * a body of fields (and an optional id) under the parent's ref. The fields are checked by the type's
   * declaration when the store writes them; the typed commands below are the same commands.
   */
  readonly create: {
    readonly [T in keyof WorkflowSchema & string]: (actor: Actor, parent: Ref | null, body: Record<string, unknown>, options?: CreateCommandOptions) => Promise<Envelope>;
  } = {
    project: (actor, _parent, body, options) => this.createProject(actor, body as ProjectInput, options),
    subproject: (actor, parent, body, options) => this.createSubproject(actor, idOf(parent, 0), body as SubprojectInput, options),
    workflowitem: (actor, parent, body, options) => this.createWorkflowitem(actor, idOf(parent, 0), idOf(parent, 1), body as WorkflowitemInput, options),
  };

  async createProject(actor: Actor, input: ProjectInput, options: CreateCommandOptions = {}): Promise<Envelope<ProjectData>> {
    const [id, fields] = splitId(input);
    const assignee = fields.assignee ?? actor.id;
    if (assignee !== actor.id && this.directory) await this.#assertAssignable(assignee, "data.assignee");
    const o = this.#origin(actor, options.origin);
    return this.store.writes.create(actor, "project", null, { ...fields, assignee, status: o.status }, { id, meta: o.meta });
  }

  async createSubproject(actor: Actor, p: string, input: SubprojectInput, options: CreateCommandOptions = {}): Promise<Envelope<SubprojectData>> {
    const [id, fields] = splitId(input);
    const assignee = fields.assignee ?? actor.id;
    if (assignee !== actor.id && this.directory && options.uncheckedAssignee !== true) await this.#assertAssignable(assignee, "data.assignee");
    if (fields.validator !== undefined) await this.#assertAssignable(fields.validator, "data.validator");
    const o = this.#origin(actor, options.origin);
    const intents = this.store.schema.type("subproject").intents.all;
    return this.store.writes.create(
      actor,
      "subproject",
      projectRef(p),
      { workflowMode: "ordered", ...fields, assignee, status: o.status },
      {
        id,
        meta: o.meta,
        // The open check is decide's (not a `guard`'s): a guard is handed a read context built for it, which these checks never read.
        decide: ({ defaults, parent }) => {
          assertOpen(parent!.envelope);
          return { permissions: inheritPermissions(defaults, "project", "subproject", parent!.permissions, intents, CREATE_INTENTS) };
        },
      },
    );
  }

  async createWorkflowitem(actor: Actor, p: string, s: string, input: WorkflowitemInput, options: CreateCommandOptions = {}): Promise<Envelope<WorkflowitemData>> {
    const [id, given] = splitId(input);
    const fields: Record<string, unknown> = { ...given };
    if (fields.amount !== undefined) fields.amount = normalizeAmount(fields.amount);
    if (fields.amountType !== "N/A" && fields.amountType !== undefined && fields.exchangeRate === undefined) fields.exchangeRate = DEFAULT_EXCHANGE_RATE;
    const assignee = (fields.assignee as string | undefined) ?? actor.id;
    if (assignee !== actor.id && this.directory) await this.#assertAssignable(assignee, "data.assignee");
    const o = this.#origin(actor, options.origin);
    const closed = o.status === "closed" ? { closedAt: options.origin!.closedAt ?? options.origin!.createdAt } : {};
    const intents = this.store.schema.type("workflowitem").intents.all;
    return this.store.writes.create(actor, "workflowitem", subprojectRef(p, s), { ...fields, ...closed, assignee, status: o.status } as WorkflowitemData, {
      id,
      meta: o.meta,
      // The item's type follows its subproject's (as it is inside the write), and so do the permissions it starts with.
      // The open check is here too, not in a `guard` (see createSubproject).
      // `given.defaults` is read only when the inherited permissions are computed (once per group): the store makes them when asked.
      decide: (given) => {
        const parent = given.parent;
        assertOpen(parent!.envelope);
        const type = workflowitemTypeFor(parent!.envelope, fields.workflowitemType);
        const inherited = this.#inherited(actor, parent!.permissions, () =>
          inheritPermissions(given.defaults, "subproject", "workflowitem", parent!.permissions, intents, CREATE_INTENTS),
        );
        return { set: { workflowitemType: type }, permissions: assignedPermissions(inherited, type, actor, assignee, intents) };
      },
    });
  }

  /**
   * The permissions a workflowitem inherits from its subproject's, per creator: computed once per group of
   * creates under one subproject (the store hands every create of a group the same frozen permissions
   * object, writes.ts). Each caller copies what it is given (assignedPermissions does), so it is shared.
   */
  readonly #inheritedOf = new WeakMap<Permissions, Map<string, Permissions>>();

  #inherited(actor: Actor, parent: Permissions, compute: () => Permissions): Permissions {
    if (!Object.isFrozen(parent)) return compute();
    let byActor = this.#inheritedOf.get(parent);
    if (!byActor) this.#inheritedOf.set(parent, (byActor = new Map()));
    const who = actor.system ? "" : `u${actor.id}`;
    let inherited = byActor.get(who);
    if (!inherited) byActor.set(who, (inherited = compute()));
    return inherited;
  }

  /** The status and meta of a new resource: open and now, or, for a migration by the system actor, as it was. */
  #origin(actor: Actor, origin: Origin | undefined): { status: "open" | "closed"; meta?: { createdAt: string; createdBy: string } } {
    if (origin === undefined) return { status: "open" };
    if (!actor.system) throw new ForbiddenError("only the system actor may create a resource with its original creation (a migration)");
    for (const f of ["createdAt", ...(origin.closedAt !== undefined ? ["closedAt"] : [])] as ("createdAt" | "closedAt")[]) {
      if (typeof origin[f] !== "string" || Number.isNaN(Date.parse(origin[f]!))) throw new ValidationError(`origin.${f} must be an ISO 8601 date-time`, `origin.${f}`);
    }
    if (typeof origin.createdBy !== "string" || origin.createdBy === "") throw new ValidationError("origin.createdBy must name an identity", "origin.createdBy");
    return {
      status: origin.closedAt !== undefined ? "closed" : "open",
      meta: { createdAt: new Date(origin.createdAt).toISOString(), createdBy: origin.createdBy },
    };
  }

  /** An assignee (or validator) must be a group or an enabled user (TruBudget's rule); the acting user itself is one by definition. */
  async #assertAssignable(id: unknown, field: string): Promise<void> {
    if (!this.directory) return;
    if (typeof id !== "string" || id.length === 0 || id.length > 128) throw new ValidationError(`${field} must be an identity id`, field);
    if (!(await this.directory.exists(id))) throw new ValidationError(`${field}: there is no user or group ${id}`, field);
    const user = await this.directory.getUser(id).catch((e: unknown) => {
      if (e instanceof NotFoundError || e instanceof ValidationError) return null; // a group
      throw e;
    });
    if (user && !user.enabled) throw new ValidationError(`${field}: the user ${id} is disabled and cannot be assigned`, field);
  }

  // ------------------------------------------------------------------ read

  listProjects(actor: Actor, options: { cursor?: string | null; limit?: number } = {}): Promise<Page<Buffer>> {
    return this.store.reads.listChildrenJson(actor, null, "project", options);
  }

  async projectDetails(actor: Actor, p: string): Promise<{ project: Envelope<ProjectData>; subprojects: Page<Envelope<SubprojectData> & { redacted?: true }> }> {
    const project = await this.store.reads.get(actor, { ...projectRef(p), type: "project" });
    const subprojects = await this.store.reads.listChildren(actor, projectRef(p), "subproject", { limit: 10_000 });
    return { project, subprojects };
  }

  async subprojectDetails(
    actor: Actor,
    p: string,
    s: string,
  ): Promise<{ subproject: Envelope<SubprojectData>; workflowitems: Page<Envelope<WorkflowitemData> & { redacted?: true }> }> {
    const subproject = await this.store.reads.get(actor, { ...subprojectRef(p, s), type: "subproject" });
    const workflowitems = await this.store.reads.listOrdered<"workflowitem">(actor, subprojectRef(p, s), { limit: 10_000 });
    return { subproject, workflowitems };
  }

  /**
   * Workflowitems of a subproject in effective order, as one JSON page ready to send (cached per version).
   * `sequence: "closedFirst"` gives TruBudget's order (closed first, by close time); the default is seed 002's.
   */
  listWorkflowitemsPage(actor: Actor, p: string, s: string, options: PageOptions = {}) {
    return this.store.reads.listOrderedPage(actor, subprojectRef(p, s), options);
  }

  /** Workflowitems of a subproject in effective order, as JSON bytes (for serving). */
  listWorkflowitemsJson(actor: Actor, p: string, s: string, options: PageOptions = {}) {
    return this.store.reads.listOrderedJson(actor, subprojectRef(p, s), options);
  }

  /** A resource's events, filtered as TruBudget's history filter does (publisher, since, until, type). */
  history(actor: Actor, ref: Ref, options: HistoryOptions = {}): Promise<Page<ResourceEvent>> {
    return this.store.audit.history(actor, ref, options);
  }

  /** `history` as the stored event bytes (for serving: parsed only where a filter or a redaction needs it). */
  historyJson(actor: Actor, ref: Ref, options: HistoryOptions = {}) {
    return this.store.audit.historyJson(actor, ref, options);
  }

  /** Whether the actor may view the resource now (false when it does not exist). */
  canView(actor: Actor, ref: Ref): Promise<boolean> {
    return this.store.reads.canView(actor, ref);
  }

  /** Subscribes to every event committed to a workflow partition (the change feed); returns the unsubscribe. */
  onChange(listener: (events: readonly ResourceEvent[]) => void): () => void {
    return this.store.onChange((_partition, events) => listener(events));
  }

  // ------------------------------------------------------------------ update, assign

  async update(actor: Actor, ref: Ref, patch: Record<string, unknown>, options: { ifVersion?: number } = {}): Promise<Envelope> {
    if (patch === null || typeof patch !== "object" || Array.isArray(patch)) throw new ValidationError("an update is an object of fields", "data");
    const t = this.store.schema.type(ref.type);
    assertUpdatable(t.decl, patch);
    return this.store.writes.mutate(actor, ref, {
      intent: t.intents.update,
      verb: "updated",
      ifVersion: options.ifVersion,
      change: (current) => {
        assertOpen(current);
        const next = updatePatch(current, patch, AMOUNT_FIELDS);
        if (next.amount !== undefined) next.amount = normalizeAmount(next.amount);
        return { patch: next };
      },
    });
  }

  async assign(actor: Actor, ref: Ref, assignee: string, options: { ifVersion?: number } = {}): Promise<Envelope> {
    if (typeof assignee !== "string" || assignee.length === 0 || assignee.length > 128) throw new ValidationError("assignee must be an identity id", "assignee");
    await this.#assertAssignable(assignee, "assignee");
    const intents = this.store.schema.type(ref.type).intents;
    return this.store.writes.mutate(actor, ref, {
      intent: `${ref.type}.assign`,
      verb: "assigned",
      ifVersion: options.ifVersion,
      change: async (current, ctx) => {
        assertOpen(current);
        if (ref.type !== "workflowitem") return { patch: { assignee } };
        const type = current.data.workflowitemType;
        // Restricted (TruBudget's): the reassignment grants and revokes, so it needs the grant intent too.
        if (type === "restricted" && !actor.system && !allows(ctx.permissions, actor, intents.grantPermission)) {
          throw new ForbiddenError(`${actor.id} lacks the intent ${intents.grantPermission} (assigning a restricted workflowitem grants it)`);
        }
        return { patch: { assignee }, permissions: assignedPermissions(ctx.permissions, type, actor, assignee, intents.all) };
      },
    });
  }

  // ------------------------------------------------------------------ budgets

  setProjectedBudget(actor: Actor, ref: Ref & { type: BudgetType }, budget: ProjectedBudget): Promise<Envelope> {
    return this.store.writes.mutate(actor, ref, {
      intent: `${ref.type}.budget.updateProjected`,
      verb: "projected_budget_updated",
      change: (current) => {
        assertOpen(current);
        if (budget === null || typeof budget !== "object") throw new ValidationError("a projected budget is {organization, value, currencyCode}", "budget");
        return { patch: { projectedBudgets: withProjectedBudget(current.data.projectedBudgets as ProjectedBudget[] | undefined, budget) } };
      },
    });
  }

  deleteProjectedBudget(actor: Actor, ref: Ref & { type: BudgetType }, organization: string, currencyCode: string): Promise<Envelope> {
    return this.store.writes.mutate(actor, ref, {
      intent: `${ref.type}.budget.deleteProjected`,
      verb: "projected_budget_deleted",
      change: (current) => {
        assertOpen(current);
        return { patch: { projectedBudgets: withoutProjectedBudget(current.data.projectedBudgets as ProjectedBudget[] | undefined, organization, currencyCode) } };
      },
    });
  }

  // ------------------------------------------------------------------ close

  closeProject(actor: Actor, p: string, options: CloseOptions = {}): Promise<Envelope> {
    return this.#closeParent(actor, projectRef(p), "subproject", options);
  }

  closeSubproject(actor: Actor, p: string, s: string, options: CloseOptions = {}): Promise<Envelope> {
    return this.#closeParent(actor, subprojectRef(p, s), "workflowitem", options);
  }

  /**
   * Closes a project or subproject: by its assignee under the close authority (rules.ts: the close intent
   * by default, the view on TruBudget's API), once every child is closed; closing a closed one changes
   * nothing. The intent is checked first, so a caller who may not know of the resource gets the 404 a
   * missing one gets, and one who lacks it a 403 that names neither the assignee nor the status (issue 29,
   * finding 7).
   */
  #closeParent(actor: Actor, ref: Ref, childType: string, { authority = "intent" }: CloseOptions): Promise<Envelope> {
    return this.store.writes.mutate(actor, ref, {
      intent: closeIntentOf(ref.type, authority),
      verb: "closed",
      change: async (current, ctx) => {
        if (current.data.status === "closed") return { unchanged: true };
        assertMayClose(actor, current);
        assertChildrenClosed(current, await ctx.children(childType), childType);
        return { patch: { status: "closed" } };
      },
    });
  }

  async closeWorkflowitem(actor: Actor, p: string, s: string, w: string, options: CloseOptions & { rejectReason?: string } = {}): Promise<Envelope> {
    const { rejectReason, authority = "intent" } = options;
    if (rejectReason !== undefined && (typeof rejectReason !== "string" || rejectReason.length === 0 || rejectReason.length > REJECT_REASON_MAX)) {
      throw new ValidationError(`rejectReason must be a non-empty text of at most ${REJECT_REASON_MAX} characters`, "rejectReason");
    }
    return this.store.writes.mutate(actor, workflowitemRef(p, s, w), {
      intent: closeIntentOf("workflowitem", authority),
      verb: "closed",
      change: async (item, ctx) => {
        if (item.data.status === "closed") return { unchanged: true };
        const subproject = (await ctx.parent())!;
        const ordered = subproject.data.workflowMode !== "unordered";
        const [siblings, ordering] = ordered ? await Promise.all([ctx.siblings(), ctx.siblingOrdering()]) : [[], []];
        return { patch: decideCloseWorkflowitem({ actor, item, subproject, siblings, ordering, rejectReason, now: ctx.now }) };
      },
    });
  }

  // ------------------------------------------------------------------ ordering, permissions, delete

  reorderWorkflowitems(actor: Actor, p: string, s: string, ordering: readonly string[], options: { ifVersion?: number } = {}): Promise<Envelope> {
    return this.store.writes.setOrdering(actor, subprojectRef(p, s), ordering, { ...options, guard: assertOpen });
  }

  listPermissions(actor: Actor, ref: Ref): Promise<Permissions> {
    return this.store.reads.listPermissions(actor, ref);
  }

  grant(actor: Actor, ref: Ref, intent: string, identity: string): Promise<Envelope> {
    return this.store.writes.grant(actor, ref, intent, identity);
  }

  revoke(actor: Actor, ref: Ref, intent: string, identity: string): Promise<Envelope> {
    return this.store.writes.revoke(actor, ref, intent, identity);
  }

  /** Deletes a resource and everything under it; with documents, releases their content's references (documents.ts). */
  delete(actor: Actor, ref: Ref, options: { ifVersion?: number } = {}): Promise<void> {
    if (!this.documents) return this.store.lifecycle.delete(actor, ref, options);
    return this.documents.deleteReleasing(ref, (ifChainAt) => this.store.lifecycle.delete(actor, ref, { ...options, ifChainAt }));
  }
}
