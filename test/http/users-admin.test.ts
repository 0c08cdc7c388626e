/**
 * Users and groups over HTTP (issue #14) and server-side search and sort of projects, through a real
 * server on 127.0.0.1 over memory, with the typed client.
 *
 * | case | TruBudget rule it checks (api/src, v2.18) |
 * |---|---|
 * | organization | a user belongs to an organization (user.create's `organization`) |
 * | enable/disable | global.enableUser / global.disableUser; a user with assignments is not disabled |
 * | password | user.changePassword; an administrator resets another user's |
 * | assignments | user.assignments lists the projects, subprojects and workflowitems assigned |
 * | group member | group.removeUser |
 * | grant all | global.grantAllPermissions |
 * | search | the overview's quick search syntax (name:, tag:, status:) |
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProblemError, type FlowstoreClient } from "../../src/client/index.js";
import { MemoryKv } from "../../src/kv/memory.js";
import { raw, startServer, type Running } from "./harness.js";

const API = "/api/v1";
const problemOf = async (p: Promise<unknown>): Promise<ProblemError> => {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ProblemError);
  return e as ProblemError;
};

describe("users and groups over HTTP", () => {
  let s: Running;
  let ann: FlowstoreClient;
  beforeAll(async () => {
    s = await startServer(new MemoryKv(), { webRoot: false });
    ann = await s.userClient("ann", "ann password 123");
  });
  afterAll(async () => s?.close());

  it("creates a user with an organization, refusing a blank one at its field", async () => {
    const u = await s.root.users.create({ id: "org-user", displayName: "O", organization: "KfW", password: "a long password" });
    expect(u.organization).toBe("KfW");
    expect((await s.root.users.get("org-user")).organization).toBe("KfW");
    const bad = await problemOf(s.root.users.create({ id: "org-bad", displayName: "O", organization: "", password: "a long password" }));
    expect([bad.status, bad.field]).toEqual([400, "body.organization"]);
  });

  it("refuses to disable a user with assignments (409 naming them) unless forced; enables again", async () => {
    await s.root.globalPermissions.grant("global.createProject", "ann");
    await ann.projects.create({ id: "ann-p", displayName: "Ann's" });
    await ann.project("ann-p").subprojects.create({ id: "s", displayName: "S", currency: "EUR" });
    const assigned = await s.root.users.assignments("ann");
    expect(assigned.items.map((a) => `${a.type} ${a.ids.join("/")}`)).toEqual(["project ann-p", "subproject ann-p/s"]);
    // The user itself may ask; display names go only to who may view the resource (root may not: issue 29, finding 12).
    expect((await ann.users.assignments("ann")).items.map(({ displayName: _, ...a }) => a)).toEqual(assigned.items);
    expect(assigned.items.every((a) => a.displayName === undefined)).toBe(true);
    const other = await s.userClient("other-user", "a long password");
    expect((await problemOf(other.users.assignments("ann"))).status).toBe(403);
    const refused = await problemOf(s.root.users.disable("ann"));
    expect(refused.status).toBe(409);
    expect(refused.problem.detail).toContain("project ann-p");
    expect((await s.root.users.get("ann")).enabled).toBe(true);
    // Reassigned, the subproject leaves ann's assignments.
    await ann.project("ann-p").subproject("s").assign("root");
    expect((await s.root.users.assignments("ann")).items.map((a) => a.type)).toEqual(["project"]);
    expect((await s.root.users.disable("ann", { force: true })).enabled).toBe(false);
    expect((await raw(s.base, "GET", `${API}/me`, { headers: { authorization: `Bearer ${ann.token}` } })).status).toBe(401);
    expect((await s.root.users.enable("ann")).enabled).toBe(true);
    await ann.login("ann", "ann password 123");
    expect((await ann.me()).id).toBe("ann");
    expect((await problemOf(s.root.users.assignments("ghost"))).status).toBe(404);
  });

  it("changes one's own password with the current one; an administrator resets another's", async () => {
    const bo = await s.userClient("bo", "bo password 123");
    const wrong = await problemOf(bo.changePassword("not it at all", "bo new password"));
    expect([wrong.status, wrong.field]).toEqual([400, "currentPassword"]);
    const short = await problemOf(bo.changePassword("bo password 123", "short"));
    expect([short.status, short.field]).toEqual([400, "body.password"]);
    await bo.changePassword("bo password 123", "bo new password");
    expect((await raw(s.base, "GET", `${API}/me`, { headers: { authorization: `Bearer ${bo.token}` } })).status).toBe(401);
    await bo.login("bo", "bo new password");
    expect((await problemOf(bo.users.resetPassword("ann", "stolen password"))).status).toBe(403);
    await s.root.users.resetPassword("bo", "reset by root 1");
    await bo.login("bo", "reset by root 1");
    expect((await problemOf(s.root.users.resetPassword("ghost", "whatever long"))).status).toBe(404);
  });

  it("removes a group member; grants every global intent at once", async () => {
    await s.root.users.create({ id: "cy", displayName: "Cy", password: "cy password 123" });
    await s.root.groups.create({ id: "crew", displayName: "Crew", members: ["cy"] });
    expect((await s.root.groups.removeMember("crew", "cy")).members).toEqual([]);
    expect((await s.root.users.get("cy")).groups).toEqual([]);
    expect((await s.root.groups.removeMember("crew", "cy")).members).toEqual([]); // a no-op
    expect((await problemOf(s.root.groups.removeMember("nogroup", "cy"))).status).toBe(404);
    const granted = await s.root.globalPermissions.grantAll("crew");
    expect([...granted.intents].sort()).toEqual([...s.app.flowstore.identity.global.intents.list()].sort());
    const perms = await s.root.globalPermissions.list();
    for (const intent of granted.intents) expect(perms[intent]).toContain("crew");
    const ghost = await problemOf(s.root.globalPermissions.grantAll("ghost"));
    expect(ghost.status).toBe(400);
  });

  it("searches and sorts projects and subprojects on the server, refusing a bad sort at its field", async () => {
    const dee = await s.userClient("dee", "dee password 123");
    await s.root.globalPermissions.grant("global.createProject", "dee");
    for (const [id, displayName, tags] of [
      ["q1", "Clinic north", ["health"]],
      ["q2", "Clinic south", ["health", "water"]],
      ["q3", "Pipeline", ["water"]],
    ] as const) {
      await dee.projects.create({ id, displayName, tags: [...tags] });
    }
    const names = (page: { items: { id: string }[] }) => page.items.map((p) => p.id);
    expect(names(await dee.projects.search({ search: "clinic tag:water" }))).toEqual(["q2"]);
    expect(names(await dee.projects.search({ sort: "displayName", order: "desc" }))).toEqual(["q3", "q2", "q1"]);
    const first = await dee.projects.search({ sort: "displayName", limit: 2 });
    expect(names(first)).toEqual(["q1", "q2"]);
    expect(names(await dee.projects.search({ sort: "displayName", limit: 2, cursor: first.nextCursor! }))).toEqual(["q3"]);
    const bad = await raw(s.base, "GET", `${API}/projects?sort=budget`, { headers: { authorization: `Bearer ${dee.token}` } });
    expect([bad.status, bad.type.startsWith("application/problem+json"), bad.body.field]).toEqual([400, true, "query.sort"]);
    const cursor = await raw(s.base, "GET", `${API}/projects?sort=status&cursor=${first.nextCursor}`, { headers: { authorization: `Bearer ${dee.token}` } });
    expect([cursor.status, cursor.body.field]).toEqual([400, "cursor"]);
    await dee.project("q1").subprojects.create({ id: "b", displayName: "Beds", currency: "EUR" });
    await dee.project("q1").subprojects.create({ id: "a", displayName: "Ambulance", currency: "EUR" });
    expect(names(await dee.project("q1").subprojects.search({ sort: "displayName" }))).toEqual(["a", "b"]);
    expect(names(await dee.project("q1").subprojects.search({ search: "name:bed" }))).toEqual(["b"]);
  });
});
