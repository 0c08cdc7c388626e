/**
 * A Workflow over a backend's kv with a clock that steps a second per reading (so events' times are
 * distinct and ordered), holding project `p` (by `owner`, granted project creation by the system) and
 * its subproject `s` in EUR: the starting point of the suites that run commands of one subproject.
 */
import { SYSTEM, type Actor } from "../../src/access/actor.js";
import type { KvStore } from "../../src/kv/contract.js";
import { ResourceStore } from "../../src/resources/store.js";
import { Workflow } from "../../src/workflow/commands.js";
import { workflowSchema } from "../../src/workflow/schema.js";

export async function workflowWithSubproject(kv: KvStore, owner: Actor): Promise<Workflow> {
  let t = Date.parse("2026-03-01T00:00:00Z");
  const wf = new Workflow(new ResourceStore(kv, workflowSchema, { clock: () => (t += 1000) }));
  await wf.store.global.grant(SYSTEM, "global.createProject", owner.id);
  await wf.createProject(owner, { id: "p", displayName: "P", projectedBudgets: [] });
  await wf.createSubproject(owner, "p", { id: "s", displayName: "S", currency: "EUR" });
  return wf;
}
