/**
 * TruBudget's sessions on flowstore (api/src/user_authenticate.ts, user_refreshToken.ts, user_logout.ts,
 * httpd/server.ts of v2.18), through a real server on 127.0.0.1:
 *
 * | case | TruBudget's contract |
 * |---|---|
 * | log in | 200, data.user {id, displayName, organization, allowedIntents, groups}, HttpOnly `token` cookie |
 * | cookie and Bearer | a route takes the `token` cookie, or the Authorization header |
 * | no token | 401 {apiVersion, error: {code: 401, message}} |
 * | wrong password | 401 "Authentication Failed" (no cause given) |
 * | bad envelope | 400 naming the field |
 * | refresh | the refreshToken cookie gives a new token cookie |
 * | logout | the session ends and the cookies are cleared |
 * | shared identities | a user of the native API logs in here, and the other way round |
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT_PASSWORD } from "../harness.js";
import { envelopeOf, expectError, expectShape, setCookies, startTruBudget, tbCall, tbLogin, type TbRunning } from "./harness.js";

/** user.authenticate's 200 (its swagger schema), with the token flowstore adds for Bearer clients. */
const LOGIN = envelopeOf({
  type: "object",
  required: ["user"],
  properties: {
    accessTokenExp: { type: "number" },
    user: {
      type: "object",
      required: ["id", "displayName", "organization", "allowedIntents", "groups"],
      properties: {
        id: { type: "string" },
        displayName: { type: "string" },
        organization: { type: "string" },
        allowedIntents: { type: "array", items: { type: "string" } },
        groups: { type: "array", items: { type: "object", required: ["groupId", "displayName"], properties: { groupId: { type: "string" }, displayName: { type: "string" } } } },
        token: { type: "string" },
      },
    },
  },
});
const EMPTY = envelopeOf({ type: "object" });

describe("TruBudget sessions", () => {
  let s: TbRunning;
  beforeAll(async () => {
    s = await startTruBudget();
  });
  afterAll(async () => s?.close());

  it("logs root in: TruBudget's user shape, its HttpOnly token cookie and the refresh cookie on its two paths", async () => {
    const { answer } = await tbLogin(s.base, "root", ROOT_PASSWORD);
    expectShape(LOGIN, answer.body);
    const user = answer.body.data.user;
    expect(user.id).toBe("root");
    expect(user.allowedIntents).toContain("global.createUser");
    expect(user.allowedIntents).toContain("global.grantPermission");
    const { lines, values } = setCookies(answer);
    const token = lines.find((l) => l.startsWith("token="))!;
    expect(token).toMatch(/; Path=\/;/);
    expect(token).toContain("HttpOnly");
    expect(token).toContain("SameSite=Strict");
    expect(values.token).toBe(user.token);
    const refresh = lines.filter((l) => l.startsWith("refreshToken="));
    expect(refresh.map((l) => /Path=([^;]+)/.exec(l)![1]).sort()).toEqual(["/api/user.logout", "/api/user.refreshtoken"]);
  });

  it("takes the session from the token cookie: logging out by cookie ends it for both APIs", async () => {
    const { token, cookie } = await tbLogin(s.base, "root", ROOT_PASSWORD);
    const me = () => fetch(`${s.base}/api/v1/me`, { headers: { authorization: `Bearer ${token}` } });
    expect((await me()).status).toBe(200);
    const byCookie = await tbCall(s.base, "user.logout", { data: {}, cookie: "other=1; " + cookie });
    expect(byCookie.status).toBe(200);
    expect((await me()).status).toBe(401);
  });

  it("answers a wrong password with 401 Authentication Failed, naming no cause", async () => {
    const a = await tbCall(s.base, "user.authenticate", { data: { user: { id: "root", password: "not it at all" } } });
    expectError(a, 401, "Authentication Failed");
    const nobody = await tbCall(s.base, "user.authenticate", { data: { user: { id: "nobody", password: "whatever 123" } } });
    expectError(nobody, 401, "Authentication Failed");
  });

  it("refuses a bad envelope with 400 naming the field, and a missing token with TruBudget's 401", async () => {
    expectError(await tbCall(s.base, "user.authenticate", { body: { apiVersion: "1.0", data: { user: { id: "root" } } } }), 400, "data.user.password");
    expectError(await tbCall(s.base, "user.authenticate", { body: { apiVersion: "2.0", data: { user: { id: "root", password: "x" } } } }), 400, "apiVersion");
    expectError(await tbCall(s.base, "user.authenticate", { body: { data: { user: { id: "root", password: "x" } } } }), 400, "apiVersion");
    expectError(await tbCall(s.base, "user.authenticate", { body: "{not json" }), 400, "body");
    // the server's own refusals come in TruBudget's shape too
    expectError(await tbCall(s.base, "user.authenticate", { body: "x", headers: { "content-type": "text/plain" } }), 415);
    expectError(await tbCall(s.base, "user.authenticate", { body: { apiVersion: "1.0", data: { user: { id: "root", password: "p".repeat(2 * 1024 * 1024) } } } }), 413);
  });

  it("refreshes from the refresh cookie: a token cookie that works, a new refresh cookie, the spent refresh token refused", async () => {
    const { answer } = await tbLogin(s.base, "root", ROOT_PASSWORD);
    const first = setCookies(answer).header;
    const refreshed = await tbCall(s.base, "user.refreshtoken", { data: {}, cookie: first });
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    expectShape(envelopeOf({ type: "object", required: ["accessTokenExp"], properties: { accessTokenExp: { type: "number", exclusiveMinimum: 0 } } }), refreshed.body);
    const renewed = setCookies(refreshed);
    expect(renewed.values.token).toBeTruthy();
    expect(renewed.values.refreshToken).not.toBe(setCookies(answer).values.refreshToken);
    const me = await fetch(`${s.base}/api/v1/me`, { headers: { authorization: `Bearer ${renewed.values.token}` } });
    expect(me.status).toBe(200);
    // flowstore rotates refresh tokens: the spent one is refused (and revokes the session, as reuse means theft)
    expectError(await tbCall(s.base, "user.refreshtoken", { data: {}, cookie: first }), 401, "Authentication Failed");
    expectError(await tbCall(s.base, "user.refreshtoken", { data: {} }), 401);
  });

  it("logs out: 200 with an empty data, the cookies expired, the token refused after", async () => {
    const { token } = await tbLogin(s.base, "root", ROOT_PASSWORD);
    const out = await tbCall(s.base, "user.logout", { data: {}, token });
    expect(out.status).toBe(200);
    expectShape(EMPTY, out.body);
    const { lines } = setCookies(out);
    expect(lines).toHaveLength(3);
    for (const l of lines) expect(l).toContain("Max-Age=0");
    // logging out again is done, not an error
    expect((await tbCall(s.base, "user.logout", { data: {}, token })).status).toBe(200);
  });

  it("shares identities with the native API: a native user logs in here", async () => {
    await s.root.users.create({ id: "native-ann", displayName: "Ann", organization: "KfW", password: "ann password 123" });
    const { answer } = await tbLogin(s.base, "native-ann", "ann password 123");
    expectShape(LOGIN, answer.body);
    expect(answer.body.data.user).toMatchObject({ id: "native-ann", displayName: "Ann", organization: "KfW", groups: [] });
    // and its TruBudget token works on the native API
    const me = await fetch(`${s.base}/api/v1/me`, { headers: { authorization: `Bearer ${answer.body.data.user.token}` } });
    expect(me.status).toBe(200);
  });

  it("keeps the native API as it was: /api/v1 answers problems, and the TruBudget routes are not in /openapi.json", async () => {
    const r = await fetch(`${s.base}/api/v1/users`);
    expect(r.status).toBe(401);
    expect(r.headers.get("content-type")).toContain("application/problem+json");
    const doc = (await (await fetch(`${s.base}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths).filter((p) => !p.startsWith("/api/v1/") && p.startsWith("/api/"))).toEqual([]);
  });
});

/** Issue 29, finding 14: cookie-authenticated changes from another origin, and Secure cookies behind a TLS proxy. */
describe("TruBudget sessions: origins and TLS", () => {
  let s: TbRunning;
  beforeAll(async () => {
    s = await startTruBudget(undefined, { trustProxy: "127.0.0.1" });
  });
  afterAll(async () => s?.close());

  it("refuses a change the session cookie authenticates from another origin of the same site; takes same-origin ones and Bearer callers", async () => {
    const { cookie, token } = await tbLogin(s.base, "root", ROOT_PASSWORD);
    const group = (id: string) => ({ group: { id, displayName: id, users: [] } });
    const sibling = await s.call("global.createGroup", { cookie, data: group("sibling"), headers: { "sec-fetch-site": "same-site" } });
    expectError(sibling, 403, "origin");
    const crossSite = await s.call("global.createGroup", { cookie, data: group("cross"), headers: { "sec-fetch-site": "cross-site" } });
    expectError(crossSite, 403, "origin");
    const groups = async () => (await s.call("group.list", { token })).body.data.groups.map((g: { groupId: string }) => g.groupId);
    expect(await groups()).not.toContain("sibling");
    expect(await groups()).not.toContain("cross");
    expect((await s.call("global.createGroup", { cookie, data: group("same"), headers: { "sec-fetch-site": "same-origin" } })).status).toBe(200);
    // A Bearer caller carries no ambient credential: the header is not the browser's cookie.
    expect((await s.call("global.createGroup", { token, data: group("bearer"), headers: { "sec-fetch-site": "cross-site" } })).status).toBe(200);
    // Reads are not changes.
    expect((await s.call("group.list", { cookie, headers: { "sec-fetch-site": "same-site" } })).status).toBe(200);
    // The refresh cookie is not spent from another origin; logging out from one is refused too.
    expectError(await s.call("user.refreshtoken", { cookie, data: {}, headers: { "sec-fetch-site": "same-site" } }), 403);
    expectError(await s.call("user.logout", { cookie, data: {}, headers: { "sec-fetch-site": "cross-site" } }), 403);
    expect((await s.call("group.list", { cookie })).status).toBe(200);
  });

  it("sets Secure cookies when a trusted proxy says the request came over TLS, and believes no one else", async () => {
    const proxied = await tbCall(s.base, "user.authenticate", {
      body: { apiVersion: "1.0", data: { user: { id: "root", password: ROOT_PASSWORD } } },
      headers: { "x-forwarded-proto": "https" },
    });
    expect(proxied.status).toBe(200);
    expect(setCookies(proxied).lines.every((l) => l.includes("; Secure"))).toBe(true);
    const plain = await tbLogin(s.base, "root", ROOT_PASSWORD);
    expect(setCookies(plain.answer).lines.some((l) => l.includes("Secure"))).toBe(false);
    const untrusting = await startTruBudget();
    try {
      const forged = await tbCall(untrusting.base, "user.authenticate", {
        body: { apiVersion: "1.0", data: { user: { id: "root", password: ROOT_PASSWORD } } },
        headers: { "x-forwarded-proto": "https" },
      });
      expect(setCookies(forged).lines.some((l) => l.includes("Secure"))).toBe(false);
    } finally {
      await untrusting.close();
    }
  });
});
