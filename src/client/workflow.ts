/**
 * Projects, subprojects and workflowitems. Collections (`client.projects`, `project.subprojects`,
 * `subproject.workflowitems`) create and list; handles (`client.project(p)`, `.subproject(s)`,
 * `.workflowitem(w)`) address one resource. Every type is the route schema's own (Static<typeof …>).
 */
import type { Static } from "@sinclair/typebox";
import type { PermissionMap } from "../http/routes/global.js";
import type {
  CloseBody,
  HistoryEvent as HistoryEventSchema,
  HistoryQuery,
  Ordering as OrderingSchema,
  ProjectSchemas,
  SubprojectSchemas,
  VerifyResult as VerifyResultSchema,
  WorkflowitemSchemas,
} from "../http/routes/workflow.js";
import type { ProjectedBudget } from "../workflow/schema.js";
import { API, ifMatchHeaders, seg, type HttpCore, type Page, type PageParams, type WriteOptions } from "./core.js";

export type Project = Static<typeof ProjectSchemas.resource>;
export type NewProject = Static<typeof ProjectSchemas.create>;
export type ProjectUpdate = Static<typeof ProjectSchemas.update>;
export type ProjectPage = Static<typeof ProjectSchemas.page>;
export type Subproject = Static<typeof SubprojectSchemas.resource>;
export type NewSubproject = Static<typeof SubprojectSchemas.create>;
export type SubprojectUpdate = Static<typeof SubprojectSchemas.update>;
export type SubprojectPage = Static<typeof SubprojectSchemas.page>;
export type Workflowitem = Static<typeof WorkflowitemSchemas.resource>;
export type NewWorkflowitem = Static<typeof WorkflowitemSchemas.create>;
export type WorkflowitemUpdate = Static<typeof WorkflowitemSchemas.update>;
export type WorkflowitemPage = Static<typeof WorkflowitemSchemas.page>;
export type HistoryEvent = Static<typeof HistoryEventSchema>;
export type HistoryParams = Static<typeof HistoryQuery>;
export type VerifyResult = Static<typeof VerifyResultSchema>;
export type Budget = ProjectedBudget;
export type CloseOptions = Static<typeof CloseBody>;
/** The ordering and its ETag (the subproject's version), to send back as If-Match. */
export type OrderingWithEtag = Static<typeof OrderingSchema> & { etag: string };

/** Create and list the children of one kind under a parent (or the projects). */
export class Collection<R, N, P> {
  constructor(
    protected readonly core: HttpCore,
    readonly path: string,
  ) {}
  create(body: N): Promise<R> {
    return this.core.request<R>("POST", this.path, { body });
  }
  list(page: PageParams = {}): Promise<P> {
    return this.core.request<P>("GET", this.path, { query: { ...page } });
  }
}

/** What every level shares: read, update, delete, assign, history and permissions. */
abstract class ResourceHandle<R, U> {
  constructor(
    protected readonly core: HttpCore,
    readonly path: string,
  ) {}
  get(): Promise<R> {
    return this.core.request<R>("GET", this.path);
  }
  update(patch: U, options: WriteOptions = {}): Promise<R> {
    return this.core.request<R>("PATCH", this.path, { body: patch, headers: ifMatchHeaders(options) });
  }
  delete(options: WriteOptions = {}): Promise<void> {
    return this.core.request<void>("DELETE", this.path, { headers: ifMatchHeaders(options) });
  }
  assign(assignee: string, options: WriteOptions = {}): Promise<R> {
    return this.core.request<R>("POST", `${this.path}/assign`, { body: { assignee }, headers: ifMatchHeaders(options) });
  }
  history(params: HistoryParams = {}): Promise<Page<HistoryEvent>> {
    return this.core.request("GET", `${this.path}/history`, { query: { ...params } });
  }
  permissions(): Promise<PermissionMap> {
    return this.core.request<PermissionMap>("GET", `${this.path}/permissions`);
  }
  grant(intent: string, identity: string): Promise<void> {
    return this.core.request<void>("POST", `${this.path}/permissions/grant`, { body: { intent, identity } });
  }
  revoke(intent: string, identity: string): Promise<void> {
    return this.core.request<void>("POST", `${this.path}/permissions/revoke`, { body: { intent, identity } });
  }
}

/** Projects and subprojects carry projected budgets. */
abstract class BudgetedHandle<R, U> extends ResourceHandle<R, U> {
  close(): Promise<R> {
    return this.core.request<R>("POST", `${this.path}/close`);
  }
  /** Sets (adds or replaces) the projected budget of an organization in a currency. */
  setProjectedBudget(budget: Budget): Promise<R> {
    return this.core.request<R>("PUT", `${this.path}/projected-budgets`, { body: budget });
  }
  deleteProjectedBudget(organization: string, currencyCode: string): Promise<R> {
    return this.core.request<R>("DELETE", `${this.path}/projected-budgets/${seg(organization)}/${seg(currencyCode)}`);
  }
}

export class ProjectHandle extends BudgetedHandle<Project, ProjectUpdate> {
  readonly subprojects = new Collection<Subproject, NewSubproject, SubprojectPage>(this.core, `${this.path}/subprojects`);
  subproject(s: string): SubprojectHandle {
    return new SubprojectHandle(this.core, `${this.path}/subprojects/${seg(s)}`);
  }
  /** Recomputes the project's hash chain on the server. */
  verify(): Promise<VerifyResult> {
    return this.core.request<VerifyResult>("GET", `${this.path}/verify`);
  }
}

export class SubprojectHandle extends BudgetedHandle<Subproject, SubprojectUpdate> {
  readonly workflowitems = new Collection<Workflowitem, NewWorkflowitem, WorkflowitemPage>(this.core, `${this.path}/workflowitems`);
  workflowitem(w: string): WorkflowitemHandle {
    return new WorkflowitemHandle(this.core, `${this.path}/workflowitems/${seg(w)}`);
  }
  async getOrdering(): Promise<OrderingWithEtag> {
    const { body, headers } = await this.core.exchange<Static<typeof OrderingSchema>>("GET", `${this.path}/workflowitem-ordering`);
    return { ...body, etag: headers.get("etag") ?? "" };
  }
  /** Replaces the ordering; with `ifMatch` (an ETag or version) a stale write is a 409. */
  async setOrdering(ordering: readonly string[], options: WriteOptions = {}): Promise<OrderingWithEtag> {
    const { body, headers } = await this.core.exchange<Static<typeof OrderingSchema>>("PUT", `${this.path}/workflowitem-ordering`, {
      body: { ordering },
      headers: ifMatchHeaders(options),
    });
    return { ...body, etag: headers.get("etag") ?? "" };
  }
}

export class WorkflowitemHandle extends ResourceHandle<Workflowitem, WorkflowitemUpdate> {
  /** Closes the workflowitem, or rejects it when a reason is given. */
  close(options: CloseOptions = {}): Promise<Workflowitem> {
    return this.core.request<Workflowitem>("POST", `${this.path}/close`, options.rejectReason === undefined ? {} : { body: options });
  }
}

export const projectsPath = `${API}/projects`;
export const projectPath = (p: string): string => `${projectsPath}/${seg(p)}`;
