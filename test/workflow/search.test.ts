/**
 * Server-side search and sort of projects and subprojects (issue #14) over the index of visible roots
 * (issue #18, resources/visibility.ts), in process on memory and LMDB.
 *
 * | case | TruBudget rule it checks (frontend/src/pages/Common/filterProjects.worker.js, v2.18) |
 * |---|---|
 * | search terms | split at spaces; `name:`, `tag:`, `status:` restrict a term; same prefix: any; different prefixes: all |
 * | free text | a term without prefix must match display name, status or a tag (every term); flowstore adds the id |
 * | case | every match is a case-insensitive substring match |
 * | visibility | a project is listed to holders of project.list or project.viewDetails (user or group) |
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SYSTEM, userActor, type Actor } from "../../src/access/actor.js";
import type { Page } from "../../src/resources/core/core.js";
import { ResourceStore } from "../../src/resources/store.js";
import { Workflow } from "../../src/workflow/commands.js";
import { parseSearch } from "../../src/workflow/search.js";
import { workflowSchema } from "../../src/workflow/schema.js";
import { backends, type BackendHandle } from "../conformance/backends.js";

type Listed = { id: string; redacted?: true; data: Record<string, unknown> };
const ids = (page: Page<Buffer>): string[] => page.items.map((b) => (JSON.parse(b.toString("utf8")) as Listed).id);

const alice = userActor("alice", ["team"]);
const bob = userActor("bob");

// id, displayName, tags, assignee, closed, who may see it (list: redacted, view: whole)
const PROJECTS: [string, string, string[], string, boolean, Record<string, "list" | "view">][] = [
  ["p01", "School in Malawi", ["education", "africa"], "carol", false, { alice: "view" }],
  ["p02", "Well drilling", ["water", "africa"], "alice", true, { team: "view" }],
  ["p03", "school books", ["education"], "bob", false, { alice: "view", bob: "view" }],
  ["p04", "Road repair", ["infrastructure"], "dave", false, { bob: "view" }],
  ["p05", "Secret school", ["education"], "erin", false, { alice: "list" }],
  ["p06", "Hospital", ["health", "Water"], "alice", false, { team: "view", alice: "list" }],
  ["p07", "Bridge", [], "bob", true, {}],
];

for (const backend of backends.filter((b) => b.name === "memory" || b.name === "lmdb")) {
  describe(backend.name, () => {
    let h: BackendHandle;
    let wf: Workflow;
    let t: number;
    beforeEach(async () => {
      h = await backend.create();
      t = Date.parse("2026-01-01T00:00:00.000Z");
      wf = new Workflow(new ResourceStore(h.kv, workflowSchema, { clock: () => (t += 1000) }));
      for (const [id, displayName, tags, assignee, closed, who] of PROJECTS) {
        await wf.createProject(SYSTEM, { id, displayName, tags, assignee });
        for (const [identity, how] of Object.entries(who))
          await wf.grant(SYSTEM, { type: "project", ids: [id] }, how === "view" ? "project.viewDetails" : "project.list", identity);
        if (closed)
          await wf.store.writes.mutate(SYSTEM, { type: "project", ids: [id] }, { intent: "project.close", verb: "closed", change: () => ({ patch: { status: "closed" } }) });
      }
    });
    afterEach(async () => h.destroy());

    const query = (actor: Actor, q: Parameters<ResourceStore["reads"]["queryChildrenJson"]>[3]) => wf.store.reads.queryChildrenJson(actor, null, "project", q);

    it("lists exactly the projects a user or one of its groups may list, in pages that merge the index ranges", async () => {
      const all: string[] = [];
      let cursor: string | null = null;
      do {
        const page: Page<Buffer> = await wf.listProjects(alice, { limit: 2, cursor });
        expect(page.items.length).toBeLessThanOrEqual(2);
        all.push(...ids(page));
        cursor = page.nextCursor;
      } while (cursor !== null);
      expect(all).toEqual(["p01", "p02", "p03", "p05", "p06"]);
      expect(ids(await wf.listProjects(bob))).toEqual(["p03", "p04"]);
      expect(ids(await wf.listProjects(userActor("nobody")))).toEqual([]);
      // A list-only project is listed redacted.
      const p05 = (await wf.listProjects(alice)).items.map((b) => JSON.parse(b.toString("utf8")) as Listed).find((p) => p.id === "p05")!;
      expect(p05.redacted).toBe(true);
    });

    it("follows grants, revokes and deletes in the same command", async () => {
      await wf.grant(SYSTEM, { type: "project", ids: ["p07"] }, "project.list", "bob");
      expect(ids(await wf.listProjects(bob))).toEqual(["p03", "p04", "p07"]);
      await wf.revoke(SYSTEM, { type: "project", ids: ["p03"] }, "project.viewDetails", "bob");
      expect(ids(await wf.listProjects(bob))).toEqual(["p04", "p07"]);
      // A renamed project is found by its new name.
      await wf.update(SYSTEM, { type: "project", ids: ["p04"] }, { displayName: "Road over the river" });
      expect(ids(await query(bob, { search: "river" }))).toEqual(["p04"]);
      expect((await wf.store.audit.verify(["project", "p04"])).ok).toBe(true);
      await wf.delete(SYSTEM, { type: "project", ids: ["p04"] });
      expect(ids(await wf.listProjects(bob))).toEqual(["p07"]);
      expect((await wf.store.audit.verify(["project", "p07"])).ok).toBe(true);
      expect(await wf.store.verifyVisibility()).toEqual([]);
    });

    it("searches with TruBudget's syntax, case-insensitively, never matching what the caller may not view", async () => {
      const cases: [string, string[]][] = [
        ["school", ["p01", "p03"]], // p05 is only listed to alice: its name is not hers to search
        ["SCHOOL", ["p01", "p03"]],
        ["name:well", ["p02"]],
        ["tag:africa", ["p01", "p02"]],
        ["tag:water", ["p02", "p06"]],
        ["tag:educ tag:health", ["p01", "p03", "p06"]], // same prefix: any
        ["tag:africa status:closed", ["p02"]], // different prefixes: all
        ["status:open", ["p01", "p03", "p05", "p06"]], // the status of a redacted project is shown, so searchable
        ["africa school", ["p01"]], // every free term
        ["p0", ["p01", "p02", "p03", "p05", "p06"]], // the id, flowstore's addition
        ["name:", ["p01", "p02", "p03", "p05", "p06"]], // an empty prefixed term restricts nothing
        ["", ["p01", "p02", "p03", "p05", "p06"]],
      ];
      for (const [search, want] of cases) expect([search, ids(await query(alice, { search, sort: "createdAt" }))]).toEqual([search, want]);
      expect(parseSearch("Name:A tag:b c:d")).toEqual({ name: ["a"], tag: ["b"], status: [], free: ["c:d"] });
    });

    it("sorts by displayName, createdAt, status and assignee both ways, with cursors that cover the list once", async () => {
      const want: Record<string, string[]> = {
        displayName: ["p05", "p06", "p03", "p01", "p02"], // p05 is redacted: no name, sorts first
        createdAt: ["p01", "p02", "p03", "p05", "p06"],
        status: ["p02", "p01", "p03", "p05", "p06"],
        assignee: ["p05", "p02", "p06", "p03", "p01"], // p05 redacted; then alice, alice, bob, carol
      };
      for (const [sort, asc] of Object.entries(want)) {
        for (const order of ["asc", "desc"] as const) {
          const seen: string[] = [];
          let cursor: string | null = null;
          do {
            const page: Page<Buffer> = await query(alice, { sort, order, limit: 2, cursor });
            seen.push(...ids(page));
            cursor = page.nextCursor;
          } while (cursor !== null);
          expect([sort, order, seen]).toEqual([sort, order, order === "asc" ? asc : [...asc].reverse()]);
        }
      }
    });

    it("sorts by id as a reader orders: case-insensitively, numbers by value, with cursors that cover the list once", async () => {
      for (const id of ["Item-9", "item-10", "item-2", "ITEM-002x"]) {
        await wf.createProject(SYSTEM, { id, displayName: id });
        await wf.grant(SYSTEM, { type: "project", ids: [id] }, "project.list", "bob");
      }
      const asc = ["item-2", "ITEM-002x", "Item-9", "item-10", "p03", "p04"];
      for (const order of ["asc", "desc"] as const) {
        const seen: string[] = [];
        let cursor: string | null = null;
        do {
          const page: Page<Buffer> = await query(bob, { sort: "id", order, limit: 4, cursor });
          seen.push(...ids(page));
          cursor = page.nextCursor;
        } while (cursor !== null);
        expect(seen).toEqual(order === "asc" ? asc : [...asc].reverse());
      }
    });

    it("keeps a cursor correct when projects are created and deleted between pages", async () => {
      const first = await query(alice, { sort: "displayName", limit: 2 });
      expect(ids(first)).toEqual(["p05", "p06"]);
      await wf.createProject(SYSTEM, { id: "p08", displayName: "Aardvark farm" }); // sorts before the cursor
      await wf.grant(SYSTEM, { type: "project", ids: ["p08"] }, "project.viewDetails", "alice");
      await wf.createProject(SYSTEM, { id: "p09", displayName: "Roof" }); // after it
      await wf.grant(SYSTEM, { type: "project", ids: ["p09"] }, "project.viewDetails", "team");
      await wf.delete(SYSTEM, { type: "project", ids: ["p01"] });
      const rest = await query(alice, { sort: "displayName", cursor: first.nextCursor, limit: 10 });
      expect(ids(rest)).toEqual(["p09", "p03", "p02"]);
      await expect(query(alice, { sort: "createdAt", cursor: first.nextCursor })).rejects.toMatchObject({ field: "cursor" });
      await expect(query(alice, { sort: "description" })).rejects.toMatchObject({ field: "sort" });
      await expect(query(alice, { search: "x".repeat(501) })).rejects.toMatchObject({ field: "search" });
    });

    it("searches and sorts the subprojects of a project", async () => {
      await wf.grant(SYSTEM, { type: "project", ids: ["p01"] }, "project.createSubproject", "alice");
      await wf.createSubproject(alice, "p01", { id: "s1", displayName: "Walls", currency: "EUR", tags: ["build"] });
      await wf.createSubproject(alice, "p01", { id: "s2", displayName: "Roof", currency: "EUR" });
      await wf.createSubproject(alice, "p01", { id: "s3", displayName: "Windows", currency: "EUR", tags: ["build"] });
      const subs = (q: Parameters<ResourceStore["reads"]["queryChildrenJson"]>[3]) => wf.store.reads.queryChildrenJson(alice, { type: "project", ids: ["p01"] }, "subproject", q);
      expect(ids(await subs({ sort: "displayName" }))).toEqual(["s2", "s1", "s3"]);
      expect(ids(await subs({ sort: "displayName", order: "desc", search: "tag:build" }))).toEqual(["s3", "s1"]);
      expect(ids(await subs({ search: "w" }))).toEqual(["s1", "s3"]);
      // Bob holds nothing on p01: he learns nothing of it, as for a project that does not exist (docs/security.md, "Existence").
      await expect(wf.store.reads.queryChildrenJson(bob, { type: "project", ids: ["p01"] }, "subproject", {})).rejects.toMatchObject({ name: "NotFoundError" });
    });

    it("verify reports a missing, stale or stray index entry; a store without the index gets it built", async () => {
      expect((await wf.store.audit.verify(["project", "p01"])).ok).toBe(true);
      await h.kv.commit(["visible", "alice"], [{ type: "delete", key: ["project", "p01"] }]);
      const missing = await wf.store.audit.verify(["project", "p01"]);
      expect(missing).toMatchObject({ ok: false, firstBad: { family: "visible" } });
      expect(missing.firstBad!.reason).toContain("missing");
      // A reader never sees a root it may not list, even through a stray entry.
      await h.kv.commit(
        ["visible", "bob"],
        [{ type: "put", key: ["project", "p07"], value: Buffer.from(JSON.stringify({ createdAt: "x", status: "closed", view: true, data: {} })) }],
      );
      expect(ids(await wf.listProjects(bob))).toEqual(["p03", "p04"]);
      expect(ids(await query(bob, { search: "", sort: "createdAt" }))).toEqual(["p03", "p04"]);
      const stray = await wf.store.verifyVisibility();
      expect(stray.map((s) => s.partition)).toEqual([["visible", "bob"]]);
      // Rebuilding (a store written before the index): drop the index and its marker, build again.
      for (const identity of ["alice", "bob", "team"]) await h.kv.dropPartition(["visible", identity]);
      await h.kv.dropPartition(["visible"]);
      expect(ids(await wf.listProjects(alice))).toEqual([]);
      expect(await wf.store.buildVisibility()).toBe(PROJECTS.length);
      expect(ids(await wf.listProjects(alice))).toEqual(["p01", "p02", "p03", "p05", "p06"]);
      expect((await wf.store.audit.verify(["project", "p01"])).ok).toBe(true);
      expect(await wf.store.verifyVisibility()).toEqual([]);
    });
  });
}
