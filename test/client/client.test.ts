/**
 * The typed client against a real server on loopback: every workflow, process-data, archive and
 * change-feed method, their answers, the ETag round trip of the ordering, errors as ProblemError, and
 * what the web explorer relies on: a same-origin (relative) base, `me()`, and the onUnauthorized hook.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FlowstoreClient, ProblemError, whole, type FeedMessage } from "../../src/client/index.js";
import { forEachBackend, httpBackends, type BackendHandle } from "../conformance/backends.js";
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
      const created = await mary.projects.create({
        id: "école 1:a",
        displayName: "School",
        projectedBudgets: [{ organization: "Ministry", value: "100.00", currencyCode: "EUR" }],
      });
      expect(created).toMatchObject({
        id: "école 1:a",
        type: "project",
        data: { displayName: "School", status: "open", assignee: "mary" },
        meta: { version: 1, createdBy: "mary" },
      });
      const p = mary.project("école 1:a");
      // A read also carries the intents the caller holds on it (the creator: every one).
      expect(await p.get()).toEqual({ ...created, allowedIntents: expect.arrayContaining(["project.viewDetails", "project.close", "project.intent.grantPermission"]) });
      const page = await mary.projects.list({ limit: 10 });
      expect(page.items.map((i) => i.id)).toEqual(["école 1:a"]);
      expect(page.nextCursor).toBeNull();

      const updated = whole(await p.update({ description: "new roof" }, { ifMatch: 1 }));
      expect(updated.data.description).toBe("new roof");
      expect(updated.meta.version).toBe(2);
      const stale = await problemOf(p.update({ description: "lost" }, { ifMatch: '"1"' }));
      expect([stale.status, stale.field]).toEqual([412, "version"]);
      expect(whole(await p.assign("jane", { ifMatch: 2 })).data.assignee).toBe("jane");

      const budgeted = whole(await p.setProjectedBudget({ organization: "City", value: "5.5", currencyCode: "USD" }));
      expect(budgeted.data.projectedBudgets).toEqual([
        { organization: "Ministry", value: "100.00", currencyCode: "EUR" },
        { organization: "City", value: "5.5", currencyCode: "USD" },
      ]);
      const unbudgeted = whole(await p.deleteProjectedBudget("Ministry", "EUR"));
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

      // jane holds no intent on the project: it answers as a missing one would (no existence oracle).
      expect((await problemOf(jane.project("école 1:a").get())).status).toBe(404);
      await p.grant("project.viewDetails", "jane");
      expect((await p.permissions())["project.viewDetails"]).toEqual(["mary", "jane"]);
      expect((await jane.project("école 1:a").get()).id).toBe("école 1:a");
      await p.revoke("project.viewDetails", "jane");
      expect((await problemOf(jane.project("école 1:a").get())).status).toBe(404);
      const badIntent = await problemOf(p.grant("project.fly", "jane"));
      expect([badIntent.status, badIntent.field]).toEqual([400, "intent"]);

      expect(await p.verify()).toMatchObject({ ok: true, checked: expect.any(Number) });
      // Only the assignee closes (TruBudget's rule), holding the close intent (issue 29): jane, assigned above.
      expect((await problemOf(p.close())).status).toBe(403);
      await p.grant("project.close", "jane");
      // jane may close it but not view it (viewDetails revoked above): the close answers 204 and its ETag.
      const closed = await jane.project("école 1:a").close();
      expect(closed).toEqual({ viewable: false, etag: `"${(await p.get()).meta.version}"` });
      expect((await p.get()).data.status).toBe("closed");
      expect((await problemOf(p.update({ description: "after close" }))).status).toBe(409);
      await p.delete();
      expect((await problemOf(p.get())).status).toBe(404);
    });

    it("subprojects and workflowitems: every method, the ordering with its ETag, reject on close", async () => {
      await mary.projects.create({ id: "p", displayName: "P" });
      const p = mary.project("p");
      const sub = await p.subprojects.create({ id: "s", displayName: "S", currency: "EUR" });
      expect(sub).toMatchObject({ id: "s", type: "subproject", data: { currency: "EUR", workflowMode: "ordered", status: "open" } });
      expect((await p.subprojects.list()).items.map((i) => i.id)).toEqual(["s"]);
      const s = p.subproject("s");
      expect((await s.get()).data.displayName).toBe("S");
      expect(whole(await s.update({ displayName: "S2" }, { ifMatch: 1 })).data.displayName).toBe("S2");
      expect(whole(await s.assign("jane")).data.assignee).toBe("jane");
      expect(whole(await s.setProjectedBudget({ organization: "O", value: "1", currencyCode: "EUR" })).data.projectedBudgets).toHaveLength(1);
      expect(whole(await s.deleteProjectedBudget("O", "EUR")).data.projectedBudgets).toEqual([]);
      await s.grant("subproject.viewDetails", "jane");
      expect((await s.permissions())["subproject.viewDetails"]).toEqual(["mary", "jane"]);
      await s.revoke("subproject.viewDetails", "jane");
      expect((await s.history()).items.map((e) => e.type)).toContain("subproject.created");

      const w1 = await s.workflowitems.create({ id: "w1", displayName: "one", amountType: "N/A" });
      // Create bodies are typed from the declaration (checked by `npm run lint`): a misspelt field is a
      // compile error, and the server refuses it naming the field for untyped callers.
      // @ts-expect-error "displayNam" is not a field of a workflowitem
      await expect(s.workflowitems.create({ id: "typo", displayNam: "one", amountType: "N/A" })).rejects.toMatchObject({ problem: { status: 400 } });
      expect(w1).toMatchObject({ id: "w1", type: "workflowitem", data: { status: "open", amountType: "N/A" } });
      await s.workflowitems.create({ id: "w2", displayName: "two", amountType: "allocated", amount: "12.50", currency: "EUR" });
      const w = s.workflowitem("w2");
      expect((await w.get()).data.amount).toBe("12.50");
      expect(whole(await w.update({ amount: "13" })).data.amount).toBe("13");
      expect(whole(await w.assign("jane")).data.assignee).toBe("jane");
      // Assigning grants no intent (issue 29, finding 3): jane is named, not empowered.
      expect((await w.permissions())["workflowitem.viewDetails"] ?? []).not.toContain("jane");
      await w.grant("workflowitem.update", "jane");
      await jane.project("p").subproject("s").workflowitem("w2").update({ description: "by jane" });
      await w.revoke("workflowitem.update", "jane");
      // jane holds no intent on w2 any more (the assignment grants none): it is a 404 to her, as a missing one.
      expect((await problemOf(jane.project("p").subproject("s").workflowitem("w2").update({ description: "again" }))).status).toBe(404);
      expect((await w.history()).items.map((e) => e.type)).toEqual(expect.arrayContaining(["workflowitem.created", "workflowitem.updated"]));

      const empty = await s.getOrdering();
      expect(empty.ordering).toEqual([]);
      expect(empty.etag).toMatch(/^"\d+"$/);
      const set = await s.setOrdering(["w2", "w1"], { ifMatch: empty.etag });
      expect(set.ordering).toEqual(["w2", "w1"]);
      expect(set.etag).not.toBe(empty.etag);
      expect((await s.getOrdering()).etag).toBe(set.etag);
      const stale = await problemOf(s.setOrdering(["w1"], { ifMatch: empty.etag }));
      expect(stale.status).toBe(412);
      const twice = await problemOf(s.setOrdering(["w1", "w1"]));
      expect(twice.status).toBe(400);
      const listed = await s.workflowitems.list({ limit: 1 });
      expect(listed.items.map((i) => i.id)).toEqual(["w2"]);
      const all: string[] = [];
      for await (const item of mary.all((page) => s.workflowitems.list(page), 1)) all.push(item.id);
      expect(all).toEqual(["w2", "w1"]);

      const emptyReason = await problemOf(w.close({ rejectReason: "" }));
      expect([emptyReason.status, emptyReason.field]).toEqual([400, "body.rejectReason"]);
      // Ordered (the default): w1 comes after w2, which is still open.
      expect((await problemOf(s.workflowitem("w1").close())).status).toBe(409);
      // w2's assignee, jane, granted the close intents (and the view, to read the answer), rejects it; then mary, w1's assignee, closes w1.
      await w.grant("workflowitem.close", "jane");
      await w.grant("workflowitem.viewDetails", "jane");
      await s.grant("subproject.close", "jane");
      const rejected = whole(await jane.project("p").subproject("s").workflowitem("w2").close({ rejectReason: "not needed" }));
      expect(rejected.data).toMatchObject({ status: "closed", rejectReason: "not needed" });
      // close() without a reason sends no body at all: the route's body is optional
      expect(whole(await s.workflowitem("w1").close()).data.status).toBe("closed");
      // jane holds the close intent on the subproject, not its view: done, answered with no body.
      expect(await jane.project("p").subproject("s").close()).toMatchObject({ viewable: false });
      expect((await s.get()).data.status).toBe("closed");
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

  it("me, a same-origin base, and onUnauthorized: called for a refused token, never for a login or a call without one", async () => {
    expect(await mary.me()).toEqual({ id: "mary", groups: [], intents: ["global.createProject"] });

    // A page served by the server gives no base: paths go to fetch as they are (the browser resolves them).
    const asked: string[] = [];
    const sameOrigin = new FlowstoreClient({ token: mary.token, fetch: (input, init) => (asked.push(String(input)), fetch(s.base + String(input), init)) });
    expect((await sameOrigin.me()).id).toBe("mary");
    expect((await sameOrigin.projects.list({ limit: 1, cursor: null })).items).toEqual([]);
    expect(asked).toEqual(["/api/v1/me", "/api/v1/projects?limit=1"]);

    const refused: number[] = [];
    const stale = new FlowstoreClient({ baseUrl: s.base, token: "not-a-token", onUnauthorized: (e) => refused.push(e.status) });
    expect((await problemOf(stale.projects.list())).status).toBe(401);
    expect((await problemOf(stale.events().next())).status).toBe(401);
    expect(refused).toEqual([401, 401]);
    // Logging in sends no token: a wrong password is the credentials' 401, not the session's.
    expect((await problemOf(stale.login("mary", "wrong password"))).status).toBe(401);
    expect(refused).toHaveLength(2);
    await stale.login("mary", "mary password");
    expect((await stale.me()).id).toBe("mary");
    const anonymous = new FlowstoreClient({ baseUrl: s.base, onUnauthorized: (e) => refused.push(e.status) });
    expect((await problemOf(anonymous.me())).status).toBe(401);
    expect(refused).toHaveLength(2);
  });

  it("archive: JSON and multipart snapshots, find by unique id and day, read, download, delete; a project archived and restored", async () => {
    const archive = s.root.archive;
    const plain = await archive.write("order/42", { status: ["open"], amount: [12.5] });
    expect(plain).toMatchObject({ id: expect.stringMatching(/^order\/42-\d+$/), uniqueId: "order/42", size: expect.any(Number) });
    const content = "scanned bytes ".repeat(50);
    const withFiles = await archive.write("order/42", { status: ["closed"] }, [
      { name: "scan.pdf", content: new Blob([content]) },
      { name: "notes/ä note.txt", content: new Blob(["note"]) },
    ]);
    const byId = await archive.list({ uniqueId: "order/42" });
    expect(byId.items.map((i) => i.id)).toEqual([plain.id, withFiles.id]);
    const first = await archive.list({ uniqueId: "order/42", limit: 1 });
    expect((await archive.list({ uniqueId: "order/42", limit: 1, cursor: first.nextCursor })).items.map((i) => i.id)).toEqual([withFiles.id]);
    expect((await archive.list({ date: withFiles.modified.slice(0, 10) })).items.map((i) => i.id)).toContain(withFiles.id);

    const read = await archive.get(withFiles.id);
    expect(read.document).toEqual({ status: ["closed"] });
    expect(read.files.map((f) => f.name).sort()).toEqual(["notes/ä note.txt", "scan.pdf"]);
    const file = await archive.file(withFiles.id, "scan.pdf");
    expect(file.headers.get("etag")).toBe(`"${read.files.find((f) => f.name === "scan.pdf")!.sha256}"`);
    expect(await file.text()).toBe(content);
    expect(await (await archive.file(withFiles.id, "notes/ä note.txt")).text()).toBe("note");
    expect((await problemOf(archive.file(withFiles.id, "missing.txt"))).status).toBe(404);
    expect((await problemOf(archive.list({ uniqueId: "order/42", date: "2026-01-01" }))).field).toBe("query.date");
    expect((await problemOf(mary.archive.get(plain.id))).status).toBe(403);
    await archive.delete(plain.id);
    expect((await problemOf(archive.get(plain.id))).status).toBe(404);

    await mary.projects.create({ id: "done", displayName: "Done" });
    await mary.project("done").close();
    await s.root.globalPermissions.grant("global.writeArchive", "mary");
    const archived = await mary.project("done").archive({ drop: true });
    expect(archived).toMatchObject({ projectId: "done", dropped: true, snapshot: { uniqueId: "project:done" } });
    expect((await problemOf(mary.project("done").get())).status).toBe(404);
    // Root holds the archive intents but no view of mary's project: answered as for a missing snapshot.
    expect((await problemOf(s.root.archive.restore(archived.snapshot.id))).status).toBe(404);
    const restored = await mary.archive.restore(archived.snapshot.id);
    expect(restored).toMatchObject({ projectId: "done", snapshotId: archived.snapshot.id, verify: { ok: true, checked: archived.chainHead.seq } });
    expect((await mary.project("done").get()).data.status).toBe("closed");
  });

  it("events: an async iterator over the feed, filtered to what the caller may view, closed by break", async () => {
    await mary.projects.create({ id: "open", displayName: "visible" });
    await mary.project("open").grant("project.viewDetails", "jane");
    // Events are history: the feed delivers a resource's events to holders of its viewHistory intent.
    await mary.project("open").grant("project.viewHistory", "jane");
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
    expect(seen[0]!.id).toMatch(/^\d+-\d+$/); // its position in the store-wide feed
    expect(JSON.stringify(seen)).not.toContain("not for jane");

    const anonymous = s.client();
    expect((await problemOf(anonymous.events().next())).status).toBe(401);
    const ctrl = new AbortController();
    const aborted = s.root.events({ signal: ctrl.signal });
    const pending = aborted.next();
    ctrl.abort();
    expect((await pending).done).toBe(true);
  });
}, httpBackends);
