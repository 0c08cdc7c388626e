/**
 * The typed client against a real server on loopback: every workflow, process-data and change-feed
 * method, their answers, the ETag round trip of the ordering, and errors as ProblemError.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ProblemError, type FlowstoreClient, type FeedMessage } from "../../src/client/index.js";
import { forEachBackend, type BackendHandle } from "../conformance/backends.js";
import { startServer, type Running } from "../http/harness.js";

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
  let mary: FlowstoreClient;
  let jane: FlowstoreClient;

  beforeEach(async () => {
    h = await backend.create();
    s = await startServer(h.kv);
    [mary, jane] = await Promise.all([s.userClient("mary"), s.userClient("jane")]);
    await s.root.globalPermissions.grant("global.createProject", "mary");
  });
  afterEach(async () => {
    await s.close();
    await h.destroy();
  });

  describe("workflow", () => {
    it("projects: create, list, get, update with If-Match, assign, budgets, history, permissions, verify, close, delete", async () => {
      const created = await mary.projects.create({ id: "école 1:a", displayName: "School", projectedBudgets: [{ organization: "Ministry", value: "100.00", currencyCode: "EUR" }] });
      expect(created).toMatchObject({ id: "école 1:a", type: "project", data: { displayName: "School", status: "open", assignee: "mary" }, meta: { version: 1, createdBy: "mary" } });
      const p = mary.project("école 1:a");
      expect(await p.get()).toEqual(created);
      const page = await mary.projects.list({ limit: 10 });
      expect(page.items.map((i) => i.id)).toEqual(["école 1:a"]);
      expect(page.nextCursor).toBeNull();

      const updated = await p.update({ description: "new roof" }, { ifMatch: 1 });
      expect(updated.data.description).toBe("new roof");
      expect(updated.meta.version).toBe(2);
      const stale = await problemOf(p.update({ description: "lost" }, { ifMatch: '"1"' }));
      expect([stale.status, stale.field]).toEqual([409, "version"]);
      expect((await p.assign("jane", { ifMatch: 2 })).data.assignee).toBe("jane");

      const budgeted = await p.setProjectedBudget({ organization: "City", value: "5.5", currencyCode: "USD" });
      expect(budgeted.data.projectedBudgets).toEqual([
        { organization: "Ministry", value: "100.00", currencyCode: "EUR" },
        { organization: "City", value: "5.5", currencyCode: "USD" },
      ]);
      const unbudgeted = await p.deleteProjectedBudget("Ministry", "EUR");
      expect(unbudgeted.data.projectedBudgets).toEqual([{ organization: "City", value: "5.5", currencyCode: "USD" }]);

      const history = await p.history();
      expect(history.items.map((e) => e.type)).toEqual([
        "project.created",
        "project.updated",
        "project.assigned",
        "project.projected_budget_updated",
        "project.projected_budget_deleted",
      ]);
      const newest = await p.history({ order: "desc", limit: 1 });
      expect(newest.items).toHaveLength(1);
      expect(newest.items[0]!.seq).toBe(history.items.at(-1)!.seq);
      expect(newest.nextCursor).toEqual(expect.any(String));

      expect((await problemOf(jane.project("école 1:a").get())).status).toBe(403);
      await p.grant("project.viewDetails", "jane");
      expect((await p.permissions())["project.viewDetails"]).toEqual(["mary", "jane"]);
      expect((await jane.project("école 1:a").get()).id).toBe("école 1:a");
      await p.revoke("project.viewDetails", "jane");
      expect((await problemOf(jane.project("école 1:a").get())).status).toBe(403);
      const badIntent = await problemOf(p.grant("project.fly", "jane"));
      expect([badIntent.status, badIntent.field]).toEqual([400, "intent"]);

      expect(await p.verify()).toMatchObject({ ok: true, checked: expect.any(Number) });
      const closed = await p.close();
      expect(closed.data.status).toBe("closed");
      expect((await problemOf(p.update({ description: "after close" }))).status).toBe(409);
      await p.delete();
      expect((await problemOf(p.get())).status).toBe(404);
    });

    it("subprojects and workflowitems: every method, the ordering with its ETag, reject on close", async () => {
      await mary.projects.create({ id: "p", displayName: "P" });
      const p = mary.project("p");
      const sub = await p.subprojects.create({ id: "s", displayName: "S", currency: "EUR" });
      expect(sub).toMatchObject({ id: "s", type: "subproject", data: { currency: "EUR", workflowMode: "unordered", status: "open" } });
      expect((await p.subprojects.list()).items.map((i) => i.id)).toEqual(["s"]);
      const s = p.subproject("s");
      expect((await s.get()).data.displayName).toBe("S");
      expect((await s.update({ displayName: "S2" }, { ifMatch: 1 })).data.displayName).toBe("S2");
      expect((await s.assign("jane")).data.assignee).toBe("jane");
      expect((await s.setProjectedBudget({ organization: "O", value: "1", currencyCode: "EUR" })).data.projectedBudgets).toHaveLength(1);
      expect((await s.deleteProjectedBudget("O", "EUR")).data.projectedBudgets).toEqual([]);
      await s.grant("subproject.viewDetails", "jane");
      expect((await s.permissions())["subproject.viewDetails"]).toEqual(["mary", "jane"]);
      await s.revoke("subproject.viewDetails", "jane");
      expect((await s.history()).items.map((e) => e.type)).toContain("subproject.created");

      const w1 = await s.workflowitems.create({ id: "w1", displayName: "one", amountType: "N/A" });
      expect(w1).toMatchObject({ id: "w1", type: "workflowitem", data: { status: "open", amountType: "N/A" } });
      await s.workflowitems.create({ id: "w2", displayName: "two", amountType: "allocated", amount: "12.50", currency: "EUR" });
      const w = s.workflowitem("w2");
      expect((await w.get()).data.amount).toBe("12.50");
      expect((await w.update({ amount: "13" })).data.amount).toBe("13");
      expect((await w.assign("jane")).data.assignee).toBe("jane");
      expect((await w.permissions())["workflowitem.viewDetails"]).toContain("jane");
      await w.grant("workflowitem.update", "jane");
      await jane.project("p").subproject("s").workflowitem("w2").update({ description: "by jane" });
      await w.revoke("workflowitem.update", "jane");
      expect((await problemOf(jane.project("p").subproject("s").workflowitem("w2").update({ description: "again" }))).status).toBe(403);
      expect((await w.history()).items.map((e) => e.type)).toEqual(expect.arrayContaining(["workflowitem.created", "workflowitem.updated"]));

      const empty = await s.getOrdering();
      expect(empty.ordering).toEqual([]);
      expect(empty.etag).toMatch(/^"\d+"$/);
      const set = await s.setOrdering(["w2", "w1"], { ifMatch: empty.etag });
      expect(set.ordering).toEqual(["w2", "w1"]);
      expect(set.etag).not.toBe(empty.etag);
      expect((await s.getOrdering()).etag).toBe(set.etag);
      const stale = await problemOf(s.setOrdering(["w1"], { ifMatch: empty.etag }));
      expect(stale.status).toBe(409);
      const twice = await problemOf(s.setOrdering(["w1", "w1"]));
      expect(twice.status).toBe(400);
      const listed = await s.workflowitems.list({ limit: 1 });
      expect(listed.items.map((i) => i.id)).toEqual(["w2"]);
      const all: string[] = [];
      for await (const item of mary.all((page) => s.workflowitems.list(page), 1)) all.push(item.id);
      expect(all).toEqual(["w2", "w1"]);

      const emptyReason = await problemOf(w.close({ rejectReason: "" }));
      expect([emptyReason.status, emptyReason.field]).toEqual([400, "body.rejectReason"]);
      // close() without a reason sends no body at all: the route's body is optional
      expect((await s.workflowitem("w1").close()).data.status).toBe("closed");
      const rejected = await w.close({ rejectReason: "not needed" });
      expect(rejected.data).toMatchObject({ status: "closed", rejectReason: "not needed" });
      expect((await s.close()).data.status).toBe("closed");
      await p.subproject("s").delete({ ifMatch: (await s.get()).meta.version });
      expect((await problemOf(s.get())).status).toBe(404);
    });
  });

  it("process data: put, get, list, start form, start message, instance list and delete", async () => {
    const pd = s.root.processData;
    const put = await pd.put("form-submissions", "process/pi 1/task/approve", { id: "r1", accessToken: "secret.jwt.token", data: { ok: true }, signature: "sig" });
    expect(put).toMatchObject({ keyspace: "bpm-form-submissions", key: "process/pi 1/task/approve", version: expect.any(Number) });
    expect(put.fields).not.toHaveProperty("accessToken");
    expect((await pd.get("form-submissions", "process/pi 1/task/approve")).fields).toMatchObject({ accessToken: "secret.jwt.token", data: { ok: true } });
    const form = await pd.startForm("order", { id: "sf", data: { x: 1 } });
    expect(form.key).toBe(`process-definition/order/start-form/${form.uuid}`);
    expect(form.record.fields).toMatchObject({ id: "sf" });
    const message = await pd.startMessage("order", { id: "m", data: {} }, { ttlMs: 60_000 });
    expect(message.record.expiresAt).toEqual(expect.any(Number));
    expect((await pd.get("message-payloads", message.key)).fields).toMatchObject({ id: "m" });
    const listed = await pd.list("form-submissions", { limit: 10 });
    expect(listed.items.map((r) => r.key).sort()).toEqual([form.key, "process/pi 1/task/approve"].sort());
    expect(JSON.stringify(listed)).not.toContain("secret.jwt.token");
    expect((await pd.instance("pi 1")).items.map((r) => r.key)).toEqual(["process/pi 1/task/approve"]);
    expect(await pd.deleteInstance("pi 1")).toEqual({ deleted: 1 });
    expect((await problemOf(pd.get("form-submissions", "process/pi 1/task/approve"))).status).toBe(404);
    await pd.put("form-scripts", "script-1", { id: "script-1", formScript: "return 1" });
    await pd.delete("form-scripts", "script-1");
    expect((await problemOf(pd.delete("form-scripts", "script-1"))).status).toBe(404);
    expect((await problemOf(mary.processData.list("form-scripts"))).status).toBe(403);
  });

  it("events: an async iterator over the feed, filtered to what the caller may view, closed by break", async () => {
    await mary.projects.create({ id: "open", displayName: "visible" });
    await mary.project("open").grant("project.viewDetails", "jane");
    const seen: FeedMessage[] = [];
    let opened!: () => void;
    const open = new Promise<void>((resolve) => (opened = resolve));
    const feed = jane.events({ onOpen: () => opened() });
    // The first next() opens the stream; the writes happen once the server holds the subscription.
    const first = feed.next();
    await open;
    await mary.projects.create({ id: "hidden", displayName: "not for jane" });
    await mary.project("open").update({ description: "changed" });
    for (let r = await first; !r.done; r = await feed.next()) {
      seen.push(r.value);
      if (r.value.event === "project.updated") break;
    }
    await feed.return();
    expect(seen.map((m) => m.event)).toEqual(["project.updated"]);
    expect(seen[0]!.data.path).toEqual([{ type: "project", id: "open" }]);
    expect(seen[0]!.id).toMatch(/^project\/open\/\d+$/);
    expect(JSON.stringify(seen)).not.toContain("not for jane");

    const anonymous = s.client();
    expect((await problemOf(anonymous.events().next())).status).toBe(401);
    const ctrl = new AbortController();
    const aborted = s.root.events({ signal: ctrl.signal });
    const pending = aborted.next();
    ctrl.abort();
    expect((await pending).done).toBe(true);
  });
});
