/**
 * History served as the stored event bytes joined (issue 25): GET …/history answers, for every caller and
 * filter, exactly the events the store's parsed history gives (`audit.history`), with the permission maps
 * and grant events left out for a caller who may not list permissions, and pages that chain the same way.
 */
import { afterEach, expect, it } from "vitest";
import { userActor } from "../../src/access/actor.js";
import { projectRef } from "../../src/workflow/commands.js";
import { forEachBackend, httpBackends } from "../conformance/backends.js";
import { raw, startServer, type Running } from "./harness.js";

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanup.length) await cleanup.pop()!().catch(() => {});
});

forEachBackend((backend) => {
  it("answers what the parsed history gives, redacted alike, for the owner, a viewer, filters and pages", async () => {
    const h = await backend.create();
    cleanup.push(() => h.destroy());
    const s: Running = await startServer(h.kv);
    cleanup.push(() => s.close());
    const viewer = await s.userClient("vera", "vera password 1");
    await s.root.projects.create({ id: "p", displayName: "School", description: "has a permission word in it" });
    const p = s.root.project("p");
    await p.update({ description: "changed once" });
    await s.root.project("p").update({ description: "changed twice" });
    const wf = s.app.flowstore.workflow;
    const root = userActor("root");
    await wf.grant(root, projectRef("p"), "project.viewHistory", "vera");
    await wf.grant(root, projectRef("p"), "project.viewDetails", "vera");
    await p.update({ displayName: "School 2" });
    const rootToken = s.root.token!;
    const cases: { who: string; token: string; actor: ReturnType<typeof userActor>; query: Record<string, string> }[] = [];
    for (const [who, token, actor] of [
      ["root", rootToken, root],
      ["vera", viewer.token!, userActor("vera")],
    ] as const) {
      const queries: Record<string, string>[] = [{}, { limit: "2" }, { order: "desc" }, { type: "project.updated" }, { publisher: "root", limit: "3" }];
      for (const query of queries) cases.push({ who, token, actor, query });
    }
    for (const c of cases) {
      const { order, ...filters } = c.query;
      const options = { ...filters, ...(filters.limit ? { limit: Number(filters.limit) } : {}), reverse: order === "desc" };
      const parsed = await wf.store.audit.history(c.actor, projectRef("p"), options as never);
      const res = await raw(s.base, "GET", `/api/v1/projects/p/history?${new URLSearchParams(c.query)}`, { headers: { authorization: `Bearer ${c.token}` } });
      expect(res.status, `${c.who} ${JSON.stringify(c.query)}`).toBe(200);
      expect(res.body, `${c.who} ${JSON.stringify(c.query)}`).toEqual(JSON.parse(JSON.stringify(parsed)));
      if (c.who === "vera") {
        expect(JSON.stringify(res.body)).not.toContain('"permissions"');
        expect(res.body.items.some((e: { type: string }) => e.type.includes("permission"))).toBe(false);
      }
      // the next page chains from the cursor the same way
      if (res.body.nextCursor) {
        const next = await raw(s.base, "GET", `/api/v1/projects/p/history?${new URLSearchParams({ ...c.query, cursor: res.body.nextCursor })}`, {
          headers: { authorization: `Bearer ${c.token}` },
        });
        const parsedNext = await wf.store.audit.history(c.actor, projectRef("p"), { ...options, cursor: res.body.nextCursor } as never);
        expect(next.body).toEqual(JSON.parse(JSON.stringify(parsedNext)));
      }
    }
    // root sees the created event's permission map and the grants
    const all = await raw(s.base, "GET", "/api/v1/projects/p/history", { headers: { authorization: `Bearer ${rootToken}` } });
    expect(all.body.items.filter((e: { type: string }) => e.type.includes("permission_granted"))).toHaveLength(2);
  });
}, httpBackends);
