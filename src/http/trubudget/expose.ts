/**
 * flowstore's records, events and notifications in TruBudget's shapes (its `Exposed*` answers):
 * `{ allowedIntents, data: {…, creationUnixTs} }`, with TruBudget's intent names, its defaults for
 * absent fields and, for a workflowitem the caller may not see, its redacted form. Pure functions of
 * what the domain returned; nothing here reads the store.
 */
import type { ResourceEvent } from "../../resources/model/events.js";
import type { Notification } from "../../workflow/notifications.js";
import type { Document } from "../../workflow/schema.js";
import type { Level, TbIntents } from "./intents.js";

/** A listed or read record as the store serves it (allowedIntents when asked for; redacted when the caller may not view it). */
export interface Served {
  id: string;
  type?: string;
  data: Record<string, unknown>;
  meta: { createdAt: string };
  redacted?: true;
  allowedIntents?: string[];
}

export interface Exposed {
  allowedIntents: string[];
  data: Record<string, unknown>;
}

/** TruBudget's `*UnixTs`: whole seconds since the epoch, as a string (its frontend reads seconds). */
export const unixTs = (iso: string): string => String(Math.floor(Date.parse(iso) / 1000));

const or = <T>(v: unknown, dflt: T): T => (v === undefined ? dflt : (v as T));

/**
 * A project or subproject as TruBudget exposes it: the fields both have, in TruBudget's order, with the
 * level's own fields (`own`) after the assignee and `last` after the additional data.
 */
function exposeLevel(level: "project" | "subproject", r: Served, intents: TbIntents, own: Record<string, unknown>, last: Record<string, unknown> = {}): Exposed {
  const d = r.data;
  return {
    allowedIntents: intents.allowed(level, r.allowedIntents),
    data: {
      id: r.id,
      creationUnixTs: unixTs(r.meta.createdAt),
      status: d.status,
      displayName: d.displayName,
      description: or(d.description, ""),
      assignee: d.assignee,
      ...own,
      projectedBudgets: or(d.projectedBudgets, []),
      additionalData: or(d.additionalData, {}),
      ...last,
    },
  };
}

export const exposeProject = (r: Served, intents: TbIntents): Exposed => exposeLevel("project", r, intents, { thumbnail: r.data.thumbnail }, { tags: or(r.data.tags, []) });

export function exposeSubproject(r: Served, intents: TbIntents): Exposed {
  const d = r.data;
  return exposeLevel("subproject", r, intents, { validator: d.validator, workflowitemType: d.workflowitemType, workflowMode: or(d.workflowMode, "ordered"), currency: d.currency });
}

/** A document reference as TruBudget lists it on a workflowitem (a file with its hash, or a link). */
export function exposeDocument(doc: Document): Record<string, unknown> {
  return {
    id: doc.id,
    fileName: doc.fileName,
    ...(doc.link !== undefined ? { link: doc.link } : { hash: doc.hash }),
    available: true,
    ...(doc.comment !== undefined ? { comment: doc.comment } : {}),
    lastModified: doc.createdAt,
  };
}

export function exposeWorkflowitem(r: Served, intents: TbIntents): Exposed {
  const d = r.data;
  if (r.redacted) {
    // TruBudget's redacted workflowitem (its redact()): its place, status, creation time, reject reason and
    // tags (when the caller read them into the record: workflow-common.ts keptWhenRedacted); every other field empty.
    return {
      allowedIntents: [],
      data: {
        id: r.id,
        creationUnixTs: unixTs(r.meta.createdAt),
        status: d.status,
        rejectReason: d.rejectReason,
        displayName: null,
        description: null,
        amountType: null,
        amount: null,
        assignee: null,
        currency: null,
        billingDate: null,
        dueDate: null,
        exchangeRate: null,
        documents: [],
        additionalData: {},
        tags: or(d.tags, []),
        fundingOrganization: "",
      },
    };
  }
  return {
    allowedIntents: intents.allowed("workflowitem", r.allowedIntents),
    data: {
      id: r.id,
      creationUnixTs: unixTs(r.meta.createdAt),
      status: d.status,
      rejectReason: d.rejectReason,
      amountType: d.amountType,
      displayName: d.displayName,
      description: or(d.description, ""),
      amount: d.amount,
      assignee: d.assignee,
      currency: d.currency,
      billingDate: d.billingDate,
      dueDate: d.dueDate,
      exchangeRate: d.exchangeRate,
      documents: or<Document[]>(d.documents, []).map(exposeDocument),
      additionalData: or(d.additionalData, {}),
      workflowitemType: d.workflowitemType,
      tags: or(d.tags, []),
      fundingOrganization: d.fundingOrganization,
      markdown: d.markdown,
    },
  };
}

/**
 * TruBudget's event type for a flowstore event type: `project.created` → `project_created`; the
 * ordering of a subproject's workflowitems is its `workflowitems_reordered`; a document added to or
 * removed from a workflowitem is a `workflowitem_updated` there (its update naming the document).
 */
export function tbEventType(type: string): string {
  if (type === "subproject.ordering_set") return "workflowitems_reordered";
  if (type === "workflowitem.document_uploaded" || type === "workflowitem.document_deleted") return "workflowitem_updated";
  return type.replace(".", "_");
}

/** flowstore's event type for TruBudget's (the history filter's `eventType`), for a resource of `level`. */
export function nativeEventType(level: Level, tbType: string): string {
  if (tbType === "workflowitems_reordered") return "subproject.ordering_set";
  const prefix = `${level}_`;
  return tbType.startsWith(prefix) ? `${level}.${tbType.slice(prefix.length)}` : tbType;
}

type Budget = { organization: string; currencyCode: string; value: string };
const budgetsOf = (v: unknown): Budget[] => (Array.isArray(v) ? (v as Budget[]) : []);
const sameBudget = (a: Budget, b: Budget) => a.organization === b.organization && a.currencyCode === b.currencyCode;

/**
 * The fields of an event's payload TruBudget's businessEvent carries beside its type, time and publisher
 * (its event definitions, api/src/service/domain/workflow/*_*.ts): the ids of the resource and its
 * parents; `permission` and `grantee` or `revokee`; the new resource, the `assignee` or the `update`; a
 * projected budget's `organization`, `currencyCode` and `value` (found by comparing the budgets before,
 * `budgets`, with those after); a closed workflowitem's `rejectReason`.
 */
function eventFields(e: ResourceEvent, budgets: Budget[]): Record<string, unknown> {
  const p = e.payload as Record<string, unknown> & { data?: Record<string, unknown> };
  const out: Record<string, unknown> = {};
  for (const step of e.path) out[`${step.type}Id`] = step.id;
  const verb = e.type.slice(e.type.indexOf(".") + 1);
  if (p.intent !== undefined) out.permission = NATIVE_PERMISSION[p.intent as string] ?? p.intent;
  if (p.identity !== undefined) out[verb === "permission_revoked" ? "revokee" : "grantee"] = p.identity;
  if (p.ordering !== undefined) out.ordering = p.ordering;
  if (verb === "document_uploaded") out.update = { documents: p.document === undefined ? [] : [p.document] };
  else if (verb === "document_deleted") out.update = { documentsDeleted: p.document === undefined ? [] : [p.document] };
  else if (verb === "projected_budget_updated" || verb === "projected_budget_deleted") {
    const after = budgetsOf(p.data?.projectedBudgets);
    const changed =
      verb === "projected_budget_updated"
        ? after.find((b) => !budgets.some((o) => sameBudget(o, b) && o.value === b.value))
        : budgets.find((o) => !after.some((b) => sameBudget(o, b)));
    if (changed) {
      out.organization = changed.organization;
      out.currencyCode = changed.currencyCode;
      if (verb === "projected_budget_updated") out.value = changed.value;
    }
  } else if (p.data !== undefined) {
    if (verb === "created") out[e.path.at(-1)?.type ?? "resource"] = p.data;
    else if (verb === "assigned") out.assignee = p.data.assignee;
    else if (verb === "closed") {
      if (p.data.rejectReason !== undefined) out.rejectReason = p.data.rejectReason;
    } else out.update = p.data;
  }
  return out;
}

/** TruBudget's name of a permission an event names, where flowstore's differs. */
const NATIVE_PERMISSION: Readonly<Record<string, string>> = { "workflowitem.viewDetails": "workflowitem.list" };

/**
 * TruBudget's history entries of one resource (`{entityId, entityType, businessEvent, snapshot}`), in
 * the order given; `snapshot.displayName` is the resource's name as of each event, folded from the
 * whole history (`all`), which may hold more events than `events` (a filtered selection of it), as are
 * the projected budgets each budget event changed.
 */
export function exposeHistory(level: Level, id: string, all: readonly ResourceEvent[], events: readonly ResourceEvent[]): Record<string, unknown>[] {
  const nameAt = new Map<number, unknown>();
  const budgetsBefore = new Map<number, Budget[]>();
  let name: unknown;
  let budgets: Budget[] = [];
  for (const e of all) {
    const d = e.payload.data;
    budgetsBefore.set(e.seq, budgets);
    if (d && typeof d === "object" && "displayName" in d) name = d.displayName;
    if (d && typeof d === "object" && "projectedBudgets" in d) budgets = budgetsOf(d.projectedBudgets);
    nameAt.set(e.seq, name);
  }
  return events.map((e) => ({
    entityId: id,
    entityType: level,
    businessEvent: { type: tbEventType(e.type), source: "http", time: e.at, publisher: e.actor, ...eventFields(e, budgetsBefore.get(e.seq) ?? []) },
    snapshot: { displayName: nameAt.get(e.seq) ?? name },
  }));
}

/**
 * A notification in TruBudget's shape; the metadata names the resource's project, subproject and item,
 * each with whether the caller may view it now (`visible`, one flag per step of the path).
 */
export function exposeNotification(n: Notification, visible: readonly boolean[]): Record<string, unknown> {
  const metadata: Record<string, unknown> = {};
  n.path.forEach((step, i) => {
    metadata[step.type] = { id: step.id, hasViewPermissions: visible[i] ?? false, ...(i === n.path.length - 1 ? { displayName: n.displayName } : {}) };
  });
  return {
    id: n.id,
    isRead: n.read,
    businessEvent: { type: tbEventType(n.eventType), time: n.createdAt, publisher: n.actor },
    metadata,
  };
}
