/**
 * Issue 29, finding 1: the administrator hierarchy cannot be climbed, on both APIs, through a real
 * server on 127.0.0.1. A holder of `global.createUser` alone neither resets, disables nor logs out root
 * or an account holding an intent it lacks; a holder of `global.grantPermission` hands out only the
 * intents it holds; a holder of `global.createGroup` does not join a group holding intents it lacks.
 * A reset it may make is recorded as its act and answered with the user's next login.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryKv } from "../../src/kv/memory.js";
import { raw, ROOT_PASSWORD, startServer, type Running } from "./harness.js";
import { startTruBudget, tbCall, tbLogin, type TbRunning } from "./trubudget/harness.js";

const API = "/api/v1";
const json = (token: string, body?: unknown) => ({
  headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
  ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
});

describe("administrator hierarchy over /api/v1", () => {
  let s: Running;
  let admin: string;
  const login = async (id: string, password: string) =>
    raw(s.base, "POST", `${API}/auth/token`, { headers: { "content-type": "application/json" }, body: JSON.stringify({ username: id, password }) });
  beforeAll(async () => {
    s = await startServer(new MemoryKv(), { webRoot: false, loginRateLimit: false });
    for (const id of ["eve", "alice", "boss"]) await s.root.users.create({ id, displayName: id, password: `${id} password` });
    await s.root.globalPermissions.grant("global.createUser", "eve");
    await s.root.globalPermissions.grant("global.createGroup", "eve");
    await s.root.globalPermissions.grant("global.grantPermission", "eve");
    await s.root.globalPermissions.grant("global.createUser", "boss");
    await s.root.globalPermissions.grant("global.createProject", "boss");
    await s.root.groups.create({ id: "admins", displayName: "admins", members: [] });
    await s.root.globalPermissions.grant("global.revokePermission", "admins");
    admin = (await login("eve", "eve password")).body.token;
  });
  afterAll(async () => s?.close());

  it("refuses root's password, disable and logout-all to an admin (403); root still logs in", async () => {
    expect((await raw(s.base, "PUT", `${API}/users/root/password`, json(admin, { password: "taken over 12345" }))).status).toBe(403);
    expect((await raw(s.base, "POST", `${API}/users/root/disable`, json(admin))).status).toBe(403);
    expect((await login("root", "taken over 12345")).status).toBe(401);
    expect((await login("root", ROOT_PASSWORD)).status).toBe(200);
    expect((await s.root.users.get("root")).enabled).toBe(true);
  });

  it("refuses an account holding an intent the admin lacks; takes an ordinary one, recorded as the admin's act and shown at login", async () => {
    expect((await raw(s.base, "PUT", `${API}/users/boss/password`, json(admin, { password: "taken over 12345" }))).status).toBe(403);
    expect((await raw(s.base, "POST", `${API}/users/boss/disable`, json(admin))).status).toBe(403);
    expect((await login("boss", "boss password")).status).toBe(200);
    const alice = (await login("alice", "alice password")).body.token as string;
    expect((await raw(s.base, "PUT", `${API}/users/alice/password`, json(admin, { password: "reset by eve 123" }))).status).toBe(204);
    expect((await raw(s.base, "GET", `${API}/me`, json(alice))).status).toBe(401); // her sessions are revoked
    const next = await login("alice", "reset by eve 123");
    expect(next.status).toBe(200);
    expect(next.body.passwordReset).toMatchObject({ by: "eve" });
    // Once she sets her own, the notice is gone.
    expect((await raw(s.base, "PUT", `${API}/me/password`, json(next.body.token, { currentPassword: "reset by eve 123", password: "alice's own 1234" }))).status).toBe(204);
    expect((await login("alice", "alice's own 1234")).body.passwordReset).toBeUndefined();
  });

  it("a reset with mustChange opens no session until a new password is set (POST /auth/password), and stays on record until the user sets its own from a session", async () => {
    await s.root.users.create({ id: "carol", displayName: "carol", password: "carol password" });
    expect((await raw(s.base, "PUT", `${API}/users/carol/password`, json(admin, { password: "reset by eve 456", mustChange: true }))).status).toBe(204);
    // The admin's password logs carol in nowhere: 403 naming the change; a wrong one is the usual 401.
    const refused = await login("carol", "reset by eve 456");
    expect(refused.status).toBe(403);
    expect(refused.body.field).toBe("password");
    expect((await login("carol", "a wrong password 1")).status).toBe(401);
    const change = (currentPassword: string, password: string) =>
      raw(s.base, "POST", `${API}/auth/password`, { headers: { "content-type": "application/json" }, body: JSON.stringify({ username: "carol", currentPassword, password }) });
    expect((await change("a wrong password 1", "carol's own 12345")).status).toBe(401);
    expect((await change("reset by eve 456", "short")).status).toBe(400);
    const changed = await change("reset by eve 456", "carol's own 12345");
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect((await raw(s.base, "GET", `${API}/me`, json(changed.body.token))).status).toBe(200);
    expect((await login("carol", "reset by eve 456")).status).toBe(401);
    // The change proved only the reset password, which eve knows too: the reset stays on record, no longer requiring a change.
    const next = await login("carol", "carol's own 12345");
    expect(next.status).toBe(200);
    expect(next.body.passwordReset).toMatchObject({ by: "eve" });
    expect(next.body.passwordReset.mustChange).toBeUndefined();
    expect((await raw(s.base, "PUT", `${API}/me/password`, json(next.body.token, { currentPassword: "carol's own 12345", password: "carol's own 67890" }))).status).toBe(204);
    expect((await login("carol", "carol's own 67890")).body.passwordReset).toBeUndefined();
  });

  it("grants only intents the granter holds, revokes nothing from root, joins no group holding more", async () => {
    const grant = (intent: string, identity: string) => raw(s.base, "POST", `${API}/global/permissions/grant`, json(admin, { intent, identity }));
    expect((await grant("global.createProject", "eve")).status).toBe(403);
    expect((await grant("global.createUser", "alice")).status).toBe(204);
    const revoke = await raw(s.base, "POST", `${API}/global/permissions/revoke`, json(admin, { intent: "global.createUser", identity: "root" }));
    expect(revoke.status).toBe(403);
    expect((await raw(s.base, "POST", `${API}/groups/admins/members`, json(admin, { userId: "eve" }))).status).toBe(403);
    expect((await s.root.groups.get("admins")).members).toEqual([]);
  });
});

describe("administrator hierarchy over TruBudget's /api", () => {
  let s: TbRunning;
  beforeAll(async () => {
    s = await startTruBudget();
    await s.user("eve", "eve password 123");
    await s.user("alice", "alice password 1");
    for (const intent of ["global.createUser"]) {
      expect((await s.call("global.grantPermission", { data: { identity: "eve", intent } })).status).toBe(200);
    }
  });
  afterAll(async () => s?.close());

  it("refuses user.changePassword and global.disableUser on root to an admin; resets an ordinary user as TruBudget's frontend does", async () => {
    const eve = (await tbLogin(s.base, "eve", "eve password 123")).token;
    expect((await tbCall(s.base, "user.changePassword", { token: eve, data: { userId: "root", newPassword: "taken over 12345" } })).status).toBe(403);
    expect((await tbCall(s.base, "global.disableUser", { token: eve, data: { userId: "root" } })).status).toBe(403);
    await tbLogin(s.base, "root", ROOT_PASSWORD);
    expect((await tbCall(s.base, "user.changePassword", { token: eve, data: { userId: "alice", newPassword: "Reset by eve 123" } })).status).toBe(200);
    await tbLogin(s.base, "alice", "Reset by eve 123");
  });
});
