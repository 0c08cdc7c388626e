/**
 * Issue 16, finding 9, and issue 30: a write to an existing resource answers the written resource (200)
 * only to a caller that may view it once written; one that may act but not view (an assign intent without
 * viewDetails) gets 204, no body, and the new version as its ETag, which it sends back as If-Match. A
 * create answers its creator the whole resource (201), even one its permissions leave the creator no view
 * of. Finding 11 over HTTP: a caller that does not know of a resource gets the 404 a missing one answers.
 * One server over LMDB.
 */
import createClient from "openapi-fetch";
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import { whole, type FlowstoreClient, type NotViewable, type Workflowitem, type Written } from "../../src/client/index.js";
import type { components, paths } from "../../src/client/openapi.js";
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

  it("an assign without viewDetails answers 204, no body and the new ETag, the If-Match of the next write; a viewer gets 200 and the resource", async () => {
    const item = s.root.project("secret").subproject("s").workflowitem("w");
    await item.grant("workflowitem.assign", "eve");
    const before = await as(s.root, "GET", W);
    const version = Number(before.headers.get("etag")!.replace(/"/g, ""));
    // (Assigning herself would give eve the view intent, as TruBudget gives it to an assignee.)
    const assigned = await as(eve, "POST", `${W}/assign`, { assignee: "root" }, { "if-match": `"${version}"` });
    expect(assigned.status, JSON.stringify(assigned.body)).toBe(204);
    expect(assigned.body).toBe("");
    expect(assigned.headers.get("content-type")).toBeNull();
    const etag = assigned.headers.get("etag")!;
    expect(etag).toBe(`"${version + 1}"`);
    // The write happened.
    expect((await item.get()).meta.version).toBe(version + 1);

    // The ETag is the one the next write takes: the stale one is a 412, the answered one goes through.
    expect((await as(eve, "POST", `${W}/assign`, { assignee: "root" }, { "if-match": `"${version}"` })).status).toBe(412);
    const next = await as(eve, "POST", `${W}/assign`, { assignee: "root" }, { "if-match": etag });
    expect(next.status, JSON.stringify(next.body)).toBe(204);
    expect(next.headers.get("etag")).toBe(`"${version + 2}"`);

    // The client answers such a write as NotViewable with that ETag, which its next write sends back.
    const handle = eve.project("secret").subproject("s").workflowitem("w");
    const unseen = await handle.assign("root", { ifMatch: `"${version + 2}"` });
    expectTypeOf(unseen).toEqualTypeOf<Written<Workflowitem>>();
    expect(unseen).toEqual({ viewable: false, etag: `"${version + 3}"` });
    expect(() => whole(unseen)).toThrow(/204/);
    expect(await handle.assign("root", { ifMatch: (unseen as NotViewable).etag })).toEqual({ viewable: false, etag: `"${version + 4}"` });

    // Given viewDetails, the same write answers the whole resource, its ETag its version.
    await item.grant("workflowitem.viewDetails", "eve");
    const granted = (await item.get()).meta.version;
    const whole200 = await as(eve, "POST", `${W}/assign`, { assignee: "eve" }, { "if-match": `"${granted}"` });
    expect(whole200.status).toBe(200);
    expect(whole200.body.data).toMatchObject({ assignee: "eve", additionalData: { iban: IBAN } });
    expect(whole200.body.allowedIntents).toEqual(expect.arrayContaining(["workflowitem.assign", "workflowitem.viewDetails"]));
    expect(whole200.headers.get("etag")).toBe(`"${whole200.body.meta.version}"`);
    expect(whole200.body.meta.version).toBe(granted + 1);
    await item.revoke("workflowitem.viewDetails", "eve");
  });

  it("a restricted workflowitem created for another assignee answers its creator whole (201); the creator may not read it afterwards", async () => {
    // A restricted workflowitem made for another assignee leaves its creator `list` alone (TruBudget's rule).
    await s.root.project("secret").subproject("s").grant("subproject.createWorkflowitem", "eve");
    const body = { id: "r", displayName: "R", description: "for root's eyes", amountType: "N/A", assignee: "root", workflowitemType: "restricted" };
    const created = await as(eve, "POST", `${S}/workflowitems`, body);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.headers.get("location")).toBe(`${S}/workflowitems/r`);
    // What eve sent, the defaults and the facts of the creation; the intents she holds; no permission map.
    expect(created.body).toEqual({
      id: "r",
      type: "workflowitem",
      data: { displayName: "R", description: "for root's eyes", amountType: "N/A", assignee: "root", workflowitemType: "restricted", status: "open" },
      meta: { createdAt: expect.any(String), createdBy: "eve", updatedAt: expect.any(String), version: 1 },
      allowedIntents: ["workflowitem.list"],
    });
    expect(created.headers.get("etag")).toBe('"1"');
    // Afterwards it is root's: eve's read is refused as before (she holds list, so she knows of it), and says nothing of it.
    const read = await as(eve, "GET", `${S}/workflowitems/r`);
    expect(read.status).toBe(403);
    expect(JSON.stringify(read.body)).not.toContain("root's eyes");
    expect((await as(s.root, "GET", `${S}/workflowitems/r`)).body.data.description).toBe("for root's eyes");

    // A consumer's client types the create's answer as the resource: the friendly client and a generated one.
    const mine = await eve
      .project("secret")
      .subproject("s")
      .workflowitems.create({ id: "r2", displayName: "R2", amountType: "N/A", assignee: "root", workflowitemType: "restricted" });
    expectTypeOf(mine).toEqualTypeOf<Workflowitem>();
    expect(mine.data.displayName).toBe("R2");
    const api = createClient<paths>({ baseUrl: s.base, headers: { authorization: `Bearer ${eve.token}` } });
    const generated = await api.POST("/api/v1/projects/{projectId}/subprojects/{subprojectId}/workflowitems", {
      params: { path: { projectId: "secret", subprojectId: "s" } },
      body: { id: "r3", displayName: "R3", amountType: "N/A", assignee: "root", workflowitemType: "restricted" },
    });
    expectTypeOf(generated.data).toEqualTypeOf<components["schemas"]["Workflowitem"] | undefined>();
    expect(generated.response.status).toBe(201);
    expect(generated.data?.data).toMatchObject({ displayName: "R3", workflowitemType: "restricted" });
  });

  it("an update and a budget change answer 204 to a caller that may act but not view the result", async () => {
    const project = s.root.project("secret");
    await project.grant("project.update", "eve");
    await project.grant("project.budget.updateProjected", "eve");
    const version = (await project.get()).meta.version;
    const updated = await as(eve, "PATCH", P, { description: "changed by eve" }, { "if-match": `"${version}"` });
    expect(updated.status).toBe(204);
    expect(updated.body).toBe("");
    expect(updated.headers.get("etag")).toBe(`"${version + 1}"`);
    const budget = await as(eve, "PUT", `${P}/projected-budgets`, { organization: "Eve Org", value: "7", currencyCode: "EUR" });
    expect(budget.status).toBe(204);
    expect(budget.body).toBe("");
    expect(budget.headers.get("etag")).toBe(`"${version + 2}"`);
    expect((await project.get()).data).toMatchObject({ description: "changed by eve", projectedBudgets: [{ organization: "Eve Org", value: "7", currencyCode: "EUR" }] });
    // root, who may view it, is answered the project.
    const byRoot = await as(s.root, "PATCH", P, { description: "changed by root" });
    expect(byRoot.status).toBe(200);
    expect(byRoot.body).toMatchObject({ id: "secret", data: { description: "changed by root" }, meta: { version: version + 3 } });
  });
});
