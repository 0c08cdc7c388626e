/**
 * The data every workflow benchmark and peer loads: the same projects, subprojects, workflowitems,
 * updates and orderings, generated deterministically so flowstore and each peer hold identical records.
 */
import type { Actor } from "../src/access/actor.js";
import { userActor } from "../src/access/actor.js";
import type { WorkflowitemInput } from "../src/workflow/commands.js";

/** Who creates and reads: the creator holds every intent (permission checks still run per item). */
export const MARY: Actor = userActor("mary", ["managers"]);

export interface TreeItem {
  readonly id: string;
  readonly data: WorkflowitemInput & { id: string };
}

export interface TreeSubproject {
  readonly id: string;
  readonly currency: string;
  readonly items: TreeItem[];
  /** A manual ordering set after loading (ids first, the rest by creation time). */
  readonly ordering: string[];
}

export interface TreeProject {
  readonly id: string;
  readonly subprojects: TreeSubproject[];
}

export interface Tree {
  readonly projects: TreeProject[];
  /** Updates applied after loading, in order (each is one event): the history workload's data. */
  readonly updates: { p: string; s: string; w: string; patch: { description: string } }[];
}

const STEPS = ["Tender", "Contract", "Down payment", "Site survey", "Delivery", "Inspection", "Invoice", "Final payment", "Report"];

export const itemId = (i: number): string => `wi-${String(i).padStart(6, "0")}`;

export function itemData(i: number, currency: string): TreeItem["data"] {
  const withAmount = i % 10 < 7;
  return {
    id: itemId(i),
    displayName: `${STEPS[i % STEPS.length]} ${Math.floor(i / STEPS.length) + 1}`,
    description: `Step ${i + 1}: ${STEPS[(i * 7) % STEPS.length]} for the phase, as agreed with the contractor.`,
    assignee: ["tom", "jane", "mary"][i % 3]!,
    ...(withAmount
      ? { amountType: i % 2 ? ("allocated" as const) : ("disbursed" as const), amount: `${(i * 37) % 50_000}.${String(i % 100).padStart(2, "0")}`, currency, exchangeRate: "1.0" }
      : { amountType: "N/A" as const }),
    dueDate: `2027-${String(1 + (i % 12)).padStart(2, "0")}-15`,
  };
}

export function subproject(id: string, n: number, currency = "EUR", ordered = 0): TreeSubproject {
  const items = Array.from({ length: n }, (_, i) => ({ id: itemId(i), data: itemData(i, currency) }));
  // a user dragged the last `ordered` items to the front, newest first
  const ordering = items
    .slice(n - ordered)
    .map((x) => x.id)
    .reverse();
  return { id, currency, items, ordering };
}
