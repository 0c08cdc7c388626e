/**
 * Issue 29, findings 3, 6, 7 and 12, through a real server on 127.0.0.1 (the native API, and
 * TruBudget's where it answers differently): assigning grants no intent and closing needs the close
 * intent; a close answers a caller who may not know of the resource the 404 of a missing one; history
 * hides grant events and permission maps from callers without `*.intent.listPermissions`;
 * notifications and assignment lists leave out display names the caller may no longer view.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryKv } from "../../src/kv/memory.js";
import { raw, startServer, type Running } from "./harness.js";
import { tbCall, tbLogin } from "./trubudget/harness.js";

const API = "/api/v1";
const P = `${API}/projects`;

describe("assign, close and views", () => {
  let s: Running;
  let rootToken: string;
  const tokens: Record<string, string> = {};
  const as = (who: string, body?: unknown) => ({
    headers: { authorization: `Bearer ${who === "root" ? rootToken : tokens[who]}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const call = (who: string, method: string, path: string, body?: unknown) => raw(s.base, method, path, as(who, body));
  const grant = async (path: string, intent: string, identity: string) =>
    expect((await call("root", "POST", `${path}/permissions/grant`, { intent, identity })).status).toBeLessThan(300);

  beforeAll(async () => {
    s = await startServer(new MemoryKv(), { webRoot: false, loginRateLimit: false, trubudgetApi: true, notifications: { follow: true, pollMs: 20 } });
    rootToken = (
      await raw(s.base, "POST", `${API}/auth/token`, { headers: { "content-type": "application/json" }, body: JSON.stringify({ username: "root", password: "root password 123" }) })
    ).body.token;
    for (const id of ["mallory", "nobody", "alice"]) {
      await s.root.users.create({ id, displayName: id, password: `${id} password` });
      tokens[id] = (
        await raw(s.base, "POST", `${API}/auth/token`, { headers: { "content-type": "application/json" }, body: JSON.stringify({ username: id, password: `${id} password` }) })
      ).body.token;
    }
    expect((await call("root", "POST", P, { id: "p", displayName: "Secret school" })).status).toBe(201);
    expect((await call("root", "POST", P, { id: "empty", displayName: "Empty" })).status).toBe(201);
    expect((await call("root", "POST", `${P}/p/subprojects`, { id: "s", displayName: "S", currency: "EUR" })).status).toBe(201);
    expect((await call("root", "POST", `${P}/p/subprojects`, { id: "s2", displayName: "S2", currency: "EUR" })).status).toBe(201);
    expect((await call("root", "POST", `${P}/p/subprojects/s/workflowitems`, { id: "w", displayName: "Pay the builder", amountType: "N/A" })).status).toBe(201);
  });
  afterAll(async () => s?.close());

  it("finding 3: self-assignment with *.assign alone neither shows nor closes a workflowitem, subproject or project", async () => {
    const w = `${P}/p/subprojects/s/workflowitems/w`;
    await grant(`${P}/empty`, "project.assign", "mallory");
    await grant(`${P}/p/subprojects/s2`, "subproject.assign", "mallory");
    await grant(w, "workflowitem.assign", "mallory");
    // Done, and answered 204 with no body: mallory may act on them but not view them.
    expect((await call("mallory", "POST", `${P}/empty/assign`, { assignee: "mallory" })).status).toBe(204);
    expect((await call("mallory", "POST", `${P}/empty/close`)).status).toBe(403);
    expect((await call("mallory", "POST", `${P}/p/subprojects/s2/assign`, { assignee: "mallory" })).status).toBe(204);
    expect((await call("mallory", "POST", `${P}/p/subprojects/s2/close`)).status).toBe(403);
    expect((await call("mallory", "POST", `${w}/assign`, { assignee: "mallory" })).status).toBe(204);
    expect((await call("mallory", "GET", w)).status).toBe(403);
    expect((await call("mallory", "GET", `${w}/history`)).status).toBe(403);
    expect((await call("mallory", "POST", `${w}/close`)).status).toBe(403);
    expect((await call("root", "GET", `${P}/empty`)).body.data.status).toBe("open");
    expect((await call("root", "GET", `${P}/p/subprojects/s2`)).body.data.status).toBe("open");
    // With the close intent as well, the assignee closes (still without the view: 204).
    await grant(`${P}/empty`, "project.close", "mallory");
    expect((await call("mallory", "POST", `${P}/empty/close`)).status).toBe(204);
    expect((await call("root", "GET", `${P}/empty`)).body.data.status).toBe("closed");
  });

  it("TruBudget's API closes by TruBudget's rule: the assignee who can see the resource, no close intent; anyone else 412", async () => {
    expect((await call("root", "POST", P, { id: "tbp", displayName: "TruBudget rule" })).status).toBe(201);
    const tb = await tbLogin(s.base, "alice", "alice password");
    const close = () => tbCall(s.base, "project.close", { token: tb.token, data: { projectId: "tbp" } });
    // Neither view nor assignment: nothing to know about.
    expect((await close()).status).toBe(404);
    // The view alone (not the assignee): TruBudget's PreconditionError.
    await grant(`${P}/tbp`, "project.viewDetails", "alice");
    const notAssignee = await close();
    expect(notAssignee.status).toBe(412);
    expect(notAssignee.body.error.message).toContain("assignee");
    expect((await call("root", "GET", `${P}/tbp`)).body.data.status).toBe("open");
    // Assigned and able to see it, with no close intent (TruBudget has none a user can be granted): closes.
    expect((await call("root", "POST", `${P}/tbp/assign`, { assignee: "alice" })).status).toBe(200);
    expect((await close()).status).toBe(200);
    expect((await call("root", "GET", `${P}/tbp`)).body.data.status).toBe("closed");
    // The native API still asks for the close intent of the same assignee.
    expect((await call("root", "POST", P, { id: "nat", displayName: "Native rule", assignee: "alice" })).status).toBe(201);
    await grant(`${P}/nat`, "project.viewDetails", "alice");
    expect((await call("alice", "POST", `${P}/nat/close`)).status).toBe(403);
  });

  it("finding 7: close tells a caller without intents nothing: the very 404 of a missing resource", async () => {
    for (const [there, missing] of [
      [`${P}/p/close`, `${P}/nope/close`],
      [`${P}/p/subprojects/s/close`, `${P}/p/subprojects/nope/close`],
      [`${P}/p/subprojects/s/workflowitems/w/close`, `${P}/p/subprojects/s/workflowitems/nope/close`],
    ] as const) {
      const a = await call("nobody", "POST", there);
      const b = await call("nobody", "POST", missing);
      expect(a.status).toBe(404);
      expect(b.status).toBe(404);
      expect(JSON.stringify(a.body)).not.toContain("assignee");
      expect(a.body.title).toBe(b.body.title);
    }
    const tb = await tbLogin(s.base, "nobody", "nobody password");
    const answer = await tbCall(s.base, "project.close", { token: tb.token, data: { projectId: "p" } });
    expect(answer.status).toBe(404);
    expect(JSON.stringify(answer.body)).not.toContain("root");
  });

  it("finding 6: history shows no grant events or permission maps without intent.listPermissions, on both APIs", async () => {
    await grant(`${P}/p`, "project.viewHistory", "alice");
    await grant(`${P}/p`, "project.viewDetails", "alice");
    const history = await call("alice", "GET", `${P}/p/history?limit=100`);
    expect(history.status).toBe(200);
    const types = history.body.items.map((e: { type: string }) => e.type);
    expect(types).toContain("project.created");
    expect(types.filter((t: string) => t.endsWith("permission_granted"))).toEqual([]);
    expect(JSON.stringify(history.body)).not.toContain("project.intent.grantPermission");
    const tb = await tbLogin(s.base, "alice", "alice password");
    const tbHistory = await tbCall(s.base, "project.viewHistory", { token: tb.token, query: { projectId: "p", offset: "0", limit: "100" } });
    expect(tbHistory.status).toBe(200);
    expect(JSON.stringify(tbHistory.body)).not.toContain("permission_granted");
    expect(JSON.stringify(tbHistory.body)).not.toContain("project.intent.grantPermission");
    // root, who may list permissions, sees them.
    expect(JSON.stringify((await call("root", "GET", `${P}/p/history?limit=100`)).body)).toContain("permission_granted");
  });

  it("finding 12: notifications and assignments leave out the display name of what the user may no longer view", async () => {
    const w = `${P}/p/subprojects/s/workflowitems/w`;
    await grant(w, "workflowitem.viewDetails", "alice");
    await grant(w, "workflowitem.list", "alice");
    expect((await call("root", "POST", `${w}/assign`, { assignee: "alice" })).status).toBe(200);
    let items: { displayName: string; path: { id: string }[] }[] = [];
    for (let i = 0; i < 500 && items.length === 0; i++) {
      items = (await call("alice", "GET", `${API}/notifications`)).body.items.filter((n: { path: { id: string }[] }) => n.path.at(-1)?.id === "w");
      if (items.length === 0) await new Promise((r) => setImmediate(r));
    }
    expect(items[0]?.displayName).toBe("Pay the builder");
    const assigned = await call("alice", "GET", `${API}/users/alice/assignments`);
    expect(assigned.body.items.find((a: { ids: string[] }) => a.ids.at(-1) === "w").displayName).toBe("Pay the builder");
    for (const intent of ["workflowitem.viewDetails", "workflowitem.list"]) {
      expect((await call("root", "POST", `${w}/permissions/revoke`, { intent, identity: "alice" })).status).toBeLessThan(300);
    }
    const after = (await call("alice", "GET", `${API}/notifications`)).body.items.filter((n: { path: { id: string }[] }) => n.path.at(-1)?.id === "w");
    expect(after.length).toBeGreaterThan(0);
    for (const n of after) expect(n.displayName).not.toContain("builder");
    const assignedAfter = await call("alice", "GET", `${API}/users/alice/assignments`);
    expect(JSON.stringify(assignedAfter.body)).not.toContain("builder");
    expect(JSON.stringify((await call("root", "GET", `${API}/users/alice/assignments`)).body)).toContain("builder");
  });
});
