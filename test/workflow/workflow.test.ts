import { afterEach, beforeEach, expect, it } from "vitest";
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from "../../src/errors.js";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { ResourceStore } from "../../src/resources/store.js";
import { projectRef, subprojectRef, Workflow, workflowitemRef } from "../../src/workflow/commands.js";
import { workflowSchema } from "../../src/workflow/schema.js";
import { forEachBackend, type BackendHandle } from "../conformance/backends.js";

const mary = userActor("mary", ["finance"]);
const jane = userActor("jane");
const val = userActor("val");

forEachBackend((backend) => {
  let h: BackendHandle;
  let wf: Workflow;
  let t = Date.parse("2026-03-01T00:00:00Z");

  /** Runs a refused command and proves it changed nothing in the project's partition. */
  async function refusedWithoutChange(p: string, run: () => Promise<unknown>, kind: new (...a: never[]) => Error, field?: string): Promise<void> {
    const before = await h.kv.scan(["project", p], { limit: 100_000 });
    const err = await run().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(kind);
    if (field) expect(err).toMatchObject({ field });
    const after = await h.kv.scan(["project", p], { limit: 100_000 });
    expect(after.entries.map((e) => [e.keyBytes.toString("hex"), e.value.toString("hex"), e.version])).toEqual(
      before.entries.map((e) => [e.keyBytes.toString("hex"), e.value.toString("hex"), e.version]),
    );
  }

  beforeEach(async () => {
    h = await backend.create();
    wf = new Workflow(new ResourceStore(h.kv, workflowSchema, { clock: () => (t += 1000) }));
    await wf.store.global.grant(SYSTEM, "global.createProject", "mary");
    await wf.createProject(mary, {
      id: "p",
      displayName: "School",
      projectedBudgets: [{ organization: "Ministry", value: "1000000.00", currencyCode: "EUR" }],
      tags: ["edu"],
    });
    await wf.createSubproject(mary, "p", { id: "s", displayName: "Building", currency: "EUR" });
  });
  afterEach(async () => h.destroy());

  const item = (id: string, extra: Record<string, unknown> = {}) => wf.createWorkflowitem(mary, "p", "s", { id, displayName: id, amountType: "N/A", ...extra });

  it("creates a tree with defaults and shows a project with its subprojects, a subproject with its ordered workflowitems", async () => {
    await item("w1");
    await item("w2", { amountType: "allocated", amount: "12.50", currency: "USD", exchangeRate: "0.92", dueDate: "2026-12-31" });
    const { project, subprojects } = await wf.projectDetails(mary, "p");
    expect(project.data).toMatchObject({ status: "open", assignee: "mary", displayName: "School" });
    expect(subprojects.items.map((s) => s.id)).toEqual(["s"]);
    // TruBudget's defaults: ordered, and no fixed workflowitem type (each item is general unless given).
    expect(subprojects.items[0]!.data).toMatchObject({ workflowMode: "ordered", currency: "EUR" });
    expect(subprojects.items[0]!.data).not.toHaveProperty("workflowitemType");
    const { workflowitems } = await wf.subprojectDetails(mary, "p", "s");
    expect(workflowitems.items.map((w) => w.id)).toEqual(["w1", "w2"]);
    expect(workflowitems.items[1]!.data.amount).toBe("12.50");
    expect((await wf.listProjects(mary)).items.map((b) => JSON.parse(b.toString()).id)).toEqual(["p"]);
    expect((await wf.listProjects(jane)).items).toHaveLength(0);
    await expect(wf.createProject(jane, { displayName: "x" })).rejects.toBeInstanceOf(ForbiddenError);
  });

  it("validates money, currencies and dates, naming the field", async () => {
    // A decimal comma is refused (commas only group thousands, TruBudget's syntax).
    await refusedWithoutChange("p", () => item("w", { amountType: "disbursed", amount: "12,5", currency: "EUR" }), ValidationError, "data.amount");
    await refusedWithoutChange("p", () => item("w", { amountType: "disbursed", amount: 12.5 as never, currency: "EUR" }), ValidationError, "data.amount");
    await refusedWithoutChange("p", () => item("w", { amountType: "disbursed", amount: "1", currency: "EUX" }), ValidationError, "data.currency");
    await refusedWithoutChange("p", () => item("w", { amountType: "disbursed", amount: "1", currency: "EUR", dueDate: "2026-02-30" }), ValidationError, "data.dueDate");
    await refusedWithoutChange("p", () => item("w", { amountType: "disbursed", amount: "1", currency: "EUR", exchangeRate: "0" }), ValidationError, "data.exchangeRate");
    await refusedWithoutChange(
      "p",
      () => wf.setProjectedBudget(mary, { type: "project", ids: ["p"] }, { organization: "X", value: "1", currencyCode: "ABC" }),
      ValidationError,
      "data.projectedBudgets.1.currencyCode",
    );
  });

  it("refuses amount fields when amountType is N/A", async () => {
    await refusedWithoutChange("p", () => item("w", { amount: "10" }), ValidationError, "data.amount");
    await item("w");
    await refusedWithoutChange("p", () => wf.update(mary, workflowitemRef("p", "s", "w"), { currency: "EUR" }), ValidationError, "data.currency");
  });

  it("refuses to close a workflowitem with an amount type but no amount or currency", async () => {
    await item("w", { amountType: "allocated" });
    await refusedWithoutChange("p", () => wf.closeWorkflowitem(mary, "p", "s", "w"), ValidationError, "data.amount");
    await wf.update(mary, workflowitemRef("p", "s", "w"), { amount: "5" });
    await refusedWithoutChange("p", () => wf.closeWorkflowitem(mary, "p", "s", "w"), ValidationError, "data.currency");
    await wf.update(mary, workflowitemRef("p", "s", "w"), { currency: "EUR" });
    expect((await wf.closeWorkflowitem(mary, "p", "s", "w")).data.status).toBe("closed");
  });

  it("refuses to update, assign or budget a closed resource", async () => {
    await item("w");
    await wf.closeWorkflowitem(mary, "p", "s", "w", { rejectReason: "not needed" });
    expect((await wf.store.reads.get(mary, { ...workflowitemRef("p", "s", "w"), type: "workflowitem" })).data.rejectReason).toBe("not needed");
    await refusedWithoutChange("p", () => wf.update(mary, workflowitemRef("p", "s", "w"), { description: "x" }), ConflictError, "status");
    await refusedWithoutChange("p", () => wf.assign(mary, workflowitemRef("p", "s", "w"), "jane"), ConflictError, "status");
    // Closing what is closed changes nothing (TruBudget answers it without a new event).
    await refusedWithoutChange(
      "p",
      async () => {
        const again = await wf.closeWorkflowitem(mary, "p", "s", "w");
        expect(again.data).toMatchObject({ status: "closed", rejectReason: "not needed" });
        throw new ConflictError("unchanged", "status");
      },
      ConflictError,
      "status",
    );
    await wf.closeSubproject(mary, "p", "s");
    await refusedWithoutChange("p", () => wf.update(mary, subprojectRef("p", "s"), { description: "x" }), ConflictError, "status");
    await refusedWithoutChange("p", () => item("late"), ConflictError, "status");
    await refusedWithoutChange("p", () => wf.reorderWorkflowitems(mary, "p", "s", ["w"]), ConflictError, "status");
    await refusedWithoutChange(
      "p",
      () => wf.setProjectedBudget(mary, { type: "subproject", ids: ["p", "s"] }, { organization: "o", value: "1", currencyCode: "EUR" }),
      ConflictError,
      "status",
    );
    await wf.closeProject(mary, "p");
    await refusedWithoutChange("p", () => wf.update(mary, projectRef("p"), { description: "x" }), ConflictError, "status");
    await refusedWithoutChange("p", () => wf.createSubproject(mary, "p", { displayName: "x", currency: "EUR" }), ConflictError, "status");
  });

  it("refuses status, assignee and budgets through update", async () => {
    await refusedWithoutChange("p", () => wf.update(mary, projectRef("p"), { status: "closed" }), ValidationError, "data.status");
    await refusedWithoutChange("p", () => wf.update(mary, projectRef("p"), { assignee: "jane" }), ValidationError, "data.assignee");
  });

  it("refuses to close a project with open subprojects and a subproject with open workflowitems", async () => {
    await item("w");
    await refusedWithoutChange("p", () => wf.closeSubproject(mary, "p", "s"), ConflictError, "status");
    await refusedWithoutChange("p", () => wf.closeProject(mary, "p"), ConflictError, "status");
    await wf.closeWorkflowitem(mary, "p", "s", "w");
    await wf.closeSubproject(mary, "p", "s");
    expect((await wf.closeProject(mary, "p")).data.status).toBe("closed");
  });

  it("in ordered mode (the default), closes a workflowitem only after every earlier one in the effective order", async () => {
    await wf.createSubproject(mary, "p", { id: "o", displayName: "Ordered", currency: "EUR" });
    for (const id of ["a", "b", "c"]) await wf.createWorkflowitem(mary, "p", "o", { id, displayName: id, amountType: "N/A" });
    await refusedWithoutChange("p", () => wf.closeWorkflowitem(mary, "p", "o", "b"), ConflictError, "status");
    await wf.reorderWorkflowitems(mary, "p", "o", ["b", "c", "a"]);
    await wf.closeWorkflowitem(mary, "p", "o", "b");
    await refusedWithoutChange("p", () => wf.closeWorkflowitem(mary, "p", "o", "a"), ConflictError, "status");
    await wf.closeWorkflowitem(mary, "p", "o", "c");
    await wf.closeWorkflowitem(mary, "p", "o", "a");
  });

  it("closes by the assignee only, and by the subproject's validator where one is set (the close intent alone is not enough)", async () => {
    await wf.createSubproject(mary, "p", { id: "v", displayName: "Validated", currency: "EUR", validator: "val" });
    await wf.createWorkflowitem(mary, "p", "v", { id: "w", displayName: "w", amountType: "N/A", assignee: "jane" });
    // jane is the assignee but not the validator; mary holds every intent but is neither.
    await wf.grant(mary, workflowitemRef("p", "v", "w"), "workflowitem.close", "jane");
    await refusedWithoutChange("p", () => wf.closeWorkflowitem(jane, "p", "v", "w"), ForbiddenError);
    await refusedWithoutChange("p", () => wf.closeWorkflowitem(mary, "p", "v", "w"), ForbiddenError);
    // The validator holding the close intent is still refused while jane is the assignee.
    await wf.grant(mary, workflowitemRef("p", "v", "w"), "workflowitem.close", "val");
    await refusedWithoutChange("p", () => wf.closeWorkflowitem(val, "p", "v", "w"), ForbiddenError);
    await wf.assign(mary, workflowitemRef("p", "v", "w"), "val");
    expect((await wf.closeWorkflowitem(val, "p", "v", "w")).data.status).toBe("closed");
  });

  it("restricted workflowitems: the assignee receives every intent, the assigner keeps only list", async () => {
    await wf.grant(mary, subprojectRef("p", "s"), "subproject.viewDetails", "jane");
    await wf.grant(mary, projectRef("p"), "project.viewDetails", "jane");
    await wf.createSubproject(mary, "p", { id: "r", displayName: "Restricted", currency: "EUR", workflowitemType: "restricted" });
    await item("open-one");
    await wf.createWorkflowitem(mary, "p", "r", { id: "secret", displayName: "secret", amountType: "N/A", assignee: "val" });
    for (const who of ["jane", "val"]) await wf.grant(mary, subprojectRef("p", "r"), "subproject.viewDetails", who);
    // jane inherited the project's viewDetails into the subproject (and into its general item), not into the restricted one's record.
    expect((await wf.subprojectDetails(jane, "p", "s")).workflowitems.items[0]).not.toHaveProperty("redacted");
    const perms = await wf.listPermissions(val, workflowitemRef("p", "r", "secret"));
    for (const i of wf.store.schema.type("workflowitem").intents.all) expect(perms[i]).toContain("val");
    for (const i of wf.store.schema.type("workflowitem").intents.all) {
      if (i === "workflowitem.list") expect(perms[i]).toContain("mary");
      else expect(perms[i] ?? []).not.toContain("mary");
    }
    const seenByMary = (await wf.subprojectDetails(mary, "p", "r")).workflowitems.items[0]!;
    expect(seenByMary).toMatchObject({ id: "secret", redacted: true, data: { status: "open" } });
    expect(seenByMary).not.toHaveProperty("data.displayName");
    await expect(wf.store.reads.get(mary, { ...workflowitemRef("p", "r", "secret"), type: "workflowitem" })).rejects.toBeInstanceOf(ForbiddenError);
    // val reassigns to jane: jane receives every intent, val keeps only list.
    await wf.assign(val, workflowitemRef("p", "r", "secret"), "jane");
    expect((await wf.subprojectDetails(jane, "p", "r")).workflowitems.items[0]).not.toHaveProperty("redacted");
    expect((await wf.subprojectDetails(val, "p", "r")).workflowitems.items[0]).toHaveProperty("redacted", true);
    // An item of a subproject with a fixed type takes it; another type is refused.
    await refusedWithoutChange(
      "p",
      () => wf.createWorkflowitem(mary, "p", "r", { id: "g", displayName: "g", amountType: "N/A", workflowitemType: "general" }),
      ValidationError,
      "data.workflowitemType",
    );
  });

  it("updates and deletes projected budgets; assigns; keeps history", async () => {
    const P = { type: "project" as const, ids: ["p"] };
    await wf.setProjectedBudget(mary, P, { organization: "Ministry", value: "2000000.00", currencyCode: "EUR" });
    await wf.setProjectedBudget(mary, P, { organization: "Bank", value: "5.5", currencyCode: "USD" });
    let p = (await wf.projectDetails(mary, "p")).project;
    expect(p.data.projectedBudgets).toEqual([
      { organization: "Ministry", value: "2000000.00", currencyCode: "EUR" },
      { organization: "Bank", value: "5.5", currencyCode: "USD" },
    ]);
    await wf.deleteProjectedBudget(mary, P, "Ministry", "EUR");
    await refusedWithoutChange("p", () => wf.deleteProjectedBudget(mary, P, "Ministry", "EUR"), ValidationError, "organization");
    await refusedWithoutChange("p", () => wf.setProjectedBudget(jane, P, { organization: "x", value: "1", currencyCode: "EUR" }), NotFoundError);
    await wf.assign(mary, projectRef("p"), "jane");
    p = (await wf.projectDetails(mary, "p")).project;
    expect(p.data.assignee).toBe("jane");
    const history = await wf.history(mary, projectRef("p"));
    expect(history.items.map((e) => e.type)).toEqual([
      "project.created",
      "project.projected_budget_updated",
      "project.projected_budget_updated",
      "project.projected_budget_deleted",
      "project.assigned",
    ]);
    // the same events as the stored bytes (what a response joins)
    expect((await wf.historyJson(mary, projectRef("p"))).items.map((b) => JSON.parse(b.toString("utf8")))).toEqual(history.items);
    await expect(wf.history(jane, projectRef("p"))).rejects.toBeInstanceOf(NotFoundError);
    await expect(wf.historyJson(jane, projectRef("p"))).rejects.toBeInstanceOf(NotFoundError);
    expect((await wf.store.audit.verify(["project", "p"])).ok).toBe(true);
  });

  it("lists, grants and revokes permissions; deletes a subproject with its workflowitems", async () => {
    await item("w1");
    await item("w2");
    const perms = await wf.listPermissions(mary, subprojectRef("p", "s"));
    expect(perms["subproject.createWorkflowitem"]).toEqual(["mary"]);
    await wf.grant(mary, subprojectRef("p", "s"), "subproject.createWorkflowitem", "finance");
    await wf.revoke(mary, subprojectRef("p", "s"), "subproject.createWorkflowitem", "mary");
    await expect(wf.createWorkflowitem(jane, "p", "s", { displayName: "x", amountType: "N/A" })).rejects.toBeInstanceOf(NotFoundError);
    await wf.delete(mary, subprojectRef("p", "s"));
    await expect(wf.subprojectDetails(mary, "p", "s")).rejects.toBeInstanceOf(NotFoundError);
    expect((await h.kv.scan(["project", "p"], { prefix: ["s", 2] })).entries).toHaveLength(0);
  });
});
