/**
 * TruBudget's request bodies as TruBudget reads them (its api/src/httpd/server.ts: Ajv with
 * `removeAdditional: true, coerceTypes: true` on each route schema, then the route's Joi schema), with the
 * bodies its frontend sends (frontend/src/api.js and the sagas calling it), and the facts around them:
 *
 * | fact (TruBudget v2.18) | expected here |
 * |---|---|
 * | subproject.createWorkflowitem's route schema closes `data`; the frontend adds projectDisplayName, subprojectDisplayName, assigneeDisplayName and `"dueDate": null` | 200; the display names dropped, no due date |
 * | workflowitem.update declares dueDate a string: `null` coerces to "" (Joi allows "") | 200, the due date cleared |
 * | project.update's Joi takes `markdown` | 200 |
 * | subproject.update's route schema closes `data` | an unknown field is dropped: 200 |
 * | project.update's schema does not close `data`: Joi refuses an unknown key | 400 naming it |
 * | a number where a string is declared is coerced | `amount: 500` is "500" |
 * | `creationUnixTs` is whole seconds, as a string | within this hour, not milliseconds |
 * | ORGANIZATION: root's organization, network.list's; global.createUser of another one | 412 "organization does not exist" |
 * | root creating a project, subproject or workflowitem | 412 PreconditionError |
 * | two projected budgets of one organization and currency | 409 AlreadyExists |
 * | a disabled user's login | 403 |
 * | an unknown route, a method a path does not serve | TruBudget's error body (404; 405 with Allow) |
 * | the native /api/v1 | unchanged: strict, problems |
 * | workflowitem.update to amountType "N/A" with an amount | 200: amount, currency, exchange rate, billing date dropped |
 * | subproject.assign of the assignee it has, the subproject closed | 200, nothing changes |
 * | history events (its workflow/*_*.ts): projectId…; permission + grantee / revokee; projected budgets' organization, currencyCode, value | as listed |
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { raw, ROOT_PASSWORD } from "../harness.js";
import { expectError, startTruBudget, TB_ORGANIZATION, tbCall, tbLogin, type TbRunning } from "./harness.js";

describe("TruBudget's bodies, as TruBudget reads them", () => {
  let s: TbRunning;
  let mia: string;
  let projectId: string;
  let subprojectId: string;

  beforeAll(async () => {
    s = await startTruBudget();
    mia = await s.user("mia");
    await s.user("tom");
    expect((await s.call("global.grantPermission", { data: { identity: "mia", intent: "global.createProject" } })).status).toBe(200);
    // The frontend's create-project dialog (api.js createProject).
    const p = await s.call("global.createProject", {
      token: mia,
      data: {
        project: {
          displayName: "School",
          description: "",
          thumbnail: "/Thumbnail_0001.jpg",
          projectedBudgets: [{ organization: "KfW", value: "1000", currencyCode: "EUR" }],
          tags: [],
          additionalData: {},
        },
      },
    });
    expect(p.status, JSON.stringify(p.body)).toBe(200);
    projectId = p.body.data.project.id;
    // The frontend's create-subproject dialog (api.js createSubProject): validator undefined is left out by JSON.
    const sp = await s.call("project.createSubproject", {
      token: mia,
      data: { projectId, subproject: { displayName: "Roof", description: "", currency: "EUR", projectedBudgets: [], workflowMode: "ordered" } },
    });
    expect(sp.status, JSON.stringify(sp.body)).toBe(200);
    subprojectId = sp.body.data.subproject.id;
  });
  afterAll(() => s.close());

  const items = async () => (await s.call("workflowitem.list", { token: mia, query: { projectId, subprojectId } })).body.data.workflowitems as { data: Record<string, unknown> }[];

  it("creates a workflowitem from the frontend's dialog body: display names dropped, a null due date is none, a number coerced", async () => {
    const body = {
      projectId,
      subprojectId,
      status: "open",
      displayName: "Tiles",
      description: "",
      amountType: "allocated",
      amount: 500,
      currency: "EUR",
      exchangeRate: "1",
      fundingOrganization: "",
      assignee: "mia",
      assigneeDisplayName: "mia",
      projectDisplayName: "School",
      subprojectDisplayName: "Roof",
      dueDate: null,
      documents: [],
      workflowitemType: "general",
      tags: [],
    };
    const created = await s.call("subproject.createWorkflowitem", { token: mia, data: body });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const item = (await items()).find((i) => i.data.id === created.body.data.workflowitem.id)!;
    expect(item.data).toMatchObject({ displayName: "Tiles", amount: "500", assignee: "mia" });
    expect(item.data.dueDate).toBeUndefined();
    expect(item.data).not.toHaveProperty("projectDisplayName");
    // Whole seconds as a string, not milliseconds.
    expect(item.data.creationUnixTs).toMatch(/^\d+$/);
    expect(Math.abs(Number(item.data.creationUnixTs) - Date.now() / 1000)).toBeLessThan(3600);
  });

  it("updates with the frontend's bodies: workflowitem dueDate null, project markdown, subproject extras dropped", async () => {
    const created = await s.call("subproject.createWorkflowitem", {
      token: mia,
      data: { projectId, subprojectId, displayName: "Door", amountType: "N/A", dueDate: "2030-01-01T00:00:00.000Z", assignee: "mia" },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const workflowitemId = created.body.data.workflowitem.id;
    const update = await s.call("workflowitem.update", { token: mia, data: { projectId, subprojectId, workflowitemId, displayName: "Doors", dueDate: null } });
    expect(update.status, JSON.stringify(update.body)).toBe(200);
    const item = (await items()).find((i) => i.data.id === workflowitemId)!;
    expect(item.data).toMatchObject({ displayName: "Doors" });
    expect(item.data.dueDate ?? undefined).toBeUndefined();

    const project = await s.call("project.update", { token: mia, data: { projectId, description: "A school", markdown: "" } });
    expect(project.status, JSON.stringify(project.body)).toBe(200);
    const sub = await s.call("subproject.update", { token: mia, data: { projectId, subprojectId, description: "The roof", currency: "EUR", unknown: 1 } });
    expect(sub.status, JSON.stringify(sub.body)).toBe(200);
    const details = await s.call("subproject.viewDetails", { token: mia, query: { projectId, subprojectId } });
    expect(details.body.data.subproject.data.description).toBe("The roof");
  });

  it("refuses an unknown field where TruBudget's route schema leaves data open (its Joi refuses it), changing nothing", async () => {
    expectError(await s.call("project.update", { token: mia, data: { projectId, description: "x", unknown: 1 } }), 400, "data.unknown");
    expectError(await s.call("project.assign", { token: mia, data: { projectId, identity: "mia", extra: true } }), 400, "data.extra");
    const details = await s.call("project.viewDetails", { token: mia, query: { projectId } });
    expect(details.body.data.project.data.description).toBe("A school");
  });

  it("gives root the node's organization, as network.list does; global.createUser of another organization is a 412", async () => {
    const login = await tbLogin(s.base, "root", ROOT_PASSWORD);
    expect(login.answer.body.data.user.organization).toBe(TB_ORGANIZATION);
    const root = (await s.call("user.list")).body.data.items.find((i: { id: string }) => i.id === "root");
    expect(root.organization).toBe(TB_ORGANIZATION);
    expect((await s.call("network.list")).body.data.nodes[0].address.organization).toBe(TB_ORGANIZATION);
    expectError(
      await s.call("global.createUser", { data: { user: { id: "eve", displayName: "Eve", organization: "Elsewhere", password: "eve password 1" } } }),
      412,
      "organization does not exist",
    );
    expect((await s.call("user.list")).body.data.items.map((i: { id: string }) => i.id)).not.toContain("eve");
  });

  it("answers TruBudget's statuses: 412 for root creating, 409 for a second budget of one organization and currency, 403 for a disabled login", async () => {
    expectError(await s.call("global.createProject", { data: { project: { displayName: "Root's" } } }), 412, "user 'root' is not allowed to create projects");
    expectError(await s.call("project.createSubproject", { data: { projectId, subproject: { displayName: "R", currency: "EUR" } } }), 412, "subprojects");
    expectError(await s.call("subproject.createWorkflowitem", { data: { projectId, subprojectId, displayName: "R", amountType: "N/A" } }), 412, "workflowitems");
    const twice = [
      { organization: "KfW", value: "1", currencyCode: "EUR" },
      { organization: "KfW", value: "2", currencyCode: "EUR" },
    ];
    expectError(await s.call("global.createProject", { token: mia, data: { project: { displayName: "Twice", projectedBudgets: twice } } }), 409, "already exists");
    expectError(await s.call("project.createSubproject", { token: mia, data: { projectId, subproject: { displayName: "Twice", currency: "EUR", projectedBudgets: twice } } }), 409);

    expect((await s.call("global.disableUser", { data: { userId: "tom" } })).status).toBe(200);
    expectError(await tbCall(s.base, "user.authenticate", { data: { user: { id: "tom", password: "tom password 123" } } }), 403);
    // A wrong password stays 401, as it is for any user.
    expectError(await tbCall(s.base, "user.authenticate", { data: { user: { id: "tom", password: "wrong password 1" } } }), 401);
  });

  it("answers an unknown route and a method a path does not serve in TruBudget's error body; /api/v1 keeps problems", async () => {
    expectError(await s.call("project.nothing"), 404);
    const wrongMethod = await raw(s.base, "DELETE", "/api/project.list", { headers: { authorization: `Bearer ${s.rootToken}` } });
    expectError(wrongMethod, 405);
    expect(wrongMethod.headers.get("allow")).toContain("GET");
    const native = await raw(s.base, "GET", "/api/v1/nothing", { headers: { authorization: `Bearer ${s.rootToken}` } });
    expect(native.status).toBe(404);
    expect(native.headers.get("content-type")).toContain("application/problem+json");
  });

  it("serves history events in TruBudget's payload shapes: ids, grantee and revokee, the projected budget changed", async () => {
    for (const [intent, verb] of [
      ["project.viewDetails", "grantPermission"],
      ["project.viewDetails", "revokePermission"],
    ]) {
      expect((await s.call(`project.intent.${verb}`, { token: mia, data: { projectId, intent, identity: "tom" } })).status).toBe(200);
    }
    const budget = { projectId, organization: "KfW", currencyCode: "USD" };
    expect((await s.call("project.budget.updateProjected", { token: mia, data: { ...budget, value: "300" } })).status).toBe(200);
    expect((await s.call("project.budget.deleteProjected", { token: mia, data: budget })).status).toBe(200);
    const history = await s.call("project.viewHistory", { token: mia, query: { projectId } });
    expect(history.status, JSON.stringify(history.body)).toBe(200);
    const events = history.body.data.events.map((e: { businessEvent: Record<string, unknown> }) => e.businessEvent);
    const of = (type: string) => events.filter((e: { type: string }) => e.type === type);
    expect(of("project_created")[0]).toMatchObject({ projectId, publisher: "mia", project: { displayName: "School" } });
    expect(of("project_permission_granted").at(-1)).toMatchObject({ projectId, permission: "project.viewDetails", grantee: "tom" });
    expect(of("project_permission_revoked").at(-1)).toMatchObject({ projectId, permission: "project.viewDetails", revokee: "tom" });
    expect(of("project_permission_revoked").at(-1)).not.toHaveProperty("grantee");
    expect(of("project_projected_budget_updated").at(-1)).toMatchObject({ projectId, organization: "KfW", currencyCode: "USD", value: "300" });
    expect(of("project_projected_budget_deleted").at(-1)).toMatchObject({ projectId, organization: "KfW", currencyCode: "USD" });
    expect(of("project_updated").at(-1)).toMatchObject({ projectId, update: { description: "A school" } });
  });

  it("updates to N/A dropping the amount's fields, and assigns the unchanged assignee of a closed subproject as a no-op", async () => {
    const created = await s.call("subproject.createWorkflowitem", {
      token: mia,
      data: { projectId, subprojectId, displayName: "Paint", amountType: "allocated", amount: "100", currency: "EUR", exchangeRate: "1", assignee: "mia" },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const workflowitemId = created.body.data.workflowitem.id;
    const na = await s.call("workflowitem.update", {
      token: mia,
      data: { projectId, subprojectId, workflowitemId, amountType: "N/A", amount: "100", currency: "EUR", exchangeRate: "1" },
    });
    expect(na.status, JSON.stringify(na.body)).toBe(200);
    const item = (await items()).find((i) => i.data.id === workflowitemId)!;
    expect(item.data.amountType).toBe("N/A");
    expect(item.data.amount ?? undefined).toBeUndefined();

    const sp = await s.call("project.createSubproject", { token: mia, data: { projectId, subproject: { displayName: "Empty", currency: "EUR", assignee: "mia" } } });
    const emptyId = sp.body.data.subproject.id;
    expect((await s.call("subproject.close", { token: mia, data: { projectId, subprojectId: emptyId } })).status).toBe(200);
    const before = (await s.call("subproject.viewHistory", { token: mia, query: { projectId, subprojectId: emptyId } })).body.data.historyItemsCount;
    const same = await s.call("subproject.assign", { token: mia, data: { projectId, subprojectId: emptyId, identity: "mia" } });
    expect(same.status, JSON.stringify(same.body)).toBe(200);
    expect((await s.call("subproject.viewHistory", { token: mia, query: { projectId, subprojectId: emptyId } })).body.data.historyItemsCount).toBe(before);
    // Another assignee is still refused on a closed subproject (tom is disabled by now, which refuses it too).
    expect((await s.call("subproject.assign", { token: mia, data: { projectId, subprojectId: emptyId, identity: "tom" } })).status).toBeGreaterThanOrEqual(400);
  });
});
