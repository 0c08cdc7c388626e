import { SYSTEM } from "../../src/access/actor.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Archive } from "../../src/archive/index.js";
import { ConflictError, NotFoundError, ValidationError } from "../../src/errors.js";
import type { KvStore } from "../../src/kv/contract.js";
import { forEachBackend, type BackendHandle } from "../conformance/backends.js";
import { dump } from "./helpers.js";

const DAY1 = Date.UTC(2018, 5, 29, 10, 0, 0); // 2018-06-29
const DAY2 = Date.UTC(2018, 5, 30, 0, 0, 0, 5); // 2018-06-30

async function rejects(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error("expected a rejection");
}

forEachBackend((backend) => {
  describe("archive snapshots", () => {
    let h: BackendHandle;
    let kv: KvStore;
    let clock = DAY1;
    beforeEach(async () => {
      h = await backend.create();
      kv = h.kv;
      clock = DAY1;
    });
    afterEach(async () => h.destroy());
    const archive = (opts = {}) => new Archive(kv, { now: () => clock, ...opts });

    it("writes and reads a snapshot by its id <uniqueId>-<epochMillis>", async () => {
      const a = archive();
      const doc = { $uniqueid: ["w-1"], txtname: ["Anna"], amounts: [1.5, 2], nested: [{ a: [1, null, "x"] }] };
      const s = await a.write(SYSTEM, "w-1", doc);
      expect(s.id).toBe(`w-1-${DAY1}`);
      expect(s.uniqueId).toBe("w-1");
      expect(s.modified).toBe(new Date(DAY1).toISOString());
      const back = await a.read(SYSTEM, s.id);
      expect(back.document).toEqual(doc);
      expect(back.files).toEqual([]);
      expect(back.size).toBe(Buffer.byteLength(JSON.stringify(doc)));
      // Unique ids may hold dashes, colons, slashes and emoji: the id splits at its last dash.
      const odd = await a.write(SYSTEM, "project:a-b/c-😀", { x: [1] });
      expect(odd.id).toBe(`project:a-b/c-😀-${DAY1}`);
      expect((await a.read(SYSTEM, odd.id)).uniqueId).toBe("project:a-b/c-😀");
    });

    it("gives writes in the same millisecond distinct, increasing ids (also concurrently)", async () => {
      const a = archive();
      const first = await a.write(SYSTEM, "u", { n: [0] });
      const second = await a.write(SYSTEM, "u", { n: [1] });
      expect([first.id, second.id]).toEqual([`u-${DAY1}`, `u-${DAY1 + 1}`]);
      const many = await Promise.all(Array.from({ length: 8 }, (_, i) => a.write(SYSTEM, "u", { n: [i + 2] })));
      const ids = new Set(many.map((s) => s.id));
      expect(ids.size).toBe(8);
      const listed = (await a.findSnapshotsByUniqueId(SYSTEM, "u")).items.map((s) => s.id);
      expect(listed).toEqual(Array.from({ length: 10 }, (_, i) => `u-${DAY1 + i}`));
      // A clock that goes backwards still yields increasing ids.
      clock = DAY1 - 1000;
      expect((await a.write(SYSTEM, "u", { n: [99] })).id).toBe(`u-${DAY1 + 10}`);
    });

    it("never overwrites: an explicit snapshot time already taken is a ConflictError", async () => {
      const a = archive();
      const s = await a.write(SYSTEM, "u", { v: ["first"] }, [], { modified: DAY2 });
      expect(s.id).toBe(`u-${DAY2}`);
      const e = await rejects(a.write(SYSTEM, "u", { v: ["second"] }, [], { modified: new Date(DAY2) }));
      expect(e).toBeInstanceOf(ConflictError);
      expect((e as ConflictError).status).toBe(409);
      expect((await a.read(SYSTEM, s.id)).document).toEqual({ v: ["first"] });
    });

    it("rejects bad unique ids, documents and files, naming the field, and stores nothing", async () => {
      const a = archive();
      const before = await dump(kv);
      const cases: [() => Promise<unknown>, string][] = [
        [() => a.write(SYSTEM, "", { a: [] }), "uniqueId"],
        [() => a.write(SYSTEM, "x".repeat(257), { a: [] }), "uniqueId"],
        [() => a.write(SYSTEM, "bad\nid", { a: [] }), "uniqueId"],
        [() => a.write(SYSTEM, 42 as unknown as string, { a: [] }), "uniqueId"],
        [() => a.write(SYSTEM, "u", [] as unknown), "document"],
        [() => a.write(SYSTEM, "u", null), "document"],
        [() => a.write(SYSTEM, "u", "text"), "document"],
        [() => a.write(SYSTEM, "u", { name: "not a list" }), "document.name"],
        [() => a.write(SYSTEM, "u", { n: [1, Number.NaN] }), "document.n[1]"],
        [() => a.write(SYSTEM, "u", { n: [{ d: new Date() }] }), "document.n[0].d"],
        [() => a.write(SYSTEM, "u", { n: [] }, [{ name: "", content: Buffer.from("x") }]), "files[0].name"],
        [() => a.write(SYSTEM, "u", { n: [] }, [{ name: "a\u0000", content: Buffer.from("x") }]), "files[0].name"],
        [
          () =>
            a.write(SYSTEM, "u", { n: [] }, [
              { name: "a", content: Buffer.from("x") },
              { name: "a", content: Buffer.from("y") },
            ]),
          "files[1].name",
        ],
        [() => a.write(SYSTEM, "u", { n: [] }, [{ name: "a", content: 5 as unknown as Buffer }]), "files[0].content"],
        [() => a.write(SYSTEM, "u", { n: [] }, [{ name: "a", content: Buffer.from("xyz"), size: 4 }]), "files[0].size"],
        [() => a.write(SYSTEM, "u", { n: [] }, [], { modified: -1 }), "modified"],
        [() => a.read(SYSTEM, "no-dash"), "snapshotId"],
        [() => a.read(SYSTEM, "u-0123"), "snapshotId"],
        [() => a.findSnapshotsByDate(SYSTEM, "2018-02-30"), "date"],
        [() => a.findSnapshotsByDate(SYSTEM, "yesterday"), "date"],
        [() => a.findSnapshotsByUniqueId(SYSTEM, "u", { limit: 0 }), "limit"],
        [() => a.findSnapshotsByUniqueId(SYSTEM, "u", { cursor: "not a cursor!" }), "cursor"],
      ];
      for (const [call, field] of cases) {
        const e = await rejects(call());
        expect(e, field).toBeInstanceOf(ValidationError);
        expect((e as ValidationError).field, field).toBe(field);
      }
      expect(await dump(kv)).toEqual(before);
    });

    it("finds snapshots by unique id in time order and by day, paginated", async () => {
      const a = archive();
      for (let i = 0; i < 5; i++) await a.write(SYSTEM, "a", { i: [i] }, [], { modified: DAY1 + i * 1000 });
      await a.write(SYSTEM, "b", { i: [0] }, [], { modified: DAY1 + 500 });
      await a.write(SYSTEM, "b", { i: [1] }, [], { modified: DAY2 });
      const ids: string[] = [];
      let cursor: string | null = null;
      do {
        const page: Awaited<ReturnType<Archive["findSnapshotsByUniqueId"]>> = await a.findSnapshotsByUniqueId(SYSTEM, "a", { limit: 2, cursor });
        expect(page.items.length).toBeLessThanOrEqual(2);
        ids.push(...page.items.map((s) => s.id));
        cursor = page.nextCursor;
      } while (cursor);
      expect(ids).toEqual([0, 1, 2, 3, 4].map((i) => `a-${DAY1 + i * 1000}`));

      const day1 = await a.findSnapshotsByDate(SYSTEM, "2018-06-29", { limit: 3 });
      expect(day1.items.map((s) => s.id)).toEqual([`a-${DAY1}`, `b-${DAY1 + 500}`, `a-${DAY1 + 1000}`]);
      const rest = await a.findSnapshotsByDate(SYSTEM, "2018-06-29", { cursor: day1.nextCursor });
      expect(rest.items.map((s) => s.id)).toEqual([2, 3, 4].map((i) => `a-${DAY1 + i * 1000}`));
      expect(rest.nextCursor).toBeNull();
      expect((await a.findSnapshotsByDate(SYSTEM, "2018-06-30")).items.map((s) => s.id)).toEqual([`b-${DAY2}`]);
      expect((await a.findSnapshotsByDate(SYSTEM, "2018-07-01")).items).toEqual([]);
      expect((await a.findSnapshotsByUniqueId(SYSTEM, "nobody")).items).toEqual([]);
      // One partition per day, one per unique id: no global hot partition.
      expect((await kv.listPartitions("archive-date")).partitions).toEqual([
        ["archive-date", "2018-06-29"],
        ["archive-date", "2018-06-30"],
      ]);
      expect((await kv.listPartitions("archive")).partitions).toEqual([
        ["archive", "a"],
        ["archive", "b"],
      ]);
    });

    it("latest returns the newest snapshot; reads of missing snapshots are NotFound", async () => {
      const a = archive();
      await a.write(SYSTEM, "u", { v: [1] }, [], { modified: DAY2 });
      await a.write(SYSTEM, "u", { v: [0] }, [], { modified: DAY1 });
      expect((await a.latest(SYSTEM, "u")).document).toEqual({ v: [1] });
      expect(await rejects(a.latest(SYSTEM, "other"))).toBeInstanceOf(NotFoundError);
      expect(await rejects(a.read(SYSTEM, `u-${DAY1 + 1}`))).toBeInstanceOf(NotFoundError);
      expect(await rejects(a.delete(SYSTEM, `u-${DAY1 + 1}`))).toBeInstanceOf(NotFoundError);
      expect(await rejects(a.openFile(SYSTEM, `u-${DAY1}`, "nope"))).toBeInstanceOf(NotFoundError);
    });

    it("deletes a snapshot with its index entries", async () => {
      const a = archive();
      const s = await a.write(SYSTEM, "u", { v: [1] });
      const t = await a.write(SYSTEM, "u", { v: [2] });
      await a.delete(SYSTEM, s.id);
      expect(await rejects(a.read(SYSTEM, s.id))).toBeInstanceOf(NotFoundError);
      expect((await a.findSnapshotsByUniqueId(SYSTEM, "u")).items.map((x) => x.id)).toEqual([t.id]);
      expect((await a.findSnapshotsByDate(SYSTEM, "2018-06-29")).items.map((x) => x.id)).toEqual([t.id]);
      expect(await rejects(a.delete(SYSTEM, s.id))).toBeInstanceOf(NotFoundError);
      await a.delete(SYSTEM, t.id);
      expect(await dump(kv)).toEqual([]);
    });

    it("keeps a large document (several MiB) in pieces and reads it back", async () => {
      const a = archive();
      const doc = { blob: Array.from({ length: 3 }, (_, i) => String(i).repeat(1_200_000)) };
      const s = await a.write(SYSTEM, "big", doc);
      expect((await a.read(SYSTEM, s.id)).document).toEqual(doc);
    });

    it("survives a reopen of the store", async () => {
      const s = await archive().write(SYSTEM, "u", { v: [1] });
      await kv.close();
      kv = await h.reopen();
      expect((await archive().read(SYSTEM, s.id)).document).toEqual({ v: [1] });
    });
  });
});
