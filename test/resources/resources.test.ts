import { afterEach, beforeEach, expect, it } from "vitest";
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from "../../src/errors.js";
import type { KvStore } from "../../src/kv/contract.js";
import { ResourceStore } from "../../src/resources/store.js";
import { forEachBackend, type BackendHandle } from "../conformance/backends.js";
import { userActor } from "../../src/access/actor.js";
import { PageCache } from "../../src/resources/read/page-cache.js";
import { alice, bob, carol, clock, storeWithRoot, SYSTEM, testSchema } from "./fixture.js";

const F = { type: "folder", ids: ["f1"] } as const;
const L = (id: string) => ({ type: "list", ids: ["f1", id] }) as const;
const I = (list: string, id: string) => ({ type: "item", ids: ["f1", list, id] }) as const;

it("the page cache evicts the oldest entries past its count or byte budget", () => {
  const cache = new PageCache(3, 100);
  for (const k of ["a", "b", "c"]) cache.set(k, Buffer.alloc(10));
  cache.get("a");
  cache.set("d", Buffer.alloc(10));
  expect([cache.get("a"), cache.get("b")].map(Boolean)).toEqual([true, false]);
  cache.set("e", Buffer.alloc(20));
  cache.set("f", Buffer.alloc(20));
  cache.set("g", Buffer.alloc(20));
  expect(cache.size).toBeLessThanOrEqual(3);
  cache.set("huge", Buffer.alloc(60));
  expect(cache.get("huge")).toBeUndefined();
});

forEachBackend((backend) => {
  let h: BackendHandle;
  let kv: KvStore;
  let store: ResourceStore<typeof testSchema.decl>;
  let c: ReturnType<typeof clock>;

  beforeEach(async () => {
    h = await backend.create();
    kv = h.kv;
    c = clock();
    ({ store } = await storeWithRoot(kv, { now: c.now }));
  });
  afterEach(async () => h.destroy());

  it("getJson's allowedIntents follow each grant and revoke, read after read, per actor and group (kept per access entry's bytes)", async () => {
    await store.writes.create(alice, "list", F, { title: "L" }, { id: "l" });
    await store.writes.grant(alice, L("l"), "list.viewDetails", "team");
    const intents = async (actor: typeof alice) =>
      (JSON.parse((await store.reads.getJson(actor, L("l"), { allowedIntents: true })).json.toString("utf8")) as { allowedIntents: string[] }).allowedIntents;
    const before = await intents(carol);
    expect(before).toContain("list.viewDetails");
    expect(before).not.toContain("list.update");
    expect(await intents(carol)).toEqual(before);
    await store.writes.grant(alice, L("l"), "list.update", "team");
    expect(await intents(carol)).toEqual(
      [...before, "list.update"].sort((a, b) => testSchema.type("list").intents.all.indexOf(a) - testSchema.type("list").intents.all.indexOf(b)),
    );
    // The same bytes, another actor: its own intents (bob is in no group: none but those granted to him).
    await store.writes.grant(alice, L("l"), "list.viewDetails", "bob");
    expect(await intents(bob)).toEqual(["list.viewDetails"]);
    expect(await intents(SYSTEM)).toEqual([...testSchema.type("list").intents.all]);
    await store.writes.revoke(alice, L("l"), "list.update", "team");
    expect(await intents(carol)).toEqual(before);
    await store.writes.revoke(alice, L("l"), "list.viewDetails", "bob");
    await expect(intents(bob)).rejects.toBeInstanceOf(NotFoundError);
  });

  it("creates, gets and refuses a duplicate id", async () => {
    const list = await store.writes.create(alice, "list", F, { title: "L" }, { id: "l1" });
    expect(list).toMatchObject({ id: "l1", type: "list", data: { title: "L" }, meta: { createdBy: "alice", version: 1 } });
    expect(await store.reads.get(alice, L("l1"))).toEqual(list);
    await expect(store.writes.create(alice, "list", F, { title: "again" }, { id: "l1" })).rejects.toBeInstanceOf(ConflictError);
    expect((await store.reads.get(alice, L("l1"))).data.title).toBe("L");
  });

  it("generates ids and names the offending field of invalid data", async () => {
    const list = await store.writes.create(alice, "list", F, { title: "L" });
    expect(list.id).toMatch(/^[0-9a-f]{32}$/);
    const bad = store.writes.create(alice, "item", L(list.id), { title: "x", status: "pending" } as never);
    await expect(bad).rejects.toMatchObject({ field: "data.status" });
    await expect(store.writes.create(alice, "item", L(list.id), { title: "x", status: "open", colour: "red" } as never)).rejects.toMatchObject({ field: "data.colour" });
    // Types flow from the declaration: a misspelt field is a compile error (checked by `npm run lint`)…
    // @ts-expect-error "titel" is not a field of item
    const typo = store.writes.create(alice, "item", L(list.id), { titel: "x", status: "open" });
    // …and a validation error at run time for untyped callers.
    await expect(typo).rejects.toMatchObject({ field: "data.title" });
    await expect(store.writes.create(alice, "item", L(list.id), { title: "", status: "open" })).rejects.toMatchObject({ field: "data.title" });
    await expect(store.writes.create(alice, "item", L(list.id), { title: "x", status: "closed", note: "forbidden" })).rejects.toMatchObject({ field: "data.note" });
    for (const id of ["", "a/b", "x\u0000", " pad", "q?", "%41", "x".repeat(129)]) {
      await expect(store.writes.create(alice, "item", L(list.id), { title: "x", status: "open" }, { id })).rejects.toBeInstanceOf(ValidationError);
    }
    expect((await store.reads.listChildren(alice, L(list.id), "item")).items).toHaveLength(0);
  });

  it("accepts ids with awkward characters without collisions", async () => {
    await store.writes.create(alice, "list", F, { title: "L" }, { id: "l" });
    const ids = ["a", "ab", "a:b", "a_workflows", "é", "🙂", "a\u00ff", "a b", "A"];
    for (const id of ids) await store.writes.create(alice, "item", L("l"), { title: id, status: "open" }, { id });
    const listed = (await store.reads.listChildren(alice, L("l"), "item")).items.map((i) => i.id);
    expect(new Set(listed)).toEqual(new Set(ids));
    for (const id of ids) expect((await store.reads.get(alice, I("l", id))).data.title).toBe(id);
  });

  it("updates partially, bumps the version and refuses a stale ifVersion", async () => {
    await store.writes.create(alice, "list", F, { title: "L" }, { id: "l" });
    await store.writes.create(alice, "item", L("l"), { title: "t", status: "open", note: "n" }, { id: "i" });
    c.tick(1000);
    const u = await store.writes.update(alice, I("l", "i"), { title: "t2" }, { ifVersion: 1 });
    expect(u.data).toEqual({ title: "t2", status: "open", note: "n" });
    expect(u.meta.version).toBe(2);
    expect(u.meta.updatedAt).not.toBe(u.meta.createdAt);
    await expect(store.writes.update(alice, I("l", "i"), { title: "t3" }, { ifVersion: 1 })).rejects.toBeInstanceOf(ConflictError);
    const removed = await store.writes.update(alice, I("l", "i"), { note: null });
    expect(removed.data).toEqual({ title: "t2", status: "open" });
    await expect(store.writes.update(alice, I("l", "i"), { title: 5 })).rejects.toMatchObject({ field: "data.title" });
    expect((await store.reads.get(alice, I("l", "i"))).meta.version).toBe(3);
    await expect(store.writes.update(alice, I("l", "nope"), { title: "x" })).rejects.toBeInstanceOf(NotFoundError);
  });

  it("checks intents in the store, honours groups and lets the system actor through", async () => {
    await store.writes.create(alice, "list", F, { title: "L" }, { id: "l" });
    // bob holds nothing on the list nor views its folder: refused as if it did not exist.
    await expect(store.reads.get(bob, L("l"))).rejects.toBeInstanceOf(NotFoundError);
    await expect(store.writes.update(bob, L("l"), { title: "x" })).rejects.toBeInstanceOf(NotFoundError);
    await expect(store.writes.create(bob, "item", L("l"), { title: "x", status: "open" })).rejects.toBeInstanceOf(NotFoundError);
    await expect(store.writes.grant(bob, L("l"), "list.viewDetails", "bob")).rejects.toBeInstanceOf(NotFoundError);
    await store.writes.grant(alice, L("l"), "list.viewDetails", "team");
    expect((await store.reads.get(carol, L("l"))).id).toBe("l");
    await expect(store.reads.get(bob, L("l"))).rejects.toBeInstanceOf(NotFoundError);
    // Knowing of it (an intent on it), bob is told it is forbidden.
    await store.writes.grant(alice, L("l"), "list.update", "bob");
    await expect(store.reads.get(bob, L("l"))).rejects.toBeInstanceOf(ForbiddenError);
    await expect(store.writes.grant(bob, L("l"), "list.viewDetails", "bob")).rejects.toBeInstanceOf(ForbiddenError);
    await store.writes.revoke(alice, L("l"), "list.update", "bob");
    expect((await store.reads.listPermissions(alice, L("l")))["list.viewDetails"]).toEqual(["alice", "team"]);
    await store.writes.revoke(alice, L("l"), "list.viewDetails", "team");
    await expect(store.reads.get(carol, L("l"))).rejects.toBeInstanceOf(NotFoundError);
    await expect(store.writes.grant(alice, L("l"), "list.fly", "bob")).rejects.toMatchObject({ field: "intent" });
    expect((await store.reads.get(SYSTEM, L("l"))).id).toBe("l");
  });

  it("is no existence oracle: 404 as for a missing resource unless the caller holds an intent on it or views its parent", async () => {
    await store.writes.create(alice, "list", F, { title: "L" }, { id: "l" });
    await store.writes.create(alice, "item", L("l"), { title: "t", status: "open" }, { id: "i" });
    const message = (p: Promise<unknown>) =>
      p.then(
        () => "served",
        (e: Error) => `${e.constructor.name}: ${e.message}`,
      );
    for (const [ref, missing] of [
      [L("l"), L("nope")],
      [I("l", "i"), I("l", "nope")],
    ] as const) {
      const absent = await message(store.reads.get(bob, missing));
      expect(absent).toMatch(/^NotFoundError: /);
      expect(await message(store.reads.get(bob, ref))).toBe(absent.replace("nope", ref.ids.at(-1)!));
      expect(await message(store.writes.update(bob, ref, { title: "x" }))).toBe(absent.replace("nope", ref.ids.at(-1)!));
      expect(await message(store.audit.history(bob, ref))).toBe(absent.replace("nope", ref.ids.at(-1)!));
      expect(await message(store.lifecycle.delete(bob, ref))).toBe(absent.replace("nope", ref.ids.at(-1)!));
    }
    // The list intent alone: bob sees the list (redacted) in its folder's list, so he knows of it.
    await store.writes.grant(alice, L("l"), "list.list", "bob");
    await expect(store.reads.get(bob, L("l"))).rejects.toBeInstanceOf(ForbiddenError);
    await expect(store.reads.get(bob, I("l", "i"))).rejects.toBeInstanceOf(NotFoundError);
    // Viewing the list, bob sees its items redacted in its list: he knows of them too.
    await store.writes.grant(alice, L("l"), "list.viewDetails", "bob");
    await expect(store.reads.get(bob, I("l", "i"))).rejects.toBeInstanceOf(ForbiddenError);
    await expect(store.writes.update(bob, I("l", "i"), { title: "x" })).rejects.toBeInstanceOf(ForbiddenError);
    await expect(store.reads.get(bob, I("l", "nope"))).rejects.toBeInstanceOf(NotFoundError);
  });

  it("lists children one page at a time and redacts those the caller may not view, keeping positions", async () => {
    await store.writes.create(alice, "list", F, { title: "L" }, { id: "l" });
    await store.writes.grant(alice, L("l"), "list.viewDetails", "bob");
    for (let i = 0; i < 25; i++) {
      c.tick();
      await store.writes.create(alice, "item", L("l"), { title: `t${i}`, status: "open" }, { id: `i${String(i).padStart(2, "0")}` });
    }
    await store.writes.grant(alice, I("l", "i03"), "item.viewDetails", "bob");
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<typeof store.reads.listChildren>> = await store.reads.listChildren(bob, L("l"), "item", { cursor, limit: 10 });
      for (const item of page.items) seen.push(item.redacted ? `(${item.id})` : item.id);
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toHaveLength(25);
    expect(seen[3]).toBe("i03");
    expect(seen[4]).toBe("(i04)");
    const redacted = (await store.reads.listChildren(bob, L("l"), "item", { limit: 1 })).items[0]!;
    expect(redacted).toEqual({ id: "i00", type: "item", redacted: true, data: { status: "open" }, meta: { createdAt: redacted.meta.createdAt } });
    await expect(store.reads.listChildren(bob, L("l"), "item", { cursor: "!!" })).rejects.toBeInstanceOf(ValidationError);
    await expect(store.reads.listChildren(bob, L("l"), "item", { limit: 0 })).rejects.toMatchObject({ field: "limit" });
  });

  it("keeps a per-resource history, oldest or newest first, paginated, and a verifiable chain", async () => {
    await store.writes.create(alice, "list", F, { title: "L" }, { id: "l" });
    await store.writes.create(alice, "item", L("l"), { title: "v1", status: "open" }, { id: "i" });
    for (let v = 2; v <= 6; v++) {
      c.tick(10);
      await store.writes.update(alice, I("l", "i"), { title: `v${v}` });
    }
    const oldest = await store.audit.history(alice, I("l", "i"), { limit: 4 });
    expect(oldest.items.map((e) => e.type)).toEqual(["item.created", "item.updated", "item.updated", "item.updated"]);
    const rest = await store.audit.history(alice, I("l", "i"), { cursor: oldest.nextCursor, limit: 4 });
    expect(rest.items).toHaveLength(2);
    expect(rest.nextCursor).toBeNull();
    const newest = await store.audit.history(alice, I("l", "i"), { reverse: true, limit: 1 });
    expect(newest.items[0]!.payload.data).toEqual({ title: "v6" });
    await expect(store.audit.history(bob, I("l", "i"))).rejects.toBeInstanceOf(NotFoundError);
    const verified = await store.audit.verify(store.partitionOf(F));
    // The head it verified comes with it: the last event's seq and hash (where an incremental verify starts next).
    expect(verified).toEqual({ ok: true, checked: expect.any(Number), head: { seq: verified.checked, hash: expect.stringMatching(/^[0-9a-f]{64}$/) } });
    expect(verified.checked).toBeGreaterThanOrEqual(8);
  });

  it("verify names the first tampered event (changed through the raw backend)", async () => {
    await store.writes.create(alice, "list", F, { title: "L" }, { id: "l" });
    await store.writes.update(alice, L("l"), { title: "L2" });
    await store.writes.update(alice, L("l"), { title: "L3" });
    const partition = store.partitionOf(F);
    const page = await kv.scan(partition, { prefix: ["l"] });
    const victim = page.entries[page.entries.length - 2]!;
    const event = JSON.parse(victim.value.toString("utf8"));
    event.payload.data = { title: "forged" };
    await kv.commit(partition, [{ type: "put", key: victim.key, value: Buffer.from(JSON.stringify(event)) }]);
    const result = await store.audit.verify(partition);
    expect(result.ok).toBe(false);
    expect(result.firstBad).toEqual({ seq: event.seq, reason: expect.stringMatching(/hash/), family: "l" });
  });

  it("reads a resource as of a past time", async () => {
    await store.writes.create(alice, "list", F, { title: "L" }, { id: "l" });
    const t0 = new Date(c.now()).toISOString();
    c.tick(1000);
    await store.writes.update(alice, L("l"), { title: "L2" });
    const t1 = new Date(c.now()).toISOString();
    c.tick(1000);
    await store.writes.update(alice, L("l"), { title: "L3" });
    expect((await store.audit.asOf(alice, L("l"), t0))!.data).toEqual({ title: "L" });
    expect((await store.audit.asOf(alice, L("l"), t1))!.data).toEqual({ title: "L2" });
    expect((await store.audit.asOf(alice, L("l"), new Date(c.now())))!.meta.version).toBe(3);
    expect(await store.audit.asOf(alice, L("l"), "2000-01-01T00:00:00Z")).toBeNull();
  });

  it("orders children: the ordering first, the rest by creation time; refuses bad orderings", async () => {
    await store.writes.create(alice, "list", F, { title: "L" }, { id: "l" });
    for (const id of ["c", "a", "d", "b"]) {
      c.tick();
      await store.writes.create(alice, "item", L("l"), { title: id, status: "open" }, { id });
    }
    const ids = async () => (await store.reads.listOrdered(alice, L("l"))).items.map((i) => i.id);
    expect(await ids()).toEqual(["c", "a", "d", "b"]);
    const v = (await store.reads.get(alice, L("l"))).meta.version;
    await store.writes.setOrdering(alice, L("l"), ["b", "a"], { ifVersion: v });
    expect(await ids()).toEqual(["b", "a", "c", "d"]);
    await expect(store.writes.setOrdering(alice, L("l"), ["a"], { ifVersion: v })).rejects.toBeInstanceOf(ConflictError);
    await expect(store.writes.setOrdering(alice, L("l"), ["a", "a"])).rejects.toMatchObject({ field: "ordering[1]" });
    await expect(store.writes.setOrdering(alice, L("l"), ["a", "zz"])).rejects.toMatchObject({ field: "ordering[1]" });
    await expect(store.writes.setOrdering(bob, L("l"), ["a"])).rejects.toBeInstanceOf(NotFoundError);
    expect(await ids()).toEqual(["b", "a", "c", "d"]);
    await store.lifecycle.delete(alice, I("l", "b"));
    expect(await ids()).toEqual(["a", "c", "d"]);
    expect((await store.reads.getOrdering(alice, L("l"))).ordering).toEqual(["b", "a"]);
    const page1 = await store.reads.listOrdered(alice, L("l"), { limit: 2 });
    const page2 = await store.reads.listOrdered(alice, L("l"), { limit: 2, cursor: page1.nextCursor });
    expect([...page1.items, ...page2.items].map((i) => i.id)).toEqual(["a", "c", "d"]);
    expect(page2.nextCursor).toBeNull();
  });

  it("serves ordered pages from a cache that every write to the partition invalidates, per caller", async () => {
    await store.writes.create(alice, "list", F, { title: "L" }, { id: "l" });
    await store.writes.grant(alice, L("l"), "list.viewDetails", "bob");
    for (const id of ["a", "b", "c"]) await store.writes.create(alice, "item", L("l"), { title: id, status: "open" }, { id });
    const page = async (who: typeof alice, opts = {}) => JSON.parse((await store.reads.listOrderedPage(who, L("l"), opts)).json.toString("utf8"));
    const first = await page(alice);
    expect(first).toEqual({ items: (await store.reads.listOrdered(alice, L("l"))).items, nextCursor: null });
    expect(await page(alice)).toEqual(first);
    expect((await page(bob)).items.every((i: { redacted?: boolean }) => i.redacted)).toBe(true);
    await store.writes.update(alice, I("l", "b"), { title: "changed" });
    expect((await page(alice)).items[1].data.title).toBe("changed");
    await store.writes.grant(alice, I("l", "c"), "item.viewDetails", "bob");
    expect((await page(bob)).items.map((i: { redacted?: boolean }) => i.redacted ?? false)).toEqual([true, true, false]);
    await store.writes.setOrdering(alice, L("l"), ["c"]);
    expect((await page(alice)).items.map((i: { id: string }) => i.id)).toEqual(["c", "a", "b"]);
    expect((await page(alice, { limit: 2 })).nextCursor).not.toBeNull();
    // Another process writing (a second store over the same backend) moves the head too.
    await new ResourceStore(kv, testSchema).writes.update(alice, I("l", "a"), { title: "elsewhere" });
    expect((await page(alice)).items[1].data.title).toBe("elsewhere");
    await expect(store.reads.listOrderedPage(userActor("nobody"), L("l"))).rejects.toBeInstanceOf(NotFoundError);
  });

  it("never serves a cached page of a purged partition to the partition re-created under the same name", async () => {
    await store.writes.create(alice, "list", F, { title: "L" }, { id: "l" });
    await store.writes.create(alice, "item", L("l"), { title: "old", status: "open" }, { id: "old-item" });
    const ids = async () => JSON.parse((await store.reads.listOrderedPage(SYSTEM, L("l"))).json.toString()).items.map((i: { id: string }) => i.id);
    expect(await ids()).toEqual(["old-item"]);
    await store.lifecycle.delete(SYSTEM, F);
    await store.lifecycle.purge(SYSTEM, F);
    await store.writes.create(SYSTEM, "folder", null, { title: "again" }, { id: "f1" });
    await store.writes.grant(SYSTEM, F, "folder.createList", "alice");
    await store.writes.create(alice, "list", F, { title: "L" }, { id: "l" });
    await store.writes.create(alice, "item", L("l"), { title: "new", status: "open" }, { id: "new-item" });
    expect(await ids()).toEqual(["new-item"]);
    expect((await store.audit.verify(store.partitionOf(F))).ok).toBe(true);
  });

  it("lists a child in full only to holders of its view intent; the list intent alone sees it redacted", async () => {
    await store.writes.create(alice, "list", F, { title: "L" }, { id: "l" });
    await store.writes.grant(alice, L("l"), "list.viewDetails", "bob");
    await store.writes.create(alice, "item", L("l"), { title: "secret", status: "open", amount: "100" }, { id: "i" });
    await store.writes.grant(alice, I("l", "i"), "item.list", "bob");
    const [item] = (await store.reads.listOrdered(bob, L("l"))).items;
    expect(item).toMatchObject({ id: "i", redacted: true });
    expect(JSON.stringify(item)).not.toContain("secret");
    expect(JSON.stringify((await store.reads.listChildren(bob, L("l"), "item")).items)).not.toContain("secret");
  });

  it("deletes a resource with its nested subtree in one commit and keeps the log", async () => {
    await store.writes.create(alice, "list", F, { title: "L" }, { id: "l" });
    await store.writes.create(alice, "list", F, { title: "L" }, { id: "l2" });
    for (let i = 0; i < 30; i++) await store.writes.create(alice, "item", L("l"), { title: `${i}`, status: "open" }, { id: `i${i}` });
    await store.writes.create(alice, "item", L("l2"), { title: "other", status: "open" }, { id: "i1" });
    await store.writes.setOrdering(alice, L("l"), ["i3", "i1"]);
    await expect(store.lifecycle.delete(bob, L("l"))).rejects.toBeInstanceOf(NotFoundError);
    await store.lifecycle.delete(alice, L("l"));
    await expect(store.reads.get(alice, L("l"))).rejects.toBeInstanceOf(NotFoundError);
    await expect(store.reads.get(alice, I("l", "i1"))).rejects.toBeInstanceOf(NotFoundError);
    expect((await store.reads.get(alice, I("l2", "i1"))).data.title).toBe("other");
    const partition = store.partitionOf(F);
    const state = await kv.scan(partition, { prefix: ["s"], limit: 1000 });
    expect(state.entries.map((e) => e.key)).toEqual([
      ["s", 0],
      ["s", 1, "list", "l2"],
      ["s", 2, "list", "l2", "item", "i1"],
    ]);
    expect((await kv.scan(partition, { prefix: ["o"] })).entries).toHaveLength(0);
    const last = (await store.audit.history(SYSTEM, L("l"), { reverse: true, limit: 1 })).items[0]!;
    expect(last.type).toBe("list.deleted");
    expect((await store.audit.verify(partition)).ok).toBe(true);
    // The id stays taken: its history is kept under its address and must not pass to a new resource.
    await expect(store.writes.create(alice, "list", F, { title: "new" }, { id: "l" })).rejects.toMatchObject({ field: "id" });
    await expect(store.audit.history(bob, L("l"))).rejects.toBeInstanceOf(NotFoundError);
  });

  it("refuses to delete a guarded resource while it has children", async () => {
    await store.writes.create(alice, "guarded", F, {}, { id: "g" });
    await store.writes.create(alice, "leaf", { type: "guarded", ids: ["f1", "g"] }, {}, { id: "x" });
    await expect(store.lifecycle.delete(alice, { type: "guarded", ids: ["f1", "g"] })).rejects.toMatchObject({ field: "children" });
    await store.lifecycle.delete(alice, { type: "leaf", ids: ["f1", "g", "x"] });
    await store.lifecycle.delete(alice, { type: "guarded", ids: ["f1", "g"] });
    await expect(store.reads.get(alice, { type: "guarded", ids: ["f1", "g"] })).rejects.toBeInstanceOf(NotFoundError);
  });

  it("deleting a root leaves a tombstone with its log; purge drops it; the id cannot be reused silently", async () => {
    await store.writes.create(alice, "list", F, { title: "L" }, { id: "l" });
    await expect(store.lifecycle.delete(alice, F)).rejects.toBeInstanceOf(ForbiddenError);
    await store.lifecycle.delete(SYSTEM, F);
    await expect(store.reads.get(SYSTEM, F)).rejects.toBeInstanceOf(NotFoundError);
    expect((await store.reads.listChildren(SYSTEM, null, "folder")).items).toHaveLength(0);
    expect((await store.audit.verify(store.partitionOf(F))).ok).toBe(true);
    await expect(store.writes.create(SYSTEM, "folder", null, { title: "again" }, { id: "f1" })).rejects.toBeInstanceOf(ConflictError);
    await store.lifecycle.purge(SYSTEM, F);
    await store.writes.create(SYSTEM, "folder", null, { title: "again" }, { id: "f1" });
  });

  it("groups concurrent writes to one partition without losing or duplicating any", async () => {
    await store.writes.create(alice, "list", F, { title: "L" }, { id: "l" });
    const n = 120;
    const results = await Promise.allSettled(
      Array.from({ length: n }, (_, i) =>
        i % 10 === 9
          ? store.writes.create(alice, "item", L("l"), { title: "dup", status: "open" }, { id: "same" })
          : store.writes.create(alice, "item", L("l"), { title: `${i}`, status: "open" }, { id: `n${i}` }),
      ),
    );
    const ok = results.filter((r) => r.status === "fulfilled").length;
    expect(ok).toBe(n - 12 + 1 - 0); // 108 unique + exactly one "same"
    const dups = results.filter((r) => r.status === "rejected");
    expect(dups.every((r) => (r as PromiseRejectedResult).reason instanceof ConflictError)).toBe(true);
    expect((await store.reads.listChildren(alice, L("l"), "item", { limit: 1000 })).items).toHaveLength(n - 12 + 1);
    expect((await store.audit.verify(store.partitionOf(F))).ok).toBe(true);
  });

  it("reopens with everything intact and the chain continuing", async () => {
    await store.writes.create(alice, "list", F, { title: "L" }, { id: "l" });
    await kv.close();
    const kv2 = await h.reopen();
    const store2 = new ResourceStore(kv2, testSchema);
    expect((await store2.reads.get(alice, L("l"))).data.title).toBe("L");
    await store2.writes.update(alice, L("l"), { title: "after" });
    expect((await store2.audit.verify(store2.partitionOf(F))).ok).toBe(true);
    await kv2.close();
  });
});

it("a key over the backend's size limit fails its own command, not the group it was committed with", async () => {
  const { Type } = await import("@sinclair/typebox");
  const { defineSchema } = await import("../../src/resources/model/schema.js");
  const { MemoryKv } = await import("../../src/kv/memory.js");
  const none = Type.Object({}, { additionalProperties: false });
  const deep = defineSchema({
    l0: { parent: null, idStyle: "flat", fields: none },
    l1: { parent: "l0", idStyle: "nested", fields: none },
    l2: { parent: "l1", idStyle: "nested", fields: none },
    l3: { parent: "l2", idStyle: "nested", fields: none },
    l4: { parent: "l3", idStyle: "nested", fields: none },
    l5: { parent: "l4", idStyle: "nested", fields: none },
    l6: { parent: "l5", idStyle: "nested", fields: none },
    l7: { parent: "l6", idStyle: "nested", fields: none },
    l8: { parent: "l7", idStyle: "nested", fields: none },
    l9: { parent: "l8", idStyle: "nested", fields: none },
    l10: { parent: "l9", idStyle: "nested", fields: none },
    l11: { parent: "l10", idStyle: "nested", fields: none },
    l12: { parent: "l11", idStyle: "nested", fields: none },
    l13: { parent: "l12", idStyle: "nested", fields: none },
    l14: { parent: "l13", idStyle: "nested", fields: none },
  });
  const store = new ResourceStore(new MemoryKv(), deep);
  const id = (n: number) => `${n}`.padEnd(128, "x");
  let ref = { type: "l0", ids: [id(0)] };
  await store.writes.create(SYSTEM, "l0", null, {}, { id: id(0) });
  let depth = 1;
  for (; depth <= 14; depth++) {
    const type = `l${depth}` as "l1";
    const next = { type, ids: [...ref.ids, id(depth)] };
    try {
      await store.writes.create(SYSTEM, type, ref, {}, { id: id(depth) });
    } catch (e) {
      expect(e).toMatchObject({ field: "key" });
      break;
    }
    ref = next;
  }
  expect(depth).toBeLessThan(15);
  // In one group: the overlong create fails alone; a short sibling created with it lands.
  const type = `l${depth}` as "l1";
  const [tooLong, fine] = await Promise.allSettled([store.writes.create(SYSTEM, type, ref, {}, { id: id(depth) }), store.writes.update(SYSTEM, ref, {})]);
  expect(tooLong.status).toBe("rejected");
  expect(fine.status).toBe("fulfilled");
  expect((await store.audit.verify(store.partitionOf(ref))).ok).toBe(true);
});
