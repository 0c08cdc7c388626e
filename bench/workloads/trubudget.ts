/**
 * trubudget: what TruBudget's API (src/http/trubudget, issue 15) costs over the native API for the same
 * reads, through the whole HTTP stack of one server (Fastify's inject: routing, authentication,
 * validation, the handler, serialization; no sockets, so the translation is not drowned in network time).
 *
 *   project.list (1,000 projects)      GET /api/project.list   vs GET /api/v1/projects?limit=1000
 *   workflowitem.list (1,000 items)    GET /api/workflowitem.list?projectId&subprojectId
 *                                      vs GET /api/v1/projects/p/subprojects/s/workflowitems?limit=1000
 *
 * Both as mary, who holds every intent (each item carries its allowedIntents on both sides). The goal
 * (issue 15): the translation costs at most 1.3×. The server runs as served: its list page cache on.
 */
import type { FastifyInstance } from "fastify";
import type { Workload } from "../harness.js";
import { SYSTEM } from "../../src/access/actor.js";
import { openFlowstore } from "../../src/compose/index.js";
import { buildServer } from "../../src/http/server.js";
import { loadFlowstore, pool } from "../peers/flowstore.js";
import { MARY, subproject } from "../tree.js";
import { ROOT_PASSWORD, SECRET } from "../http/shared.js";

const N = 1_000;
const P = "wp";
const S = "ws";

async function get(app: FastifyInstance, token: string, url: string, count: (body: any) => number): Promise<void> {
  const r = await app.inject({ method: "GET", url, headers: { authorization: `Bearer ${token}` } });
  if (r.statusCode !== 200) throw new Error(`${url}: ${r.statusCode} ${r.body.slice(0, 200)}`);
  const n = count(r.json());
  if (n !== N) throw new Error(`${url}: ${n} items, not ${N}`);
}

export const trubudget: Workload = {
  name: "trubudget",
  description: "TruBudget's API vs the native API on the same server: project.list of 1,000 projects, workflowitem.list of 1,000 items (HTTP stack in process)",
  async run(ctx) {
    const kv = await ctx.openStore();
    const flowstore = await openFlowstore(kv, {});
    const app = await buildServer(flowstore, { tokenSecret: SECRET, logger: false, closeStore: true, trubudgetApi: true, webRoot: false, loginRateLimit: false });
    try {
      const t0 = performance.now();
      for (const id of ["mary", "tom", "jane"]) await flowstore.identity.createUser(SYSTEM, { id, displayName: id, password: ROOT_PASSWORD });
      await flowstore.identity.createGroup(SYSTEM, { id: "managers", displayName: "Managers", members: ["mary"] });
      await loadFlowstore(flowstore.workflow, { projects: [{ id: P, subprojects: [subproject(S, N, "EUR", 100)] }], updates: [] });
      // 1,000 projects in all: the one above and 999 more
      const more = Array.from({ length: N - 1 }, (_, i) => i);
      await pool(more, 64, (i) =>
        flowstore.workflow.createProject(MARY, {
          id: `tp${i}`,
          displayName: `Project ${i}`,
          description: "a project of the bench",
          tags: ["bench"],
          projectedBudgets: [{ organization: "KfW", value: "1000.00", currencyCode: "EUR" }],
        }),
      );
      process.stdout.write(`  built ${N} projects and ${N} workflowitems in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);

      const login = await app.inject({ method: "POST", url: "/api/user.authenticate", payload: { apiVersion: "1.0", data: { user: { id: "mary", password: ROOT_PASSWORD } } } });
      const token = (login.json() as { data: { user: { token: string } } }).data.user.token;
      const times = Math.max(1, Math.round(5 * ctx.scale));

      await ctx.compare({
        ops: times,
        goal: 1.3,
        rounds: 11,
        reference: {
          name: `project.list of ${N.toLocaleString("en-US")}: native GET /api/v1/projects?limit=${N}`,
          round: async () => {
            for (let t = 0; t < times; t++) await get(app, token, `/api/v1/projects?limit=${N}`, (b) => b.items.length);
          },
        },
        subject: {
          name: `project.list of ${N.toLocaleString("en-US")}: TruBudget GET /api/project.list`,
          round: async () => {
            for (let t = 0; t < times; t++) await get(app, token, "/api/project.list", (b) => b.data.items.length);
          },
        },
      });
      await ctx.compare({
        ops: times,
        goal: 1.3,
        rounds: 11,
        reference: {
          name: `workflowitem.list of ${N.toLocaleString("en-US")}: native GET …/workflowitems?limit=${N}`,
          round: async () => {
            for (let t = 0; t < times; t++) await get(app, token, `/api/v1/projects/${P}/subprojects/${S}/workflowitems?limit=${N}`, (b) => b.items.length);
          },
        },
        subject: {
          name: `workflowitem.list of ${N.toLocaleString("en-US")}: TruBudget GET /api/workflowitem.list`,
          round: async () => {
            for (let t = 0; t < times; t++) await get(app, token, `/api/workflowitem.list?projectId=${P}&subprojectId=${S}`, (b) => b.data.workflowitems.length);
          },
        },
      });
      ctx.note(
        "How: each TruBudget route calls the read the native route calls and reshapes its answer (src/http/trubudget/expose.ts). workflowitem.list reads the store's cached page (the page cache hands out one Buffer per partition head version and caller) and keeps its translation beside that Buffer (a WeakMap), so an unchanged list is translated once, as the native one is rendered once; TruBudget's order (closed first by close time) is the store's `closedFirst` sequence. project.list has no page cache on either side: the native route joins the records' bytes; TruBudget's keeps each translated project beside the bytes of the record it came from (which carry the caller's allowedIntents), so only a project changed since the last list is parsed and written again. Both answers are parsed by the client here (inject's json()); TruBudget's items are smaller (no type/meta), which is why its workflowitem.list comes out cheaper. The machine is 2 cores shared with other work: absolute req/s move between runs, the interleaved ratios less.",
      );
    } finally {
      await app.close();
    }
  },
};
