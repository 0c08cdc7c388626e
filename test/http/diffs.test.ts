/**
 * History that says what changed (issue 26, part 1), through a real server (memory store) with the
 * TruBudget API on: every change of a resource's data carries its field-level diff (`payload.changes`:
 * `{path, old?, new?}`, path a JSON Pointer) and the reason its writer gave (`Flowstore-Reason` header →
 * `payload.reason`), on every update path of the workflow (project, subproject and workflowitem
 * updates, assign, close, projected budgets, documents), the declared types' generic PATCH (tenancy),
 * and TruBudget's routes; `?diff=true` renders the diff of an event written before diffs were recorded;
 * the caller's redaction (permission maps to permission listers only) holds on diffed events too; a bad
 * reason is a 400 naming the header, and nothing is written.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProblemError, type FeedMessage, type FlowstoreClient, type HistoryEvent } from "../../src/client/index.js";
import { layout } from "../../src/resources/model/layout.js";
import { locate } from "../../src/resources/model/ref.js";
import { eventually } from "../support/eventually.js";
import { raw } from "./harness.js";
import { startTruBudget, type TbRunning } from "./trubudget/harness.js";

let s: TbRunning;
let alice: FlowstoreClient;
const project = () => s.root.project("p");
const sub = () => project().subproject("s");
const item = (w: string) => sub().workflowitem(w);
const problemOf = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => (e instanceof ProblemError ? e.problem : Promise.reject(e)),
  );

/** The last event of a history (newest first). */
async function last(h: { history(p: { order: "desc"; limit: number; diff?: boolean }): Promise<{ items: HistoryEvent[] }> }, diff?: boolean): Promise<HistoryEvent> {
  return (await h.history({ order: "desc", limit: 1, ...(diff ? { diff } : {}) })).items[0]!;
}

/** Sends the next writes of `c` with `reason`, runs `write`, and stops sending it. */
async function because<T>(c: FlowstoreClient, reason: string, write: () => Promise<T>): Promise<T> {
  c.reason = reason;
  try {
    return await write();
  } finally {
    c.reason = undefined;
  }
}

beforeAll(async () => {
  s = await startTruBudget();
  alice = await s.userClient("alice");
  await s.root.projects.create({ id: "p", displayName: "School", description: "old text" });
  await project().subprojects.create({ id: "s", displayName: "Roof", currency: "EUR" });
  await sub().workflowitems.create({ id: "w1", displayName: "Tiles", amountType: "disbursed", amount: "1000", currency: "EUR", assignee: "root" });
});
afterAll(async () => {
  await s.close();
});

describe("field-level diffs in the native history", () => {
  it("a project update: the changed field, old and new, with who, when and the reason given", async () => {
    const before = await project().get();
    await because(s.root, "the board renamed it", () => project().update({ description: "new text" }));
    const e = await last(project());
    expect(e).toMatchObject({
      type: "project.updated",
      actor: "root",
      payload: { reason: "the board renamed it", changes: [{ path: "/description", old: "old text", new: "new text" }] },
    });
    expect(Date.parse(e.at)).toBeGreaterThanOrEqual(Date.parse(before.meta.updatedAt));
    // Unchanged fields in the patch are not changes.
    await project().update({ description: "new text", displayName: "School" });
    expect((await last(project())).payload).toMatchObject({ changes: [] });
    expect((await last(project())).payload.reason).toBeUndefined();
  });

  it("a reason in any script, percent-encoded, is recorded as given", async () => {
    await because(s.root, "Zuschuss gekürzt: 10 % weniger (Beschluss Nr. 7)", () => sub().update({ description: "kleiner" }));
    expect((await last(sub())).payload).toMatchObject({
      reason: "Zuschuss gekürzt: 10 % weniger (Beschluss Nr. 7)",
      changes: [{ path: "/description", new: "kleiner" }],
    });
    expect((await last(sub())).payload.changes).toEqual([{ path: "/description", new: "kleiner" }]); // added: no old
  });

  it("a workflowitem's amount 1,000 → 1,200 as stored (normalized), additionalData key by key, N/A removing fields", async () => {
    await because(s.root, "offer revised", () => item("w1").update({ amount: "1,200", additionalData: { vendor: "A", lot: 1 } }));
    expect((await last(item("w1"))).payload).toMatchObject({
      reason: "offer revised",
      changes: [
        { path: "/amount", old: "1000", new: "1200" },
        { path: "/additionalData", new: { vendor: "A", lot: 1 } },
      ],
    });
    await item("w1").update({ additionalData: { vendor: "B", lot: null } });
    expect((await last(item("w1"))).payload.changes).toEqual([
      { path: "/additionalData/vendor", old: "A", new: "B" },
      { path: "/additionalData/lot", old: 1 },
    ]);
    await item("w1").update({ amountType: "N/A" });
    const changes = (await last(item("w1"))).payload.changes as { path: string; old?: unknown; new?: unknown }[];
    expect(changes).toContainEqual({ path: "/amountType", old: "disbursed", new: "N/A" });
    expect(changes).toContainEqual({ path: "/amount", old: "1200" });
    expect(changes).toContainEqual({ path: "/currency", old: "EUR" });
    expect(changes.every((c) => !("new" in c) || c.path === "/amountType")).toBe(true);
  });

  it("assign, close (with its reject reason), projected budgets and documents carry theirs", async () => {
    await sub().workflowitems.create({ id: "w2", displayName: "Gutters", amountType: "N/A", assignee: "root" });
    await because(s.root, "alice is on site", () => item("w2").assign("alice"));
    expect((await last(item("w2"))).payload).toMatchObject({ reason: "alice is on site", changes: [{ path: "/assignee", old: "root", new: "alice" }] });
    await item("w2").assign("root");

    await item("w2").documents.upload({ content: new Blob(["the offer"]), fileName: "offer.pdf" });
    const uploaded = await last(item("w2"));
    expect(uploaded.type).toBe("workflowitem.document_uploaded");
    // the first document adds the list; the next one adds its element
    expect(uploaded.payload.changes).toMatchObject([{ path: "/documents", new: [{ fileName: "offer.pdf" }] }]);
    await item("w2").documents.addLink({ fileName: "spec", link: "https://example.org/spec.pdf" });
    const link = await last(item("w2"));
    expect(link.payload.changes).toMatchObject([{ path: "/documents/1", new: { fileName: "spec" } }]);
    // a document deleted: named by its key (keyedArrays: documents by id)
    const linkId = ((link.payload.changes as { new: { id: string } }[])[0]!.new as { id: string }).id;
    await item("w2").documents.delete(linkId);
    expect((await last(item("w2"))).payload.changes).toMatchObject([{ path: "/documents/1", old: { fileName: "spec" }, key: { id: linkId } }]);

    await item("w1").close(); // the subproject is ordered: the item before closes first
    await because(s.root, "out of scope", () => item("w2").close({ rejectReason: "not needed" }));
    const closed = (await last(item("w2"))).payload;
    expect(closed.reason).toBe("out of scope");
    expect(closed.changes).toContainEqual({ path: "/status", old: "open", new: "closed" });
    expect(closed.changes).toContainEqual({ path: "/rejectReason", new: "not needed" });

    await project().setProjectedBudget({ organization: "KfW", currencyCode: "EUR", value: "1000" });
    expect((await last(project())).payload.changes).toEqual([{ path: "/projectedBudgets", new: [{ organization: "KfW", currencyCode: "EUR", value: "1000" }] }]);
    await project().setProjectedBudget({ organization: "BMZ", currencyCode: "USD", value: "50" });
    expect((await last(project())).payload.changes).toEqual([
      { path: "/projectedBudgets/1", new: { organization: "BMZ", currencyCode: "USD", value: "50" }, key: { organization: "BMZ", currencyCode: "USD" } },
    ]);
    await because(s.root, "second tranche", () => project().setProjectedBudget({ organization: "KfW", currencyCode: "EUR", value: "1500" }));
    // The command moves the budget it sets to the end (TruBudget's order): matched by its key, only its value changed.
    expect((await project().get()).data.projectedBudgets?.map((b) => b.organization)).toEqual(["BMZ", "KfW"]);
    expect((await last(project())).payload).toMatchObject({
      reason: "second tranche",
      changes: [{ path: "/projectedBudgets/1/value", old: "1000", new: "1500", key: { organization: "KfW", currencyCode: "EUR" } }],
    });
    await project().deleteProjectedBudget("BMZ", "USD");
    expect((await last(project())).payload.changes).toEqual([
      { path: "/projectedBudgets/0", old: { organization: "BMZ", currencyCode: "USD", value: "50" }, key: { organization: "BMZ", currencyCode: "USD" } },
    ]);
  });

  it("the generic PATCH of a declared type (tenancy) carries its diff and reason", async () => {
    const auth = { authorization: `Bearer ${s.root.token}`, "content-type": "application/json" };
    expect((await raw(s.base, "POST", "/api/v1/tenancy/spaces", { headers: auth, body: JSON.stringify({ id: "sp", name: "One" }) })).status).toBe(201);
    const patched = await raw(s.base, "PATCH", "/api/v1/tenancy/spaces/sp", { headers: { ...auth, "flowstore-reason": "renamed" }, body: JSON.stringify({ name: "Two" }) });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const h = await raw(s.base, "GET", "/api/v1/tenancy/spaces/sp/history?order=desc&limit=1", { headers: auth });
    expect(h.body.items[0].payload).toMatchObject({ reason: "renamed", changes: [{ path: "/name", old: "One", new: "Two" }] });
  });

  it("a bad reason is a 400 naming the header, and nothing is written", async () => {
    const before = await project().get();
    const send = (reason: string) =>
      raw(s.base, "PATCH", "/api/v1/projects/p", {
        headers: { authorization: `Bearer ${s.root.token}`, "content-type": "application/json", "flowstore-reason": reason },
        body: JSON.stringify({ description: "never" }),
      });
    for (const reason of ["%zz", "x".repeat(1001), "   ", "a%00b"]) {
      const answer = await send(reason);
      expect(answer.status, reason).toBe(400);
      expect(answer.type).toContain("application/problem+json");
      expect(answer.body.field).toBe("headers.flowstore-reason");
    }
    expect((await project().get()).meta.version).toBe(before.meta.version);
    // the longest allowed reason is taken
    expect((await send("x".repeat(1000))).status).toBe(200);
    expect((await last(project())).payload.reason).toHaveLength(1000);
  });
});

describe("diffs and what the caller may see", () => {
  it("a restricted item's reassignment: the history reader without listPermissions sees the diff, not the permission map", async () => {
    const carol = await s.userClient("carol");
    for (const c of ["alice", "carol"]) {
      await project().grant("project.viewDetails", c);
      await sub().grant("subproject.viewDetails", c);
    }
    await sub().workflowitems.create({ id: "w3", displayName: "Secret", amountType: "N/A", assignee: "root", workflowitemType: "restricted" });
    await item("w3").grant("workflowitem.viewHistory", "carol");
    await item("w3").grant("workflowitem.viewDetails", "carol");
    await because(s.root, "handover", () => item("w3").assign("alice"));
    // alice, the new assignee, holds every intent of the restricted item: she sees the permission map
    const hers = await last(alice.project("p").subproject("s").workflowitem("w3"));
    expect(hers.type).toBe("workflowitem.assigned");
    expect(hers.payload.permissions).toBeDefined();
    const theirs = await last(carol.project("p").subproject("s").workflowitem("w3"));
    expect(theirs.payload.permissions).toBeUndefined();
    expect(theirs.payload).toMatchObject({ reason: "handover", changes: [{ path: "/assignee", old: "root", new: "alice" }] });
    // and with ?diff=true (every event parsed): the same redaction
    expect((await last(carol.project("p").subproject("s").workflowitem("w3"), true)).payload.permissions).toBeUndefined();
  });

  it("the change feed (SSE) serves the same diff and reason under the same redaction", async () => {
    const carol = s.client();
    await carol.login("carol", "carol password");
    const ctrl = new AbortController();
    const seen: FeedMessage[] = [];
    let opened!: () => void;
    const open = new Promise<void>((r) => (opened = r));
    const reading = (async () => {
      for await (const m of carol.events({ signal: ctrl.signal, onOpen: opened })) seen.push(m);
    })().catch(() => undefined);
    await open;
    try {
      // alice, the assignee now, hands it back (the restricted item's assign: a new permission map)
      await because(alice, "back to root", () => alice.project("p").subproject("s").workflowitem("w3").assign("root"));
      const m = await eventually(() => seen.find((x) => x.event === "workflowitem.assigned" && x.data.payload.reason === "back to root") ?? false, {
        what: "the reassignment on carol's feed",
      });
      expect(m.data.payload.changes).toEqual([{ path: "/assignee", old: "alice", new: "root" }]);
      expect(m.data.payload.permissions).toBeUndefined();
    } finally {
      ctrl.abort();
      await reading;
    }
  });

  it("no history intent, no diff: the item's history is refused", async () => {
    const bob = await s.userClient("bob");
    expect(await problemOf(bob.project("p").subproject("s").workflowitem("w1").history())).toMatchObject({ status: 404 });
  });
});

describe("?diff=true renders the diff of an event written before diffs were recorded", () => {
  it("an update event stored without changes gets them from a replay of the resource's history", async () => {
    await sub().workflowitems.create({ id: "w4", displayName: "Old", amountType: "disbursed", amount: "10", currency: "EUR", assignee: "root" });
    await item("w4").update({ amount: "20", description: "d" });
    const carried = await last(item("w4"));
    // Rewrite the stored event as a store from before diffs holds it: the same event without `changes`,
    // and its history index entry empty (such a store's entries did not carry their events).
    const { app } = s;
    const store = app.flowstore.resources;
    const l = locate(store.schema, { type: "workflowitem", ids: ["p", "s", "w4"] });
    const key = layout.log(carried.seq);
    const stored = JSON.parse((await store.kv.get(l.partition, key))!.value.toString("utf8")) as HistoryEvent;
    const { changes: _, ...payload } = stored.payload;
    await store.kv.commit(l.partition, [
      { type: "put", key, value: Buffer.from(JSON.stringify({ ...stored, payload })) },
      { type: "put", key: layout.historyEntry(l, carried.seq), value: Buffer.alloc(0) },
    ]);
    expect((await last(item("w4"))).payload.changes).toBeUndefined();
    const rendered = await last(item("w4"), true);
    expect(rendered.payload.changes).toEqual(carried.payload.changes);
    expect(rendered.payload.changes).toEqual([
      { path: "/amount", old: "10", new: "20" },
      { path: "/description", new: "d" },
    ]);
  });
});

describe("the TruBudget adapter", () => {
  it("workflowitem.update: its history's update carries the changed fields; the native history the diff and the reason given on TruBudget's route", async () => {
    await sub().workflowitems.create({ id: "w5", displayName: "Paint", amountType: "disbursed", amount: "100", currency: "EUR", assignee: "root" });
    const ids = { projectId: "p", subprojectId: "s", workflowitemId: "w5" };
    const updated = await s.call("workflowitem.update", { data: { ...ids, amount: "150", description: "two coats" }, headers: { "flowstore-reason": "price rose" } });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    const tb = await s.call("workflowitem.viewHistory", { query: ids });
    const entry = tb.body.data.events.at(-1);
    expect(entry.businessEvent).toMatchObject({ type: "workflowitem_updated", publisher: "root", update: { amount: "150", description: "two coats" } });
    expect((await last(item("w5"))).payload).toMatchObject({
      reason: "price rose",
      changes: [
        { path: "/amount", old: "100", new: "150" },
        { path: "/description", new: "two coats" },
      ],
    });
    const bad = await s.call("project.update", { data: { projectId: "p", description: "x" }, headers: { "flowstore-reason": "%" } });
    expect(bad.status).toBe(400);
  });
});
