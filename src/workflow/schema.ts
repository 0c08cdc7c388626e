/**
 * Projects, subprojects and workflowitems (TruBudget's model), declared as data. A project is a
 * partition; its subprojects and workflowitems are nested inside it, so a project's whole tree,
 * orderings, permissions and history are one partition and every read is one range read.
 *
 * Which fields a command owns (status → close, assignee → assign, …) is declared here too
 * (`ownedFields`): the update rules (rules.ts) and the served create/update bodies derive from it.
 */
import { Type, type Static } from "@sinclair/typebox";
import { ValidationError } from "../errors.js";
import { FORBIDDEN_ID_CHARS } from "../ids.js";
import type { Ref } from "../resources/model/ref.js";
import { type CreateIntentOf, defineSchema } from "../resources/model/schema.js";
import { RESOURCE_ID_PATTERN } from "../resources/model/wire.js";
import { workflowitemSums } from "./amounts.js";
import { PROJECT_QUERY } from "./search.js";
import { Amount, CurrencyCode, Decimal, IsoDate, isCurrency, isValidDate, PositiveDecimal } from "./money.js";

const Identity = Type.String({ minLength: 1, maxLength: 128 });
const Text = (max: number) => Type.String({ maxLength: max });
const Tags = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 50, uniqueItems: true });
const AdditionalData = Type.Record(Type.String(), Type.Unknown(), { description: "free-form data of the client", $id: "AdditionalData" });
const Status = Type.Union([Type.Literal("open"), Type.Literal("closed")]);
/** A workflowitem's type (TruBudget's): `restricted` gives the assignee every intent and leaves the assigner only `list`. */
export const WorkflowitemType = Type.Union([Type.Literal("general"), Type.Literal("restricted")]);
/** When a resource was closed (set by close; kept for TruBudget's order, closed items first by close time). */
const ClosedAt = Type.String({ ...IsoDate, description: "when it was closed (ISO 8601)" });

/**
 * An organization's name: free text (spaces allowed) under the id rule of ids.ts — no dot segment, no
 * control, bidirectional-formatting or zero-width character — since it names a budget in a path
 * (`…/projected-budgets/{organization}/{currencyCode}`).
 */
const Organization = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: `^(?!\\.\\.?$)[^${FORBIDDEN_ID_CHARS}]+$`,
  description: "a name without control or invisible characters, and not . or ..",
});

export const ProjectedBudget = Type.Object({ organization: Organization, value: Decimal, currencyCode: CurrencyCode }, { additionalProperties: false, $id: "ProjectedBudget" });
export type ProjectedBudget = Static<typeof ProjectedBudget>;

const projectFields = {
  displayName: Type.String({ minLength: 1, maxLength: 200 }),
  description: Type.Optional(Text(10_000)),
  assignee: Type.Optional(Identity),
  status: Status,
  projectedBudgets: Type.Optional(Type.Array(ProjectedBudget, { maxItems: 100 })),
  tags: Type.Optional(Tags),
  thumbnail: Type.Optional(Text(2_000)),
  additionalData: Type.Optional(AdditionalData),
};

export const ProjectFields = Type.Object(projectFields, { additionalProperties: false });

export const SubprojectFields = Type.Object(
  {
    ...projectFields,
    currency: CurrencyCode,
    validator: Type.Optional(Identity),
    /** When set, every workflowitem of the subproject has this type (TruBudget's fixed type). */
    workflowitemType: Type.Optional(WorkflowitemType),
    /** `ordered` (the default, TruBudget's): a workflowitem closes only after every earlier one. */
    workflowMode: Type.Optional(Type.Union([Type.Literal("ordered"), Type.Literal("unordered")])),
  },
  { additionalProperties: false },
);

/** The most documents one workflowitem holds (its record carries their list). */
export const MAX_DOCUMENTS = 100;
export const DOCUMENT_COMMENT_MAX = 2_000;
export const DocumentFileName = Type.String({ minLength: 1, maxLength: 255 });
export const DocumentComment = Type.String({ maxLength: DOCUMENT_COMMENT_MAX });
export const DocumentLink = Type.String({ minLength: 1, maxLength: 2_000, pattern: "^https?://", description: "an external link (http or https), stored without content or hash" });

/**
 * A document of a workflowitem (documents.ts): its content is in the archive's file store, held by
 * the reference named by the document's id; a link document has no content.
 */
export const Document = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 64 }),
    fileName: DocumentFileName,
    hash: Type.Optional(Type.String({ pattern: "^[0-9a-f]{64}$", description: "sha-256 of the content (the ETag of its download)" })),
    size: Type.Optional(Type.Integer({ minimum: 0 })),
    link: Type.Optional(DocumentLink),
    comment: Type.Optional(DocumentComment),
    createdAt: Type.String({ description: "ISO 8601 date-time" }),
    createdBy: Type.String(),
  },
  { additionalProperties: false, $id: "Document" },
);
export type Document = Static<typeof Document>;

/**
 * The person a workflowitem's free text is about (a beneficiary, an applicant), by an id of the
 * writer's choosing: its personal fields (`PERSONAL_FIELDS`) are then stored sealed under that
 * subject's key, and erasing the subject erases them (resources/personal/subjects.ts).
 */
const DataSubject = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: RESOURCE_ID_PATTERN,
  description: "the data subject the item's personal fields (description, markdown, rejectReason) are about; set at creation",
});
/** The workflowitem's free-text fields that are personal data when the item names a data subject. */
export const PERSONAL_FIELDS = ["description", "markdown", "rejectReason"] as const;

/** The longest reason a workflowitem may be rejected with (closed with a reason). */
export const REJECT_REASON_MAX = 2_000;
export const RejectReason = Type.String({ minLength: 1, maxLength: REJECT_REASON_MAX });

export const WorkflowitemFields = Type.Object(
  {
    displayName: Type.String({ minLength: 1, maxLength: 200 }),
    description: Type.Optional(Text(10_000)),
    status: Status,
    assignee: Type.Optional(Identity),
    amountType: Type.Union([Type.Literal("N/A"), Type.Literal("disbursed"), Type.Literal("allocated")]),
    amount: Type.Optional(Amount),
    currency: Type.Optional(CurrencyCode),
    exchangeRate: Type.Optional(PositiveDecimal),
    billingDate: Type.Optional(IsoDate),
    dueDate: Type.Optional(IsoDate),
    documents: Type.Optional(Type.Array(Document, { maxItems: MAX_DOCUMENTS })),
    rejectReason: Type.Optional(RejectReason),
    closedAt: Type.Optional(ClosedAt),
    tags: Type.Optional(Tags),
    additionalData: Type.Optional(AdditionalData),
    workflowitemType: Type.Optional(WorkflowitemType),
    fundingOrganization: Type.Optional(Text(200)),
    markdown: Type.Optional(Text(100_000)),
    dataSubject: Type.Optional(DataSubject),
  },
  { additionalProperties: false },
);

function checkCurrency(code: unknown, field: string): void {
  if (code !== undefined && !isCurrency(code)) throw new ValidationError(`${field} ${JSON.stringify(code)} is not an ISO 4217 currency code`, field);
}

function checkBudgets(d: Record<string, unknown>): void {
  const budgets = (d.projectedBudgets ?? []) as ProjectedBudget[];
  const seen = new Set<string>();
  budgets.forEach((b, i) => {
    checkCurrency(b.currencyCode, `data.projectedBudgets.${i}.currencyCode`);
    const k = `${b.organization}\u0000${b.currencyCode}`;
    if (seen.has(k)) throw new ValidationError(`two projected budgets for ${b.organization} in ${b.currencyCode}`, `data.projectedBudgets.${i}`);
    seen.add(k);
  });
}

/** The fields that only make sense with an amount: refused with amountType N/A, and cleared by an update to it (TruBudget's). */
export const AMOUNT_FIELDS = ["amount", "currency", "exchangeRate", "billingDate"] as const;

/** The fields each command owns; the assignee and projected budgets may be given at creation. */
const assignee = { by: "assign", initial: true } as const;
const status = { by: "close" } as const;
const projectedBudgets = { by: "the projected budget commands", initial: true } as const;
/** A projected budget is one organization's in one currency: a diff names it so, wherever the command put it in the list. */
const budgetKeys = { projectedBudgets: ["organization", "currencyCode"] } as const;

export const workflowSchema = defineSchema({
  project: {
    parent: null,
    idStyle: "flat",
    fields: ProjectFields,
    statusField: "status",
    extraIntents: ["project.assign", "project.close", "project.budget.updateProjected", "project.budget.deleteProjected"],
    ownedFields: { status, assignee, projectedBudgets },
    keyedArrays: budgetKeys,
    rules: checkBudgets,
    assigneeField: "assignee",
    query: PROJECT_QUERY,
  },
  subproject: {
    parent: "project",
    idStyle: "nested",
    fields: SubprojectFields,
    statusField: "status",
    orderedChildren: "workflowitem",
    // TruBudget's order of workflowitems, offered beside the native one (seed 002's): closed ones first, by close time.
    closedFirst: { status: "closed", at: "closedAt" },
    extraIntents: ["subproject.assign", "subproject.close", "subproject.budget.updateProjected", "subproject.budget.deleteProjected"],
    ownedFields: { status, assignee, projectedBudgets },
    keyedArrays: budgetKeys,
    assigneeField: "assignee",
    query: PROJECT_QUERY,
    rules: (d) => {
      checkBudgets(d);
      checkCurrency(d.currency, "data.currency");
    },
  },
  workflowitem: {
    parent: "subproject",
    idStyle: "nested",
    fields: WorkflowitemFields,
    statusField: "status",
    extraIntents: ["workflowitem.assign", "workflowitem.close"],
    assigneeField: "assignee",
    ownedFields: {
      status,
      assignee,
      rejectReason: { by: "close" },
      closedAt: { by: "close" },
      workflowitemType: { by: "create (it cannot change)", initial: true },
      documents: { by: "the document routes" },
      dataSubject: { by: "create (it cannot change)", initial: true },
    },
    personal: { subject: "dataSubject", fields: PERSONAL_FIELDS },
    keyedArrays: { documents: ["id"] },
    // Its amount is summed into its subproject's sums in the commit of each write (amounts.ts): analytics read O(buckets).
    sums: workflowitemSums,
    // 2: an item's own exchange rate, where it applies, is a fifth item of its bucket (amounts.ts ownRate).
    sumsVersion: 2,
    rules: (d) => {
      checkCurrency(d.currency, "data.currency");
      for (const f of ["billingDate", "dueDate"] as const) {
        if (d[f] !== undefined && !isValidDate(d[f])) throw new ValidationError(`data.${f} is not a valid date`, `data.${f}`);
      }
      if (d.amountType === "N/A") {
        for (const f of AMOUNT_FIELDS) {
          if (d[f] !== undefined) throw new ValidationError(`data.${f} must not be set when amountType is N/A`, `data.${f}`);
        }
      }
    },
  },
});

export type WorkflowSchema = typeof workflowSchema.decl;

/** The workflow schema's global intents (the create intent of its root type) join the declared intents. */
declare module "../access/intents.js" {
  interface DeclaredIntents {
    workflow: CreateIntentOf<WorkflowSchema>;
  }
}
export type ProjectData = Static<typeof ProjectFields>;
export type SubprojectData = Static<typeof SubprojectFields>;
export type WorkflowitemData = Static<typeof WorkflowitemFields>;

/** The addresses of the three levels (the declaration's chain: project → subproject → workflowitem). */
export const projectRef = (p: string): Ref => ({ type: "project", ids: [p] });
export const subprojectRef = (p: string, s: string): Ref => ({ type: "subproject", ids: [p, s] });
export const workflowitemRef = (p: string, s: string, w: string): Ref => ({ type: "workflowitem", ids: [p, s, w] });
