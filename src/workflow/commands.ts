/**
 * The workflow commands: what a user of a TruBudget-style system does with projects, subprojects and
 * workflowitems. Each command checks its intent and rules inside the write of the project's partition
 * (through ResourceStore.mutate/create), so checks and writes are one atomic step. Reads are one range
 * read each; nothing replays history.
 */
import { ValidationError } from "../errors.js";
import type { Actor, Permissions } from "../resources/actor.js";
import type { ResourceEvent } from "../resources/events.js";
import { childrenPrefix, locate, orderingKey, stateKey, type Ref } from "../resources/keys.js";
import { RecordView, type Envelope } from "../resources/record.js";
import type { Page, ResourceStore } from "../resources/store.js";
import type { ProjectData, ProjectedBudget, SubprojectData, WorkflowitemData, WorkflowSchema } from "./schema.js";
import {
  assertChildrenClosed,
  assertOpen,
  assertUpdatable,
  decideCloseWorkflowitem,
  reassignPermissions,
  withoutProjectedBudget,
  withProjectedBudget,
  workflowitemPermissions,
} from "./rules.js";

export const projectRef = (p: string): Ref => ({ type: "project", ids: [p] });
export const subprojectRef = (p: string, s: string): Ref => ({ type: "subproject", ids: [p, s] });
export const workflowitemRef = (p: string, s: string, w: string): Ref => ({ type: "workflowitem", ids: [p, s, w] });

type Without<T, K extends keyof T> = Omit<T, K>;
export type ProjectInput = Without<ProjectData, "status"> & { id?: string };
export type SubprojectInput = Without<SubprojectData, "status"> & { id?: string };
export type WorkflowitemInput = Without<WorkflowitemData, "status" | "rejectReason"> & { id?: string };
type BudgetType = "project" | "subproject";

function splitId<T extends { id?: string }>(input: T): [string | undefined, Omit<T, "id">] {
  if (input === null || typeof input !== "object" || Array.isArray(input)) throw new ValidationError("the body must be an object of fields", "data");
  const { id, ...rest } = input;
  return [id, rest];
}

export class Workflow {
  constructor(readonly store: ResourceStore<WorkflowSchema>) {}

  // ------------------------------------------------------------------ create

  async createProject(actor: Actor, input: ProjectInput): Promise<Envelope<ProjectData>> {
    const [id, fields] = splitId(input);
    return this.store.create(actor, "project", null, { ...fields, assignee: fields.assignee ?? actor.id, status: "open" }, { id });
  }

  async createSubproject(actor: Actor, p: string, input: SubprojectInput): Promise<Envelope<SubprojectData>> {
    const [id, fields] = splitId(input);
    return this.store.create(
      actor,
      "subproject",
      projectRef(p),
      { workflowitemType: "general", workflowMode: "unordered", ...fields, assignee: fields.assignee ?? actor.id, status: "open" },
      { id, guard: (parent) => assertOpen(parent!.envelope) },
    );
  }

  async createWorkflowitem(actor: Actor, p: string, s: string, input: WorkflowitemInput): Promise<Envelope<WorkflowitemData>> {
    const [id, fields] = splitId(input);
    const assignee = fields.assignee ?? actor.id;
    return this.store.create(actor, "workflowitem", subprojectRef(p, s), { ...fields, assignee, status: "open" }, {
      id,
      guard: (parent) => assertOpen(parent!.envelope),
      initialPermissions: (defaults, parent) => workflowitemPermissions(defaults, parent!, assignee),
    });
  }

  // ------------------------------------------------------------------ read

  listProjects(actor: Actor, options: { cursor?: string | null; limit?: number } = {}): Promise<Page<Buffer>> {
    return this.store.listChildrenJson(actor, null, "project", options);
  }

  async projectDetails(actor: Actor, p: string): Promise<{ project: Envelope<ProjectData>; subprojects: Page<Envelope<SubprojectData> & { redacted?: true }> }> {
    const project = await this.store.get(actor, { ...projectRef(p), type: "project" });
    const subprojects = await this.store.listChildren(actor, projectRef(p), "subproject", { limit: 10_000 });
    return { project, subprojects };
  }

  async subprojectDetails(actor: Actor, p: string, s: string): Promise<{ subproject: Envelope<SubprojectData>; workflowitems: Page<Envelope<WorkflowitemData> & { redacted?: true }> }> {
    const subproject = await this.store.get(actor, { ...subprojectRef(p, s), type: "subproject" });
    const workflowitems = await this.store.listOrdered<"workflowitem">(actor, subprojectRef(p, s), { limit: 10_000 });
    return { subproject, workflowitems };
  }

  /** Workflowitems of a subproject in effective order, as JSON bytes (for serving). */
  listWorkflowitemsJson(actor: Actor, p: string, s: string, options: { cursor?: string | null; limit?: number } = {}) {
    return this.store.listOrderedJson(actor, subprojectRef(p, s), options);
  }

  history(actor: Actor, ref: Ref, options: { cursor?: string | null; limit?: number; reverse?: boolean } = {}): Promise<Page<ResourceEvent>> {
    return this.store.history(actor, ref, options);
  }

  // ------------------------------------------------------------------ update, assign

  async update(actor: Actor, ref: Ref, patch: Record<string, unknown>, options: { ifVersion?: number } = {}): Promise<Envelope> {
    if (patch === null || typeof patch !== "object" || Array.isArray(patch)) throw new ValidationError("an update is an object of fields", "data");
    assertUpdatable(patch);
    const t = this.store.schema.type(ref.type);
    return this.store.mutate(actor, ref, {
      intent: t.intents.update,
      verb: "updated",
      ifVersion: options.ifVersion,
      change: (current) => {
        assertOpen(current);
        return { patch };
      },
    });
  }

  async assign(actor: Actor, ref: Ref, assignee: string, options: { ifVersion?: number } = {}): Promise<Envelope> {
    if (typeof assignee !== "string" || assignee.length === 0 || assignee.length > 128) throw new ValidationError("assignee must be an identity id", "assignee");
    return this.store.mutate(actor, ref, {
      intent: `${ref.type}.assign`,
      verb: "assigned",
      ifVersion: options.ifVersion,
      change: async (current, tx, _l, perms) => {
        assertOpen(current);
        if (ref.type !== "workflowitem") return { patch: { assignee } };
        const sub = new RecordView((await tx.get(stateKey(locate(this.store.schema, subprojectRef(ref.ids[0]!, ref.ids[1]!)))))!).envelope();
        const permissions: Permissions = reassignPermissions(
          perms,
          sub.data.workflowitemType === "restricted",
          current.data.assignee as string | undefined,
          assignee,
          current.meta.createdBy,
        );
        return { patch: { assignee }, permissions };
      },
    });
  }

  // ------------------------------------------------------------------ budgets

  setProjectedBudget(actor: Actor, ref: Ref & { type: BudgetType }, budget: ProjectedBudget): Promise<Envelope> {
    return this.store.mutate(actor, ref, {
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
    return this.store.mutate(actor, ref, {
      intent: `${ref.type}.budget.deleteProjected`,
      verb: "projected_budget_deleted",
      change: (current) => {
        assertOpen(current);
        return { patch: { projectedBudgets: withoutProjectedBudget(current.data.projectedBudgets as ProjectedBudget[] | undefined, organization, currencyCode) } };
      },
    });
  }

  // ------------------------------------------------------------------ close

  closeProject(actor: Actor, p: string): Promise<Envelope> {
    return this.#closeParent(actor, projectRef(p), "subproject");
  }

  closeSubproject(actor: Actor, p: string, s: string): Promise<Envelope> {
    return this.#closeParent(actor, subprojectRef(p, s), "workflowitem");
  }

  #closeParent(actor: Actor, ref: Ref, childType: string): Promise<Envelope> {
    return this.store.mutate(actor, ref, {
      intent: `${ref.type}.close`,
      verb: "closed",
      change: async (current, tx, l) => {
        assertOpen(current);
        const children = await tx.scanPrefix(childrenPrefix(l, childType));
        assertChildrenClosed(current, children.map((c) => new RecordView(c.value)), childType);
        return { patch: { status: "closed" } };
      },
    });
  }

  async closeWorkflowitem(actor: Actor, p: string, s: string, w: string, options: { rejectReason?: string } = {}): Promise<Envelope> {
    const { rejectReason } = options;
    if (rejectReason !== undefined && (typeof rejectReason !== "string" || rejectReason.length === 0 || rejectReason.length > 2000)) {
      throw new ValidationError("rejectReason must be a non-empty text of at most 2000 characters", "rejectReason");
    }
    return this.store.mutate(actor, workflowitemRef(p, s, w), {
      intent: "workflowitem.close",
      verb: "closed",
      change: async (item, tx) => {
        const sl = locate(this.store.schema, subprojectRef(p, s));
        const subproject = new RecordView((await tx.get(stateKey(sl)))!).envelope();
        let siblings: { id: string; createdAtMs: number; status: string }[] = [];
        let ordering: string[] = [];
        if (subproject.data.workflowMode === "ordered") {
          const rows = await tx.scanPrefix(childrenPrefix(sl, "workflowitem"));
          siblings = rows.map((r) => {
            const v = new RecordView(r.value);
            return { id: v.id, createdAtMs: v.createdAtMs, status: v.status };
          });
          const raw = await tx.get(orderingKey(sl, "workflowitem"));
          ordering = raw ? (JSON.parse(raw.toString("utf8")) as string[]) : [];
        }
        return { patch: decideCloseWorkflowitem({ actor, item, subproject, siblings, ordering, rejectReason }) };
      },
    });
  }

  // ------------------------------------------------------------------ ordering, permissions, delete

  reorderWorkflowitems(actor: Actor, p: string, s: string, ordering: readonly string[], options: { ifVersion?: number } = {}): Promise<Envelope> {
    return this.store.setOrdering(actor, subprojectRef(p, s), ordering, { ...options, guard: assertOpen });
  }

  listPermissions(actor: Actor, ref: Ref): Promise<Permissions> {
    return this.store.listPermissions(actor, ref);
  }

  grant(actor: Actor, ref: Ref, intent: string, identity: string): Promise<Envelope> {
    return this.store.grant(actor, ref, intent, identity);
  }

  revoke(actor: Actor, ref: Ref, intent: string, identity: string): Promise<Envelope> {
    return this.store.revoke(actor, ref, intent, identity);
  }

  delete(actor: Actor, ref: Ref, options: { ifVersion?: number } = {}): Promise<void> {
    return this.store.delete(actor, ref, options);
  }
}
