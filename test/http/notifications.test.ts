/**
 * Notifications over a real server (memory store): who receives them, the inbox routes, retention and
 * the change-feed push. A commit whose server was SIGKILLed before its feed entry: test/reliability/notify-kill.test.ts.
 *
 * | case                                        | TruBudget rule (api/src/service/domain/workflow)                  |
 * |---------------------------------------------|-------------------------------------------------------------------|
 * | assign notifies the new assignee            | workflowitem_assign: a notification per recipient of the assignee |
 * | a group assignee: each member               | recipients are the group's members (identity expansion)           |
 * | never the actor                             | "The issuer doesn't receive a notification"                       |
 * | update, close of an assigned item notify    | workflowitem_update / _close create notifications to the assignee |
 * | mark read                                   | notification_mark_read sets isRead                                |
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProblemError, type FlowstoreClient, type Notification } from "../../src/client/index.js";
import { MemoryKv } from "../../src/kv/memory.js";
import { eventually } from "../support/eventually.js";
import { raw, startServer, type Running } from "./harness.js";

const KEEP = 5;
let s: Running;
let alice: FlowstoreClient;
let bob: FlowstoreClient;
let carol: FlowstoreClient;
const sub = () => s.root.project("p").subproject("s");
const problemOf = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => (e instanceof ProblemError ? e.problem : Promise.reject(e)),
  );

/** Waits until the follower has projected what was committed (polls the count; no timing assertion). */
async function inboxOf(c: FlowstoreClient, total: number): Promise<Notification[]> {
  await eventually(async () => (await c.notifications.count()).total >= total, { what: `${total} notifications projected` }).catch(() => {}); // the caller's assertions name what arrived
  return (await c.notifications.list({ limit: 100 })).items;
}

beforeAll(async () => {
  s = await startServer(new MemoryKv(), { notifications: { follow: true, keepNewest: KEEP, pollMs: 20 } });
  alice = await s.userClient("alice");
  bob = await s.userClient("bob");
  carol = await s.userClient("carol");
  await s.root.groups.create({ id: "team", displayName: "Team", members: ["bob", "carol"] });
  await s.root.projects.create({ id: "p", displayName: "School" });
  await s.root.project("p").subprojects.create({ id: "s", displayName: "Roof", currency: "EUR" });
});
afterAll(async () => {
  await s.close();
});

describe("notifications", () => {
  it("go to the assignee (a group's members), never the actor, newest first; count and mark read", async () => {
    await sub().workflowitems.create({ id: "w1", displayName: "Tiles", amountType: "N/A", assignee: "alice" });
    await sub().workflowitem("w1").grant("workflowitem.update", "alice");
    await sub().workflowitem("w1").grant("workflowitem.viewDetails", "alice");
    await sub().workflowitem("w1").update({ description: "red ones" });
    // alice acts on her own item: she is not told of it
    await alice.project("p").subproject("s").workflowitem("w1").update({ description: "blue ones" });
    await sub().workflowitem("w1").assign("team");

    const a = await inboxOf(alice, 2);
    expect(a.map((n) => n.eventType)).toEqual(["workflowitem.updated", "workflowitem.created"]);
    expect(a[0]).toMatchObject({
      path: [
        { type: "project", id: "p" },
        { type: "subproject", id: "s" },
        { type: "workflowitem", id: "w1" },
      ],
      displayName: "Tiles",
      actor: "root",
      read: false,
    });
    for (const member of [bob, carol]) expect((await inboxOf(member, 1)).map((n) => n.eventType)).toEqual(["workflowitem.assigned"]);
    expect(await s.root.notifications.count()).toEqual({ unread: 0, total: 0 });

    expect(await alice.notifications.count()).toEqual({ unread: 2, total: 2 });
    expect(await alice.notifications.markRead([a[1]!.id])).toEqual({ unread: 1, total: 2 });
    expect((await alice.notifications.list()).items.map((n) => n.read)).toEqual([false, true]);
    expect(await alice.notifications.markAllRead()).toEqual({ unread: 0, total: 2 });
    // pages: newest first, a cursor continues
    const first = await alice.notifications.list({ limit: 1 });
    expect(first.items.map((n) => n.id)).toEqual([a[0]!.id]);
    expect((await alice.notifications.list({ limit: 1, cursor: first.nextCursor })).items.map((n) => n.id)).toEqual([a[1]!.id]);
  });

  it("refuses bad input naming the field", async () => {
    expect(await problemOf(alice.notifications.markRead(["no-such-id"]))).toMatchObject({ status: 404 });
    const auth = { authorization: `Bearer ${alice.token}`, "content-type": "application/json" };
    const post = (body: unknown) => raw(s.base, "POST", "/api/v1/notifications/read", { headers: auth, body: JSON.stringify(body) });
    expect((await post({})).body).toMatchObject({ status: 400, field: "ids" });
    expect((await post({ ids: ["x"], all: true })).body).toMatchObject({ status: 400 });
    expect((await post({ all: false })).body).toMatchObject({ status: 400, field: expect.stringContaining("all") });
    expect((await post({ ids: [] })).body).toMatchObject({ status: 400, field: expect.stringContaining("ids") });
    const list = await raw(s.base, "GET", "/api/v1/notifications?limit=0", { headers: auth });
    expect(list.body).toMatchObject({ status: 400, field: expect.stringContaining("limit") });
  });

  it("keeps the newest N per user", async () => {
    await sub().workflowitems.create({ id: "w2", displayName: "Gutter", amountType: "N/A", assignee: "carol" });
    for (let i = 0; i < KEEP + 2; i++)
      await sub()
        .workflowitem("w2")
        .update({ description: `step ${i}` });
    // carol had 1 (assigned via team); 1 created + 7 updates arrive; only the newest KEEP stay
    // every update projected: the newest KEEP are all updates (the follower runs in the background)
    await eventually(
      async () => {
        const page = await carol.notifications.list({ limit: 100 });
        return page.items.length === KEEP && page.items.every((n) => n.eventType === "workflowitem.updated");
      },
      { what: `carol's newest ${KEEP} notifications to be the updates` },
    ).catch(() => {}); // the assertions below name what arrived
    const items = (await carol.notifications.list({ limit: 100 })).items;
    expect(items).toHaveLength(KEEP);
    expect(items.every((n) => n.eventType === "workflowitem.updated")).toBe(true);
    expect(await carol.notifications.count()).toEqual({ unread: KEEP, total: KEEP });
  });

  it("are pushed on the change feed to their addressee only", async () => {
    const abort = new AbortController();
    let opened!: () => void;
    const open = new Promise<void>((r) => (opened = r));
    const pushed: Notification[] = [];
    let got!: () => void;
    const arrived = new Promise<void>((r) => (got = r));
    const feed = (async () => {
      for await (const _ of alice.events({ signal: abort.signal, onOpen: opened, onNotification: (n) => (pushed.push(n), got()) }));
    })();
    await open;
    await sub().workflowitems.create({ id: "w3", displayName: "Chimney", amountType: "N/A", assignee: "alice" });
    await arrived;
    abort.abort();
    await feed;
    expect(pushed.map((n) => [n.eventType, n.path.at(-1)!.id])).toEqual([["workflowitem.created", "w3"]]);
  });
});
