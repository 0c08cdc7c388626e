/**
 * TruBudget's user, group and global-permission routes on flowstore (api/src/user_*.ts, group_*.ts,
 * global_permission*.ts of v2.18), through a real server on 127.0.0.1: status, envelope and the shapes
 * of its swagger schemas (written below as data), the same rules as the native API, bad input refused
 * with a 400 naming the field and nothing written.
 *
 * | case | TruBudget's contract |
 * |---|---|
 * | create user | global.createUser → data.user {id, displayName, organization}; an id taken → 409 |
 * | list | user.list → items of users and groups {id, displayName, isGroup, permissions}; user.authenticate marks the enabled |
 * | cookie and Bearer | a secured route takes the `token` cookie or the Bearer header; neither → 401 |
 * | permissions | a user without global.createUser is refused (403) |
 * | disable/enable | global.disableUser refuses an assigned user (412); a disabled one cannot log in |
 * | password | user.changePassword: one's own (staying logged in) or, with global.createUser, another's |
 * | assignments | global.listAssignments?userId → {userId, projects, subprojects, workflowitems} |
 * | groups | global.createGroup, group.list {groups: [{groupId, displayName, users, permissions}]}, group.addUser/removeUser of several |
 * | unchecked members | a member id no user has is listed (TruBudget does not check members): the user created later with it is a member; removed before, it is not |
 * | global permissions | listPermissions (intent → identities, TruBudget's names), grant, revoke, grantAll; a network intent refused |
 * | the split intents | global.enableUser, global.disableUser, global.listAssignments, global.grantAllPermissions granted alone, each checked alone |
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { envelopeOf, expectError, expectShape, setCookies, startTruBudget, tbCall, tbLogin, type TbRunning } from "./harness.js";

const STRING_ARRAY = { type: "array", items: { type: "string" } } as const;
/** user.list's 200. */
const USER_LIST = envelopeOf({
  type: "object",
  required: ["items"],
  properties: {
    items: {
      type: "array",
      items: {
        type: "object",
        required: ["id", "displayName", "isGroup"],
        properties: {
          id: { type: "string" },
          displayName: { type: "string" },
          organization: { type: "string" },
          isGroup: { type: "boolean" },
          permissions: { type: "object", additionalProperties: STRING_ARRAY },
        },
      },
    },
  },
});
/** global.createUser's 200. */
const CREATED_USER = envelopeOf({
  type: "object",
  required: ["user"],
  properties: {
    user: {
      type: "object",
      required: ["id", "displayName", "organization"],
      properties: { id: { type: "string" }, displayName: { type: "string" }, organization: { type: "string" }, address: { type: "string" } },
    },
  },
});
const EMPTY = envelopeOf({ type: "object" });
/** global.createGroup's 200. */
const CREATED_GROUP = envelopeOf({
  type: "object",
  required: ["group"],
  properties: { group: { type: "object", required: ["id", "displayName", "users"], properties: { id: { type: "string" }, displayName: { type: "string" }, users: STRING_ARRAY } } },
});
/** group.list's 200. */
const GROUP_LIST = envelopeOf({
  type: "object",
  required: ["groups"],
  properties: {
    groups: {
      type: "array",
      items: {
        type: "object",
        required: ["groupId", "displayName", "users"],
        properties: { groupId: { type: "string" }, displayName: { type: "string" }, users: STRING_ARRAY, permissions: { type: "object" } },
      },
    },
  },
});
/** global.listPermissions' 200: intent → identities. */
const PERMISSIONS = envelopeOf({ type: "object", additionalProperties: STRING_ARRAY });
/** global.listAssignments' 200. */
const ASSIGNMENTS = envelopeOf({
  type: "object",
  required: ["userId"],
  properties: { userId: { type: "string" }, projects: { type: "array" }, subprojects: { type: "array" }, workflowitems: { type: "array" } },
});

describe("TruBudget users, groups and global permissions", () => {
  let s: TbRunning;
  let ann: string;
  beforeAll(async () => {
    s = await startTruBudget();
    ann = await s.user("ann");
  });
  afterAll(async () => s?.close());

  const listed = async (token?: string) => {
    const r = await s.call("user.list", token ? { token } : {});
    expect(r.status).toBe(200);
    expectShape(USER_LIST, r.body);
    return r.body.data.items as { id: string; isGroup: boolean; organization?: string; permissions: Record<string, string[]> }[];
  };

  it("creates a user (TruBudget's shape), which logs in through both APIs; a taken id is a 409", async () => {
    const r = await s.call("global.createUser", { data: { user: { id: "bob", displayName: "Bob", organization: "KfW", password: "bob password 123" } } });
    expect(r.status).toBe(200);
    expectShape(CREATED_USER, r.body);
    expect(r.body.data.user).toMatchObject({ id: "bob", displayName: "Bob", organization: "KfW" });
    await tbLogin(s.base, "bob", "bob password 123");
    const native = await fetch(`${s.base}/api/v1/auth/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "bob", password: "bob password 123" }),
    });
    expect(native.status).toBe(200);
    expectError(await s.call("global.createUser", { data: { user: { id: "bob", displayName: "B", organization: "KfW", password: "bob password 123" } } }), 409);
  });

  it("refuses bad input with a 400 naming the field, creating nothing", async () => {
    const bad = [
      [{ user: { id: "carl", displayName: "Carl", organization: "KfW" } }, "data.user.password"],
      [{ user: { id: "carl", displayName: "Carl", organization: "KfW", password: "short" } }, "data.user.password"],
      [{ user: { id: "no spaces", displayName: "Carl", organization: "KfW", password: "a long password" } }, "data.user.id"],
      [{ user: { id: "carl", displayName: "", organization: "KfW", password: "a long password" } }, "data.user.displayName"],
      [{ user: { id: "carl", displayName: "Carl", organization: "KfW", password: "a long password", admin: true } }, "data.user.admin"],
    ] as const;
    for (const [data, field] of bad) expectError(await s.call("global.createUser", { data }), 400, field);
    expect((await listed()).map((u) => u.id)).not.toContain("carl");
  });

  it("lists users and groups: enabled users hold user.authenticate; the cookie works as the Bearer header does", async () => {
    const items = await listed();
    const root = items.find((i) => i.id === "root")!;
    expect(root).toMatchObject({ isGroup: false, permissions: { "user.authenticate": ["root"] } });
    expect(items.find((i) => i.id === "ann")).toMatchObject({ organization: "KfW", isGroup: false });
    const { cookie } = await tbLogin(s.base, "ann", "ann password 123");
    const byCookie = await tbCall(s.base, "user.list", { cookie });
    expect(byCookie.status).toBe(200);
    expect(byCookie.body).toEqual((await s.call("user.list", { token: ann })).body);
    expectError(await tbCall(s.base, "user.list"), 401, "token is required");
    expectError(await tbCall(s.base, "user.list", { token: "not.a.token" }), 401);
  });

  it("refuses administration to a user without the intent (403), as the native API does", async () => {
    expectError(await s.call("global.createUser", { token: ann, data: { user: { id: "dan", displayName: "Dan", organization: "KfW", password: "dan password 123" } } }), 403);
    expectError(await s.call("global.disableUser", { token: ann, data: { userId: "bob" } }), 403);
    expectError(await s.call("global.createGroup", { token: ann, data: { group: { id: "g-ann", displayName: "G", users: [] } } }), 403);
    expectError(await s.call("global.grantPermission", { token: ann, data: { identity: "ann", intent: "global.createUser" } }), 403);
    expectError(await s.call("global.listPermissions", { token: ann }), 403);
  });

  it("disables and enables a user: disabled, it cannot log in and is listed without user.authenticate", async () => {
    await s.user("eve");
    const off = await s.call("global.disableUser", { data: { userId: "eve" } });
    expect(off.status).toBe(200);
    expectShape(EMPTY, off.body);
    expectError(await tbCall(s.base, "user.authenticate", { data: { user: { id: "eve", password: "eve password 123" } } }), 403); // TruBudget: NotAuthorized
    expect((await listed()).find((u) => u.id === "eve")!.permissions["user.authenticate"]).toEqual([]);
    expect((await s.call("global.enableUser", { data: { userId: "eve" } })).status).toBe(200);
    await tbLogin(s.base, "eve", "eve password 123");
    expectError(await s.call("global.enableUser", { data: { userId: "nobody" } }), 404);
    expectError(await s.call("global.disableUser", { data: {} }), 400, "data.userId");
  });

  it("refuses to disable an assigned user with TruBudget's 412, and lists its assignments", async () => {
    await s.user("fay");
    await s.root.projects.create({ id: "p-fay", displayName: "Fay's", assignee: "fay" } as never);
    const refused = await s.call("global.disableUser", { data: { userId: "fay" } });
    expectError(refused, 412, "p-fay");
    const a = await s.call("global.listAssignments", { query: { userId: "fay" } });
    expect(a.status).toBe(200);
    expectShape(ASSIGNMENTS, a.body);
    expect(a.body.data).toMatchObject({ userId: "fay", projects: [{ id: "p-fay", displayName: "Fay's" }], subprojects: [], workflowitems: [] });
    expectError(await s.call("global.listAssignments", { query: { userId: "fay" }, token: ann }), 403);
    expectError(await s.call("global.listAssignments"), 400, "userId");
  });

  it("changes passwords: one's own staying logged in by cookie, another's with global.createUser only", async () => {
    const gus = await s.user("gus");
    const { cookie } = await tbLogin(s.base, "gus", "gus password 123");
    const own = await tbCall(s.base, "user.changePassword", { cookie, data: { userId: "gus", newPassword: "gus new password 1" } });
    expect(own.status).toBe(200);
    expectShape(EMPTY, own.body);
    // every old token is revoked; the answer's cookies carry a new session
    expectError(await tbCall(s.base, "user.list", { token: gus }), 401);
    expect((await tbCall(s.base, "user.list", { cookie: setCookies(own).header })).status).toBe(200);
    await tbLogin(s.base, "gus", "gus new password 1");
    expectError(await s.call("user.changePassword", { token: ann, data: { userId: "gus", newPassword: "hijacked password 1" } }), 403);
    expect((await s.call("user.changePassword", { data: { userId: "gus", newPassword: "root set this 123" } })).status).toBe(200);
    await tbLogin(s.base, "gus", "root set this 123");
    expectError(await s.call("user.changePassword", { data: { userId: "gus", newPassword: "short" } }), 400, "data.newPassword");
  });

  it("creates a group with members, lists it, adds and removes several users at once", async () => {
    await s.user("hal");
    const created = await s.call("global.createGroup", { data: { group: { id: "reviewers", displayName: "Reviewers", users: ["ann"] } } });
    expect(created.status).toBe(200);
    expectShape(CREATED_GROUP, created.body);
    expect(created.body.data.group).toEqual({ id: "reviewers", displayName: "Reviewers", users: ["ann"] });
    expectError(await s.call("global.createGroup", { data: { group: { id: "reviewers", displayName: "Again", users: [] } } }), 409);
    expect((await s.call("group.addUser", { data: { groupId: "reviewers", userIds: ["bob", "hal", "ann"] } })).status).toBe(200);
    const groups = async () => {
      const r = await s.call("group.list");
      expect(r.status).toBe(200);
      expectShape(GROUP_LIST, r.body);
      return r.body.data.groups as { groupId: string; users: string[] }[];
    };
    expect((await groups()).find((g) => g.groupId === "reviewers")!.users).toEqual(["ann", "bob", "hal"]);
    // the group shows up in user.list too, and in its members' logins
    expect((await listed()).find((i) => i.id === "reviewers")).toMatchObject({ isGroup: true, displayName: "Reviewers" });
    const { answer } = await tbLogin(s.base, "hal", "hal password 123");
    expect(answer.body.data.user.groups).toEqual([{ groupId: "reviewers", displayName: "Reviewers" }]);
    // a bad id among several (a group is no member): nothing is written
    expectError(await s.call("group.addUser", { data: { groupId: "reviewers", userIds: ["eve", "reviewers"] } }), 400, "data.userIds[1]");
    expectError(await s.call("group.removeUser", { data: { groupId: "reviewers", userIds: ["bob", "reviewers"] } }), 400, "data.userIds[1]");
    expect((await groups()).find((g) => g.groupId === "reviewers")!.users).toEqual(["ann", "bob", "hal"]);
    expect((await s.call("group.removeUser", { data: { groupId: "reviewers", userIds: ["bob", "hal"] } })).status).toBe(200);
    expect((await groups()).find((g) => g.groupId === "reviewers")!.users).toEqual(["ann"]);
    expectError(await s.call("group.addUser", { data: { groupId: "nogroup", userIds: ["bob"] } }), 404);
    expectError(await s.call("group.addUser", { data: { groupId: "reviewers" } }), 400, "data.userIds");
  });

  it("lists member ids no user has yet, as TruBudget: a user created later with the id starts as a member", async () => {
    const created = await s.call("global.createGroup", { data: { group: { id: "early", displayName: "Early", users: ["ann", "later1"] } } });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect((await s.call("group.addUser", { data: { groupId: "early", userIds: ["later2", "later3"] } })).status).toBe(200);
    expect((await s.call("group.removeUser", { data: { groupId: "early", userIds: ["later3"] } })).status).toBe(200);
    const early = (await s.call("group.list")).body.data.groups.find((g: { groupId: string }) => g.groupId === "early");
    expect(early.users).toEqual(["ann", "later1", "later2"]);
    for (const id of ["later1", "later2", "later3"]) await s.user(id);
    const groupsOf = async (id: string) => (await tbLogin(s.base, id, `${id} password 123`)).answer.body.data.user.groups.map((g: { groupId: string }) => g.groupId);
    expect(await groupsOf("later1")).toEqual(["early"]);
    expect(await groupsOf("later2")).toEqual(["early"]);
    expect(await groupsOf("later3")).toEqual([]);
    // a member now: removing it takes it out of the user's groups too
    expect((await s.call("group.removeUser", { data: { groupId: "early", userIds: ["later1"] } })).status).toBe(200);
    expect(await groupsOf("later1")).toEqual([]);
  });

  it("lists, grants and revokes global permissions with TruBudget's intent names", async () => {
    const list = async () => {
      const r = await s.call("global.listPermissions");
      expect(r.status).toBe(200);
      expectShape(PERMISSIONS, r.body);
      return r.body.data as Record<string, string[]>;
    };
    const before = await list();
    expect(before["global.createUser"]).toContain("root");
    // root holds every intent TruBudget has, the once-merged ones among them
    for (const i of ["global.enableUser", "global.disableUser", "global.listAssignments", "global.grantAllPermissions"]) expect(before[i]).toContain("root");
    const grant = await s.call("global.grantPermission", { data: { identity: "ann", intent: "global.createProject" } });
    expect(grant.status).toBe(200);
    expectShape(EMPTY, grant.body);
    expect((await list())["global.createProject"]).toContain("ann");
    const { answer } = await tbLogin(s.base, "ann", "ann password 123");
    expect(answer.body.data.user.allowedIntents).toEqual(["global.createProject"]);
    expect((await s.call("global.revokePermission", { data: { identity: "ann", intent: "global.createProject" } })).status).toBe(200);
    expect((await list())["global.createProject"] ?? []).not.toContain("ann");
    // a network intent is refused (a single node has no network); unknown intents and identities too
    expectError(await s.call("global.grantPermission", { data: { identity: "ann", intent: "network.list" } }), 400, "data.intent");
    expectError(await s.call("global.grantPermission", { data: { identity: "ann", intent: "global.fly" } }), 400, "data.intent");
    expectError(await s.call("global.grantPermission", { data: { identity: "nobody", intent: "global.createProject" } }), 400);
    expect((await list())["global.createProject"] ?? []).not.toContain("nobody");
  });

  it("grants every global intent at once", async () => {
    await s.user("ivy");
    const r = await s.call("global.grantAllPermissions", { data: { identity: "ivy" } });
    expect(r.status).toBe(200);
    expectShape(EMPTY, r.body);
    const { answer } = await tbLogin(s.base, "ivy", "ivy password 123");
    const root = await tbLogin(s.base, "root", "root password 123");
    expect([...answer.body.data.user.allowedIntents].sort()).toEqual([...root.answer.body.data.user.allowedIntents].sort());
    expect(answer.body.data.user.allowedIntents).toContain("global.disableUser");
    expectError(await s.call("global.grantAllPermissions", { data: {} }), 400, "data.identity");
  });
});

describe("the intents TruBudget grants one by one (issue 28)", () => {
  let s: TbRunning;
  beforeAll(async () => {
    s = await startTruBudget();
  });
  afterAll(async () => {
    await s?.close();
  });

  const grant = async (identity: string, intent: string) => {
    const r = await s.call(`global.grantPermission`, { data: { identity, intent } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  };

  it("global.enableUser, global.disableUser, global.listAssignments and global.grantAllPermissions are granted alone and each lets its route alone", async () => {
    const admin = await s.user("adm");
    await s.user("vic");
    await s.user("wes");
    // nothing held: each route is a 403
    expectError(await s.call("global.disableUser", { token: admin, data: { userId: "vic" } }), 403);
    expectError(await s.call("global.listAssignments", { token: admin, query: { userId: "vic" } }), 403);
    expectError(await s.call("global.grantAllPermissions", { token: admin, data: { identity: "vic" } }), 403);

    await grant("adm", "global.disableUser");
    const held = async () => (await tbLogin(s.base, "adm", "adm password 123")).answer.body.data.user.allowedIntents as string[];
    expect(await held()).toEqual(["global.disableUser"]);
    expect((await s.call("global.disableUser", { token: admin, data: { userId: "vic" } })).status).toBe(200);
    // disabling is not enabling
    expectError(await s.call("global.enableUser", { token: admin, data: { userId: "vic" } }), 403);
    await grant("adm", "global.enableUser");
    expect((await s.call("global.enableUser", { token: admin, data: { userId: "vic" } })).status).toBe(200);
    // neither is creating users or listing assignments
    expectError(await s.call("global.createUser", { token: admin, data: { user: { id: "x1", displayName: "X", organization: "KfW", password: "x1 password 123" } } }), 403);
    expectError(await s.call("global.listAssignments", { token: admin, query: { userId: "vic" } }), 403);
    await grant("adm", "global.listAssignments");
    expect((await s.call("global.listAssignments", { token: admin, query: { userId: "vic" } })).status).toBe(200);

    // global.grantAllPermissions alone: granting everything needs holding everything (the hierarchy), so adm is refused until it does
    await grant("adm", "global.grantAllPermissions");
    expectError(await s.call("global.grantAllPermissions", { token: admin, data: { identity: "wes" } }), 403, "lacks");
    expectError(await s.call("global.grantPermission", { token: admin, data: { identity: "wes", intent: "global.enableUser" } }), 403);
    expect((await s.call("global.grantAllPermissions", { data: { identity: "adm" } })).status).toBe(200);
    expect((await s.call("global.grantAllPermissions", { token: admin, data: { identity: "wes" } })).status).toBe(200);
    const perms = (await s.call("global.listPermissions")).body.data as Record<string, string[]>;
    for (const i of ["global.enableUser", "global.disableUser", "global.listAssignments", "global.grantAllPermissions"])
      expect(perms[i]).toEqual(expect.arrayContaining(["root", "adm", "wes"]));

    // revoked alone too
    expect((await s.call("global.revokePermission", { data: { identity: "wes", intent: "global.listAssignments" } })).status).toBe(200);
    const wes = (await tbLogin(s.base, "wes", "wes password 123")).answer.body.data.user.allowedIntents as string[];
    expect(wes).not.toContain("global.listAssignments");
    expect(wes).toContain("global.createUser");
  });
});
