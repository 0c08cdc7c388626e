/**
 * TruBudget's routes added for issue 28 on flowstore, through a real server on 127.0.0.1, each from
 * TruBudget's v2.18 source (api/src/*.ts): its API documentation, and the permissions of users and
 * groups (`user.intent.listPermissions|grantPermission|revokePermission`, `group.intent.listPermissions`).
 *
 * | case | TruBudget's contract |
 * |---|---|
 * | documentation | GET /api/documentation, public: a Swagger UI page; its OpenAPI document holds the adapter's routes (not the native API's) |
 * | root reads all | project.list (and v2), project.viewDetails, subproject.list|viewDetails, workflowitem.list|viewDetails: root sees every resource whole (its project_list.ts, subproject_list.ts, workflowitem_list.ts, *_get.ts), with its own allowedIntents; others as before |
 * | user.intent.* | listPermissions?userId → intent → identities (the user holds each on itself); grantPermission / revokePermission {userId, identity, intent}: by a holder of user.intent.grant|revokePermission on the user or root; user.changePassword granted lets its holder set the password when it outranks the user; user.authenticate refused (400, why) |
 * | group.intent.listPermissions | ?groupId → {group.addUser, group.removeUser}: the holders of global.createGroup; an unknown group 404 |
 * | token claims | the access token carries TruBudget's userId, organization and groups (its user_authenticate.ts createJWT) beside flowstore's sub, sid, ver |
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { raw } from "../harness.js";
import { expectError, startTruBudget, TB, TB_ORGANIZATION, tbLogin, type TbRunning } from "./harness.js";

let s: TbRunning;
beforeAll(async () => {
  s = await startTruBudget();
});
afterAll(async () => {
  await s?.close();
});

describe("GET /api/documentation", () => {
  it("serves a Swagger UI page, without a token, over the adapter's own OpenAPI document", async () => {
    const page = await raw(s.base, "GET", `${TB}/documentation`);
    expect(page.status).toBe(200);
    expect(page.type).toContain("text/html");
    // a page under the API's paths: helmet's page headers (its scripts may run), not a JSON answer's
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(page.headers.get("x-frame-options")).toBe("SAMEORIGIN");
    // the page's assets and its start script are served here too
    const scripts = [...(page.body as string).matchAll(/<script src="([^"]+)"/g)].map((m) => m[1]!);
    const styles = [...(page.body as string).matchAll(/<link rel="stylesheet" href="([^"]+)"/g)].map((m) => m[1]!);
    expect(scripts).toHaveLength(2);
    for (const asset of [...scripts, ...styles]) expect((await raw(s.base, "GET", asset)).status, asset).toBe(200);
    const start = await raw(s.base, "GET", scripts[1]!);
    expect(start.body).toContain(`${TB}/documentation/json`);

    const doc = await raw(s.base, "GET", `${TB}/documentation/json`);
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toMatch(/^3\./);
    const paths = Object.keys(doc.body.paths as object);
    for (const p of ["/api/user.authenticate", "/api/project.list", "/api/subproject.createWorkflowitem", "/api/workflowitem.update", "/api/provisioning.end"])
      expect(paths).toContain(p);
    expect(paths.filter((p) => p.startsWith("/api/v1") || p.includes("documentation"))).toEqual([]);
    // flowstore's own document still leaves TruBudget's routes out
    const native = await raw(s.base, "GET", "/openapi.json");
    expect(Object.keys(native.body.paths as object).filter((p) => p.startsWith(`${TB}/`) && !p.startsWith("/api/v1/"))).toEqual([]);
  });
});

/** A TruBudget call that must answer 200: its `data`. */
async function data(answer: Promise<Awaited<ReturnType<TbRunning["call"]>>>): Promise<any> {
  const r = await answer;
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data;
}

describe("root reads as TruBudget's root", () => {
  it("lists and views every project, subproject and workflowitem whole, with the intents it holds; another user still sees only its own", async () => {
    const ann = await s.user("rann");
    const bob = await s.user("rbob");
    await data(s.call("global.grantPermission", { data: { identity: "rann", intent: "global.createProject" } }));
    const projectId = (await data(s.call("global.createProject", { token: ann, data: { project: { displayName: "Ann's well", projectedBudgets: [] } } }))).project.id;
    const subprojectId = (await data(s.call("project.createSubproject", { token: ann, data: { projectId, subproject: { displayName: "Pump", currency: "EUR" } } }))).subproject.id;
    const ids = { projectId, subprojectId };
    await data(
      s.call("subproject.createWorkflowitem", { token: ann, data: { ...ids, displayName: "Drill", amountType: "allocated", amount: "1000", currency: "EUR", tags: ["deep"] } }),
    );
    const items = (await data(s.call("workflowitem.list", { token: ann, query: ids }))).workflowitems;
    expect(items).toHaveLength(1);
    const workflowitemId = items[0].data.id as string;

    // root holds no intent on any of them, and sees them all, whole
    const projects = (await data(s.call("project.list"))).items;
    const mine = projects.find((p: any) => p.data.id === projectId);
    expect(mine.data.displayName).toBe("Ann's well");
    expect(mine.allowedIntents).toEqual([]);
    const v2 = (await data(s.call("v2/project.list", { query: { limit: "100" } }))).items;
    expect(v2.map((p: any) => p.data.id)).toContain(projectId);
    const details = await data(s.call("project.viewDetails", { query: { projectId } }));
    expect(details.project.data.displayName).toBe("Ann's well");
    expect(details.subprojects.map((x: any) => x.data.displayName)).toEqual(["Pump"]);
    expect((await data(s.call("subproject.list", { query: { projectId } }))).items.map((x: any) => x.data.id)).toEqual([subprojectId]);
    const sp = await data(s.call("subproject.viewDetails", { query: ids }));
    expect(sp.subproject.data.displayName).toBe("Pump");
    expect(sp.workflowitems.map((w: any) => w.data.displayName)).toEqual(["Drill"]);
    const listed = (await data(s.call("workflowitem.list", { query: ids }))).workflowitems;
    expect(listed[0].data).toMatchObject({ id: workflowitemId, displayName: "Drill", amount: "1000", tags: ["deep"] });
    expect(listed[0].allowedIntents).toEqual([]);
    const item = (await data(s.call("workflowitem.viewDetails", { query: { ...ids, workflowitemId } }))).workflowitem;
    expect(item.data.displayName).toBe("Drill");

    // once granted an intent, root is shown it
    await data(s.call("project.intent.grantPermission", { token: ann, data: { projectId, identity: "root", intent: "project.viewDetails" } }));
    expect((await data(s.call("project.list"))).items.find((p: any) => p.data.id === projectId).allowedIntents).toEqual(["project.viewDetails"]);

    // reads only: root still writes only where it is granted to
    expect((await s.call("project.update", { data: { projectId, displayName: "Root's well" } })).status).toBe(403);
    // another user is not root: it sees nothing of ann's
    expect((await data(s.call("project.list", { token: bob }))).items.map((p: any) => p.data.id)).not.toContain(projectId);
    expect((await s.call("subproject.list", { token: bob, query: { projectId } })).status).toBe(404);
  });
});

describe("the access token's claims", () => {
  it("carries TruBudget's userId, organization and groups beside flowstore's own, at log in and refresh", async () => {
    await s.user("cara");
    await data(s.call("global.createGroup", { data: { group: { id: "claimers", displayName: "Claimers", users: ["cara"] } } }));
    const claims = (token: string) => JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString("utf8"));
    const cara = await tbLogin(s.base, "cara", "cara password 123");
    expect(claims(cara.token)).toMatchObject({ userId: "cara", organization: TB_ORGANIZATION, groups: ["claimers"], sub: "cara", iss: "flowstore" });
    expect(claims(cara.token)).toHaveProperty("sid");
    expect(claims(s.rootToken)).toMatchObject({ userId: "root", organization: TB_ORGANIZATION, groups: [], sub: "root" });
    // a refreshed token carries them too
    const refreshed = await raw(s.base, "POST", `${TB}/user.refreshtoken`, {
      headers: { cookie: cara.cookie, "content-type": "application/json" },
      body: JSON.stringify({ apiVersion: "1.0", data: {} }),
    });
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    const token = refreshed.headers
      .getSetCookie()
      .map((c) => c.split(";")[0]!)
      .find((c) => c.startsWith("token="))!
      .slice("token=".length);
    expect(claims(decodeURIComponent(token))).toMatchObject({ userId: "cara", organization: TB_ORGANIZATION, groups: ["claimers"] });
  });
});

describe("the permissions of a user and of a group", () => {
  it("lists, grants and revokes TruBudget's per-user intents; a granted user.changePassword lets its holder set the password", async () => {
    const dora = await s.user("dora");
    const emil = await s.user("emil");
    const listed = async (token?: string) => data(s.call("user.intent.listPermissions", { ...(token ? { token } : {}), query: { userId: "dora" } }));
    // the user holds each on itself; user.authenticate while enabled
    expect(await listed(dora)).toEqual({
      "user.list": ["dora"],
      "user.authenticate": ["dora"],
      "user.changePassword": ["dora"],
      "user.intent.listPermissions": ["dora"],
      "user.intent.grantPermission": ["dora"],
      "user.intent.revokePermission": ["dora"],
    });
    expect(await listed()).toMatchObject({ "user.changePassword": ["dora"] }); // root
    expectError(await s.call("user.intent.listPermissions", { token: emil, query: { userId: "dora" } }), 403);
    expectError(await s.call("user.intent.listPermissions", { query: { userId: "nobody" } }), 404);

    // emil may not set dora's password, nor grant himself the right to
    expectError(await s.call("user.changePassword", { token: emil, data: { userId: "dora", newPassword: "emil chose this 1" } }), 403);
    expectError(await s.call("user.intent.grantPermission", { token: emil, data: { userId: "dora", identity: "emil", intent: "user.changePassword" } }), 403);
    // dora grants it to him: he sets her password (he outranks her: she holds no global intent he lacks)
    expect((await s.call("user.intent.grantPermission", { token: dora, data: { userId: "dora", identity: "emil", intent: "user.changePassword" } })).status).toBe(200);
    expect((await listed(dora))["user.changePassword"]).toEqual(["dora", "emil"]);
    expect((await s.call("user.changePassword", { token: emil, data: { userId: "dora", newPassword: "emil chose this 1" } })).status).toBe(200);
    // her sessions ended with the change: she logs in with the new password
    const doraAgain = (await tbLogin(s.base, "dora", "emil chose this 1")).token;
    // the list of users shows the same
    const users = (await data(s.call("user.list", { token: emil }))).items;
    expect(users.find((u: any) => u.id === "dora").permissions["user.changePassword"]).toEqual(["dora", "emil"]);
    // root revokes it again
    expect((await s.call("user.intent.revokePermission", { data: { userId: "dora", identity: "emil", intent: "user.changePassword" } })).status).toBe(200);
    expectError(await s.call("user.changePassword", { token: emil, data: { userId: "dora", newPassword: "emil chose again 2" } }), 403);

    // bad input: named fields, nothing written
    expectError(await s.call("user.intent.grantPermission", { data: { userId: "dora", identity: "emil", intent: "user.authenticate" } }), 400, "global.enableUser");
    expectError(await s.call("user.intent.grantPermission", { data: { userId: "dora", identity: "emil", intent: "user.fly" } }), 400, "data.intent");
    expectError(await s.call("user.intent.grantPermission", { data: { userId: "dora", identity: "ghost", intent: "user.changePassword" } }), 400, "data.identity");
    expectError(await s.call("user.intent.grantPermission", { data: { userId: "ghost", identity: "emil", intent: "user.changePassword" } }), 404);
    expect((await listed(doraAgain))["user.changePassword"]).toEqual(["dora"]);
  });

  it("lists a group's permissions in TruBudget's shape: its members are changed by the holders of global.createGroup", async () => {
    await s.user("fynn");
    await data(s.call("global.createGroup", { data: { group: { id: "pumpers", displayName: "Pumpers", users: [] } } }));
    await data(s.call("global.grantPermission", { data: { identity: "fynn", intent: "global.createGroup" } }));
    const perms = await data(s.call("group.intent.listPermissions", { query: { groupId: "pumpers" } }));
    expect(perms["group.addUser"]).toEqual(expect.arrayContaining(["root", "fynn"]));
    expect(perms["group.removeUser"]).toEqual(perms["group.addUser"]);
    expectError(await s.call("group.intent.listPermissions", { query: { groupId: "nogroup" } }), 404);
  });
});
