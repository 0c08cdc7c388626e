import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { KvStore } from "../../src/kv/contract.js";
import { ResourceStore } from "../../src/resources/store.js";
import { backends, type BackendHandle } from "../conformance/backends.js";
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

type Op =
  | { kind: "create"; id: string; tick: number }
  | { kind: "grant"; pick: number; who: "bob" | "carol"; intent: "item.viewDetails" | "item.close" | "item.list" }
  | { kind: "reorder"; pick: number[] }
  | { kind: "delete"; pick: number };

// The whole list (a first page of 1,000 or more, reads.ts `#listWhole`) read through the backend's
// read buffers (`#listWholeViews`: memory, LMDB) answers the same bytes as the same read through copies
// (`scan`, what Redis and PostgreSQL serve it with), for every caller: viewers, callers that see some
// items redacted, callers whose access entries differ item by item, the system actor.
for (const backend of backends.filter((b) => b.name === "memory" || b.name === "lmdb")) {
  describe(`the whole ordered list read in place (${backend.name})`, () => {
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
              { weight: 4, arbitrary: fc.record({ kind: fc.constant("create" as const), id: fc.constantFrom("a", "B", "z9", "é", "\u{1F600}", "aa", "Z"), tick: fc.nat(2) }) },
              fc.record({
                kind: fc.constant("grant" as const),
                pick: fc.nat(30),
                who: fc.constantFrom("bob" as const, "carol" as const),
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
            const store = new ResourceStore(h.kv, testSchema, { clock: () => t, pageCache: false });
            const copying = new ResourceStore(withoutSyncReads(h.kv), testSchema, { clock: () => t, pageCache: false });
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
                await store.writes.create(alice, "item", list, { title: id, status: "open" }, { id });
                live.push(id);
              } else if (live.length === 0) continue;
              else if (op.kind === "grant") await store.writes.grant(SYSTEM, { type: "item", ids: [...list.ids, live[op.pick % live.length]!] }, op.intent, op.who);
              else if (op.kind === "reorder") await store.writes.setOrdering(SYSTEM, list, [...new Set(op.pick.filter((i) => i < live.length).map((i) => live[i]!))]);
              else await store.lifecycle.delete(SYSTEM, { type: "item", ids: [...list.ids, live.splice(op.pick % live.length, 1)[0]!] });
            }
            for (const actor of [alice, bob, carol, SYSTEM]) {
              for (const allowedIntents of [true, false]) {
                const options = { limit: 1000, allowedIntents };
                const inPlace = await store.reads.listOrderedPage(actor, list, options);
                const copied = await copying.reads.listOrderedPage(actor, list, options);
                expect(inPlace.json.toString("utf8")).toBe(copied.json.toString("utf8"));
                expect(inPlace.version).toBe(copied.version);
                const page = JSON.parse(inPlace.json.toString("utf8")) as { items: { id: string; allowedIntents?: string[] }[]; nextCursor: string | null };
                expect(page.items.map((i) => i.id).sort()).toEqual([...live].sort());
                expect(page.items.every((i) => (i.allowedIntents !== undefined) === allowedIntents)).toBe(true);
                expect(await store.reads.listOrderedJson(actor, list, options)).toEqual(await copying.reads.listOrderedJson(actor, list, options));
              }
            }
          },
        ),
        { numRuns: backend.name === "memory" ? 60 : 25 },
      );
    });
  });
}
