import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FlowstoreClient, ProblemError } from "../../src/client/index.js";
import { forEachBackend, httpBackends, type BackendHandle } from "../conformance/backends.js";
import { raw, ROOT_PASSWORD, SCRAPE, startServer, type Running } from "./harness.js";
import { answerOf } from "./openapi-spec.js";

async function problemOf(p: Promise<unknown>): Promise<ProblemError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ProblemError);
  return e as ProblemError;
}

forEachBackend((backend) => {
  let h: BackendHandle;
  let s: Running;
  beforeEach(async () => {
    h = await backend.create();
    s = await startServer(h.kv);
  });
  afterEach(async () => {
    await s.close();
    await h.destroy();
  });

  describe("auth", () => {
    it("issues a token for good credentials only", async () => {
      const c = s.client();
      const t = await c.login("root", ROOT_PASSWORD);
      expect(t.token.split(".")).toHaveLength(3);
      expect(t.expiresAt).toBeGreaterThan(Date.now() / 1000);
      const bad = await problemOf(s.client().login("root", "wrong password"));
      expect(bad.status).toBe(401);
      expect((await problemOf(s.client().login("ghost", "whatever1"))).status).toBe(401);
    });

    it("refuses authenticated routes without a token, with a WWW-Authenticate header", async () => {
      const r = await raw(s.base, "GET", "/api/v1/users");
      expect(r.status).toBe(401);
      expect(r.type).toMatch(/^application\/problem\+json/);
      expect(r.headers.get("www-authenticate")).toMatch(/^Bearer/);
    });
  });

  describe("users", () => {
    it("creates, gets, lists by pages and disables", async () => {
      const u = await s.root.users.create({ id: "alice@example.org", displayName: "Alice", password: "alice password" });
      expect(u).toMatchObject({ id: "alice@example.org", displayName: "Alice", enabled: true, groups: [] });
      expect(await s.root.users.get("alice@example.org")).toEqual(u);
      for (const id of ["b1", "b2", "b3"]) await s.root.users.create({ id, displayName: id, password: `${id} password` });
      const first = await s.root.users.list({ limit: 2 });
      expect(first.items).toHaveLength(2);
      expect(first.nextCursor).toEqual(expect.any(String));
      const ids: string[] = [];
      for await (const user of s.root.all((p) => s.root.users.list(p), 2)) ids.push(user.id);
      expect(ids).toEqual(["alice@example.org", "b1", "b2", "b3", "root"]);
      const last = await s.root.users.list({ limit: 1000 });
      expect(last.nextCursor).toBeNull();

      const alice = s.client();
      await alice.login("alice@example.org", "alice password");
      expect((await alice.users.list()).items.length).toBe(5);
      const disabled = await s.root.users.disable("alice@example.org");
      expect(disabled.enabled).toBe(false);
      expect((await problemOf(alice.users.list())).status).toBe(401);
      expect((await problemOf(s.client().login("alice@example.org", "alice password"))).status).toBe(401);
    });

    it("answers 409 for a duplicate id and 404 for an unknown user", async () => {
      await s.root.users.create({ id: "dup", displayName: "D", password: "dup password" });
      const dup = await problemOf(s.root.users.create({ id: "dup", displayName: "D", password: "dup password" }));
      expect(dup.status).toBe(409);
      expect(dup.field).toBe("id");
      expect((await problemOf(s.root.users.get("nobody"))).status).toBe(404);
      expect((await problemOf(s.root.users.disable("nobody"))).status).toBe(404);
    });

    it("needs global.createUser (403), which a group grant gives", async () => {
      const bob = await s.userClient("bob");
      const denied = await problemOf(bob.users.create({ id: "carol", displayName: "C", password: "carol password" }));
      expect(denied.status).toBe(403);
      expect((await problemOf(bob.users.disable("root"))).status).toBe(403);
      await s.root.groups.create({ id: "admins", displayName: "Admins", members: ["bob"] });
      await s.root.globalPermissions.grant("global.createUser", "admins");
      const bob2 = s.client();
      await bob2.login("bob", "bob password");
      expect((await bob2.users.create({ id: "carol", displayName: "C", password: "carol password" })).id).toBe("carol");
    });
  });

  describe("groups", () => {
    it("creates, lists, gets and adds members, reflected in the users", async () => {
      for (const id of ["u1", "u2"]) await s.root.users.create({ id, displayName: id, password: `${id} password` });
      const g = await s.root.groups.create({ id: "team", displayName: "Team", members: ["u1"] });
      expect(g).toMatchObject({ id: "team", members: ["u1"] });
      expect((await s.root.groups.addMember("team", "u2")).members).toEqual(["u1", "u2"]);
      expect((await s.root.users.get("u2")).groups).toEqual(["team"]);
      expect(await s.root.groups.get("team")).toMatchObject({ members: ["u1", "u2"] });
      expect((await s.root.groups.list()).items.map((x) => x.id)).toEqual(["team"]);
      expect((await problemOf(s.root.groups.addMember("nope", "u1"))).status).toBe(404);
      const unknown = await problemOf(s.root.groups.addMember("team", "ghost"));
      expect([unknown.status, unknown.field]).toEqual([400, "userId"]);
      const badMember = await problemOf(s.root.groups.create({ id: "g2", displayName: "G", members: ["u1", "ghost"] }));
      expect([badMember.status, badMember.field]).toEqual([400, "members[1]"]);
      expect((await problemOf(s.root.groups.create({ id: "u1", displayName: "clash" }))).status).toBe(409);
    });

    it("needs global.createGroup (403)", async () => {
      const u = await s.userClient("plain");
      expect((await problemOf(u.groups.create({ id: "g", displayName: "G" }))).status).toBe(403);
      await s.root.groups.create({ id: "g", displayName: "G" });
      expect((await problemOf(u.groups.addMember("g", "plain"))).status).toBe(403);
      expect((await u.groups.list()).items).toHaveLength(1);
    });
  });

  describe("global permissions", () => {
    it("lists, grants and revokes; each needs its intent", async () => {
      const perms = await s.root.globalPermissions.list();
      expect(perms["global.createProject"]).toEqual(["root"]);
      const u = await s.userClient("pat");
      expect((await problemOf(u.globalPermissions.list())).status).toBe(403);
      expect((await problemOf(u.globalPermissions.grant("global.createProject", "pat"))).status).toBe(403);
      await s.root.globalPermissions.grant("global.listPermissions", "pat");
      expect((await u.globalPermissions.list())["global.listPermissions"]).toEqual(["root", "pat"]);
      expect((await problemOf(u.globalPermissions.revoke("global.listPermissions", "pat"))).status).toBe(403);
      await s.root.globalPermissions.revoke("global.listPermissions", "pat");
      expect((await problemOf(u.globalPermissions.list())).status).toBe(403);
      const unknown = await problemOf(s.root.globalPermissions.grant("global.createProject", "ghost"));
      expect([unknown.status, unknown.field]).toEqual([400, "identity"]);
      const badIntent = await problemOf(s.root.globalPermissions.grant("global.everything" as never, "pat"));
      expect([badIntent.status, badIntent.field]).toEqual([400, "body.intent"]);
    });
  });

  describe("system routes", () => {
    it("health, ready, request ids, openapi, docs", async () => {
      expect(await s.client().health()).toEqual({ status: "ok" });
      expect(await s.client().ready()).toEqual({ status: "ready" });
      const echoed = await raw(s.base, "GET", "/health", { headers: { "x-request-id": "trace-42" } });
      expect(echoed.headers.get("x-request-id")).toBe("trace-42");
      const generated = await raw(s.base, "GET", "/health", { headers: { "x-request-id": "bad id\twith tab" } });
      expect(generated.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
      const doc = await raw(s.base, "GET", "/openapi.json");
      expect(doc.status).toBe(200);
      expect(doc.body.openapi).toMatch(/^3\./);
      for (const path of [
        "/api/v1/auth/token",
        "/api/v1/users",
        "/api/v1/users/{userId}/disable",
        "/api/v1/groups",
        "/api/v1/groups/{groupId}/members",
        "/api/v1/global/permissions",
        "/api/v1/global/permissions/grant",
        "/health",
        "/ready",
        "/metrics",
      ]) {
        expect(doc.body.paths[path], path).toBeDefined();
      }
      const create = doc.body.paths["/api/v1/users"].post;
      // The body is the named NewUser component (http/components.ts), closed to unknown properties.
      expect(create.requestBody.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/NewUser" });
      expect(doc.body.components.schemas.NewUser.additionalProperties).toBe(false);
      expect(create.security).toEqual([{ bearer: [] }]);
      expect(answerOf(doc.body, create.responses["401"])!.content["application/problem+json"]).toBeDefined();
      const ui = await raw(s.base, "GET", "/docs");
      expect(ui.status).toBe(200);
      expect(ui.type).toMatch(/text\/html/);
    });

    it("ready answers 503 when the store is closed", async () => {
      await h.kv.close();
      const r = await raw(s.base, "GET", "/ready");
      expect(r.status).toBe(503);
      expect(r.type).toMatch(/^application\/problem\+json/);
      expect((await raw(s.base, "GET", "/health")).status).toBe(200);
    });

    it("metrics count requests by route and status, latencies and store operations", async () => {
      await s.root.users.list();
      await raw(s.base, "GET", "/api/v1/users");
      const r = await fetch(s.base + "/metrics", SCRAPE);
      expect(r.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
      const text = await r.text();
      expect(text).toContain('flowstore_http_requests_total{method="GET",route="/api/v1/users",status="200"} 1');
      expect(text).toContain('flowstore_http_requests_total{method="GET",route="/api/v1/users",status="401"} 1');
      expect(text).toContain('flowstore_http_requests_total{method="POST",route="/api/v1/auth/token",status="200"} 1');
      expect(text).toMatch(/flowstore_http_request_duration_seconds_bucket\{le="\+Inf",method="GET",route="\/api\/v1\/users"\} 2/);
      expect(text).toMatch(/flowstore_http_request_duration_seconds_count\{method="GET",route="\/api\/v1\/users"\} 2/);
      expect(text).toMatch(/flowstore_store_operation_duration_seconds_count\{backend="[a-z-]+",op="scan"\} [1-9]/);
      expect(text).toMatch(/flowstore_store_operation_duration_seconds_count\{backend="[a-z-]+",op="get"\} [1-9]/);
      // every sample line is name{labels} value (prom-client puts a blank line between families)
      for (const line of text.trim().split("\n")) {
        if (line !== "" && !line.startsWith("#")) expect(line).toMatch(/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? ([0-9.e+-]+|NaN|[+-]Inf)$/);
      }
    });
  });

  it("a client over a wrong base URL surfaces a problem for 404s", async () => {
    const c = new FlowstoreClient({ baseUrl: s.base + "/nowhere/", token: s.root.token });
    const p = await problemOf(c.health());
    expect(p.status).toBe(404);
    expect(p.problem.type).toMatch(/not_found/);
  });
}, httpBackends);
