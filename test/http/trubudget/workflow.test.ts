/**
 * TruBudget's project, subproject, workflowitem, document and notification routes on flowstore
 * (api/src/project_*.ts, subproject_*.ts, workflowitem*.ts, notification_*.ts of v2.18), through a real
 * server on 127.0.0.1. Every answer is checked against a schema below, written as data from TruBudget's
 * swagger schema of the route (the fields it requires, their types); TruBudget's intent names and its
 * order of workflowitems (closed ones first by close time, then the ordering) are checked as values.
 *
 * | case | what it proves |
 * |---|---|
 * | session | admin creates users and a group; a project with budgets, grants, a subproject, ordered workflowitems with documents (JSON base64, v2 multipart file and link), reorder, assign, a close out of order refused (412), closes in order, TruBudget's order, documents validated, downloaded and deleted, notifications counted, listed and read, history with filters, subproject and project closed, a backup restored over a later change |
 * | v2 list | /v2/project.list pages, searches and sorts as TruBudget's |
 * | redaction | an item the caller may not see is listed in its place, TruBudget's redacted form |
 * | permissions | no intent → 403 in TruBudget's error shape (404 for what the caller may not see, as the native API) |
 * | bad input | 400 naming the field, and nothing written |
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, nextMillisecond } from "../../support/eventually.js";
import { raw } from "../harness.js";
import { envelopeOf, expectError, expectShape, startTruBudget, TB, tbLogin, type Answer, type TbRunning } from "./harness.js";

// ---------------------------------------------------------------- TruBudget's schemas, as data

const str = { type: "string" } as const;
const strings = { type: "array", items: str } as const;
const unixTs = { type: "string", pattern: "^[0-9]+$" } as const;
const budgets = {
  type: "array",
  items: { type: "object", required: ["organization", "value", "currencyCode"], properties: { organization: str, value: str, currencyCode: str } },
} as const;
const EMPTY = envelopeOf({ type: "object", maxProperties: 0 });

/** project_list.ts: an item. */
const PROJECT = {
  type: "object",
  required: ["data", "allowedIntents"],
  properties: {
    allowedIntents: strings,
    data: {
      type: "object",
      required: ["id", "creationUnixTs", "status", "displayName", "description", "projectedBudgets"],
      properties: {
        id: str,
        creationUnixTs: unixTs,
        status: { enum: ["open", "closed"] },
        displayName: str,
        description: str,
        assignee: str,
        thumbnail: str,
        additionalData: { type: "object" },
        tags: strings,
        projectedBudgets: budgets,
      },
    },
  },
} as const;
/** subproject_list.ts: an item. */
const SUBPROJECT = {
  type: "object",
  required: ["data", "allowedIntents"],
  properties: {
    allowedIntents: strings,
    data: {
      type: "object",
      required: ["id", "creationUnixTs", "status", "displayName", "description", "currency", "projectedBudgets"],
      properties: {
        id: str,
        creationUnixTs: unixTs,
        status: { enum: ["open", "closed"] },
        displayName: str,
        description: str,
        assignee: str,
        validator: str,
        workflowitemType: { enum: ["general", "restricted"] },
        workflowMode: { enum: ["ordered", "unordered"] },
        currency: str,
        projectedBudgets: budgets,
        additionalData: { type: "object" },
      },
    },
  },
} as const;
/** workflowitem_list.ts: an item the caller may see. */
const WORKFLOWITEM = {
  type: "object",
  required: ["data", "allowedIntents"],
  properties: {
    allowedIntents: strings,
    data: {
      type: "object",
      required: ["id", "creationUnixTs", "status", "amountType", "displayName", "documents"],
      properties: {
        id: str,
        creationUnixTs: unixTs,
        status: { enum: ["open", "closed"] },
        rejectReason: str,
        amountType: { enum: ["N/A", "disbursed", "allocated"] },
        displayName: str,
        description: str,
        amount: str,
        assignee: str,
        currency: str,
        billingDate: str,
        dueDate: str,
        exchangeRate: str,
        additionalData: { type: "object" },
        workflowitemType: { enum: ["general", "restricted"] },
        tags: strings,
        fundingOrganization: str,
        documents: {
          type: "array",
          items: { type: "object", required: ["id", "fileName"], properties: { id: str, hash: str, link: str, fileName: str, linkedFileHash: str } },
        },
      },
    },
  },
} as const;
/** workflowitem.ts's redact(): the place, status, creation time, reject reason and tags; the rest null or empty. */
const REDACTED_WORKFLOWITEM = {
  type: "object",
  required: ["data", "allowedIntents"],
  properties: {
    allowedIntents: { type: "array", maxItems: 0 },
    data: {
      type: "object",
      required: ["id", "creationUnixTs", "status", "displayName", "amountType", "assignee", "documents"],
      properties: {
        id: str,
        creationUnixTs: unixTs,
        status: str,
        displayName: { type: "null" },
        amountType: { type: "null" },
        assignee: { type: "null" },
        documents: { type: "array", maxItems: 0 },
      },
    },
  },
} as const;
const HISTORY = envelopeOf({
  type: "object",
  required: ["historyItemsCount", "events"],
  properties: {
    historyItemsCount: { type: "number" },
    events: {
      type: "array",
      items: {
        type: "object",
        required: ["entityId", "entityType", "businessEvent", "snapshot"],
        properties: {
          entityId: str,
          entityType: str,
          businessEvent: {
            type: "object",
            required: ["type", "source", "time", "publisher"],
            properties: { type: str, source: str, time: { type: "string", format: "date-time" }, publisher: str },
          },
          snapshot: { type: "object", properties: { displayName: str } },
        },
      },
    },
  },
});
const PERMISSIONS = envelopeOf({ type: "object", additionalProperties: strings });
const CREATED_PROJECT = envelopeOf({ type: "object", required: ["project"], properties: { project: { type: "object", required: ["id"], properties: { id: str } } } });
const CREATED_SUBPROJECT = envelopeOf({
  type: "object",
  required: ["project", "subproject"],
  properties: { project: { type: "object", required: ["id"] }, subproject: { type: "object", required: ["id"] } },
});
const idOf = { type: "object", required: ["id"], properties: { id: str } } as const;
const CREATED_WORKFLOWITEM = {
  type: "object",
  required: ["apiVersion", "data"],
  properties: {
    apiVersion: str,
    data: { type: "object", required: ["project", "subproject", "workflowitem"], properties: { project: idOf, subproject: idOf, workflowitem: idOf } },
  },
} as const;
const BUDGETS = (idField: string) => envelopeOf({ type: "object", required: [idField, "projectedBudgets"], properties: { [idField]: str, projectedBudgets: budgets } });
const PROJECT_LIST = envelopeOf({ type: "object", required: ["items"], properties: { items: { type: "array", items: PROJECT } } });
const PROJECT_LIST_V2 = {
  type: "object",
  required: ["apiVersion", "data"],
  properties: {
    apiVersion: { const: "2.0" },
    data: {
      type: "object",
      required: ["items", "pagination"],
      properties: {
        items: { type: "array", items: PROJECT },
        pagination: {
          type: "object",
          required: ["totalRecords", "limit", "totalPages", "currentPage", "nextPage", "prevPage"],
          properties: {
            totalRecords: { type: "integer" },
            limit: { type: "integer" },
            totalPages: { type: "integer" },
            currentPage: { type: "integer" },
            nextPage: { type: ["string", "null"] },
            prevPage: { type: ["string", "null"] },
          },
        },
      },
    },
  },
} as const;
const PROJECT_DETAILS = envelopeOf({ type: "object", required: ["project", "subprojects"], properties: { project: PROJECT, subprojects: { type: "array", items: SUBPROJECT } } });
const SUBPROJECT_LIST = envelopeOf({ type: "object", required: ["items"], properties: { items: { type: "array", items: SUBPROJECT } } });
const SUBPROJECT_DETAILS = envelopeOf({
  type: "object",
  required: ["parentProject", "subproject", "workflowitems"],
  properties: {
    parentProject: { type: "object", required: ["id", "displayName"], properties: { id: str, displayName: str } },
    subproject: SUBPROJECT,
    workflowitems: { type: "array" },
  },
});
const WORKFLOWITEM_LIST = envelopeOf({ type: "object", required: ["workflowitems"], properties: { workflowitems: { type: "array" } } });
const WORKFLOWITEM_DETAILS = envelopeOf({ type: "object", required: ["workflowitem"], properties: { workflowitem: WORKFLOWITEM } });
const VALIDATED = envelopeOf({ type: "object", required: ["isIdentical"], properties: { isIdentical: { type: "boolean" } } });
const NOTIFICATION_COUNT = envelopeOf({
  type: "object",
  required: ["userId", "unread", "total"],
  properties: { userId: str, unread: { type: "integer" }, total: { type: "integer" } },
});
const ref = (extra: object = {}) => ({
  type: "object",
  required: ["id", "hasViewPermissions"],
  properties: { id: str, hasViewPermissions: { type: "boolean" }, displayName: str, ...extra },
});
const NOTIFICATION_LIST = envelopeOf({
  type: "object",
  required: ["userId", "notifications"],
  properties: {
    userId: str,
    notifications: {
      type: "array",
      items: {
        type: "object",
        required: ["id", "isRead", "businessEvent", "metadata"],
        properties: {
          id: str,
          isRead: { type: "boolean" },
          businessEvent: { type: "object", required: ["type", "time", "publisher"], properties: { type: str, time: str, publisher: str } },
          metadata: { type: "object", required: ["project"], properties: { project: ref(), subproject: ref(), workflowitem: ref() } },
        },
      },
    },
  },
});

/** TruBudget's intents of each level (api/src/authz/intents.ts), as it names them. */
const TB_INTENTS = {
  project: [
    "project.intent.listPermissions",
    "project.intent.grantPermission",
    "project.intent.revokePermission",
    "project.list",
    "project.viewDetails",
    "project.viewHistory",
    "project.assign",
    "project.update",
    "project.close",
    "project.createSubproject",
    "project.budget.updateProjected",
    "project.budget.deleteProjected",
  ],
  subproject: [
    "subproject.intent.listPermissions",
    "subproject.intent.grantPermission",
    "subproject.intent.revokePermission",
    "subproject.list",
    "subproject.viewDetails",
    "subproject.viewHistory",
    "subproject.assign",
    "subproject.update",
    "subproject.close",
    "subproject.createWorkflowitem",
    "subproject.reorderWorkflowitems",
    "subproject.budget.updateProjected",
    "subproject.budget.deleteProjected",
  ],
  workflowitem: [
    "workflowitem.intent.listPermissions",
    "workflowitem.intent.grantPermission",
    "workflowitem.intent.revokePermission",
    "workflowitem.list",
    "workflowitem.viewHistory",
    "workflowitem.assign",
    "workflowitem.update",
    "workflowitem.close",
  ],
};
const sorted = (a: readonly string[]) => [...a].sort();

// ---------------------------------------------------------------- the server

let s: TbRunning;
let mary: string;
let jane: string;
let olga: string;
const as = (token: string) => ({
  get: (intent: string, query: Record<string, string> = {}) => s.call(intent, { token, query }),
  post: (intent: string, data: unknown) => s.call(intent, { token, data }),
});
/** A multipart POST as TruBudget's frontend sends it (FormData). */
async function multipart(token: string, intent: string, form: FormData): Promise<Answer> {
  const res = await fetch(`${s.base}${TB}/${intent}`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: form });
  const text = await res.text();
  return { status: res.status, type: res.headers.get("content-type") ?? "", body: text ? JSON.parse(text) : text, headers: res.headers };
}
const ok200 = (a: Answer) => expect(a.status, JSON.stringify(a.body)).toBe(200);

beforeAll(async () => {
  s = await startTruBudget(undefined, { notifications: { follow: true, pollMs: 20 } });
  // The admin creates the users and a group, and lets mary create projects, all through TruBudget's API.
  [mary, jane, olga] = [await s.user("mary"), await s.user("jane"), await s.user("olga")];
  ok200(await s.call("global.createGroup", { data: { group: { id: "builders", displayName: "Builders", users: ["jane"] } } }));
  ok200(await s.call("group.addUser", { data: { groupId: "builders", userIds: ["olga"] } }));
  ok200(await s.call("global.grantPermission", { data: { identity: "mary", intent: "global.createProject" } }));
});
afterAll(async () => {
  await s?.close();
});

/** The first answer of `read` that is `done` (the notification follower runs in the background). */
async function waitFor<T>(read: () => Promise<T>, done: (v: T) => boolean, what: string): Promise<T> {
  return eventually(
    async () => {
      const v = await read();
      if (!done(v)) throw new Error(`not yet: ${JSON.stringify(v).slice(0, 300)}`);
      return v;
    },
    { what },
  );
}

describe("TruBudget's workflow routes", () => {
  it("session: project, budgets, grants, subproject, ordered workflowitems with documents, reorder, assign, closes, notifications, history", async () => {
    const M = as(mary);
    const J = as(jane);

    // ---- a project with budgets
    const created = await M.post("global.createProject", {
      project: {
        displayName: "School",
        description: "a school",
        tags: ["edu"],
        projectedBudgets: [{ organization: "KfW", value: "1000000.00", currencyCode: "EUR" }],
        additionalData: { k: 1 },
      },
    });
    ok200(created);
    expectShape(CREATED_PROJECT, created.body);
    const p: string = created.body.data.project.id;

    const list = await M.get("project.list");
    ok200(list);
    expectShape(PROJECT_LIST, list.body);
    const listed = list.body.data.items.find((i: { data: { id: string } }) => i.data.id === p);
    expect(listed.data).toMatchObject({
      displayName: "School",
      status: "open",
      assignee: "mary",
      tags: ["edu"],
      projectedBudgets: [{ organization: "KfW", value: "1000000.00", currencyCode: "EUR" }],
    });
    // Whole seconds (TruBudget's frontend multiplies by 1000): within this session, not in the year 58869.
    expect(Math.abs(Number(listed.data.creationUnixTs) - Date.now() / 1000)).toBeLessThan(3600);
    expect(sorted(listed.allowedIntents)).toEqual(sorted(TB_INTENTS.project));

    const budget = await M.post("project.budget.updateProjected", { projectId: p, organization: "World Bank", currencyCode: "USD", value: "500" });
    ok200(budget);
    expectShape(BUDGETS("projectId"), budget.body);
    expect(budget.body.data.projectedBudgets).toHaveLength(2);
    const dropped = await M.post("project.budget.deleteProjected", { projectId: p, organization: "World Bank", currencyCode: "USD" });
    ok200(dropped);
    expectShape(BUDGETS("projectId"), dropped.body);
    expect(dropped.body.data.projectedBudgets).toEqual([{ organization: "KfW", value: "1000000.00", currencyCode: "EUR" }]);

    const updated = await M.post("project.update", { projectId: p, description: "a bigger school" });
    ok200(updated);
    expectShape(EMPTY, updated.body);
    const relisted = (await M.get("project.list")).body.data.items.find((i: { data: { id: string } }) => i.data.id === p);
    expect(relisted.data.description).toBe("a bigger school"); // the list translated before is not served stale

    // ---- grants, under TruBudget's names
    for (const intent of ["project.viewDetails", "project.viewHistory"]) {
      const g = await M.post("project.intent.grantPermission", { projectId: p, identity: "builders", intent });
      ok200(g);
      expectShape(EMPTY, g.body);
    }
    const perms = await M.get("project.intent.listPermissions", { projectId: p });
    ok200(perms);
    expectShape(PERMISSIONS, perms.body);
    expect(perms.body.data["project.viewDetails"]).toEqual(expect.arrayContaining(["mary", "builders"]));
    expect(perms.body.data["project.close"]).toBeUndefined(); // TruBudget does not expose close intents
    expect(Object.keys(perms.body.data).every((i) => TB_INTENTS.project.includes(i))).toBe(true);
    ok200(await M.post("project.intent.revokePermission", { projectId: p, identity: "builders", intent: "project.viewHistory" }));
    expect((await M.get("project.intent.listPermissions", { projectId: p })).body.data["project.viewHistory"]).toEqual(["mary"]);

    // ---- a subproject
    const sub = await M.post("project.createSubproject", {
      projectId: p,
      subproject: { displayName: "Build", currency: "EUR", projectedBudgets: [{ organization: "KfW", value: "200", currencyCode: "EUR" }] },
    });
    ok200(sub);
    expectShape(CREATED_SUBPROJECT, sub.body);
    const sp: string = sub.body.data.subproject.id;
    const ids = { projectId: p, subprojectId: sp };
    const subs = await M.get("subproject.list", { projectId: p });
    ok200(subs);
    expectShape(SUBPROJECT_LIST, subs.body);
    expect(subs.body.data.items[0].data).toMatchObject({ id: sp, workflowMode: "ordered", currency: "EUR" });
    expect(sorted(subs.body.data.items[0].allowedIntents)).toEqual(sorted(TB_INTENTS.subproject));
    const details = await J.get("project.viewDetails", { projectId: p });
    ok200(details);
    expectShape(PROJECT_DETAILS, details.body);
    expect(details.body.data.project.allowedIntents).toEqual(["project.viewDetails"]);
    ok200(await M.post("subproject.update", { ...ids, description: "the building" }));
    ok200(await M.post("subproject.budget.updateProjected", { ...ids, organization: "KfW", currencyCode: "EUR", value: "300" }));
    ok200(await M.post("subproject.budget.deleteProjected", { ...ids, organization: "KfW", currencyCode: "EUR" }));
    // new items inherit the subproject's view (TruBudget's workflowitem.list on them)
    ok200(await M.post("subproject.intent.grantPermission", { ...ids, identity: "jane", intent: "subproject.viewDetails" }));
    expect((await M.get("subproject.intent.listPermissions", ids)).body.data["subproject.viewDetails"]).toContain("jane");

    // ---- three workflowitems: JSON with a base64 document, then v2 multipart with a file and a link
    const fileA = Buffer.from("contract A: build the walls");
    const w1r = await M.post("subproject.createWorkflowitem", {
      ...ids,
      displayName: "Walls",
      amountType: "disbursed",
      amount: "1,500.00",
      currency: "EUR",
      dueDate: "",
      documents: [{ id: "", base64: fileA.toString("base64"), fileName: "walls.txt", comment: "signed" }],
    });
    ok200(w1r);
    expectShape(CREATED_WORKFLOWITEM, w1r.body);
    const w1: string = w1r.body.data.workflowitem.id;
    const w2r = await M.post("subproject.createWorkflowitem", { ...ids, displayName: "Roof", amountType: "N/A" });
    ok200(w2r);
    const w2: string = w2r.body.data.workflowitem.id;
    const form = new FormData();
    form.append("apiVersion", "2.0");
    for (const [k, v] of Object.entries({
      ...ids,
      displayName: "Plans",
      amountType: "allocated",
      amount: "200",
      currency: "EUR",
      exchangeRate: "1.0",
      tags: "plan,paper",
      description: "undefined",
    }))
      form.append(k, v);
    const fileB = Buffer.from("%PDF the plans");
    form.append("documents", new Blob([fileB]), "plans.pdf");
    form.append("comment_0", "v1");
    form.append("link_1", JSON.stringify({ link: "https://example.org/plans", fileName: "online plans", comment: "mirror" }));
    const w3r = await multipart(mary, "v2/subproject.createWorkflowitem", form);
    expect(w3r.status, JSON.stringify(w3r.body)).toBe(200);
    expectShape(CREATED_WORKFLOWITEM, w3r.body);
    expect(w3r.body.apiVersion).toBe("2.0");
    const w3: string = w3r.body.data.workflowitem.id;
    const item = (w: string) => ({ ...ids, workflowitemId: w });

    const w3d = await M.get("workflowitem.viewDetails", item(w3));
    ok200(w3d);
    expectShape(WORKFLOWITEM_DETAILS, w3d.body);
    expect(w3d.body.data.workflowitem.data).toMatchObject({ displayName: "Plans", tags: ["plan", "paper"], amount: "200" });
    const docs3 = w3d.body.data.workflowitem.data.documents;
    expect(docs3.map((d: { fileName: string }) => d.fileName)).toEqual(["plans.pdf", "online plans"]);
    expect(docs3[0]).toMatchObject({ comment: "v1", hash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(docs3[1]).toMatchObject({ link: "https://example.org/plans", comment: "mirror" });
    expect(sorted(w3d.body.data.workflowitem.allowedIntents)).toEqual(sorted(TB_INTENTS.workflowitem));

    // ---- reorder: w3, w1, w2
    const reordered = await M.post("subproject.reorderWorkflowitems", { ...ids, ordering: [w3, w1, w2] });
    ok200(reordered);
    expectShape(EMPTY, reordered.body);
    const order = async (token = mary) =>
      ((await as(token).get("workflowitem.list", ids)).body.data.workflowitems as { data: { id: string; status: string } }[]).map((w) => w.data.id);
    expect(await order()).toEqual([w3, w1, w2]);

    // ---- assign w3 to the group; a close out of order is refused
    const assigned = await M.post("workflowitem.assign", { ...item(w3), identity: "builders" });
    ok200(assigned);
    expectShape(EMPTY, assigned.body);
    const early = await M.post("workflowitem.close", item(w1));
    expectError(early, 412, w3);
    expect((await M.get("workflowitem.viewDetails", item(w1))).body.data.workflowitem.data.status).toBe("open");
    // a member of the assigned group holding the close intent closes w3, then mary w1 (closed first, by close time)
    ok200(await M.post("workflowitem.intent.grantPermission", { ...item(w3), identity: "builders", intent: "workflowitem.close" }));
    const closed3 = await J.post("workflowitem.close", item(w3));
    ok200(closed3);
    expectShape(EMPTY, closed3.body);
    // close times have millisecond resolution and ties go by creation (w1 first): close w1 in a later one
    await nextMillisecond();
    ok200(await M.post("workflowitem.close", item(w1)));
    // TruBudget's order: the closed ones first by close time, whatever the ordering says, then the ordering
    ok200(await M.post("subproject.reorderWorkflowitems", { ...ids, ordering: [w2, w1, w3] }));
    const wl = await M.get("workflowitem.list", ids);
    ok200(wl);
    expectShape(WORKFLOWITEM_LIST, wl.body);
    for (const w of wl.body.data.workflowitems) expectShape(WORKFLOWITEM, w);
    expect(wl.body.data.workflowitems.map((w: { data: { id: string } }) => w.data.id)).toEqual([w3, w1, w2]);
    const sd = await M.get("subproject.viewDetails", ids);
    ok200(sd);
    expectShape(SUBPROJECT_DETAILS, sd.body);
    expect(sd.body.data.parentProject).toEqual({ id: p, displayName: "School" });
    expect(sd.body.data.workflowitems.map((w: { data: { id: string } }) => w.data.id)).toEqual([w3, w1, w2]);

    // ---- documents: validate, download, and delete (of an open item)
    const doc1 = (await M.get("workflowitem.viewDetails", item(w1))).body.data.workflowitem.data.documents[0];
    expect(doc1).toMatchObject({ fileName: "walls.txt", comment: "signed" });
    const same = await M.post("workflowitem.validateDocument", { ...item(w1), id: doc1.id, base64String: fileA.toString("base64"), hash: doc1.hash });
    ok200(same);
    expectShape(VALIDATED, same.body);
    expect(same.body.data.isIdentical).toBe(true);
    const other = await M.post("workflowitem.validateDocument", { ...item(w1), id: doc1.id, base64String: Buffer.from("forged").toString("base64"), hash: doc1.hash });
    expect(other.body.data.isIdentical).toBe(false);
    const dl = await raw(s.base, "GET", `${TB}/workflowitem.downloadDocument?${new URLSearchParams({ ...item(w1), documentId: doc1.id })}`, {
      headers: { authorization: `Bearer ${mary}` },
    });
    expect(dl.status).toBe(200);
    expect(dl.type).toBe("application/octet-stream");
    expect(dl.body).toBe(fileA.toString());
    expect(dl.headers.get("content-disposition")).toContain("walls.txt");
    const upd = new FormData();
    for (const [k, v] of Object.entries({ ...item(w2), description: "a red roof" })) upd.append(k, v);
    upd.append("documents", new Blob([Buffer.from("roof sketch")]), "roof.txt");
    const u2 = await multipart(mary, "v2/workflowitem.update", upd);
    expect(u2.status, JSON.stringify(u2.body)).toBe(200);
    const doc2 = (await M.get("workflowitem.viewDetails", item(w2))).body.data.workflowitem.data.documents[0];
    expect(doc2.fileName).toBe("roof.txt");
    const del = await raw(s.base, "DELETE", `${TB}/workflowitem.deleteDocument?${new URLSearchParams({ ...item(w2), documentId: doc2.id })}`, {
      headers: { authorization: `Bearer ${mary}` },
    });
    expect(del.status).toBe(204);
    expect((await M.get("workflowitem.viewDetails", item(w2))).body.data.workflowitem.data.documents).toEqual([]);
    ok200(await M.post("workflowitem.update", { ...item(w2), displayName: "Red roof" }));
    ok200(await M.post("workflowitem.close", item(w2)));

    // ---- notifications: olga (of the group) was told of the assignment and of jane's close; jane reads hers
    const count = await waitFor(
      () => as(olga).get("notification.count"),
      (a) => a.body.data?.total >= 2,
      "olga's 2 notifications",
    );
    ok200(count);
    expectShape(NOTIFICATION_COUNT, count.body);
    expect(count.body.data).toMatchObject({ userId: "olga", unread: 2, total: 2 });
    const olgas = await as(olga).get("notification.list");
    expect(olgas.body.data.notifications.map((n: { businessEvent: { type: string } }) => n.businessEvent.type)).toEqual(["workflowitem_assigned", "workflowitem_closed"]);
    const janeList = await waitFor(
      () => J.get("notification.list"),
      (a) => a.body.data?.notifications.length > 0,
      "jane's first notification",
    );
    ok200(janeList);
    expectShape(NOTIFICATION_LIST, janeList.body);
    const note = janeList.body.data.notifications[0];
    expect(note.businessEvent).toMatchObject({ type: "workflowitem_assigned", publisher: "mary" });
    expect(note.metadata.workflowitem).toMatchObject({ id: w3, displayName: "Plans", hasViewPermissions: true });
    expect(note.metadata.project).toMatchObject({ id: p, hasViewPermissions: true });
    const read = await J.post("notification.markRead", { notifications: [note.id] });
    ok200(read);
    expectShape(EMPTY, read.body);
    expect((await J.get("notification.count")).body.data.unread).toBe(0);
    expect((await J.get("notification.list", { offset: "-1", limit: "1" })).body.data.notifications.map((n: { isRead: boolean }) => n.isRead)).toEqual([true]);

    // ---- history with TruBudget's filters
    const h = await M.get("project.viewHistory", { projectId: p });
    ok200(h);
    expectShape(HISTORY, h.body);
    const types = h.body.data.events.map((e: { businessEvent: { type: string } }) => e.businessEvent.type);
    expect(types.slice(0, 4)).toEqual(["project_created", "project_projected_budget_updated", "project_projected_budget_deleted", "project_updated"]);
    expect(h.body.data.events[0].snapshot.displayName).toBe("School");
    const byType = await M.get("project.viewHistory", { projectId: p, eventType: "project_permission_granted" });
    expectShape(HISTORY, byType.body);
    expect(byType.body.data.historyItemsCount).toBe(2);
    expect(byType.body.data.events.every((e: { businessEvent: { type: string; publisher: string } }) => e.businessEvent.type === "project_permission_granted")).toBe(true);
    const t0 = h.body.data.events[1].businessEvent.time;
    const since = await M.get("project.viewHistory", { projectId: p, startAt: t0, publisher: "mary" });
    expect(since.body.data.events.every((e: { businessEvent: { time: string } }) => e.businessEvent.time >= t0)).toBe(true);
    expect((await M.get("project.viewHistory", { projectId: p, publisher: "jane" })).body.data.historyItemsCount).toBe(0);
    // TruBudget's frontend sends the dates of its date pickers; a range ending before it starts selects nothing (200, as on TruBudget)
    const inverted = await M.get("project.viewHistory", { projectId: p, startAt: "2026-11-28", endAt: "2026-11-27" });
    ok200(inverted);
    expect(inverted.body.data).toEqual({ historyItemsCount: 0, events: [] });
    expectError(await M.get("project.viewHistory", { projectId: p, startAt: "2026-11-28", endAt: "tomorrow" }), 400, "endAt");
    const last = await M.get("project.viewHistory", { projectId: p, offset: "-1", limit: "1" });
    expect(last.body.data.events.map((e: { businessEvent: { type: string } }) => e.businessEvent.type)).toEqual([types.at(-1)]);
    expect(last.body.data.historyItemsCount).toBe(types.length);
    const sh = await M.get("subproject.viewHistory", ids);
    expectShape(HISTORY, sh.body);
    expect(sh.body.data.events.map((e: { businessEvent: { type: string } }) => e.businessEvent.type)).toContain("workflowitems_reordered");
    const reorders = await M.get("subproject.viewHistory", { ...ids, eventType: "workflowitems_reordered" });
    expect(reorders.body.data.historyItemsCount).toBe(2);
    const wh = await M.get("workflowitem.viewHistory", item(w3));
    expectShape(HISTORY, wh.body);
    expect(wh.body.data.events.map((e: { businessEvent: { type: string } }) => e.businessEvent.type)).toEqual([
      "workflowitem_created",
      "workflowitem_updated",
      "workflowitem_updated",
      "workflowitem_assigned",
      "workflowitem_permission_granted",
      "workflowitem_closed",
    ]);
    expect(wh.body.data.events.at(-1).businessEvent.publisher).toBe("jane");

    // ---- close the subproject, then the project (the project first is refused: a subproject is open)
    expectError(await M.post("project.close", { projectId: p }), 412, sp);
    ok200(await M.post("subproject.close", ids));
    const pc = await M.post("project.close", { projectId: p });
    ok200(pc);
    expectShape(EMPTY, pc.body);
    expect((await M.get("project.viewDetails", { projectId: p })).body.data.project.data.status).toBe("closed");

    // ---- backup and restore (root): what is written after the backup is gone, the session's project is back
    const backup = await fetch(`${s.base}${TB}/system.createBackup`, { headers: { authorization: `Bearer ${s.rootToken}` } });
    expect(backup.status).toBe(200);
    const saved = Buffer.from(await backup.arrayBuffer());
    const later = await M.post("global.createProject", { project: { displayName: "After the backup" } });
    ok200(later);
    const restored = await raw(s.base, "POST", `${TB}/system.restoreBackup`, {
      headers: { authorization: `Bearer ${s.rootToken}`, "content-type": "application/gzip" },
      body: saved,
    });
    ok200(restored);
    expect(restored.body).toEqual({ apiVersion: "1.0", data: {} });
    // A restore ends every session from before it (issue 29 finding 9): everyone logs in again.
    expectError(await M.get("project.list"), 401);
    await s.loginRoot();
    const again = async (id: string): Promise<string> => (await tbLogin(s.base, id, `${id} password 123`)).token;
    [mary, jane, olga] = [await again("mary"), await again("jane"), await again("olga")];
    const listedIds = (await as(mary).get("project.list")).body.data.items.map((i: { data: { id: string } }) => i.data.id);
    expect(listedIds).toContain(p);
    expect(listedIds).not.toContain(later.body.data.project.id);
    expect((await as(mary).get("project.viewDetails", { projectId: p })).body.data.project.data.status).toBe("closed");
    expect((await s.app.flowstore.verifyAll()).ok).toBe(true);
  });

  it("v2 list: pages, searches and sorts as TruBudget's /v2/project.list", async () => {
    // A user of its own (root creates no project, TruBudget's rule), seeing only these three.
    const vic = await s.user("vic");
    ok200(await as(s.rootToken).post("global.grantPermission", { identity: "vic", intent: "global.createProject" }));
    const S = as(vic);
    for (const [name, tag] of [
      ["Alpha well", "water"],
      ["Beta road", "roads"],
      ["Gamma well", "water"],
    ])
      ok200(await S.post("global.createProject", { project: { displayName: name, tags: [tag] } }));
    const page1 = await S.get("v2/project.list", { page: "1", limit: "2", search: "tag:water", sort: "name", order: "desc" });
    ok200(page1);
    expectShape(PROJECT_LIST_V2, page1.body);
    expect(page1.body.data.items.map((i: { data: { displayName: string } }) => i.data.displayName)).toEqual(["Gamma well", "Alpha well"]);
    expect(page1.body.data.pagination).toMatchObject({ totalRecords: 2, limit: 2, totalPages: 1, currentPage: 1, nextPage: null, prevPage: null });
    const paged = await S.get("v2/project.list", { limit: "1", page: "2", search: "well" });
    expect(paged.body.data.items).toHaveLength(1);
    expect(paged.body.data.pagination).toMatchObject({ totalRecords: 2, totalPages: 2, currentPage: 2, nextPage: null, prevPage: "/v2/project.list?page=1&limit=1&search=well" });
    expectError(await S.get("v2/project.list", { sort: "budget" }), 400, "sort");
  });

  it("redaction: an item the caller may not see keeps its place in TruBudget's redacted form", async () => {
    const M = as(mary);
    const p = (await M.post("global.createProject", { project: { displayName: "Redacted" } })).body.data.project.id;
    const sp = (await M.post("project.createSubproject", { projectId: p, subproject: { displayName: "S", currency: "EUR" } })).body.data.subproject.id;
    const ids = { projectId: p, subprojectId: sp };
    const w = (await M.post("subproject.createWorkflowitem", { ...ids, displayName: "secret", amountType: "N/A", tags: ["confidential"] })).body.data.workflowitem.id;
    // rejected: closed with a reason, which TruBudget's redact() keeps, with the tags
    ok200(await M.post("workflowitem.close", { ...ids, workflowitemId: w, rejectReason: "not needed after all" }));
    for (const intent of ["subproject.viewDetails"]) ok200(await M.post("subproject.intent.grantPermission", { ...ids, identity: "olga", intent }));
    ok200(await M.post("project.intent.grantPermission", { projectId: p, identity: "olga", intent: "project.viewDetails" }));
    const hidden = await as(olga).get("workflowitem.list", ids);
    ok200(hidden);
    expectShape(REDACTED_WORKFLOWITEM, hidden.body.data.workflowitems[0]);
    expect(hidden.body.data.workflowitems[0].data).toMatchObject({ id: w, status: "closed", rejectReason: "not needed after all", tags: ["confidential"], displayName: null });
    // the subproject's details show it so too
    const details = (await as(olga).get("subproject.viewDetails", ids)).body.data.workflowitems[0];
    expect(details.data).toMatchObject({ id: w, rejectReason: "not needed after all", tags: ["confidential"], displayName: null });
    // TruBudget's workflowitem.list on the item is flowstore's view of it
    ok200(await M.post("workflowitem.intent.grantPermission", { ...ids, workflowitemId: w, identity: "olga", intent: "workflowitem.list" }));
    const seen = (await as(olga).get("workflowitem.list", ids)).body.data.workflowitems[0];
    expectShape(WORKFLOWITEM, seen);
    expect(seen.allowedIntents).toEqual(["workflowitem.list"]);
    const wp = await M.get("workflowitem.intent.listPermissions", { ...ids, workflowitemId: w });
    expectShape(PERMISSIONS, wp.body);
    expect(wp.body.data["workflowitem.list"]).toEqual(expect.arrayContaining(["mary", "olga"]));
    ok200(await M.post("workflowitem.intent.revokePermission", { ...ids, workflowitemId: w, identity: "olga", intent: "workflowitem.list" }));
    expectShape(REDACTED_WORKFLOWITEM, (await as(olga).get("workflowitem.list", ids)).body.data.workflowitems[0]);
  });

  it("permissions: a caller without the intent gets 403 in TruBudget's shape, and nothing changes", async () => {
    const M = as(mary);
    const p = (await M.post("global.createProject", { project: { displayName: "Private" } })).body.data.project.id;
    // flowstore does not tell a caller who may not see a resource that it exists (404, as the native API)
    expectError(await as(jane).get("project.viewDetails", { projectId: p }), 404);
    ok200(await M.post("project.intent.grantPermission", { projectId: p, identity: "jane", intent: "project.viewDetails" }));
    expectError(await as(jane).post("project.update", { projectId: p, displayName: "Mine" }), 403);
    expectError(await as(jane).post("project.intent.grantPermission", { projectId: p, identity: "jane", intent: "project.update" }), 403);
    expectError(await as(jane).post("global.createProject", { project: { displayName: "Nope" } }), 403);
    // TruBudget's close rule: a viewer who is not the assignee is refused with its PreconditionError (412)
    expectError(await as(jane).post("project.close", { projectId: p }), 412, "assignee");
    expect((await M.get("project.viewDetails", { projectId: p })).body.data.project.data.displayName).toBe("Private");
    expectError(await M.get("project.viewDetails", { projectId: "no-such-project" }), 404);
    expectError(await s.call("project.list", { token: "not-a-token" }), 401);
  });

  it("bad input: 400 naming the field, nothing written", async () => {
    const M = as(mary);
    const before = (await M.get("project.list")).body.data.items.length;
    expectError(await M.post("global.createProject", { project: { description: "no name" } }), 400, "displayName");
    expectError(await M.post("global.createProject", { project: { displayName: "x", status: "closed" } }), 400, "status");
    expectError(await M.post("global.createProject", { project: { displayName: "x", assignee: "nobody" } }), 400, "data.project.assignee");
    expectError(
      await M.post("global.createProject", { project: { displayName: "x", projectedBudgets: [{ organization: "o", value: "1", currencyCode: "XXQ" }] } }),
      400,
      "currencyCode",
    );
    expect((await M.get("project.list")).body.data.items.length).toBe(before);
    const p = (await M.post("global.createProject", { project: { displayName: "Input" } })).body.data.project.id;
    const sp = (await M.post("project.createSubproject", { projectId: p, subproject: { displayName: "S", currency: "EUR" } })).body.data.subproject.id;
    const ids = { projectId: p, subprojectId: sp };
    expectError(await M.post("project.createSubproject", { projectId: p, subproject: { displayName: "no currency" } }), 400, "currency");
    expectError(await M.post("subproject.createWorkflowitem", { ...ids, displayName: "w", amountType: "disbursed", amount: "12,5" }), 400, "amount");
    expectError(await M.post("subproject.createWorkflowitem", { ...ids, displayName: "w", amountType: "N/A", documents: [{ base64: "aGk=", fileName: "" }] }), 400, "fileName");
    const bad = new FormData();
    for (const [k, v] of Object.entries({ ...ids, amountType: "N/A" })) bad.append(k, v);
    bad.append("documents", new Blob([Buffer.from("x")]), "x.txt");
    const v2 = await multipart(mary, "v2/subproject.createWorkflowitem", bad);
    expectError(v2, 400, "displayName");
    expect((await M.get("workflowitem.list", ids)).body.data.workflowitems).toEqual([]);
    // a restricted item assigned to another leaves mary only its list intent: its documents are refused up front
    const rs = (await M.post("project.createSubproject", { projectId: p, subproject: { displayName: "R", currency: "EUR", workflowitemType: "restricted" } })).body.data.subproject
      .id;
    const restricted = await M.post("subproject.createWorkflowitem", {
      projectId: p,
      subprojectId: rs,
      displayName: "w",
      amountType: "N/A",
      assignee: "jane",
      documents: [{ base64: "aGk=", fileName: "hi.txt" }],
    });
    expectError(restricted, 400, "data.documents");
    expect((await M.get("workflowitem.list", { projectId: p, subprojectId: rs })).body.data.workflowitems).toEqual([]);
    expectError(await M.post("project.intent.grantPermission", { projectId: p, identity: "jane", intent: "project.delete" }), 400, "intent");
    expectError(await M.post("project.assign", { projectId: p, identity: "nobody" }), 400, "identity");
    expectError(await M.get("project.viewHistory", { projectId: p, startAt: "yesterday" }), 400, "startAt");
    expectError(await M.get("project.viewHistory", { projectId: p, limit: "0" }), 400, "limit");
    expectError(await M.get("workflowitem.list", { projectId: p }), 400, "subprojectId");
    expectError(await M.post("subproject.reorderWorkflowitems", { ...ids, ordering: "w1" }), 400, "ordering");
    expectError(await M.post("notification.markRead", { notifications: ["no-such-note"] }), 404);
    expect((await M.get("project.viewHistory", { projectId: p })).body.data.events.map((e: { businessEvent: { type: string } }) => e.businessEvent.type)).toEqual([
      "project_created",
    ]);
  });
});
