import { afterEach, beforeEach, expect, it } from "vitest";
import { forEachBackend, httpBackends, type BackendHandle } from "../conformance/backends.js";
import { raw, startServer, type Running } from "./harness.js";

const API = "/api/v1";

forEachBackend((backend) => {
  let h: BackendHandle;
  let s: Running;
  let root: string;
  let mary: string;
  let jane: string;

  const call = (token: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    raw(s.base, method, API + path, {
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  beforeEach(async () => {
    h = await backend.create();
    s = await startServer(h.kv);
    root = s.root.token!;
    mary = (await s.userClient("mary")).token!;
    jane = (await s.userClient("jane")).token!;
    expect((await call(root, "POST", "/global/permissions/grant", { intent: "global.createProject", identity: "mary" })).status).toBe(204);
  });
  afterEach(async () => {
    await s.close();
    await h.destroy();
  });

  it("runs the quick-start session: project, subproject, two workflowitems, reorder, history", async () => {
    const p = await call(mary, "POST", "/projects", { id: "p1", displayName: "School", projectedBudgets: [{ organization: "Ministry", value: "100.00", currencyCode: "EUR" }] });
    expect(p.status).toBe(201);
    expect(p.body).toMatchObject({ id: "p1", type: "project", data: { displayName: "School", status: "open", assignee: "mary" }, meta: { version: 1, createdBy: "mary" } });
    expect(p.headers.get("etag")).toBe('"1"');
    expect(p.headers.get("location")).toBe(`${API}/projects/p1`);
    expect((await call(mary, "POST", "/projects/p1/subprojects", { id: "s1", displayName: "Build", currency: "EUR" })).status).toBe(201);
    for (const w of ["w1", "w2"]) {
      const r = await call(mary, "POST", "/projects/p1/subprojects/s1/workflowitems", { id: w, displayName: w, amountType: "N/A" });
      expect(r.status).toBe(201);
    }
    const ordering = await call(mary, "GET", "/projects/p1/subprojects/s1/workflowitem-ordering");
    expect(ordering.body).toEqual({ ordering: [] });
    const etag = ordering.headers.get("etag")!;
    const put = await call(mary, "PUT", "/projects/p1/subprojects/s1/workflowitem-ordering", { ordering: ["w2", "w1"] }, { "if-match": etag });
    expect(put.status).toBe(200);
    const stale = await call(mary, "PUT", "/projects/p1/subprojects/s1/workflowitem-ordering", { ordering: ["w1"] }, { "if-match": etag });
    expect(stale.status).toBe(412);
    expect(stale.type).toContain("application/problem+json");
    const list = await call(mary, "GET", "/projects/p1/subprojects/s1/workflowitems");
    expect(list.body.items.map((i: { id: string }) => i.id)).toEqual(["w2", "w1"]);
    expect(list.body.nextCursor).toBeNull();
    const history = await call(mary, "GET", "/projects/p1/subprojects/s1/history");
    expect(history.body.items.map((e: { type: string }) => e.type)).toEqual(["subproject.created", "subproject.ordering_set"]);
    const newest = await call(mary, "GET", "/projects/p1/subprojects/s1/history?order=desc&limit=1");
    expect(newest.body.items[0].payload.ordering).toEqual(["w2", "w1"]);
    expect((await call(mary, "GET", "/projects/p1/verify")).body).toMatchObject({ ok: true, checked: 5 });
  });

  it("answers each resource with its ETag, honours If-Match on PATCH and DELETE, and maps rule refusals", async () => {
    await call(mary, "POST", "/projects", { id: "p", displayName: "P" });
    await call(mary, "POST", "/projects/p/subprojects", { id: "s", displayName: "S", currency: "USD" });
    await call(mary, "POST", "/projects/p/subprojects/s/workflowitems", { id: "w", displayName: "W", amountType: "allocated" });
    const got = await call(mary, "GET", "/projects/p/subprojects/s/workflowitems/w");
    expect(got.status).toBe(200);
    expect(got.headers.get("etag")).toBe('"1"');
    const patched = await call(mary, "PATCH", "/projects/p/subprojects/s/workflowitems/w", { amount: "10.5", currency: "USD" }, { "if-match": '"1"' });
    expect(patched.status).toBe(200);
    expect(patched.body.meta.version).toBe(2);
    expect((await call(mary, "PATCH", "/projects/p/subprojects/s/workflowitems/w", { amount: "11" }, { "if-match": '"1"' })).status).toBe(412);
    // If-Match compares strongly: a tag that is no quoted version of ours never matches (RFC 9110 §13.1.1).
    expect((await call(mary, "PATCH", "/projects/p/subprojects/s/workflowitems/w", { amount: "11" }, { "if-match": "yesterday" })).body).toMatchObject({
      status: 412,
      field: "header.if-match",
    });
    const badCurrency = await call(mary, "PATCH", "/projects/p/subprojects/s/workflowitems/w", { currency: "ABC" });
    expect(badCurrency.body).toMatchObject({ status: 400, field: "body.currency" });
    const badAmount = await call(mary, "PATCH", "/projects/p/subprojects/s/workflowitems/w", { amount: 11 });
    expect(badAmount.status).toBe(400);
    expect(badAmount.body.field).toMatch(/amount/);
    expect((await call(mary, "PATCH", "/projects/p/subprojects/s/workflowitems/w", { status: "closed" })).status).toBe(400);
    expect((await call(mary, "POST", "/projects/p/subprojects/s/close")).body).toMatchObject({ status: 409, field: "status" });
    const closed = await call(mary, "POST", "/projects/p/subprojects/s/workflowitems/w/close", { rejectReason: "no longer needed" });
    expect(closed.body.data).toMatchObject({ status: "closed", rejectReason: "no longer needed" });
    expect((await call(mary, "POST", "/projects/p/subprojects/s/close")).status).toBe(200);
    expect((await call(mary, "POST", "/projects/p/close")).status).toBe(200);
    expect((await call(mary, "POST", "/projects/p/assign", { assignee: "jane" })).status).toBe(409);
    expect((await call(mary, "DELETE", "/projects/p/subprojects/s", undefined, { "if-match": '"1"' })).status).toBe(412);
    expect((await call(mary, "DELETE", "/projects/p/subprojects/s")).status).toBe(204);
    expect((await call(mary, "GET", "/projects/p/subprojects/s")).status).toBe(404);
  });

  it("refuses callers without the intent and serves them once granted; lists redact what they may not view", async () => {
    await call(mary, "POST", "/projects", { id: "p", displayName: "P" });
    await call(mary, "POST", "/projects/p/subprojects", { id: "s", displayName: "S", currency: "EUR", workflowitemType: "restricted" });
    await call(mary, "POST", "/projects/p/subprojects/s/workflowitems", { id: "w", displayName: "secret", amountType: "N/A" });
    // jane holds nothing on p: it answers as a missing project would (no existence oracle).
    expect((await call(jane, "GET", "/projects/p")).status).toBe(404);
    expect((await call(jane, "GET", "/projects")).body.items).toEqual([]);
    expect((await call(jane, "POST", "/projects", { displayName: "x" })).status).toBe(403);
    expect((await call(jane, "POST", "/projects/p/permissions/grant", { intent: "project.viewDetails", identity: "jane" })).status).toBe(404);
    expect((await call(mary, "POST", "/projects/p/permissions/grant", { intent: "project.viewDetails", identity: "nobody" })).body).toMatchObject({
      status: 400,
      field: "identity",
    });
    expect((await call(mary, "POST", "/projects/p/permissions/grant", { intent: "project.fly", identity: "jane" })).body).toMatchObject({ status: 400, field: "intent" });
    for (const [path, intent] of [
      ["/projects/p", "project.viewDetails"],
      ["/projects/p/subprojects/s", "subproject.viewDetails"],
    ] as const) {
      expect((await call(mary, "POST", `${path}/permissions/grant`, { intent, identity: "jane" })).status).toBe(204);
    }
    expect((await call(jane, "GET", "/projects/p")).status).toBe(200);
    const items = await call(jane, "GET", "/projects/p/subprojects/s/workflowitems");
    // jane was granted the subproject after the item was made: nothing was inherited, the item stays redacted.
    expect(items.body.items).toEqual([{ id: "w", type: "workflowitem", redacted: true, data: { status: "open" }, meta: { createdAt: expect.any(String) }, allowedIntents: [] }]);
    const perms = await call(mary, "GET", "/projects/p/permissions");
    expect(perms.body["project.viewDetails"]).toEqual(["mary", "jane"]);
    expect((await call(mary, "POST", "/projects/p/permissions/revoke", { intent: "project.viewDetails", identity: "jane" })).status).toBe(204);
    expect((await call(jane, "GET", "/projects/p")).status).toBe(404);
    // Knowing of it (an intent on it), jane is refused with 403.
    await call(mary, "POST", "/projects/p/permissions/grant", { intent: "project.update", identity: "jane" });
    expect((await call(jane, "GET", "/projects/p")).status).toBe(403);
  });

  it("pages through lists with cursor and limit, and refuses bad ids and bodies with 4xx problems", async () => {
    await call(mary, "POST", "/projects", { id: "p", displayName: "P" });
    await call(mary, "POST", "/projects/p/subprojects", { id: "s", displayName: "S", currency: "EUR" });
    for (let i = 0; i < 7; i++) await call(mary, "POST", "/projects/p/subprojects/s/workflowitems", { id: `w${i}`, displayName: `${i}`, amountType: "N/A" });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const q: string = cursor ? `?limit=3&cursor=${encodeURIComponent(cursor)}` : "?limit=3";
      const page = await call(mary, "GET", `/projects/p/subprojects/s/workflowitems${q}`);
      expect(page.status).toBe(200);
      seen.push(...page.body.items.map((i: { id: string }) => i.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual(["w0", "w1", "w2", "w3", "w4", "w5", "w6"]);
    for (const bad of [
      ["POST", "/projects", { id: "a/b", displayName: "x" }],
      ["POST", "/projects", { id: "x".repeat(200), displayName: "x" }],
      ["POST", "/projects", { displayName: "x", colour: "red" }],
      ["POST", "/projects", { displayName: 5 }],
      ["POST", "/projects/p/subprojects/s/workflowitems", { displayName: "x", amountType: "N/A", amount: "1" }],
      ["GET", "/projects/p/subprojects/s/workflowitems?limit=0"],
      ["GET", "/projects/p/subprojects/s/workflowitems?cursor=%21%21"],
      ["GET", `/projects/${encodeURIComponent("a\u0000b")}`],
      ["PUT", "/projects/p/subprojects/s/workflowitem-ordering", { ordering: ["w1", "w1"] }],
      ["PUT", "/projects/p/subprojects/s/workflowitem-ordering", { ordering: ["elsewhere"] }],
    ] as const) {
      const r = await call(mary, bad[0], bad[1], bad[2]);
      expect(r.status, `${bad[0]} ${bad[1]}`).toBe(400);
      expect(r.type).toContain("application/problem+json");
    }
    expect((await call(mary, "POST", "/projects", { id: "p", displayName: "again" })).status).toBe(409);
    expect((await call(mary, "GET", "/projects/missing")).status).toBe(404);
  });

  it("streams the change feed, filtered to the history the caller may read", async () => {
    await call(mary, "POST", "/projects", { id: "open", displayName: "visible" });
    await call(mary, "POST", "/projects/open/permissions/grant", { intent: "project.viewHistory", identity: "jane" });
    const ctrl = new AbortController();
    const res = await fetch(`${s.base}${API}/events`, { headers: { authorization: `Bearer ${jane}` }, signal: ctrl.signal });
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const reader = res.body!.getReader();
    await call(mary, "POST", "/projects", { id: "hidden", displayName: "not for jane" });
    await call(mary, "PATCH", "/projects/open", { description: "changed" });
    let text = "";
    while (!text.includes("project.updated")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    ctrl.abort();
    expect(text).toContain("event: project.updated");
    expect(text).not.toContain("not for jane");
  });
}, httpBackends);
