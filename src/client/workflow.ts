/**
 * Projects, subprojects and workflowitems. Collections (`client.projects`, `project.subprojects`,
 * `subproject.workflowitems`) create and list; handles (`client.project(p)`, `.subproject(s)`,
 * `.workflowitem(w)`) address one resource. Every type is the route schema's own (Static<typeof …>).
 */
import type { Static } from "@sinclair/typebox";
import type { PermissionMap } from "../identity/wire.js";
import type { ArchiveBody, ArchivedProject as ArchivedProjectSchema } from "../workflow/wire.js";
import type {
  CloseBody,
  HistoryEvent as HistoryEventSchema,
  HistoryQuery,
  OrderedListQuery,
  Ordering as OrderingSchema,
  ProjectSchemas,
  Redacted,
  SubprojectSchemas,
  VerifyResult as VerifyResultSchema,
  WorkflowitemSchemas,
} from "../http/routes/workflow.js";
import type { DocumentLinkBody, DocumentList, DocumentValidation } from "../http/routes/documents.js";
import type { Notification as NotificationSchema, NotificationCount as NotificationCountSchema, NotificationPage as NotificationPageSchema } from "../http/routes/notifications.js";
import type { Document as DocumentSchema, ProjectedBudget } from "../workflow/schema.js";
import type { PROJECT_QUERY } from "../workflow/search.js";
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
/** A page of an ordered list, and the order: `manual` (the ordering, then by creation; default) or `closedFirst` (TruBudget's). */
export interface OrderedListParams extends PageParams {
  readonly sequence?: Static<typeof OrderedListQuery>["sequence"];
}
export type VerifyResult = Static<typeof VerifyResultSchema>;
export type Budget = ProjectedBudget;
export type CloseOptions = Static<typeof CloseBody>;
export type ArchiveOptions = Static<typeof ArchiveBody>;
export type ArchivedProject = Static<typeof ArchivedProjectSchema>;
export type WorkflowitemDocument = Static<typeof DocumentSchema>;
export type Notification = Static<typeof NotificationSchema>;
export type NotificationCount = Static<typeof NotificationCountSchema>;
export type NotificationPage = Static<typeof NotificationPageSchema>;
export type DocumentLinkInput = Static<typeof DocumentLinkBody>;
export type DocumentValidationResult = Static<typeof DocumentValidation>;
/** A file to add as a document: its bytes (a Blob or File), its name, an optional comment. */
export interface DocumentUpload {
  readonly content: Blob;
  readonly fileName: string;
  readonly comment?: string;
}
/** The ordering and its ETag (the subproject's version), to send back as If-Match. */
export type OrderingWithEtag = Static<typeof OrderingSchema> & { etag: string };

/** What a write answers: the resource, or its redacted form to a caller who may act on it but not view it. */
export type Written<R> = R | Static<typeof Redacted>;

/** The resource a write answered, for a caller that may view it; throws on the redacted form. */
export function whole<R extends object>(written: Written<R>): R {
  if ("redacted" in written && written.redacted === true) throw new Error(`the server answered ${written.type} ${written.id} redacted: the caller may not view it`);
  return written as R;
}

/** Create and list the children of one kind under a parent (or the projects). */
export class Collection<R, N, P> {
  constructor(
    protected readonly core: HttpCore,
    readonly path: string,
  ) {}
  create(body: N): Promise<Written<R>> {
    return this.core.request<Written<R>>("POST", this.path, { body });
  }
  list(page: PageParams = {}): Promise<P> {
    return this.core.request<P>("GET", this.path, { query: { ...page } });
  }
}

/** An ordered collection (a subproject's workflowitems): listed in its effective order, or closed first. */
export class OrderedCollection<R, N, P> extends Collection<R, N, P> {
  override list(params: OrderedListParams = {}): Promise<P> {
    return this.core.request<P>("GET", this.path, { query: { ...params } });
  }
}

/** A list searched and sorted on the server (projects, a project's subprojects). */
export interface SearchParams extends PageParams {
  /** TruBudget's syntax: free text, `name:`, `tag:`, `status:` prefixes. */
  search?: string;
  /** One of the sort fields the workflow declares (search.ts). */
  sort?: (typeof PROJECT_QUERY)["sort"][number];
  order?: "asc" | "desc";
}

/** A collection whose list can be searched and sorted on the server. */
export class SearchableCollection<R, N, P> extends Collection<R, N, P> {
  search(params: SearchParams = {}): Promise<P> {
    return this.core.request<P>("GET", this.path, { query: { ...params } });
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
  update(patch: U, options: WriteOptions = {}): Promise<Written<R>> {
    return this.core.request<Written<R>>("PATCH", this.path, { body: patch, headers: ifMatchHeaders(options) });
  }
  delete(options: WriteOptions = {}): Promise<void> {
    return this.core.request<void>("DELETE", this.path, { headers: ifMatchHeaders(options) });
  }
  assign(assignee: string, options: WriteOptions = {}): Promise<Written<R>> {
    return this.core.request<Written<R>>("POST", `${this.path}/assign`, { body: { assignee }, headers: ifMatchHeaders(options) });
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
  close(): Promise<Written<R>> {
    return this.core.request<Written<R>>("POST", `${this.path}/close`);
  }
  /** Sets (adds or replaces) the projected budget of an organization in a currency. */
  setProjectedBudget(budget: Budget): Promise<Written<R>> {
    return this.core.request<Written<R>>("PUT", `${this.path}/projected-budgets`, { body: budget });
  }
  deleteProjectedBudget(organization: string, currencyCode: string): Promise<Written<R>> {
    return this.core.request<Written<R>>("DELETE", `${this.path}/projected-budgets/${seg(organization)}/${seg(currencyCode)}`);
  }
}

export class ProjectHandle extends BudgetedHandle<Project, ProjectUpdate> {
  readonly subprojects = new SearchableCollection<Subproject, NewSubproject, SubprojectPage>(this.core, `${this.path}/subprojects`);
  subproject(s: string): SubprojectHandle {
    return new SubprojectHandle(this.core, `${this.path}/subprojects/${seg(s)}`);
  }
  /** Recomputes the project's hash chain on the server. */
  verify(): Promise<VerifyResult> {
    return this.core.request<VerifyResult>("GET", `${this.path}/verify`);
  }
  /** Archives the closed project as one snapshot `project:<id>`; with `drop`, removes the live project. */
  archive(options: ArchiveOptions = {}): Promise<ArchivedProject> {
    return this.core.request<ArchivedProject>("POST", `${this.path}/archive`, { body: options });
  }
}

export class SubprojectHandle extends BudgetedHandle<Subproject, SubprojectUpdate> {
  readonly workflowitems = new OrderedCollection<Workflowitem, NewWorkflowitem, WorkflowitemPage>(this.core, `${this.path}/workflowitems`);
  workflowitem(w: string): WorkflowitemHandle {
    return new WorkflowitemHandle(this.core, `${this.path}/workflowitems/${seg(w)}`);
  }
  async getOrdering(): Promise<OrderingWithEtag> {
    const { body, headers } = await this.core.exchange<Static<typeof OrderingSchema>>("GET", `${this.path}/workflowitem-ordering`);
    return { ...body, etag: headers.get("etag") ?? "" };
  }
  /** Replaces the ordering; with `ifMatch` (an ETag or version) a stale write is a 412. */
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
  close(options: CloseOptions = {}): Promise<Written<Workflowitem>> {
    return this.core.request<Written<Workflowitem>>("POST", `${this.path}/close`, options.rejectReason === undefined ? {} : { body: options });
  }
  /** The workflowitem's documents: add (a file or a link), list, download, validate, delete. */
  readonly documents = new DocumentsApi(this.core, `${this.path}/documents`);
}

export class DocumentsApi {
  constructor(
    private readonly core: HttpCore,
    readonly path: string,
  ) {}
  /** Uploads a file (multipart: the comment and name first, then the content). */
  upload(file: DocumentUpload, options: { signal?: AbortSignal } = {}): Promise<WorkflowitemDocument> {
    const form = new FormData();
    if (file.comment !== undefined) form.append("comment", file.comment);
    form.append("fileName", file.fileName);
    form.append("file", file.content, file.fileName);
    return this.core.request("POST", this.path, { body: form, signal: options.signal });
  }
  /** Records an external link as a document (no content, no hash). */
  addLink(link: DocumentLinkInput): Promise<WorkflowitemDocument> {
    return this.core.request("POST", this.path, { body: link });
  }
  async list(): Promise<WorkflowitemDocument[]> {
    return (await this.core.request<Static<typeof DocumentList>>("GET", this.path)).items;
  }
  /** The content as the server's answer, its body not yet read (ETag: the sha-256). */
  download(id: string): Promise<Response> {
    return this.core.open("GET", `${this.path}/${seg(id)}`, { headers: { accept: "*/*" } });
  }
  /** Whether `content` is the document's content. */
  validate(id: string, content: Blob): Promise<DocumentValidationResult> {
    const form = new FormData();
    form.append("file", content, "file");
    return this.core.request("POST", `${this.path}/${seg(id)}/validate`, { body: form });
  }
  delete(id: string): Promise<void> {
    return this.core.request("DELETE", `${this.path}/${seg(id)}`);
  }
}

/** The caller's notifications (also pushed on the change feed: `events({ onNotification })`). */
export class NotificationsApi {
  constructor(private readonly core: HttpCore) {}
  /** Newest first. */
  list(page: PageParams = {}): Promise<NotificationPage> {
    return this.core.request("GET", `${API}/notifications`, { query: { ...page } });
  }
  count(): Promise<NotificationCount> {
    return this.core.request("GET", `${API}/notifications/count`);
  }
  /** Marks the given notifications read (an unknown id is a 404 naming it). */
  markRead(ids: readonly string[]): Promise<NotificationCount> {
    return this.core.request("POST", `${API}/notifications/read`, { body: { ids } });
  }
  markAllRead(): Promise<NotificationCount> {
    return this.core.request("POST", `${API}/notifications/read`, { body: { all: true } });
  }
}

export const projectsPath = `${API}/projects`;
export const projectPath = (p: string): string => `${projectsPath}/${seg(p)}`;
