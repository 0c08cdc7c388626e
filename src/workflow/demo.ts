/**
 * A realistic, reproducible demo data set: a few projects with projected budgets, subprojects in several
 * currencies and modes, hundreds of workflowitems with amounts, updates, closes and a manual
 * ordering, and permissions for several users and groups. Tests and benchmarks use it; `flowstore demo`
 * loads it.
 */
import { SYSTEM, userActor, type Actor } from "../access/actor.js";
import type { Identity } from "../identity/index.js";
import type { Workflow } from "./commands.js";
import { projectRef, subprojectRef, workflowitemRef } from "./commands.js";

export interface DemoOptions {
  projects?: number;
  subprojectsPerProject?: number;
  workflowitemsPerSubproject?: number;
  seed?: number;
  /** Called after each workflowitem with the count so far and the total (progress). */
  onItem?: (done: number, total: number) => void;
}

export interface DemoSummary {
  projects: number;
  subprojects: number;
  workflowitems: number;
  events: number;
  users: string[];
  groups: Record<string, string[]>;
}

/** The people of the demo: ids and the groups they belong to. */
export const DEMO_USERS: Record<string, { displayName: string; groups: string[] }> = {
  mary: { displayName: "Mary Manager", groups: ["managers"] },
  jane: { displayName: "Jane Finance", groups: ["finance"] },
  tom: { displayName: "Tom Field", groups: ["field"] },
  val: { displayName: "Val Validator", groups: ["auditors"] },
  ana: { displayName: "Ana Auditor", groups: ["auditors"] },
};

export const DEMO_GROUPS: Record<string, string[]> = {
  managers: ["mary"],
  finance: ["jane"],
  field: ["tom"],
  auditors: ["val", "ana"],
};

/** Creates the demo users and groups that do not exist yet (grants name only identities that exist). */
export async function ensureDemoIdentities(identity: Identity, password: string): Promise<void> {
  for (const [id, u] of Object.entries(DEMO_USERS)) {
    if (!(await identity.exists(id))) await identity.createUser(SYSTEM, { id, displayName: u.displayName, password });
  }
  for (const [id, members] of Object.entries(DEMO_GROUPS)) {
    if (!(await identity.exists(id))) await identity.createGroup(SYSTEM, { id, displayName: id, members });
  }
}

/** mulberry32: a small seeded generator (the demo data; the bench load driver draws its requests with it). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PLACES = ["Ulaanbaatar", "Addis Ababa", "Recife", "Tbilisi", "Kigali", "Chiclayo", "Da Nang", "Lviv"];
const THEMES = ["School", "Water supply", "Health centre", "Solar grid", "Library", "Bridge"];
const PHASES = ["Planning", "Procurement", "Construction", "Equipment", "Training", "Evaluation"];
const STEPS = ["Tender", "Contract", "Down payment", "Site survey", "Delivery", "Inspection", "Invoice", "Final payment", "Report"];
const CURRENCIES = ["EUR", "USD", "BRL", "ETB", "MNT", "GEL", "RWF", "UAH"];

function money(r: () => number, max: number): string {
  const cents = Math.floor(r() * max * 100);
  return `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, "0")}`;
}

export async function generateDemo(wf: Workflow, options: DemoOptions = {}): Promise<DemoSummary> {
  const P = options.projects ?? 3;
  const S = options.subprojectsPerProject ?? 3;
  const I = options.workflowitemsPerSubproject ?? 40;
  const r = prng(options.seed ?? 42);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const mary: Actor = userActor("mary", ["managers"]);
  const val: Actor = userActor("val", ["auditors"]);
  const actorOf = (id: string): Actor => userActor(id, DEMO_USERS[id]?.groups ?? []);
  let events = 0;
  let items = 0;

  await wf.store.global.grant(SYSTEM, "global.createProject", "managers");
  for (let p = 0; p < P; p++) {
    const pid = `demo-${p + 1}`;
    const place = PLACES[p % PLACES.length]!;
    await wf.createProject(mary, {
      id: pid,
      displayName: `${pick(THEMES)} ${place}`,
      description: `Demo project ${p + 1} in ${place}.`,
      projectedBudgets: [
        { organization: "Ministry of Finance", value: money(r, 5_000_000), currencyCode: "EUR" },
        { organization: "Development Bank", value: money(r, 2_000_000), currencyCode: "USD" },
      ],
      tags: ["demo", place.toLowerCase().replace(/\s+/g, "-")],
    });
    events++;
    for (const [intent, who] of [
      ["project.list", "finance"],
      ["project.viewDetails", "finance"],
      ["project.list", "auditors"],
      ["project.viewDetails", "auditors"],
      ["project.viewHistory", "auditors"],
    ] as const) {
      await wf.grant(mary, projectRef(pid), intent, who);
      events++;
    }
    for (let s = 0; s < S; s++) {
      const sid = `sp-${s + 1}`;
      const currency = CURRENCIES[(p * S + s) % CURRENCIES.length]!;
      const ordered = s % 2 === 1;
      const restricted = s === S - 1 && S > 2;
      await wf.createSubproject(mary, pid, {
        id: sid,
        displayName: `${PHASES[s % PHASES.length]} (${currency})`,
        currency,
        workflowMode: ordered ? "ordered" : "unordered",
        workflowitemType: restricted ? "restricted" : "general",
        validator: s === 0 ? "val" : undefined,
        projectedBudgets: [{ organization: "Ministry of Finance", value: money(r, 500_000), currencyCode: currency }],
      });
      events++;
      for (const who of ["finance", "auditors", "field"]) {
        await wf.grant(mary, subprojectRef(pid, sid), "subproject.viewDetails", who);
        await wf.grant(mary, subprojectRef(pid, sid), "subproject.list", who);
        events += 2;
      }
      const ids: string[] = [];
      for (let i = 0; i < I; i++) {
        const wid = `wi-${String(i + 1).padStart(4, "0")}`;
        const withAmount = r() < 0.7;
        const assignee = pick(["tom", "jane", "mary"]);
        await wf.createWorkflowitem(mary, pid, sid, {
          id: wid,
          displayName: `${STEPS[i % STEPS.length]} ${Math.floor(i / STEPS.length) + 1}`,
          description: `Step ${i + 1} of ${PHASES[s % PHASES.length]}.`,
          assignee,
          ...(withAmount ? { amountType: pick(["allocated", "disbursed"] as const), amount: money(r, 50_000), currency, exchangeRate: "1.0" } : { amountType: "N/A" as const }),
          dueDate: `2027-${String(1 + (i % 12)).padStart(2, "0")}-15`,
        });
        ids.push(wid);
        items++;
        events++;
        options.onItem?.(items, P * S * I);
        if (r() < 0.3) {
          // In a restricted subproject the assignee holds the item's intents (TruBudget's rule), so it revises it.
          await wf.update(restricted ? actorOf(assignee) : mary, workflowitemRef(pid, sid, wid), { description: `Revised: step ${i + 1}.` });
          events++;
        }
      }
      if (ordered && ids.length > 2) {
        // Move the last item to the front, as a user would drag it.
        await wf.reorderWorkflowitems(mary, pid, sid, [ids[ids.length - 1]!, ...ids.slice(0, 2)]);
        events++;
      }
      // Close the first few items in effective order, each by its assignee holding the close intent; where the
      // subproject has a validator, the validator closes, so the items are assigned to it first.
      const order = (await wf.store.reads.listOrdered(SYSTEM, subprojectRef(pid, sid), { limit: 10_000 })).items.map((x) => x.id);
      for (const wid of order.slice(0, Math.min(5, order.length))) {
        const it = await wf.store.reads.get(SYSTEM, { ...workflowitemRef(pid, sid, wid), type: "workflowitem" });
        if (it.data.amountType !== "N/A" && (!it.data.amount || !it.data.currency)) continue;
        if (s === 0 && it.data.assignee !== "val") await wf.assign(mary, workflowitemRef(pid, sid, wid), "val"), events++;
        const closer = s === 0 ? val : actorOf(it.data.assignee as string);
        // Closing needs the close intent as well as the assignment (a restricted item's assignee holds it).
        if (!restricted && closer.id !== mary.id) await wf.grant(mary, workflowitemRef(pid, sid, wid), "workflowitem.close", closer.id), events++;
        await wf.closeWorkflowitem(closer, pid, sid, wid);
        events++;
      }
    }
  }
  return {
    projects: P,
    subprojects: P * S,
    workflowitems: items,
    events,
    users: Object.keys(DEMO_USERS),
    groups: DEMO_GROUPS,
  };
}
