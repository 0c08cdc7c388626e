/**
 * verify recomputes every stored key of a partition from its log (replay.ts) and anchors its head in the
 * ledger: an edited state or access record, a removed or stray key, and a cut tail each fail it, naming
 * the key. Edits go through the kv API of the same store, as an attacker with the data files would.
 */
import { Type } from "@sinclair/typebox";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SYSTEM } from "../../src/access/actor.js";
import { layout } from "../../src/resources/model/layout.js";
import { locate } from "../../src/resources/model/ref.js";
import { RecordView } from "../../src/resources/model/record.js";
import { defineSchema } from "../../src/resources/model/schema.js";
import { ResourceStore } from "../../src/resources/store.js";
import { Workflow } from "../../src/workflow/commands.js";
import { generateDemo } from "../../src/workflow/demo.js";
import { workflowSchema } from "../../src/workflow/schema.js";
import { backends, type BackendHandle } from "../conformance/backends.js";
import { alice, storeWithRoot } from "./fixture.js";

const P = ["project", "demo-1"];
const wi = { type: "workflowitem", ids: ["demo-1", "sp-1", "wi-0002"] };

/** Two sibling types under one parent, each with ordered children of its own type: a parent with several child types. */
const title = Type.Object({ title: Type.String() }, { additionalProperties: false });
const shelves = defineSchema({
  room: { parent: null, idStyle: "flat", fields: title },
  list: { parent: "room", idStyle: "nested", orderedChildren: "item", fields: title },
  shelf: { parent: "room", idStyle: "nested", orderedChildren: "book", fields: title },
  item: { parent: "list", idStyle: "nested", fields: title },
  book: { parent: "shelf", idStyle: "nested", fields: title },
});

for (const backend of backends.filter((b) => b.name === "lmdb" || b.name === "redis")) {
  describe(backend.name, () => {
    let h: BackendHandle;
    let wf: Workflow;
    beforeEach(async () => {
      h = await backend.create();
      wf = new Workflow(new ResourceStore(h.kv, workflowSchema));
      await generateDemo(wf, { projects: 1, subprojectsPerProject: 2, workflowitemsPerSubproject: 6 });
    });
    afterEach(async () => h.destroy());

    it("a clean demo store verifies, state and access included", async () => {
      const r = await wf.store.audit.verify(P);
      expect(r).toMatchObject({ ok: true });
      expect(r.checked).toBeGreaterThan(10);
    });

    it("an edited amount in a state record fails, naming the state record", async () => {
      const { partition, key } = wf.store.stateAddress(wi);
      const raw = (await h.kv.get(partition, key))!.value;
      const env = new RecordView(raw).envelope();
      const edited = Buffer.concat([
        raw.subarray(0, raw.length - new RecordView(raw).publicBytes().length),
        Buffer.from(JSON.stringify({ ...env, data: { ...env.data, amount: "999999" } })),
      ]);
      await h.kv.commit(partition, [{ type: "put", key, value: edited }]);
      const r = await wf.store.audit.verify(P);
      expect(r.ok).toBe(false);
      expect(r.firstBad).toMatchObject({ family: "s", key: JSON.stringify(key) });
      expect(r.firstBad!.reason).toContain("state record");
    });

    it("a user added to an access record's workflowitem.update fails, naming the access record", async () => {
      const key = layout.access(locate(workflowSchema, wi));
      const priv = JSON.parse((await h.kv.get(P, key))!.value.toString("utf8"));
      priv.permissions["workflowitem.update"] = [...(priv.permissions["workflowitem.update"] ?? []), "mallory"];
      await h.kv.commit(P, [{ type: "put", key, value: Buffer.from(JSON.stringify(priv)) }]);
      const r = await wf.store.audit.verify(P);
      expect(r).toMatchObject({ ok: false, firstBad: { family: "a", key: JSON.stringify(key) } });
    });

    it("a deleted history index entry or a stray key fails", async () => {
      const l = locate(workflowSchema, wi);
      const first = (await h.kv.scan(P, { prefix: layout.history(l), limit: 1 })).entries[0]!;
      await h.kv.commit(P, [{ type: "delete", key: first.key }]);
      let r = await wf.store.audit.verify(P);
      expect(r).toMatchObject({ ok: false, firstBad: { family: "h", key: JSON.stringify(first.key) } });
      expect(r.firstBad!.reason).toContain("missing");
      await h.kv.commit(P, [{ type: "put", key: first.key, value: Buffer.alloc(0) }]);
      expect((await wf.store.audit.verify(P)).ok).toBe(true);
      await h.kv.commit(P, [{ type: "put", key: ["z", "stray"], value: Buffer.from("1") }]);
      r = await wf.store.audit.verify(P);
      expect(r).toMatchObject({ ok: false, firstBad: { family: "z" } });
      expect(r.firstBad!.reason).toContain("unknown family");
    });

    it("a missing or altered entry of the assignments index fails, naming it and its assignee", async () => {
      const who = (await wf.store.reads.get(SYSTEM, { ...wi, type: "workflowitem" as const })).data.assignee as string;
      expect(who).toEqual(expect.any(String));
      const key = layout.assignedEntry(wi.type, wi.ids);
      const at = layout.assigned(who);
      expect((await h.kv.get(at, key))?.value.length).toBe(0);
      await h.kv.commit(at, [{ type: "delete", key }]);
      let r = await wf.store.audit.verify(P);
      expect(r).toMatchObject({ ok: false, firstBad: { family: layout.assignedKind, key: JSON.stringify([...at, ...key]) } });
      expect(r.firstBad!.reason).toContain(`missing from the assignments of ${who}`);
      await h.kv.commit(at, [{ type: "put", key, value: Buffer.from("x") }]);
      r = await wf.store.audit.verify(P);
      expect(r).toMatchObject({ ok: false, firstBad: { family: layout.assignedKind, key: JSON.stringify([...at, ...key]) } });
      expect(r.firstBad!.reason).toContain("differs");
      await h.kv.commit(at, [{ type: "put", key, value: Buffer.alloc(0) }]);
      expect((await wf.store.audit.verify(P)).ok).toBe(true);
      // An entry beside the expected ones (the hint a deleted resource leaves) is not the replay's to check.
      await h.kv.commit(at, [{ type: "put", key: layout.assignedEntry(wi.type, [...wi.ids.slice(0, 2), "wi-gone"]), value: Buffer.alloc(0) }]);
      expect((await wf.store.audit.verify(P)).ok).toBe(true);
      await h.kv.commit(at, [{ type: "delete", key }]);
      expect(await wf.store.audit.verify(P)).toMatchObject({ ok: false, firstBad: { family: layout.assignedKind, key: JSON.stringify([...at, ...key]) } });
    });

    it("a moved order index entry fails, naming the order index", async () => {
      const sp = locate(workflowSchema, { type: "subproject", ids: ["demo-1", "sp-1"] });
      const [a, b] = (await h.kv.scan(P, { prefix: layout.orderIndex(sp, "workflowitem"), limit: 2 })).entries;
      // Swap two children's places: every record is intact, only the order a page would show changed.
      await h.kv.commit(P, [
        { type: "put", key: a!.key, value: b!.value },
        { type: "put", key: b!.key, value: a!.value },
      ]);
      const r = await wf.store.audit.verify(P);
      expect(r).toMatchObject({ ok: false, firstBad: { family: "x", key: JSON.stringify(a!.key) } });
      expect(r.firstBad!.reason).toContain("order index entry");
    });

    it("cutting the last event and rewriting the head fails (the ledger anchors it)", async () => {
      const head = JSON.parse((await h.kv.get(P, layout.head))!.value.toString("utf8"));
      const before = JSON.parse((await h.kv.get(P, layout.log(head.seq - 1)))!.value.toString("utf8"));
      await h.kv.commit(P, [
        { type: "delete", key: layout.log(head.seq) },
        { type: "put", key: layout.head, value: Buffer.from(JSON.stringify({ seq: head.seq - 1, hash: before.hash })) },
      ]);
      const r = await wf.store.audit.verify(P);
      expect(r).toMatchObject({ ok: false, firstBad: { family: "ledger", seq: head.seq } });
    });

    // The replay tells resources apart by type and ids: sibling types may share an id under one parent.
    describe("sibling resources of different types with the same id", () => {
      const F = ["folder", "f1"];
      const list = { type: "list", ids: ["f1", "x"] };
      const guarded = { type: "guarded", ids: ["f1", "x"] };

      it("a clean store verifies, through changes, grants and deletes of either", async () => {
        const { store } = await storeWithRoot(h.kv);
        await store.writes.create(alice, "list", { type: "folder", ids: ["f1"] }, { title: "L" }, { id: "x" });
        await store.writes.create(alice, "guarded", { type: "folder", ids: ["f1"] }, {}, { id: "x" });
        // Their children share an id too (an ordered item of the list, a leaf of the guarded).
        await store.writes.create(alice, "item", list, { title: "i", status: "open" }, { id: "y" });
        await store.writes.create(alice, "item", list, { title: "j", status: "open" }, { id: "z" });
        await store.writes.create(alice, "leaf", guarded, {}, { id: "y" });
        await store.writes.update(alice, list, { title: "L2" });
        await store.writes.grant(alice, guarded, "guarded.viewDetails", "bob");
        await store.writes.setOrdering(alice, list, ["z"]);
        expect(await store.audit.verify(F)).toMatchObject({ ok: true });
        await store.lifecycle.delete(alice, { type: "leaf", ids: ["f1", "x", "y"] });
        await store.lifecycle.delete(alice, guarded);
        expect(await store.audit.verify(F)).toMatchObject({ ok: true });
        expect((await store.reads.get(alice, { type: "item", ids: ["f1", "x", "y"] })).data.title).toBe("i");
        await store.lifecycle.delete(alice, list);
        expect(await store.audit.verify(F)).toMatchObject({ ok: true });
      });

      it("each of two ordered sibling types keeps its own order index", async () => {
        const store = new ResourceStore(h.kv, shelves);
        const room = { type: "room", ids: ["r"] };
        const R = ["room", "r"];
        await store.writes.create(SYSTEM, "room", null, { title: "r" }, { id: "r" });
        const kinds = [
          ["list", "item"],
          ["shelf", "book"],
        ] as const;
        for (const [type, child] of kinds) {
          await store.writes.create(SYSTEM, type, room, { title: type }, { id: "x" });
          for (const id of ["a", "b", "c"]) await store.writes.create(SYSTEM, child, { type, ids: ["r", "x"] }, { title: id }, { id });
        }
        await store.writes.setOrdering(SYSTEM, { type: "list", ids: ["r", "x"] }, ["c", "a"]);
        await store.writes.setOrdering(SYSTEM, { type: "shelf", ids: ["r", "x"] }, ["b"]);
        expect(await store.audit.verify(R)).toMatchObject({ ok: true });
        // Not vacuous: the shelf's order index is checked (swap two of its entries).
        const shelf = locate(shelves, { type: "shelf", ids: ["r", "x"] });
        const [a, b] = (await h.kv.scan(R, { prefix: layout.orderIndex(shelf, "book"), limit: 2 })).entries;
        await h.kv.commit(R, [
          { type: "put", key: a!.key, value: b!.value },
          { type: "put", key: b!.key, value: a!.value },
        ]);
        expect(await store.audit.verify(R)).toMatchObject({ ok: false, firstBad: { family: "x", key: JSON.stringify(a!.key) } });
      });
    });
  });
}
