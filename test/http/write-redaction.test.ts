/**
 * Issue 16, finding 9: a write answers the written resource only to a caller that may view it; one that
 * may act but not view (an assign intent without viewDetails) gets the redacted form lists use, and the
 * version as its ETag. Finding 11 over HTTP: a caller that does not know of a resource gets the 404 a
 * missing one answers. One server over LMDB.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FlowstoreClient } from "../../src/client/index.js";
import { raw, startLmdbServer, type Running } from "./harness.js";

const IBAN = "DE89370400440532013000";

describe("write responses and existence", () => {
  let s: Running;
  let eve: FlowstoreClient;
  const P = "/api/v1/projects/secret";
  const S = `${P}/subprojects/s`;
  const W = `${S}/workflowitems/w`;

  const as = (c: FlowstoreClient, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    raw(s.base, method, path, {
      headers: { authorization: `Bearer ${c.token}`, ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  beforeAll(async () => {
    s = await startLmdbServer("redaction");
    eve = await s.userClient("eve");
    await s.root.projects.create({ id: "secret", displayName: "Secret" });
    await s.root.project("secret").subprojects.create({ id: "s", displayName: "S", currency: "EUR" });
    await s.root
      .project("secret")
      .subproject("s")
      .workflowitems.create({
        id: "w",
        displayName: "Pay the supplier",
        amountType: "allocated",
        amount: "1000",
        currency: "EUR",
        additionalData: { iban: IBAN },
      });
  });
  afterAll(async () => {
    await s?.close();
  });

  it("a caller that knows nothing of a resource gets the 404 of a missing one; once it holds an intent, 403", async () => {
    for (const [path, missing] of [
      [P, "/api/v1/projects/nope"],
      [W, `${S}/workflowitems/nope`],
    ] as const) {
      const absent = await as(eve, "GET", missing);
      const hidden = await as(eve, "GET", path);
      expect(absent.status).toBe(404);
      expect(hidden.status).toBe(404);
      expect(hidden.body).toEqual({ ...absent.body, detail: absent.body.detail.replace("nope", path.slice(path.lastIndexOf("/") + 1)) });
      const write = await as(eve, "PATCH", path, { description: "x" });
      expect(write.status).toBe(404);
    }
    await s.root.project("secret").subproject("s").workflowitem("w").grant("workflowitem.assign", "eve");
    expect((await as(eve, "GET", W)).status).toBe(403);
    expect((await as(eve, "PATCH", W, { description: "x" })).status).toBe(403);
    // The subproject is still unknown to eve: an intent on a child does not reveal its parent's details.
    expect((await as(eve, "GET", S)).status).toBe(404);
  });

  it("an assign without viewDetails answers the redacted workflowitem, not its data; a viewer gets it whole", async () => {
    const item = s.root.project("secret").subproject("s").workflowitem("w");
    await item.grant("workflowitem.assign", "eve");
    const before = await as(s.root, "GET", W);
    const version = Number(before.headers.get("etag")!.replace(/"/g, ""));
    // (Assigning herself would give eve the view intent, as TruBudget gives it to an assignee.)
    const assigned = await as(eve, "POST", `${W}/assign`, { assignee: "root" }, { "if-match": `"${version}"` });
    expect(assigned.status, JSON.stringify(assigned.body)).toBe(200);
    expect(JSON.stringify(assigned.body)).not.toContain(IBAN);
    // With the intents eve holds on it as written, as a list shows them.
    expect(assigned.body).toEqual({
      id: "w",
      type: "workflowitem",
      redacted: true,
      data: { status: "open" },
      meta: { createdAt: before.body.meta.createdAt },
      allowedIntents: ["workflowitem.assign"],
    });
    expect(assigned.headers.get("etag")).toBe(`"${version + 1}"`);
    // The write happened.
    expect((await item.get()).meta.version).toBe(version + 1);

    // Given viewDetails, the same write answers the whole resource.
    await item.grant("workflowitem.viewDetails", "eve");
    const whole = await as(eve, "POST", `${W}/assign`, { assignee: "eve" });
    expect(whole.status).toBe(200);
    expect(whole.body.data).toMatchObject({ assignee: "eve", additionalData: { iban: IBAN } });
    await item.revoke("workflowitem.viewDetails", "eve");
  });

  it("a create may be answered redacted too, so the OpenAPI types create and update answers as the resource or Redacted", async () => {
    // A restricted workflowitem made for another assignee leaves its creator `list` alone (TruBudget's rule).
    await s.root.project("secret").subproject("s").grant("subproject.createWorkflowitem", "eve");
    const created = await as(eve, "POST", `${S}/workflowitems`, { id: "r", displayName: "R", amountType: "N/A", assignee: "root", workflowitemType: "restricted" });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ id: "r", redacted: true, allowedIntents: ["workflowitem.list"] });
    const { paths } = (await raw(s.base, "GET", "/openapi.json")).body;
    for (const [path, method, status] of [
      ["/api/v1/projects/{projectId}/subprojects/{subprojectId}/workflowitems", "post", "201"],
      ["/api/v1/projects/{projectId}", "patch", "200"],
    ] as const) {
      const answer = JSON.stringify(paths[path][method].responses[status].content["application/json"].schema);
      expect(answer, `${method} ${path}`).toContain("#/components/schemas/Redacted");
    }
  });

  it("an update and a budget change are redacted the same way for a caller that may not view the result", async () => {
    const project = s.root.project("secret");
    await project.grant("project.update", "eve");
    await project.grant("project.budget.updateProjected", "eve");
    const updated = await as(eve, "PATCH", P, { description: "changed by eve" });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ id: "secret", redacted: true });
    expect(updated.body.data.description).toBeUndefined();
    const budget = await as(eve, "PUT", `${P}/projected-budgets`, { organization: "Eve Org", value: "7", currencyCode: "EUR" });
    expect(budget.status).toBe(200);
    expect(budget.body).toMatchObject({ id: "secret", redacted: true });
    expect(JSON.stringify(budget.body)).not.toContain("Eve Org");
    expect((await project.get()).data).toMatchObject({ description: "changed by eve", projectedBudgets: [{ organization: "Eve Org", value: "7", currencyCode: "EUR" }] });
  });
});
