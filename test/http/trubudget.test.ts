/**
 * The native API (`/api/v1`) against TruBudget's rules (issue 14), through a real server on 127.0.0.1.
 * The domain suite (test/workflow/trubudget.test.ts) covers each rule in depth; this one proves the
 * routes carry them: status codes, problem fields, response shapes.
 *
 * | case                 | TruBudget rule (api/src/service/domain/workflow/…)                                         |
 * |----------------------|---------------------------------------------------------------------------------------------|
 * | allowed-intents      | project_list/subproject_list/workflowitem_list: each item carries the caller's allowedIntents |
 * | closed-first         | workflowitem_list: closed items first, by close time, then the ordering (sequence=closedFirst) |
 * | write-intents        | the same on a write's answer (create, update, assign, close, budgets), as the resource is after it |
 * | history-filter       | historyFilter.ts: publisher, startAt/endAt (since/until), eventType (type)                  |
 * | close-assignee       | *_close.ts: only the assignee closes (403 otherwise; flowstore: holding the close intent too); a closed one closes again as a no-op 200 |
 * | defaults-and-money   | subproject_create: workflowMode "ordered"; money.ts: signed, comma-grouped amounts; exchangeRate "1.0" |
 * | assignee-exists      | workflowitem_create: the assignee must exist and be enabled (400 naming the field here)     |
 * | type-fixed           | workflowitem_create: only the subproject's workflowitemType may be used                     |
 * | na-clears            | workflowitem_updated: amountType N/A removes the amount fields                              |
 *
 * One server over the memory backend for the whole file (the rules live above the backends).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { backends, type BackendHandle } from "../conformance/backends.js";
import { raw, startServer, type Running } from "./harness.js";
import { nextMillisecond } from "../support/eventually.js";

const API = "/api/v1";
let h: BackendHandle;
let s: Running;
let root: string;
let mary: string;
let jane: string;
let seq = 0;

const call = (token: string, method: string, path: string, body?: unknown) =>
  raw(s.base, method, API + path, {
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

/** A fresh project of mary's with one subproject `s` (ordered by default); returns the project's path. */
async function tree(subproject: Record<string, unknown> = {}): Promise<string> {
  const p = `p${++seq}`;
  expect((await call(mary, "POST", "/projects", { id: p, displayName: p })).status).toBe(201);
  const r = await call(mary, "POST", `/projects/${p}/subprojects`, { id: "s", displayName: "S", currency: "EUR", ...subproject });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return `/projects/${p}`;
}

beforeAll(async () => {
  h = await backends.find((b) => b.name === "memory")!.create();
  s = await startServer(h.kv);
  root = s.root.token!;
  mary = (await s.userClient("mary")).token!;
  jane = (await s.userClient("jane")).token!;
  await s.root.users.create({ id: "gone", displayName: "Gone", password: "gone password 123" });
  expect((await call(root, "POST", "/users/gone/disable")).status).toBe(200);
  expect((await call(root, "POST", "/global/permissions/grant", { intent: "global.createProject", identity: "mary" })).status).toBe(204);
});
afterAll(async () => {
  await s?.close();
  await h?.destroy();
});

it("allowed-intents: list items and details carry the intents the caller holds", async () => {
  const p = await tree();
  expect((await call(mary, "POST", `${p}/subprojects/s/workflowitems`, { id: "w", displayName: "w", amountType: "N/A" })).status).toBe(201);
  expect((await call(mary, "POST", `${p}/permissions/grant`, { intent: "project.viewDetails", identity: "jane" })).status).toBe(204);
  const detail = await call(jane, "GET", p);
  expect(detail.status).toBe(200);
  expect(detail.body.allowedIntents).toEqual(["project.viewDetails"]);
  const mine = await call(mary, "GET", p);
  expect(mine.body.allowedIntents).toEqual(expect.arrayContaining(["project.viewDetails", "project.close", "project.createSubproject", "project.intent.grantPermission"]));
  const projects = await call(jane, "GET", "/projects?limit=100");
  expect(projects.body.items.find((x: { id: string }) => `/projects/${x.id}` === p).allowedIntents).toEqual(["project.viewDetails"]);
  // jane was granted after the subproject was made: it is redacted for her, with no intents.
  const subs = await call(jane, "GET", `${p}/subprojects`);
  expect(subs.body.items).toEqual([expect.objectContaining({ id: "s", redacted: true, allowedIntents: [] })]);
  const items = await call(mary, "GET", `${p}/subprojects/s/workflowitems`);
  expect(items.body.items[0].allowedIntents).toEqual(expect.arrayContaining(["workflowitem.viewDetails", "workflowitem.assign", "workflowitem.close"]));
  const item = await call(mary, "GET", `${p}/subprojects/s/workflowitems/w`);
  expect(item.body.allowedIntents).toEqual(items.body.items[0].allowedIntents);
});

it("write-intents: every write's answer carries the intents the caller holds on the resource as written", async () => {
  const p = await tree();
  const sp = `${p}/subprojects/s`;
  /** The write's allowedIntents equal the ones a read answers right after it. */
  const sameAsRead = async (token: string, write: Awaited<ReturnType<typeof call>>, path: string, status = 200): Promise<void> => {
    expect(write.status, JSON.stringify(write.body)).toBe(status);
    const read = await call(token, "GET", path);
    expect(read.status).toBe(200);
    expect(write.body.allowedIntents).toEqual(read.body.allowedIntents);
    expect(write.body.allowedIntents).toEqual(expect.arrayContaining([expect.any(String)]));
  };
  await sameAsRead(mary, await call(mary, "POST", "/projects", { id: `${p.split("/")[2]}x`, displayName: "x" }), `/projects/${p.split("/")[2]}x`, 201);
  await sameAsRead(mary, await call(mary, "PATCH", p, { description: "d" }), p);
  await sameAsRead(mary, await call(mary, "PUT", `${p}/projected-budgets`, { organization: "KfW", value: "7", currencyCode: "EUR" }), p);
  await sameAsRead(mary, await call(mary, "DELETE", `${p}/projected-budgets/KfW/EUR`), p);
  await sameAsRead(mary, await call(mary, "POST", `${sp}/workflowitems`, { id: "g", displayName: "g", amountType: "N/A" }), `${sp}/workflowitems/g`, 201);
  await sameAsRead(mary, await call(mary, "POST", `${sp}/workflowitems/g/assign`, { assignee: "mary" }), `${sp}/workflowitems/g`);
  await sameAsRead(mary, await call(mary, "POST", `${sp}/workflowitems/g/close`, {}), `${sp}/workflowitems/g`);
  // Closing again changes nothing, and answers the same intents.
  await sameAsRead(mary, await call(mary, "POST", `${sp}/workflowitems/g/close`, {}), `${sp}/workflowitems/g`);
  // A restricted item assigned to jane: mary keeps only list, so her answer is a 204 with no body (and its
  // ETag); the list shows her that intent alone.
  expect((await call(mary, "POST", `${sp}/workflowitems`, { id: "r", displayName: "r", amountType: "N/A", workflowitemType: "restricted" })).status).toBe(201);
  const handed = await call(mary, "POST", `${sp}/workflowitems/r/assign`, { assignee: "jane" });
  expect(handed.status).toBe(204);
  expect(handed.body).toBe("");
  expect(handed.headers.get("etag")).toMatch(/^"\d+"$/);
  const listed = (await call(mary, "GET", `${sp}/workflowitems`)).body.items.find((x: { id: string }) => x.id === "r");
  expect(listed.allowedIntents).toEqual(["workflowitem.list"]);
});

it("closed-first: sequence=closedFirst lists closed items first by close time, then the ordering; the default stays seed 002's", async () => {
  const p = await tree();
  const sp = `${p}/subprojects/s`;
  for (const id of ["a", "b", "c"]) expect((await call(mary, "POST", `${sp}/workflowitems`, { id, displayName: id, amountType: "N/A" })).status).toBe(201);
  // Ordered mode: close in the effective order, c then b; then put them back last.
  expect((await call(mary, "PUT", `${sp}/workflowitem-ordering`, { ordering: ["c", "b", "a"] })).status).toBe(200);
  // Close times have millisecond resolution and ties go by creation (b before c), so the two closes are
  // held in different milliseconds: the order asserted below is the close order, not a race with the clock.
  for (const id of ["c", "b"]) {
    expect((await call(mary, "POST", `${sp}/workflowitems/${id}/close`, {})).status).toBe(200);
    await nextMillisecond();
  }
  expect((await call(mary, "PUT", `${sp}/workflowitem-ordering`, { ordering: ["a", "b", "c"] })).status).toBe(200);
  const ids = (r: Awaited<ReturnType<typeof call>>): string[] => r.body.items.map((x: { id: string }) => x.id);
  expect(ids(await call(mary, "GET", `${sp}/workflowitems`))).toEqual(["a", "b", "c"]);
  expect(ids(await call(mary, "GET", `${sp}/workflowitems?sequence=manual`))).toEqual(["a", "b", "c"]);
  const closedFirst = await call(mary, "GET", `${sp}/workflowitems?sequence=closedFirst`);
  expect(ids(closedFirst)).toEqual(["c", "b", "a"]);
  expect(closedFirst.body.items[0].allowedIntents).toEqual(expect.arrayContaining(["workflowitem.viewDetails"]));
  // Paged one by one through the typed client, the cursor keeps the order.
  const items = s.client(mary).project(p.split("/")[2]!).subproject("s").workflowitems;
  const walked: string[] = [];
  let cursor: string | null = null;
  do {
    const page: Awaited<ReturnType<typeof items.list>> = await items.list({ sequence: "closedFirst", limit: 1, cursor });
    walked.push(...page.items.map((x) => x.id));
    cursor = page.nextCursor;
  } while (cursor !== null);
  expect(walked).toEqual(["c", "b", "a"]);
  const bad = await call(mary, "GET", `${sp}/workflowitems?sequence=closedLast`);
  expect(bad.status).toBe(400);
  expect(JSON.stringify(bad.body)).toContain("sequence");
  // Declared in the OpenAPI document, on the ordered list only.
  const spec = (await raw(s.base, "GET", "/openapi.json")).body as { paths: Record<string, Record<string, { parameters?: { name: string; in: string }[] }>> };
  const listed = Object.entries(spec.paths).filter(([path]) => path.endsWith("/workflowitems"));
  expect(listed.map(([, ops]) => ops.get!.parameters!.find((x) => x.name === "sequence" && x.in === "query"))).toEqual([expect.objectContaining({ name: "sequence" })]);
  expect(JSON.stringify(spec.paths[Object.keys(spec.paths).find((path) => path.endsWith("/subprojects"))!]!.get)).not.toContain("closedFirst");
});

it("history-filter: publisher, since, until and type on a history route; a bad time is a 400 naming it", async () => {
  const p = await tree();
  expect((await call(mary, "POST", `${p}/permissions/grant`, { intent: "project.update", identity: "jane" })).status).toBe(204);
  expect((await call(mary, "POST", `${p}/permissions/grant`, { intent: "project.viewDetails", identity: "jane" })).status).toBe(204);
  for (const [who, d] of [
    [jane, "by jane"],
    [mary, "by mary"],
  ] as const)
    expect((await call(who, "PATCH", p, { description: d })).status).toBe(200);
  const all = (await call(mary, "GET", `${p}/history`)).body.items as { actor: string; type: string; at: string }[];
  const byJane = await call(mary, "GET", `${p}/history?publisher=jane`);
  expect(byJane.body.items.map((e: { actor: string }) => e.actor)).toEqual(["jane"]);
  const updates = await call(mary, "GET", `${p}/history?type=project.updated&order=desc`);
  expect(updates.body.items.map((e: { payload: { data: unknown } }) => e.payload.data)).toEqual([{ description: "by mary" }, { description: "by jane" }]);
  const window = await call(mary, "GET", `${p}/history?since=${encodeURIComponent(all[1]!.at)}&until=${encodeURIComponent(all[2]!.at)}`);
  expect(window.body.items).toEqual(all.filter((e) => e.at >= all[1]!.at && e.at <= all[2]!.at));
  const bad = await call(mary, "GET", `${p}/history?since=yesterday`);
  expect(bad.status).toBe(400);
  expect(bad.body).toMatchObject({ status: 400 });
  expect(JSON.stringify(bad.body)).toContain("since");
  expect((await call(mary, "GET", `${p}/history?type=not%20a%20type`)).status).toBe(400);
});

it("close-assignee: the close intent alone is a 403, and so is being the assignee alone; the assignee holding it closes; closing again is a 200 that changes nothing", async () => {
  const p = await tree();
  expect((await call(mary, "POST", `${p}/subprojects/s/workflowitems`, { id: "w", displayName: "w", amountType: "N/A", assignee: "jane" })).status).toBe(201);
  const w = `${p}/subprojects/s/workflowitems/w`;
  const refused = await call(mary, "POST", `${w}/close`, {});
  expect(refused.status).toBe(403);
  expect(refused.type).toContain("application/problem+json");
  // Being assigned grants nothing (issue 29, finding 3): jane may not even know the item until granted an intent on it.
  expect((await call(jane, "POST", `${w}/close`, {})).status).toBe(404);
  for (const intent of ["workflowitem.close", "workflowitem.viewDetails"]) {
    expect((await call(mary, "POST", `${w}/permissions/grant`, { intent, identity: "jane" })).status).toBe(204);
  }
  const closed = await call(jane, "POST", `${w}/close`, {});
  expect(closed.status).toBe(200);
  expect(closed.body.data).toMatchObject({ status: "closed", closedAt: expect.any(String) });
  const again = await call(jane, "POST", `${w}/close`, {});
  expect(again.status).toBe(200);
  expect(again.body.meta.version).toBe(closed.body.meta.version);
});

it("defaults-and-money: ordered by default; signed, comma-grouped amounts stored canonical; a decimal comma is a 400 naming data.amount", async () => {
  const p = await tree();
  expect((await call(mary, "GET", `${p}/subprojects/s`)).body.data.workflowMode).toBe("ordered");
  const w = await call(mary, "POST", `${p}/subprojects/s/workflowitems`, {
    displayName: "refund",
    amountType: "disbursed",
    amount: "-1,000.50",
    currency: "EUR",
    fundingOrganization: "KfW",
  });
  expect(w.status).toBe(201);
  expect(w.body.data).toMatchObject({ amount: "-1000.50", exchangeRate: "1.0", fundingOrganization: "KfW", workflowitemType: "general" });
  const bad = await call(mary, "POST", `${p}/subprojects/s/workflowitems`, { displayName: "x", amountType: "disbursed", amount: "12,5", currency: "EUR" });
  expect(bad.status).toBe(400);
  expect(JSON.stringify(bad.body)).toContain("amount");
});

it("assignee-exists: a ghost or a disabled assignee is a 400 naming the field, on create and on assign", async () => {
  const p = await tree();
  for (const assignee of ["nobody", "gone"]) {
    const r = await call(mary, "POST", `${p}/subprojects/s/workflowitems`, { displayName: "x", amountType: "N/A", assignee });
    expect(r.status, assignee).toBe(400);
    expect(r.body).toMatchObject({ field: "body.assignee" });
    const a = await call(mary, "POST", `${p}/assign`, { assignee });
    expect(a.status).toBe(400);
    expect(a.body.field).toMatch(/assignee$/);
  }
  expect((await call(mary, "POST", `${p}/assign`, { assignee: "jane" })).status).toBe(200);
});

it("type-fixed and na-clears: a subproject's fixed type refuses another (400); an update to N/A clears the amount fields", async () => {
  const p = await tree({ workflowitemType: "restricted", workflowMode: "unordered" });
  const wrong = await call(mary, "POST", `${p}/subprojects/s/workflowitems`, { displayName: "x", amountType: "N/A", workflowitemType: "general" });
  expect(wrong.status).toBe(400);
  expect(wrong.body).toMatchObject({ field: "body.workflowitemType" });
  const w = await call(mary, "POST", `${p}/subprojects/s/workflowitems`, {
    id: "w",
    displayName: "x",
    amountType: "allocated",
    amount: "3",
    currency: "USD",
    additionalData: { a: 1, b: 2 },
  });
  expect(w.body.data.workflowitemType).toBe("restricted");
  const patched = await call(mary, "PATCH", `${p}/subprojects/s/workflowitems/w`, { amountType: "N/A", additionalData: { a: null, c: 3 } });
  expect(patched.status).toBe(200);
  expect(patched.body.data).not.toHaveProperty("amount");
  expect(patched.body.data).not.toHaveProperty("currency");
  expect(patched.body.data).not.toHaveProperty("exchangeRate");
  expect(patched.body.data.additionalData).toEqual({ b: 2, c: 3 });
});
