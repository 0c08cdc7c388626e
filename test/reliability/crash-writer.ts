/**
 * A child process for crash.test.ts: opens the LMDB store in argv[2] and runs the seeded write load of
 * load.ts through the Workflow API, as a user with `global.createProject`. It continues from what it finds
 * in the store (what a restarted service would see) and prints one JSON line per acknowledged write. The
 * parent kills it with SIGKILL at some point.
 *
 * argv: dir, seed, run (a tag for new ids), maxOps.
 * Lines: those of load.ts, and {"a":"project","p"} | {"a":"ready","subprojects":n} | {"a":"done"}.
 */
import { LmdbKv } from "../../src/kv/lmdb.js";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { ResourceStore } from "../../src/resources/store.js";
import { projectRef, subprojectRef, Workflow, workflowitemRef } from "../../src/workflow/commands.js";
import { workflowSchema } from "../../src/workflow/schema.js";
import { liveSubs } from "./acknowledged.js";
import { Load, plan, PROJECTS } from "./load.js";

const ACTOR = "loader";
const WORKERS = 6;

const [dir, seed, run, maxOps] = [process.argv[2]!, Number(process.argv[3]), process.argv[4]!, Number(process.argv[5])];
const say = (line: Record<string, unknown>) => process.stdout.write(JSON.stringify(line) + "\n");

const kv = LmdbKv.open(dir);
const wf = new Workflow(new ResourceStore(kv, workflowSchema));
const actor = userActor(ACTOR);

if (!(await wf.store.global.has(actor, "global.createProject"))) await wf.store.global.grant(SYSTEM, "global.createProject", ACTOR);
for (const p of PROJECTS) {
  if (!(await wf.store.exists(projectRef(p)))) {
    await wf.createProject(actor, { id: p, displayName: `project ${p}` });
    say({ a: "project", p });
  }
}
const subs = await liveSubs(wf.store);
say({ a: "ready", subprojects: subs.length });

const load = new Load(
  run,
  {
    createSubproject: async (p, s) => void (await wf.createSubproject(actor, p, { id: s, displayName: `subproject ${s}`, currency: "EUR", workflowMode: "unordered" })),
    createWorkflowitem: async (p, s, w) => void (await wf.createWorkflowitem(actor, p, s, { id: w, displayName: `item ${w}`, amountType: "N/A" })),
    update: async (p, s, w, description) => (await wf.update(actor, workflowitemRef(p, s, w), { description })).meta.version,
    reorder: async (p, s, o) => (await wf.reorderWorkflowitems(actor, p, s, o)).meta.version,
    deleteSubproject: (p, s) => wf.delete(actor, subprojectRef(p, s)),
    close: async (p, s, w) => void (await wf.closeWorkflowitem(actor, p, s, w)),
  },
  subs,
  say,
);
await load.drive(
  plan(seed, maxOps),
  WORKERS,
  () => false,
  (e) => say({ a: "error", message: `${(e as Error).name}: ${(e as Error).message}` }),
);
await kv.close();
say({ a: "done" });
