/**
 * Projects, subprojects and workflowitems. Collections (`client.projects`, `project.subprojects`,
 * `subproject.workflowitems`) create and list; handles (`client.project(p)`, `.subproject(s)`,
 * `.workflowitem(w)`) address one resource. Every type is the OpenAPI document's own (./openapi.ts).
 */
import { API, ifMatchHeaders, seg, type HttpCore, type Page, type PageParams, type RequestOptions, type WriteOptions } from "./core.js";
import type {
  Analytics,
  ArchivedProject,
  DocumentLinkBody as DocumentLinkInput,
  DocumentList,
  DocumentValidation as DocumentValidationResult,
  Document as WorkflowitemDocument,
  Event as HistoryEvent,
  ExchangeRate,
  ExchangeRatePage,
  ExchangeRatesWritten,
  NewSubproject,
  NewWorkflowitem,
  NotificationCount,
  NotificationPage,
  Ordering,
  Permissions as PermissionMap,
  Project,
  ProjectedBudget as Budget,
  ProjectUpdate,
  StoredRate,
  Subproject,
  SubprojectPage,
  SubprojectUpdate,
  VerifyResult,
  Workflowitem,
  WorkflowitemPage,
  WorkflowitemUpdate,
} from "./openapi.js";
import type { Body, Query } from "./types.js";

// The OpenAPI document's named schemas, as openapi-typescript names them (./openapi.ts's root types).
export type { Project, NewProject, ProjectUpdate, ProjectPage, Subproject, NewSubproject, SubprojectUpdate, SubprojectPage, VerifyResult, ArchivedProject } from "./openapi.js";
export type { Workflowitem, NewWorkflowitem, WorkflowitemUpdate, WorkflowitemPage, Document as WorkflowitemDocument, Event as HistoryEvent } from "./openapi.js";
export type { Notification, NotificationCount, NotificationPage, ProjectedBudget as Budget, Analytics, AnalyticsRow, ExchangeRate, StoredRate } from "./openapi.js";
export type { DocumentLinkBody as DocumentLinkInput, DocumentValidation as DocumentValidationResult } from "./openapi.js";
export type HistoryParams = Query<"getProjectHistory">;
/** A page of an ordered list, and the order: `manual` (the ordering, then by creation; default) or `closedFirst` (TruBudget's). */
export interface OrderedListParams extends PageParams {
  readonly sequence?: Query<"listWorkflowitems">["sequence"];
}
export type CloseOptions = Body<"closeWorkflowitem">;
export type ArchiveOptions = Body<"postProjectArchive">;
/** What analytics are asked with: the currency to convert to, the day projected budgets are converted at. */
export type AnalyticsQuery = Omit<Query<"getProjectAnalytics">, "format">;
/** A file to add as a document: its bytes (a Blob or File), its name, an optional comment. */
export interface DocumentUpload {
  readonly content: Blob;
  readonly fileName: string;
  readonly comment?: string;
}
/** The ordering and its ETag (the subproject's version), to send back as If-Match. */
export type OrderingWithEtag = Ordering & { etag: string };

/**
 * What a write to a resource the caller may act on but not view answers (204, no body): that it is done,
 * and the resource's new ETag, to send as `ifMatch` on the next write.
 */
export interface NotViewable {
  readonly viewable: false;
  readonly etag: string;
}

/** What a write to an existing resource answers: the resource, or `NotViewable` to a caller who may act on it but not view it. */
export type Written<R> = R | NotViewable;

/** The resource a write answered, for a caller that may view it; throws on `NotViewable`. */
export function whole<R extends object>(written: Written<R>): R {
  if ("viewable" in written && written.viewable === false) throw new Error(`the server answered the write 204 (ETag ${written.etag}): the caller may not view the resource`);
  return written as R;
}

/** Sends a write to an existing resource: its answer, the resource (200) or `NotViewable` with the new ETag (204). */
async function sendWrite<R>(core: HttpCore, method: string, path: string, options: RequestOptions = {}): Promise<Written<R>> {
  const { body, headers } = await core.exchange<R | undefined>(method, path, options);
  return body ?? { viewable: false, etag: headers.get("etag") ?? "" };
}

/** Create and list the children of one kind under a parent (or the projects). */
export class Collection<R, N, P> {
  constructor(
    protected readonly core: HttpCore,
    readonly path: string,
  ) {}
  /** Answers the new resource whole, even one whose permissions leave its creator no view of it. */
  create(body: N): Promise<R> {
    return this.core.request<R>("POST", this.path, { body });
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
  sort?: Query<"listProjects">["sort"];
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
    return sendWrite<R>(this.core, "PATCH", this.path, { body: patch, headers: ifMatchHeaders(options) });
  }
  delete(options: WriteOptions = {}): Promise<void> {
    return this.core.request<void>("DELETE", this.path, { headers: ifMatchHeaders(options) });
  }
  assign(assignee: string, options: WriteOptions = {}): Promise<Written<R>> {
    return sendWrite<R>(this.core, "POST", `${this.path}/assign`, { body: { assignee }, headers: ifMatchHeaders(options) });
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
    return sendWrite<R>(this.core, "POST", `${this.path}/close`);
  }
  /** Sets (adds or replaces) the projected budget of an organization in a currency. */
  setProjectedBudget(budget: Budget): Promise<Written<R>> {
    return sendWrite<R>(this.core, "PUT", `${this.path}/projected-budgets`, { body: budget });
  }
  deleteProjectedBudget(organization: string, currencyCode: string): Promise<Written<R>> {
    return sendWrite<R>(this.core, "DELETE", `${this.path}/projected-budgets/${seg(organization)}/${seg(currencyCode)}`);
  }
  /** Budget totals (projected, assigned, disbursed) per currency, and converted at dated rates when a currency is asked. */
  analytics(query: AnalyticsQuery = {}): Promise<Analytics> {
    return this.core.request<Analytics>("GET", `${this.path}/analytics`, { query: { ...query } });
  }
  /** The totals exported: CSV as text, XLSX as bytes. */
  async analyticsExport(format: "csv" | "xlsx", query: AnalyticsQuery = {}): Promise<string | Uint8Array> {
    const res = await this.core.open("GET", `${this.path}/analytics`, { query: { ...query, format } });
    return format === "csv" ? res.text() : new Uint8Array(await res.arrayBuffer());
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
    const { body, headers } = await this.core.exchange<Ordering>("GET", `${this.path}/workflowitem-ordering`);
    return { ...body, etag: headers.get("etag") ?? "" };
  }
  /** Replaces the ordering; with `ifMatch` (an ETag or version) a stale write is a 412. */
  async setOrdering(ordering: readonly string[], options: WriteOptions = {}): Promise<OrderingWithEtag> {
    const { body, headers } = await this.core.exchange<Ordering>("PUT", `${this.path}/workflowitem-ordering`, {
      body: { ordering },
      headers: ifMatchHeaders(options),
    });
    return { ...body, etag: headers.get("etag") ?? "" };
  }
}

export class WorkflowitemHandle extends ResourceHandle<Workflowitem, WorkflowitemUpdate> {
  /** Closes the workflowitem, or rejects it when a reason is given. */
  close(options: CloseOptions = {}): Promise<Written<Workflowitem>> {
    return sendWrite<Workflowitem>(this.core, "POST", `${this.path}/close`, options.rejectReason === undefined ? {} : { body: options });
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
    return (await this.core.request<DocumentList>("GET", this.path)).items;
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

/** Exchange rates as dated data: written by holders of global.writeExchangeRates, read by any signed-in caller. */
export class ExchangeRatesApi {
  constructor(private readonly core: HttpCore) {}
  /** Writes rates (1 from = rate to, valid from the date on); answers how many. */
  async put(rates: readonly ExchangeRate[]): Promise<number> {
    return (await this.core.request<ExchangeRatesWritten>("PUT", `${API}/exchange-rates`, { body: { rates } })).written;
  }
  /** Imports the ECB's CSV (eurofxref-hist.csv); answers how many rates it held. */
  async importEcb(csv: string): Promise<number> {
    const res = await this.core.open("POST", `${API}/exchange-rates/ecb`, { text: csv, headers: { "content-type": "text/csv" } });
    return ((await res.json()) as ExchangeRatesWritten).written;
  }
  /** A pair's stored rates, oldest first. */
  async list(from: string, to: string, query: Query<"listExchangeRates"> = {}): Promise<StoredRate[]> {
    return (await this.core.request<ExchangeRatePage>("GET", `${API}/exchange-rates/${seg(from)}/${seg(to)}`, { query: { ...query } })).items;
  }
  /** The rate of a pair valid at a day (the latest on or before it). */
  at(from: string, to: string, date: string): Promise<StoredRate> {
    return this.core.request<StoredRate>("GET", `${API}/exchange-rates/${seg(from)}/${seg(to)}/at/${seg(date)}`);
  }
}
