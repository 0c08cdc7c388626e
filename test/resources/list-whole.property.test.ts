import { Type } from "@sinclair/typebox";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { KvStore } from "../../src/kv/contract.js";
import { layout } from "../../src/resources/model/layout.js";
import { childRef, locate } from "../../src/resources/model/ref.js";
import { defineSchema } from "../../src/resources/model/schema.js";
import { ERASED_TEXT, ResourceStore } from "../../src/resources/store.js";
import { backends, forEachBackend, type BackendHandle } from "../conformance/backends.js";
import { alice, bob, carol, SYSTEM, testSchema } from "./fixture.js";

/** `kv` without its synchronous reads (`getSync`, `scanViews`): what a networked backend offers. */
const withoutSyncReads = (kv: KvStore): KvStore =>
  new Proxy(kv, {
    get(target, prop) {
      if (prop === "getSync" || prop === "scanViews") return undefined;
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === "function" ? v.bind(target) : v;
    },
  });

/** `kv` with its calls counted by name (every call passed through as it is). */
const counted = (kv: KvStore): { kv: KvStore; calls: Record<string, number> } => {
  const calls: Record<string, number> = {};
  const proxy = new Proxy(kv, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target) as unknown;
      if (typeof v !== "function") return v;
      return (...args: unknown[]) => {
        calls[String(prop)] = (calls[String(prop)] ?? 0) + 1;
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { kv: proxy, calls };
};

/** The test schema (fixture.ts), its item with sealed personal data (its note, when it names a subject). */
const personalSchema = defineSchema({
  ...testSchema.decl,
  item: {
    ...testSchema.decl.item,
    fields: Type.Object({ ...testSchema.decl.item.fields.properties, subject: Type.Optional(Type.String({ minLength: 1 })) }, { additionalProperties: false }),
    ownedFields: { subject: { by: "create (it cannot change)", initial: true } },
    personal: { subject: "subject", fields: ["note"] },
  },
});

type Op =
  | { kind: "create"; id: string; tick: number; subject: "anna" | "bert" | null }
  | { kind: "grant"; pick: number; who: "bob" | "carol" | "team"; intent: "item.viewDetails" | "item.close" | "item.list" }
  | { kind: "reorder"; pick: number[] }
  | { kind: "delete"; pick: number };

// The whole list (a first page of 1,000 or more, reads.ts `#listWhole`) read through the backend's
// read buffers (`#listWholeViews`: memory, LMDB) answers the same bytes as the same read through copies
// (`scan`, what Redis and PostgreSQL serve it with), for every caller: viewers, callers that see some
// items redacted, callers whose access entries differ item by item (granted to a user or to a group), the
// system actor; items with sealed personal data (of two subjects, one erased) and without.
forEachBackend(
  (backend) => {
    describe("the whole ordered list read in place", () => {
      let h: BackendHandle;
      beforeEach(async () => {
        h = await backend.create();
      });
      afterEach(async () => h.destroy());

      it("answers the bytes the copying read answers, for every caller, with and without allowedIntents", async () => {
        let run = 0;
        await fc.assert(
          fc.asyncProperty(
            fc.array(
              fc.oneof(
                {
                  weight: 4,
                  arbitrary: fc.record({
                    kind: fc.constant("create" as const),
                    id: fc.constantFrom("a", "B", "z9", "é", "\u{1F600}", "aa", "Z"),
                    tick: fc.nat(2),
                    subject: fc.constantFrom("anna" as const, "bert" as const, null),
                  }),
                },
                fc.record({
                  kind: fc.constant("grant" as const),
                  pick: fc.nat(30),
                  who: fc.constantFrom("bob" as const, "carol" as const, "team" as const),
                  intent: fc.constantFrom("item.viewDetails" as const, "item.close" as const, "item.list" as const),
                }),
                fc.record({ kind: fc.constant("reorder" as const), pick: fc.array(fc.nat(30), { maxLength: 8 }) }),
                fc.record({ kind: fc.constant("delete" as const), pick: fc.nat(30) }),
              ),
              { maxLength: 30 },
            ),
            async (ops: Op[]) => {
              run++;
              let t = 1_000;
              const { kv, calls } = counted(h.kv);
              const store = new ResourceStore(kv, personalSchema, { clock: () => t, pageCache: false });
              const copying = new ResourceStore(withoutSyncReads(h.kv), personalSchema, { clock: () => t, pageCache: false });
              const folder = { type: "folder", ids: [`w${run}`] } as const;
              const list = { type: "list", ids: [`w${run}`, "l"] } as const;
              await store.writes.create(SYSTEM, "folder", null, { title: "f" }, { id: `w${run}` });
              await store.writes.create(SYSTEM, "list", folder, { title: "l" }, { id: "l" });
              await store.writes.grant(SYSTEM, list, "list.viewDetails", "alice");
              await store.writes.grant(SYSTEM, list, "list.createItem", "alice");
              await store.writes.grant(SYSTEM, list, "list.viewDetails", "bob");
              await store.writes.grant(SYSTEM, list, "list.viewDetails", "team");
              const live: string[] = [];
              let n = 0;
              for (const op of ops) {
                if (op.kind === "create") {
                  t += op.tick;
                  const id = `${op.id}${n++}`;
                  await store.writes.create(
                    alice,
                    "item",
                    list,
                    { title: id, status: "open", note: `note of ${id}`, ...(op.subject ? { subject: `${op.subject}${run}` } : {}) },
                    { id },
                  );
                  live.push(id);
                } else if (live.length === 0) continue;
                else if (op.kind === "grant") await store.writes.grant(SYSTEM, { type: "item", ids: [...list.ids, live[op.pick % live.length]!] }, op.intent, op.who);
                else if (op.kind === "reorder") await store.writes.setOrdering(SYSTEM, list, [...new Set(op.pick.filter((i) => i < live.length).map((i) => live[i]!))]);
                else await store.lifecycle.delete(SYSTEM, { type: "item", ids: [...list.ids, live.splice(op.pick % live.length, 1)[0]!] });
              }
              // one subject's personal data erased: its items' notes read as erased on both paths
              if (run % 2 === 0 && ops.some((op) => op.kind === "create" && op.subject === "bert"))
                await store.subjects.destroyKey(`bert${run}`, "system", (type) => (type === "item" ? ["note"] : []));
              for (const actor of [alice, bob, carol, SYSTEM]) {
                for (const allowedIntents of [true, false]) {
                  const options = { limit: 1000, allowedIntents };
                  const views = calls.scanViews ?? 0;
                  const inPlace = await store.reads.listOrderedPage(actor, list, options);
                  // the in-place read served it: the children's range (and the access entries' when asked) visited in place
                  expect((calls.scanViews ?? 0) - views).toBe(allowedIntents ? 2 : 1);
                  const copied = await copying.reads.listOrderedPage(actor, list, options);
                  expect(inPlace.json.toString("utf8")).toBe(copied.json.toString("utf8"));
                  expect(inPlace.version).toBe(copied.version);
                  const page = JSON.parse(inPlace.json.toString("utf8")) as { items: { id: string; allowedIntents?: string[] }[]; nextCursor: string | null };
                  expect(page.items.map((i) => i.id).sort()).toEqual([...live].sort());
                  expect(page.items.every((i) => (i.allowedIntents !== undefined) === allowedIntents)).toBe(true);
                  if (actor === SYSTEM) {
                    // the sealed notes opened (or erased), as a read of each item answers them
                    const notes = page.items.map((i) => (i as unknown as { data: { note?: string } }).data.note);
                    const want = await Promise.all(page.items.map(async (i) => (await store.reads.get(SYSTEM, { type: "item", ids: [...list.ids, i.id] })).data.note));
                    expect(notes).toEqual(want);
                    expect(notes.every((n) => n === ERASED_TEXT || n?.startsWith("note of "))).toBe(true);
                  }
                  expect(await store.reads.listOrderedJson(actor, list, options)).toEqual(await copying.reads.listOrderedJson(actor, list, options));
                }
              }
            },
          ),
          { numRuns: backend.name === "memory" ? 60 : 25 },
        );
      });

      it("builds no row of a collection longer than the page (the index serves it), and reads access entries that outnumber the page through copies", async () => {
        const { kv, calls } = counted(h.kv);
        const store = new ResourceStore(kv, personalSchema, { pageCache: false });
        const copying = new ResourceStore(withoutSyncReads(h.kv), personalSchema, { pageCache: false });
        const list = { type: "list", ids: ["f", "l"] } as const;
        await store.writes.create(SYSTEM, "folder", null, { title: "f" }, { id: "f" });
        await store.writes.create(SYSTEM, "list", { type: "folder", ids: ["f"] }, { title: "l" }, { id: "l" });
        for (const who of ["alice", "bob", "carol"]) await store.writes.grant(SYSTEM, list, "list.viewDetails", who);
        await store.writes.grant(SYSTEM, list, "list.createItem", "alice");
        const id = (i: number) => `i${String(i).padStart(4, "0")}`;
        for (let i = 0; i < 1000; i += 100)
          await Promise.all(
            Array.from({ length: 100 }, (_, k) =>
              store.writes.create(alice, "item", list, { title: id(i + k), status: "open", note: "n", ...(k % 3 ? {} : { subject: "anna" }) }, { id: id(i + k) }),
            ),
          );
        await store.writes.grant(SYSTEM, { type: "item", ids: ["f", "l", id(7)] }, "item.close", "team");
        const same = async (options: { limit: number; allowedIntents: boolean }) => {
          const before = { ...calls };
          const json = (await store.reads.listOrderedPage(carol, list, options)).json.toString("utf8");
          const delta = (name: string) => (calls[name] ?? 0) - (before[name] ?? 0);
          const served = { countSync: delta("countSync"), scanViews: delta("scanViews"), scan: delta("scan") };
          for (const actor of [alice, bob, SYSTEM])
            expect((await store.reads.listOrderedPage(actor, list, options)).json).toEqual((await copying.reads.listOrderedPage(actor, list, options)).json);
          expect(json).toBe((await copying.reads.listOrderedPage(carol, list, options)).json.toString("utf8"));
          return { page: JSON.parse(json) as { items: { id: string; allowedIntents?: string[] }[]; nextCursor: string | null }, served };
        };
        // one access entry more than the page (of no child: a state no write leaves, but the read must not
        // depend on it): with the intents asked, the in-place read gives way to the copying one
        const ghost = locate(personalSchema, childRef(personalSchema, list, "item", "zghost"));
        const real = locate(personalSchema, childRef(personalSchema, list, "item", id(7)));
        await h.kv.commit(ghost.partition, [{ type: "put", key: layout.access(ghost), value: (await h.kv.get(real.partition, layout.access(real)))!.value }]);
        let { page, served } = await same({ limit: 1000, allowedIntents: true });
        expect(served.scanViews).toBe(1); // the access entries' range, found longer than the page
        expect(served.scan).toBeGreaterThan(0);
        expect(page.items).toHaveLength(1000);
        expect(page.items.find((i) => i.id === id(7))!.allowedIntents).toContain("item.close");
        ({ page, served } = await same({ limit: 1000, allowedIntents: false }));
        expect(served.scanViews).toBe(1);
        // a thousand and one children: counted, and no row built in place (no visit of the children)
        await store.writes.create(alice, "item", list, { title: "last", status: "open" }, { id: id(1000) });
        for (const allowedIntents of [true, false]) {
          ({ page, served } = await same({ limit: 1000, allowedIntents }));
          expect(served).toMatchObject({ countSync: 1, scanViews: 0 });
          expect(page.items).toHaveLength(1000);
          expect(page.nextCursor).not.toBeNull();
        }
      });
    });
  },
  backends.filter((b) => b.name === "memory" || b.name === "lmdb"),
);
