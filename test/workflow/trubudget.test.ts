/**
 * The workflow domain against TruBudget's rules (issue 14, "Semantics to match", v2.18). Each case
 * names the rule it checks; the rules were read from TruBudget's domain layer
 * (api/src/service/domain/workflow/*.ts and workflowitem_types/*.ts):
 *
 * | case                         | TruBudget rule (file)                                                                          |
 * |------------------------------|------------------------------------------------------------------------------------------------|
 * | inherit-subproject           | subproject_create: project.X → subproject.X, project.createSubproject → subproject.createWorkflowitem, creator keeps all |
 * | inherit-workflowitem         | workflowitem_create: subproject.X → workflowitem.X; createWorkflowitem, reorder and budget intents not inherited |
 * | close-assignee               | workflowitem_close / subproject_close / project_close: only the assignee (or a member of the assigned group) closes; flowstore: holding the close intent too |
 * | close-validator              | workflowitem_close: with a validator set, only the validator (who is also the assignee) closes  |
 * | close-noop                   | *_close: closing a closed resource returns it with no new event                                |
 * | mode-ordered                 | subproject_create: workflowMode defaults to "ordered"; workflowitem_close: earlier items closed first |
 * | order-closed-first           | workflowitem_ordering.sortWorkflowitems: closed items first by close time, then ordering, then creation |
 * | type-restricted              | workflowitem_types/restricted: on create and assign the assignee gets every intent, the issuer keeps list |
 * | type-fixed                   | workflowitem_create: only the subproject's workflowitemType may be used                        |
 * | money-signed                 | money.moneyAmountSchema: optional minus, thousands grouped by commas                           |
 * | money-exchange-rate          | workflowitem_create: exchangeRate defaults to "1.0" unless amountType is N/A                   |
 * | billing-on-close             | workflowitem_closed.mutate: billingDate set to the close time when absent (amountType not N/A)  |
 * | na-clears                    | workflowitem_updated.mutate: amountType N/A removes amount, currency, exchangeRate, billingDate |
 * | additional-data-merge        | workflowitem_updated.updateAdditionalData: merged key by key (flowstore: null removes a key)   |
 * | fields                       | workflowitem: fundingOrganization and markdown fields                                          |
 * | assignee-exists              | workflowitem_create: the assignee must exist and not be disabled (user.authenticate)           |
 * | migration                    | *_create take status; flowstore: the system actor sets createdAt/createdBy (import of a history) |
 * | history-filter               | historyFilter.filterTraceEvents: publisher, startAt, endAt, eventType                          |
 *
 * Memory and LMDB only: the rules live in the domain, identical over every backend (the conformance
 * suite proves the backends equal).
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from "../../src/errors.js";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { Identity } from "../../src/identity/identity.js";
import { ResourceStore } from "../../src/resources/store.js";
import { projectRef, subprojectRef, Workflow, workflowitemRef } from "../../src/workflow/commands.js";
import { workflowSchema } from "../../src/workflow/schema.js";
import { backends, type BackendHandle } from "../conformance/backends.js";

const mary = userActor("mary");
const jane = userActor("jane", ["finance"]);
const tom = userActor("tom", ["finance"]);
const val = userActor("val");

for (const backend of backends.filter((b) => b.name === "memory" || b.name === "lmdb")) {
  describe(backend.name, () => {
    let h: BackendHandle;
    let users: BackendHandle;
    let wf: Workflow;
    let identity: Identity;
    let t: number;

    // The users and groups once per backend (password hashing is slow by design); a fresh store per case.
    beforeAll(async () => {
      users = await backend.create();
      identity = new Identity(users.kv);
      for (const id of ["mary", "jane", "tom", "val", "ghost-disabled"]) await identity.createUser(SYSTEM, { id, displayName: id, password: `${id} password 1234` });
      await identity.createGroup(SYSTEM, { id: "finance", displayName: "Finance", members: ["jane", "tom"] });
      await identity.disableUser(SYSTEM, "ghost-disabled");
    });
    afterAll(async () => users.destroy());

    beforeEach(async () => {
      h = await backend.create();
      t = Date.parse("2026-03-01T00:00:00Z");
      wf = new Workflow(new ResourceStore(h.kv, workflowSchema, { clock: () => (t += 1000), identities: identity }), identity);
      await wf.store.global.grant(SYSTEM, "global.createProject", "mary");
      await wf.createProject(mary, { id: "p", displayName: "School" });
    });
    afterEach(async () => h.destroy());

    const item = (s: string, id: string, extra: Record<string, unknown> = {}) => wf.createWorkflowitem(mary, "p", s, { id, displayName: id, amountType: "N/A", ...extra });

    it("inherit-subproject: a subproject copies the project's permissions mapped intent by intent; a viewer of the project sees it", async () => {
      await wf.grant(mary, projectRef("p"), "project.viewDetails", "jane");
      await wf.grant(mary, projectRef("p"), "project.createSubproject", "finance");
      await wf.grant(mary, projectRef("p"), "project.budget.updateProjected", "tom");
      await wf.createSubproject(mary, "p", { id: "s", displayName: "Later", currency: "EUR" });
      const perms = await wf.listPermissions(mary, subprojectRef("p", "s"));
      expect(perms["subproject.viewDetails"]).toEqual(["mary", "jane"]);
      expect(perms["subproject.createWorkflowitem"]).toEqual(["mary", "finance"]);
      expect(perms["subproject.budget.updateProjected"]).toEqual(["mary", "tom"]);
      // The creator keeps every intent.
      for (const i of wf.store.schema.type("subproject").intents.all) expect(perms[i]).toContain("mary");
      // jane, who could see the project, sees the subproject created later.
      expect((await wf.projectDetails(jane, "p")).subprojects.items[0]).not.toHaveProperty("redacted");
      expect((await wf.store.reads.get(jane, { ...subprojectRef("p", "s"), type: "subproject" })).data.displayName).toBe("Later");
      // finance (through the project's createSubproject) may create workflowitems.
      expect((await wf.createWorkflowitem(tom, "p", "s", { id: "by-tom", displayName: "x", amountType: "N/A" })).meta.createdBy).toBe("tom");
    });

    it("inherit-workflowitem: a workflowitem copies its subproject's permissions; create, reorder and budget intents have no counterpart", async () => {
      await wf.createSubproject(mary, "p", { id: "s", displayName: "S", currency: "EUR" });
      for (const i of ["subproject.viewDetails", "subproject.update", "subproject.reorderWorkflowitems", "subproject.budget.updateProjected"])
        await wf.grant(mary, subprojectRef("p", "s"), i, "jane");
      await item("s", "w");
      const perms = await wf.listPermissions(mary, workflowitemRef("p", "s", "w"));
      expect(perms["workflowitem.viewDetails"]).toContain("jane");
      expect(perms["workflowitem.update"]).toContain("jane");
      expect(Object.keys(perms).every((i) => i.startsWith("workflowitem."))).toBe(true);
      expect(perms["workflowitem.close"]).toEqual(["mary"]);
    });

    it("close-assignee: only the assignee (a user, or a member of the assigned group) closes; the close intent alone does not, nor being assigned alone", async () => {
      await wf.createSubproject(mary, "p", { id: "s", displayName: "S", currency: "EUR" });
      await item("s", "w", { assignee: "finance" });
      await wf.grant(mary, workflowitemRef("p", "s", "w"), "workflowitem.close", "val");
      await expect(wf.closeWorkflowitem(val, "p", "s", "w")).rejects.toBeInstanceOf(ForbiddenError);
      await expect(wf.closeWorkflowitem(mary, "p", "s", "w")).rejects.toBeInstanceOf(ForbiddenError);
      // tom is a member of finance: assigned, but without the close intent he is refused (issue 29, finding 3;
      // holding no intent at all, he may not know the item exists: the 404 of a missing one).
      await expect(wf.closeWorkflowitem(tom, "p", "s", "w")).rejects.toBeInstanceOf(NotFoundError);
      await wf.grant(mary, workflowitemRef("p", "s", "w"), "workflowitem.close", "finance");
      expect((await wf.closeWorkflowitem(tom, "p", "s", "w")).data.status).toBe("closed");
      // The subproject and the project: their assignee (mary, the creator) closes; jane with the intent does not.
      await wf.grant(mary, subprojectRef("p", "s"), "subproject.close", "jane");
      await expect(wf.closeSubproject(jane, "p", "s")).rejects.toBeInstanceOf(ForbiddenError);
      await wf.assign(mary, subprojectRef("p", "s"), "jane");
      expect((await wf.closeSubproject(jane, "p", "s")).data.status).toBe("closed");
      await wf.grant(mary, projectRef("p"), "project.close", "val");
      await expect(wf.closeProject(val, "p")).rejects.toBeInstanceOf(ForbiddenError);
      expect((await wf.closeProject(mary, "p")).data.status).toBe("closed");
    });

    it("close-validator: with a validator set, the validator closes, and only as the assignee", async () => {
      await wf.createSubproject(mary, "p", { id: "s", displayName: "S", currency: "EUR", validator: "val" });
      await item("s", "w", { assignee: "jane" });
      for (const who of ["jane", "val"]) await wf.grant(mary, workflowitemRef("p", "s", "w"), "workflowitem.close", who);
      await expect(wf.closeWorkflowitem(jane, "p", "s", "w")).rejects.toThrow(/validator/);
      await expect(wf.closeWorkflowitem(val, "p", "s", "w")).rejects.toThrow(/assignee/);
      await wf.assign(mary, workflowitemRef("p", "s", "w"), "val");
      expect((await wf.closeWorkflowitem(val, "p", "s", "w")).data.status).toBe("closed");
    });

    it("close-noop: closing a closed workflowitem, subproject or project answers it unchanged, with no event", async () => {
      await wf.createSubproject(mary, "p", { id: "s", displayName: "S", currency: "EUR" });
      await item("s", "w");
      await wf.closeWorkflowitem(mary, "p", "s", "w");
      await wf.closeSubproject(mary, "p", "s");
      await wf.closeProject(mary, "p");
      const head = await h.kv.get(["project", "p"], ["m", "head"]);
      for (const again of [() => wf.closeWorkflowitem(mary, "p", "s", "w"), () => wf.closeSubproject(mary, "p", "s"), () => wf.closeProject(mary, "p")]) {
        expect((await again()).data.status).toBe("closed");
      }
      expect(await h.kv.get(["project", "p"], ["m", "head"])).toEqual(head);
    });

    it("mode-ordered: subprojects are ordered by default; an item closes only after every earlier one", async () => {
      const s = await wf.createSubproject(mary, "p", { id: "s", displayName: "S", currency: "EUR" });
      expect(s.data.workflowMode).toBe("ordered");
      for (const id of ["a", "b"]) await item("s", id);
      await expect(wf.closeWorkflowitem(mary, "p", "s", "b")).rejects.toBeInstanceOf(ConflictError);
      await wf.closeWorkflowitem(mary, "p", "s", "a");
      await wf.closeWorkflowitem(mary, "p", "s", "b");
      await wf.createSubproject(mary, "p", { id: "u", displayName: "U", currency: "EUR", workflowMode: "unordered" });
      for (const id of ["a", "b"]) await item("u", id);
      expect((await wf.closeWorkflowitem(mary, "p", "u", "b")).data.status).toBe("closed");
    });

    it("order-closed-first: the TruBudget order lists closed items first by close time; the native order keeps seed 002's", async () => {
      await wf.createSubproject(mary, "p", { id: "u", displayName: "U", currency: "EUR", workflowMode: "unordered" });
      for (const id of ["a", "b", "c", "d"]) await item("u", id);
      await wf.reorderWorkflowitems(mary, "p", "u", ["d", "a"]);
      await wf.closeWorkflowitem(mary, "p", "u", "c");
      await wf.closeWorkflowitem(mary, "p", "u", "b");
      const native = (await wf.store.reads.listOrdered(mary, subprojectRef("p", "u"))).items.map((w) => w.id);
      expect(native).toEqual(["d", "a", "b", "c"]);
      const trubudget = (await wf.store.reads.listOrdered(mary, subprojectRef("p", "u"), { sequence: "closedFirst" })).items.map((w) => w.id);
      expect(trubudget).toEqual(["c", "b", "d", "a"]);
    });

    it("type-restricted: the assignee receives every intent, the issuer keeps only list (on create and on assign)", async () => {
      await wf.createSubproject(mary, "p", { id: "s", displayName: "S", currency: "EUR" });
      const w = await item("s", "r", { workflowitemType: "restricted", assignee: "jane" });
      expect(w.data.workflowitemType).toBe("restricted");
      const all = wf.store.schema.type("workflowitem").intents.all;
      let perms = await wf.listPermissions(jane, workflowitemRef("p", "s", "r"));
      for (const i of all) expect(perms[i]).toContain("jane");
      for (const i of all) expect(perms[i]?.includes("mary") ?? false).toBe(i === "workflowitem.list");
      await wf.assign(jane, workflowitemRef("p", "s", "r"), "val");
      perms = await wf.listPermissions(val, workflowitemRef("p", "s", "r"));
      for (const i of all) expect(perms[i]).toContain("val");
      for (const i of all) expect(perms[i]?.includes("jane") ?? false).toBe(i === "workflowitem.list");
      // A general item: no grants beyond visibility for the assignee.
      await item("s", "g", { assignee: "jane" });
      expect((await wf.store.reads.get(mary, { ...workflowitemRef("p", "s", "g"), type: "workflowitem" })).data.workflowitemType).toBe("general");
    });

    it("type-fixed: a subproject's type forces its items' type; another is refused naming the field", async () => {
      await wf.createSubproject(mary, "p", { id: "r", displayName: "R", currency: "EUR", workflowitemType: "restricted" });
      expect((await item("r", "w")).data.workflowitemType).toBe("restricted");
      await expect(item("r", "x", { workflowitemType: "general" })).rejects.toMatchObject({ field: "data.workflowitemType" });
      await expect(wf.update(mary, workflowitemRef("p", "r", "w"), { workflowitemType: "general" })).rejects.toMatchObject({ field: "data.workflowitemType" });
    });

    it("money-signed, money-exchange-rate, fields: negative and comma-grouped amounts are stored canonical; the rate defaults to 1.0", async () => {
      await wf.createSubproject(mary, "p", { id: "s", displayName: "S", currency: "EUR" });
      const w = await item("s", "w", { amountType: "disbursed", amount: "-1,000.50", currency: "EUR", fundingOrganization: "KfW", markdown: "# Notes" });
      expect(w.data).toMatchObject({ amount: "-1000.50", exchangeRate: "1.0", fundingOrganization: "KfW", markdown: "# Notes" });
      expect((await item("s", "n")).data).not.toHaveProperty("exchangeRate");
      expect((await wf.update(mary, workflowitemRef("p", "s", "w"), { amount: "12,345,678" })).data.amount).toBe("12345678");
      for (const bad of ["12,5", "1,00.5", "1.000,50", "--1", "1e3", ""]) {
        await expect(item("s", `bad${bad.length}`, { amountType: "disbursed", amount: bad, currency: "EUR" }), bad).rejects.toMatchObject({ field: "data.amount" });
      }
    });

    it("billing-on-close, na-clears, additional-data-merge", async () => {
      await wf.createSubproject(mary, "p", { id: "s", displayName: "S", currency: "EUR", workflowMode: "unordered" });
      await item("s", "w", { amountType: "disbursed", amount: "5", currency: "EUR" });
      const closed = await wf.closeWorkflowitem(mary, "p", "s", "w");
      expect(closed.data.billingDate).toBe(closed.data.closedAt);
      await item("s", "kept", { amountType: "disbursed", amount: "5", currency: "EUR", billingDate: "2026-01-31" });
      expect((await wf.closeWorkflowitem(mary, "p", "s", "kept")).data.billingDate).toBe("2026-01-31");
      expect((await wf.closeWorkflowitem(mary, "p", "s", (await item("s", "na")).id)).data).not.toHaveProperty("billingDate");

      await item("s", "x", { amountType: "allocated", amount: "7", currency: "USD", exchangeRate: "0.9", billingDate: "2026-02-01", additionalData: { a: 1, b: 2 } });
      const na = await wf.update(mary, workflowitemRef("p", "s", "x"), { amountType: "N/A" });
      for (const f of ["amount", "currency", "exchangeRate", "billingDate"]) expect(na.data).not.toHaveProperty(f);
      const merged = await wf.update(mary, workflowitemRef("p", "s", "x"), { additionalData: { b: null, c: 3 } });
      expect(merged.data.additionalData).toEqual({ a: 1, c: 3 });
      // The stored state is what a replay of the log gives.
      expect((await wf.store.audit.verify(["project", "p"])).ok).toBe(true);
    });

    it("assignee-exists: create and assign refuse a ghost or a disabled user naming the field; a group is fine", async () => {
      await wf.createSubproject(mary, "p", { id: "s", displayName: "S", currency: "EUR" });
      await expect(item("s", "w", { assignee: "nobody" })).rejects.toMatchObject({ field: "data.assignee" });
      await expect(item("s", "w", { assignee: "ghost-disabled" })).rejects.toMatchObject({ field: "data.assignee" });
      await expect(wf.createSubproject(mary, "p", { displayName: "x", currency: "EUR", validator: "nobody" })).rejects.toMatchObject({ field: "data.validator" });
      await expect(wf.createProject(mary, { displayName: "x", assignee: "nobody" })).rejects.toBeInstanceOf(ValidationError);
      await item("s", "w", { assignee: "finance" });
      await expect(wf.assign(mary, workflowitemRef("p", "s", "w"), "nobody")).rejects.toMatchObject({ field: "assignee" });
      await expect(wf.assign(mary, projectRef("p"), "ghost-disabled")).rejects.toMatchObject({ field: "assignee" });
      expect((await wf.assign(mary, workflowitemRef("p", "s", "w"), "jane")).data.assignee).toBe("jane");
    });

    it("migration: the system actor creates with the original createdAt, createdBy and closed status; others may not", async () => {
      const origin = { createdAt: "2019-05-01T10:00:00.000Z", createdBy: "alice" };
      const p = await wf.createProject(SYSTEM, { id: "old", displayName: "Old", assignee: "mary" }, { origin });
      expect(p.meta).toMatchObject(origin);
      await wf.createSubproject(SYSTEM, "old", { id: "s", displayName: "S", currency: "EUR" }, { origin });
      const w = await wf.createWorkflowitem(SYSTEM, "old", "s", { id: "w", displayName: "w", amountType: "N/A" }, { origin: { ...origin, closedAt: "2019-06-01T00:00:00.000Z" } });
      expect(w.data).toMatchObject({ status: "closed", closedAt: "2019-06-01T00:00:00.000Z" });
      expect(w.meta).toMatchObject(origin);
      const history = await wf.history(SYSTEM, workflowitemRef("old", "s", "w"));
      expect(history.items[0]!.payload.origin).toEqual(origin);
      expect((await wf.store.audit.asOf(SYSTEM, workflowitemRef("old", "s", "w"), new Date(t + 10_000)))!.meta).toMatchObject(origin);
      expect((await wf.store.audit.verify(["project", "old"])).ok).toBe(true);
      await expect(wf.createProject(mary, { displayName: "forged" }, { origin })).rejects.toBeInstanceOf(ForbiddenError);
      await expect(wf.createProject(SYSTEM, { displayName: "bad" }, { origin: { ...origin, createdAt: "yesterday" } })).rejects.toMatchObject({ field: "origin.createdAt" });
    });

    it("history-filter: publisher, since, until and type, paging on through filtered pages", async () => {
      await wf.createSubproject(mary, "p", { id: "s", displayName: "S", currency: "EUR" });
      await wf.grant(mary, subprojectRef("p", "s"), "subproject.update", "jane");
      const mid = new Date(t + 500).toISOString();
      for (let i = 0; i < 5; i++) await wf.update(i % 2 ? jane : mary, subprojectRef("p", "s"), { description: `v${i}` });
      const all = (await wf.history(mary, subprojectRef("p", "s"))).items;
      expect(all).toHaveLength(7);
      const byJane = await wf.history(mary, subprojectRef("p", "s"), { publisher: "jane" });
      expect(byJane.items.map((e) => e.payload.data)).toEqual([{ description: "v1" }, { description: "v3" }]);
      expect((await wf.history(mary, subprojectRef("p", "s"), { type: "subproject.permission_granted" })).items).toHaveLength(1);
      const since = await wf.history(mary, subprojectRef("p", "s"), { since: mid });
      expect(since.items.every((e) => e.at >= mid)).toBe(true);
      expect(since.items).toHaveLength(all.filter((e) => e.at >= mid).length);
      expect((await wf.history(mary, subprojectRef("p", "s"), { until: all[1]!.at })).items).toEqual(all.slice(0, 2));
      // Paging a filter: two at a time, every match once.
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page = await wf.history(mary, subprojectRef("p", "s"), { type: "subproject.updated", limit: 2, cursor });
        expect(page.items.length).toBeLessThanOrEqual(2);
        seen.push(...page.items.map((e) => String(e.payload.data?.description)));
        cursor = page.nextCursor;
      } while (cursor);
      expect(seen).toEqual(["v0", "v1", "v2", "v3", "v4"]);
      await expect(wf.history(mary, subprojectRef("p", "s"), { since: "not a time" })).rejects.toMatchObject({ field: "since" });
    });
  });
}
