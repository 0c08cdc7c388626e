/**
 * visibility (issues #14 and #18): the first page of projects, and of a search, for a user who sees 1% of
 * 100,000 projects, in process. The projects are created through the workflow commands by 100 users
 * (each creator holds every intent on its projects, so each user sees 1% of them); the caller also
 * belongs to a group, so each page merges two identities' index ranges. Goals: the plain first page
 * < 5 ms, the first page of a search < 20 ms. The reference row is the list as it was before the index
 * (a walk of every project partition, keeping those the caller may list).
 */
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { allPartitions } from "../../src/kv/contract.js";
import { RecordView } from "../../src/resources/model/record.js";
import { ResourceStore } from "../../src/resources/store.js";
import { Workflow } from "../../src/workflow/commands.js";
import { workflowSchema } from "../../src/workflow/schema.js";
import type { Workload } from "../harness.js";
import { pool } from "../peers/flowstore.js";

const PROJECTS = 100_000;
const USERS = 100;
const TAGS = ["water", "education", "health", "roads", "energy"];

export const visibility: Workload = {
  name: "visibility",
  description: `projects a user may list, in process: a user who sees 1% of ${PROJECTS.toLocaleString("en")} projects (first page of 100, plain and searched)`,
  async run(ctx) {
    const kv = await ctx.openStore();
    const wf = new Workflow(new ResourceStore(kv, workflowSchema));
    const n = Math.round(PROJECTS * ctx.scale);
    const users = Array.from({ length: USERS }, (_, i) => `u${String(i).padStart(3, "0")}`);
    for (const u of users) await wf.store.global.grant(SYSTEM, "global.createProject", u);
    const started = Date.now();
    await pool(
      Array.from({ length: n }, (_, i) => i),
      64,
      (i) =>
        wf.createProject(userActor(users[i % USERS]!), {
          id: `p${String(i).padStart(6, "0")}`,
          displayName: `Project ${i} ${TAGS[i % TAGS.length]} district ${i % 37}`,
          tags: [TAGS[(i * 7) % TAGS.length]!],
          assignee: users[(i * 3) % USERS]!,
        }),
    );
    ctx.note(`${n.toLocaleString("en")} projects created through the workflow commands (64 in flight) in ${((Date.now() - started) / 1000).toFixed(1)} s.`);
    const caller = userActor("u042", ["g042"]);
    const sees = n / USERS;

    const first = await wf.listProjects(caller, { limit: 100 });
    if (first.items.length !== Math.min(100, sees)) throw new Error(`the first page holds ${first.items.length} projects, not ${Math.min(100, sees)}`);
    await ctx.measure(`first page of 100 projects, a user who sees 1% (${sees.toLocaleString("en")}) (pages/s)`, {
      ops: 200,
      note: "goal < 5 ms a page (≥ 200 pages/s); the caller and its group's index ranges merged, 100 point reads",
      round: async () => {
        for (let i = 0; i < 200; i++) await wf.listProjects(caller, { limit: 100 });
      },
    });
    const q = { search: "tag:energy district 1", sort: "displayName", order: "asc" as const, limit: 100 };
    const searched = await wf.store.reads.queryChildrenJson(caller, null, "project", q);
    if (searched.items.length === 0) throw new Error("the search finds nothing");
    await ctx.measure(`first page of a search (${JSON.stringify(q.search)}, sorted by displayName) among the same (pages/s)`, {
      ops: 50,
      note: `goal < 20 ms a page (≥ 50 pages/s); while the caller's index is unchanged it reads one version key per identity and reuses the parsed, sorted rows; after a change it reads the ${sees.toLocaleString("en")} index entries again; no project record but the page's`,
      round: async () => {
        for (let i = 0; i < 50; i++) await wf.store.reads.queryChildrenJson(caller, null, "project", q);
      },
    });
    await ctx.measure("first page sorted by createdAt, newest first, no search (pages/s)", {
      ops: 50,
      round: async () => {
        for (let i = 0; i < 50; i++) await wf.store.reads.queryChildrenJson(caller, null, "project", { sort: "createdAt", order: "desc", limit: 100 });
      },
    });
    await ctx.measure("the same first page by a walk of every project partition (before the index) (pages/s)", {
      ops: 1,
      rounds: 3,
      note: "the reference: what the list did before the index, reading project records until 100 are visible",
      round: async () => {
        let found = 0;
        for await (const p of allPartitions(kv, "project")) {
          const e = await kv.get(p, wf.store.stateAddress({ type: "project", ids: [p[1] as string] }).key);
          if (e && new RecordView(e.value).visibleTo(caller) && ++found === 100) break;
        }
      },
    });
  },
};
