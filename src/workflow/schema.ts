/**
 * Projects, subprojects and workflowitems (seed 000, TruBudget's model), declared as data. A project
 * is a partition; its subprojects and workflowitems are nested inside it, so a project's whole tree,
 * orderings, permissions and history are one partition and every read is one range read.
 */
import { Type, type Static } from "@sinclair/typebox";
import { ValidationError } from "../errors.js";
import { defineSchema } from "../resources/schema.js";
import { CurrencyCode, Decimal, IsoDate, isCurrency, isValidDate, PositiveDecimal } from "./money.js";

const Identity = Type.String({ minLength: 1, maxLength: 128 });
const Text = (max: number) => Type.String({ maxLength: max });
const Tags = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 50, uniqueItems: true });
const AdditionalData = Type.Record(Type.String(), Type.Unknown(), { description: "free-form data of the client" });
const Status = Type.Union([Type.Literal("open"), Type.Literal("closed")]);

export const ProjectedBudget = Type.Object(
  { organization: Type.String({ minLength: 1, maxLength: 200 }), value: Decimal, currencyCode: CurrencyCode },
  { additionalProperties: false },
);
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
    workflowitemType: Type.Optional(Type.Union([Type.Literal("general"), Type.Literal("restricted")])),
    workflowMode: Type.Optional(Type.Union([Type.Literal("ordered"), Type.Literal("unordered")])),
  },
  { additionalProperties: false },
);

export const Document = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    hash: Type.String({ pattern: "^[0-9a-f]{64}$", description: "sha-256 of the content (the archive's file store keeps it)" }),
    link: Type.Optional(Type.String({ maxLength: 2_000 })),
  },
  { additionalProperties: false },
);

export const WorkflowitemFields = Type.Object(
  {
    displayName: Type.String({ minLength: 1, maxLength: 200 }),
    description: Type.Optional(Text(10_000)),
    status: Status,
    assignee: Type.Optional(Identity),
    amountType: Type.Union([Type.Literal("N/A"), Type.Literal("disbursed"), Type.Literal("allocated")]),
    amount: Type.Optional(Decimal),
    currency: Type.Optional(CurrencyCode),
    exchangeRate: Type.Optional(PositiveDecimal),
    billingDate: Type.Optional(IsoDate),
    dueDate: Type.Optional(IsoDate),
    documents: Type.Optional(Type.Array(Document, { maxItems: 100 })),
    rejectReason: Type.Optional(Text(2_000)),
    tags: Type.Optional(Tags),
    additionalData: Type.Optional(AdditionalData),
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

export const workflowSchema = defineSchema({
  project: {
    parent: null,
    idStyle: "flat",
    fields: ProjectFields,
    statusField: "status",
    extraIntents: ["project.assign", "project.close", "project.budget.updateProjected", "project.budget.deleteProjected"],
    rules: checkBudgets,
  },
  subproject: {
    parent: "project",
    idStyle: "nested",
    fields: SubprojectFields,
    statusField: "status",
    orderedChildren: "workflowitem",
    extraIntents: ["subproject.assign", "subproject.close", "subproject.budget.updateProjected", "subproject.budget.deleteProjected"],
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
    rules: (d) => {
      checkCurrency(d.currency, "data.currency");
      for (const f of ["billingDate", "dueDate"] as const) {
        if (d[f] !== undefined && !isValidDate(d[f])) throw new ValidationError(`data.${f} is not a valid date`, `data.${f}`);
      }
      if (d.amountType === "N/A") {
        for (const f of ["amount", "currency", "exchangeRate"] as const) {
          if (d[f] !== undefined) throw new ValidationError(`data.${f} must not be set when amountType is N/A`, `data.${f}`);
        }
      }
    },
  },
});

export type WorkflowSchema = typeof workflowSchema.decl;
export type ProjectData = Static<typeof ProjectFields>;
export type SubprojectData = Static<typeof SubprojectFields>;
export type WorkflowitemData = Static<typeof WorkflowitemFields>;
