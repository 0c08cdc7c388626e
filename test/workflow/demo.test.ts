import { afterEach, beforeEach, expect, it } from "vitest";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { ResourceStore } from "../../src/resources/store.js";
import { Workflow } from "../../src/workflow/commands.js";
import { generateDemo } from "../../src/workflow/demo.js";
import { workflowSchema } from "../../src/workflow/schema.js";
import { forEachBackend, type BackendHandle } from "../conformance/backends.js";

forEachBackend((backend) => {
  let h: BackendHandle;
  beforeEach(async () => {
    h = await backend.create();
  });
  afterEach(async () => h.destroy());

  it("generates a realistic demo data set whose chains verify", async () => {
    const wf = new Workflow(new ResourceStore(h.kv, workflowSchema));
    const summary = await generateDemo(wf, { projects: 2, subprojectsPerProject: 3, workflowitemsPerSubproject: 30 });
    expect(summary).toMatchObject({ projects: 2, subprojects: 6, workflowitems: 180 });
    const jane = userActor("jane", ["finance"]);
    const projects = (await wf.listProjects(jane)).items.map((b) => JSON.parse(b.toString()));
    expect(projects.map((p) => p.id)).toEqual(["demo-1", "demo-2"]);
    const { workflowitems } = await wf.subprojectDetails(jane, "demo-1", "sp-2");
    expect(workflowitems.items).toHaveLength(30);
    expect(workflowitems.items[0]!.id).toBe("wi-0030"); // moved to the front by the demo's reorder
    // Restricted items (TruBudget's rule): their creator mary keeps only list on those assigned to others.
    const all = (await wf.subprojectDetails(SYSTEM, "demo-1", "sp-3")).workflowitems.items;
    const byMary = (await wf.subprojectDetails(userActor("mary", ["managers"]), "demo-1", "sp-3")).workflowitems.items;
    expect(all.some((w) => w.data.assignee !== "mary")).toBe(true);
    all.forEach((w, i) => expect(Boolean(byMary[i]!.redacted)).toBe(w.data.assignee !== "mary"));
    for (const p of ["demo-1", "demo-2"]) expect((await wf.store.audit.verify(["project", p])).ok).toBe(true);
    const closed = (await wf.subprojectDetails(SYSTEM, "demo-1", "sp-1")).workflowitems.items.filter((w) => w.data.status === "closed");
    expect(closed.length).toBeGreaterThan(0);
  });
});
