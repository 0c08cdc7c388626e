import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConflictError } from "../../src/errors.js";
import { ResourceStore } from "../../src/resources/store.js";
import { effectiveOrder } from "../../src/resources/model/ordering.js";
import { layout } from "../../src/resources/model/layout.js";
import { backends, forEachBackend, type BackendHandle } from "../conformance/backends.js";
import { alice, SYSTEM, testSchema } from "./fixture.js";

const F = { type: "folder", ids: ["f"] } as const;
const L = { type: "list", ids: ["f", "l"] } as const;

it("effectiveOrder: ordering ids first in order, then by creation time, ties by id", () => {
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.record({ id: fc.string({ minLength: 1, maxLength: 4 }), createdAtMs: fc.integer({ min: 0, max: 20 }) }), { selector: (c) => c.id, maxLength: 30 }),
      fc.array(fc.string({ minLength: 1, maxLength: 4 }), { maxLength: 30 }),
      (children, ordering) => {
        const out = effectiveOrder(ordering, children);
        expect(out).toHaveLength(children.length);
        expect(new Set(out.map((c) => c.id)).size).toBe(children.length);
        const existing = new Set(children.map((c) => c.id));
        const listed = [...new Set(ordering.filter((id) => existing.has(id)))];
        expect(out.slice(0, listed.length).map((c) => c.id)).toEqual(listed);
        const rest = out.slice(listed.length);
        for (let i = 1; i < rest.length; i++) {
          const a = rest[i - 1]!;
          const b = rest[i]!;
          expect(a.createdAtMs < b.createdAtMs || (a.createdAtMs === b.createdAtMs && a.id < b.id)).toBe(true);
        }
      },
    ),
    { numRuns: 2000 },
  );
});

type Op = { kind: "create"; id: string } | { kind: "reorder"; pick: number[] };

forEachBackend((backend) => {
  let h: BackendHandle;
  beforeEach(async () => {
    h = await backend.create();
  });
  afterEach(async () => h.destroy());

  it("keeps seed 002's properties under interleaved concurrent creates and reorders", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.array(
            fc.oneof(
              fc.constant<Op>({ kind: "create", id: "" }),
              fc.array(fc.nat(50), { maxLength: 8 }).map((pick): Op => ({ kind: "reorder", pick })),
            ),
            { minLength: 1, maxLength: 8 },
          ),
          { minLength: 1, maxLength: 6 },
        ),
        async (waves) => {
          run++;
          let t = 0;
          const store = new ResourceStore(h.kv, testSchema, { clock: () => ++t });
          const folder = { type: "folder", ids: [`f${run}`] } as const;
          const list = { type: "list", ids: [`f${run}`, "l"] } as const;
          await store.writes.create(SYSTEM, "folder", null, { title: "f" }, { id: `f${run}` });
          await store.writes.grant(SYSTEM, folder, "folder.createList", "alice");
          await store.writes.create(alice, "list", folder, { title: "l" }, { id: "l" });
          const created: string[] = [];
          const orderings: string[][] = [];
          let next = 0;
          for (const wave of waves) {
            const known = [...created];
            // Every op of a wave is in flight at once: creates and reorders interleave.
            await Promise.all(
              wave.map(async (op) => {
                if (op.kind === "create") {
                  const id = `w${String(next++).padStart(3, "0")}`;
                  await store.writes.create(alice, "item", list, { title: id, status: "open" }, { id });
                  created.push(id);
                } else {
                  const ids = [...new Set(op.pick.filter((i) => i < known.length).map((i) => known[i]!))];
                  orderings.push(ids);
                  await store.writes.setOrdering(alice, list, ids);
                }
              }),
            );
          }
          const listed = (await store.reads.listOrdered(alice, list, { limit: 1000 })).items;
          const ids = listed.map((i) => i.id);
          // No child lost or duplicated.
          expect([...ids].sort()).toEqual([...created].sort());
          // The stored ordering is one of the submitted ones, whole (all or nothing, last writer wins).
          const { ordering } = await store.reads.getOrdering(alice, list);
          if (orderings.length === 0) expect(ordering).toEqual([]);
          else expect(orderings.some((o) => JSON.stringify(o) === JSON.stringify(ordering))).toBe(true);
          // Listed ids first, in the ordering's relative order; the rest by creation time after them.
          expect(ids.slice(0, ordering.length)).toEqual(ordering);
          const rest = listed.slice(ordering.length);
          for (let i = 1; i < rest.length; i++) {
            expect(Date.parse(rest[i - 1]!.meta.createdAt)).toBeLessThanOrEqual(Date.parse(rest[i]!.meta.createdAt));
          }
          // A child created while the winning reorder was in flight, and not named by it, is after every named one.
          for (const id of created) if (!ordering.includes(id)) expect(ids.indexOf(id)).toBeGreaterThanOrEqual(ordering.length);
          expect((await store.audit.verify(store.partitionOf(folder))).ok).toBe(true);
        },
      ),
      { numRuns: backend.name === "memory" ? 150 : 40 },
    );
  });

  it("with ifVersion, exactly one of concurrent reorders from the same version wins", async () => {
    const store = new ResourceStore(h.kv, testSchema);
    await store.writes.create(SYSTEM, "folder", null, { title: "f" }, { id: "f" });
    await store.writes.grant(SYSTEM, F, "folder.createList", "alice");
    await store.writes.create(alice, "list", F, { title: "l" }, { id: "l" });
    for (const id of ["a", "b", "c"]) await store.writes.create(alice, "item", L, { title: id, status: "open" }, { id });
    const v = (await store.reads.get(alice, L)).meta.version;
    const attempts = [["a", "b"], ["b", "a"], ["c"], ["c", "a", "b"], ["b"]];
    const results = await Promise.allSettled(attempts.map((o) => store.writes.setOrdering(alice, L, o, { ifVersion: v })));
    const won = results.flatMap((r, i) => (r.status === "fulfilled" ? [attempts[i]!] : []));
    expect(won).toHaveLength(1);
    for (const r of results) if (r.status === "rejected") expect(r.reason).toBeInstanceOf(ConflictError);
    expect((await store.reads.getOrdering(alice, L)).ordering).toEqual(won[0]);
  });
});

type IndexOp =
  | { kind: "create"; id: string; tick: number }
  | { kind: "reorder"; pick: number[] }
  | { kind: "delete"; pick: number }
  /** A reorder that also names an id no live child has (a deleted child's, an unknown one, one no child can have): refused whole. */
  | { kind: "stale"; pick: number[]; stale: number; at: number };

// The order index (ordering.ts) against the rule it keeps: every page, walked with its cursors at any
// limit, is the slice of effectiveOrder over the live children; verify recomputes the index from the log.
for (const backend of backends.filter((b) => b.name === "memory" || b.name === "lmdb")) {
  describe(`order index (${backend.name})`, () => {
    let h: BackendHandle;
    beforeEach(async () => {
      h = await backend.create();
    });
    afterEach(async () => h.destroy());

    it("pages in effective order after creates (ties in time included), reorders and deletes", async () => {
      let run = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.oneof(
              // ids of several scripts (their UTF-16 and UTF-8 orders differ) and clock ticks of 0 (ties)
              fc.record({ kind: fc.constant("create" as const), id: fc.constantFrom("a", "B", "z9", "é", "\u{1F600}", "\uFF21", "aa", "Z"), tick: fc.nat(2) }),
              fc.record({ kind: fc.constant("reorder" as const), pick: fc.array(fc.nat(30), { maxLength: 10 }) }),
              fc.record({ kind: fc.constant("delete" as const), pick: fc.nat(30) }),
              fc.record({ kind: fc.constant("stale" as const), pick: fc.array(fc.nat(30), { maxLength: 10 }), stale: fc.nat(2), at: fc.nat(10) }),
            ),
            { maxLength: 40 },
          ),
          fc.integer({ min: 1, max: 7 }),
          async (ops: IndexOp[], limit) => {
            run++;
            let t = 1_000;
            const store = new ResourceStore(h.kv, testSchema, { clock: () => t });
            const folder = { type: "folder", ids: [`g${run}`] } as const;
            const list = { type: "list", ids: [`g${run}`, "l"] } as const;
            await store.writes.create(SYSTEM, "folder", null, { title: "f" }, { id: `g${run}` });
            await store.writes.create(SYSTEM, "list", folder, { title: "l" }, { id: "l" });
            const live: { id: string; createdAtMs: number }[] = [];
            const deleted: string[] = [];
            let n = 0;
            for (const op of ops) {
              if (op.kind === "create") {
                t += op.tick;
                const id = `${op.id}${n++}`;
                await store.writes.create(SYSTEM, "item", list, { title: id, status: "open" }, { id });
                live.push({ id, createdAtMs: t });
              } else if (op.kind === "reorder") {
                await store.writes.setOrdering(SYSTEM, list, [...new Set(op.pick.filter((i) => i < live.length).map((i) => live[i]!.id))]);
              } else if (op.kind === "stale") {
                const ids = [...new Set(op.pick.filter((i) => i < live.length).map((i) => live[i]!.id))];
                const at = op.at % (ids.length + 1);
                ids.splice(at, 0, [deleted.at(-1) ?? "gone", "unknown", "bad\u0000id"][op.stale]!);
                const before = await store.reads.getOrdering(SYSTEM, list);
                await expect(store.writes.setOrdering(SYSTEM, list, ids)).rejects.toMatchObject({ code: "validation", field: `ordering[${at}]` });
                expect(await store.reads.getOrdering(SYSTEM, list)).toEqual(before);
              } else if (live.length > 0) {
                const [gone] = live.splice(op.pick % live.length, 1);
                await store.lifecycle.delete(SYSTEM, { type: "item", ids: [...list.ids, gone!.id] });
                deleted.push(gone!.id);
              }
            }
            const { ordering } = await store.reads.getOrdering(SYSTEM, list);
            const want = effectiveOrder(ordering, live).map((c) => c.id);
            const got: string[] = [];
            let cursor: string | null = null;
            do {
              const page: { items: { id: string }[]; nextCursor: string | null } = await store.reads.listOrdered(SYSTEM, list, { limit, cursor });
              expect(page.items.length).toBeLessThanOrEqual(limit);
              got.push(...page.items.map((i) => i.id));
              cursor = page.nextCursor;
            } while (cursor !== null);
            expect(got).toEqual(want);
            // a first page large enough for the whole collection reads it as one range, ordered in memory
            expect((await store.reads.listOrdered(SYSTEM, list, { limit: 1000 })).items.map((i: { id: string }) => i.id)).toEqual(want);
            expect((await store.audit.verify(store.partitionOf(folder))).ok).toBe(true);
          },
        ),
        { numRuns: backend.name === "memory" ? 150 : 30 },
      );
    });

    it("a first page of 1,000 over a larger collection is served by the index, the rest after its cursor", async () => {
      let t = 0;
      const store = new ResourceStore(h.kv, testSchema, { clock: () => ++t });
      await store.writes.create(SYSTEM, "folder", null, { title: "f" }, { id: "f" });
      await store.writes.create(SYSTEM, "list", F, { title: "l" }, { id: "l" });
      const ids = Array.from({ length: 1001 }, (_, i) => `i${String(i).padStart(4, "0")}`);
      await Promise.all(ids.map((id) => store.writes.create(SYSTEM, "item", L, { title: id, status: "open" }, { id })));
      await store.writes.setOrdering(SYSTEM, L, ["i0999", "i0003"]);
      const want = ["i0999", "i0003", ...ids.filter((id) => id !== "i0999" && id !== "i0003")];
      const first = await store.reads.listOrdered(SYSTEM, L, { limit: 1000 });
      expect(first.items.map((i: { id: string }) => i.id)).toEqual(want.slice(0, 1000));
      expect(first.nextCursor).not.toBeNull();
      const rest = await store.reads.listOrdered(SYSTEM, L, { limit: 1000, cursor: first.nextCursor });
      expect(rest.items.map((i: { id: string }) => i.id)).toEqual(want.slice(1000));
      expect(rest.nextCursor).toBeNull();
    });

    it("a partition written before the index existed gets it rebuilt from its log (at its first list read, or on demand); a cursor survives writes elsewhere", async () => {
      let t = 0;
      const store = new ResourceStore(h.kv, testSchema, { clock: () => ++t });
      await store.writes.create(SYSTEM, "folder", null, { title: "f" }, { id: "f" });
      await store.writes.create(SYSTEM, "list", F, { title: "l" }, { id: "l" });
      for (const id of ["c", "a", "d", "b", "e"]) await store.writes.create(SYSTEM, "item", L, { title: id, status: "open" }, { id });
      await store.writes.setOrdering(SYSTEM, L, ["d", "b"]);
      const ids = async () => (await store.reads.listOrdered(SYSTEM, L)).items.map((i) => i.id);
      const before = await ids();
      expect(before).toEqual(["d", "b", "c", "a", "e"]);
      // As such a store is on disk: no index, no marker.
      const P = store.partitionOf(F);
      await h.kv.commit(P, [{ type: "deletePrefix", prefix: layout.orderIndexes }]);
      expect((await store.audit.verify(P)).firstBad).toMatchObject({ family: "x" });
      // The first read of the list upgrades the partition: nothing comes back empty.
      expect(await ids()).toEqual(before);
      expect((await store.audit.verify(P)).ok).toBe(true);
      await h.kv.commit(P, [{ type: "deletePrefix", prefix: layout.orderIndexes }]);
      await store.rebuildOrderIndex(P);
      expect(await ids()).toEqual(before);
      expect((await store.audit.verify(P)).ok).toBe(true);
      // A cursor names the last entry served: a child added after it, or one removed before it, moves nothing.
      const first = await store.reads.listOrdered(SYSTEM, L, { limit: 2 });
      await store.lifecycle.delete(SYSTEM, { type: "item", ids: ["f", "l", "d"] });
      await store.writes.create(SYSTEM, "item", L, { title: "f", status: "open" }, { id: "f" });
      const rest = await store.reads.listOrdered(SYSTEM, L, { cursor: first.nextCursor });
      expect(rest.items.map((i) => i.id)).toEqual(["c", "a", "e", "f"]);
    });
  });
}
