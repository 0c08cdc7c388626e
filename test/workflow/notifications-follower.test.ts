/**
 * The notification follower names the assignee as of each event, however far it runs behind the
 * writes (workflow/notifications.ts `#assigneeAt`): a create or an assign names the assignee it sets,
 * an update is told to the assignee the resource had then, whether it is still its newest event (the
 * record's assignee answers) or later assigns followed it in the same pass (its history answers). A
 * group assignee is told through its members; a user is no group. Each pass is run here by hand. The
 * newest event of a resource is read from its history index alone (`audit.newestSeq`).
 */
import { afterEach, beforeEach, expect, it } from "vitest";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { openFlowstore, type Flowstore } from "../../src/compose/index.js";
import { workflowitemRef } from "../../src/workflow/commands.js";

let fs: Flowstore;
const mary = userActor("mary");
const item = workflowitemRef("p", "s", "w");
/** Each user's inbox, oldest first, as "eventType description?". */
async function inboxes(): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const id of ["mary", "tom", "jane", "ann"]) {
    const { items } = await fs.notifications.list(userActor(id), { limit: 100 });
    out[id] = items.reverse().map((n) => n.eventType);
  }
  return out;
}
/** One pass of the follower over the feed (the background's, run by hand). */
const follow = () => fs.notifications.followAll(fs.resources.writer.feed);
/** Workflowitem w of p/s, created by mary with this assignee. */
const createW = (assignee?: string) => fs.workflow.createWorkflowitem(mary, "p", "s", { id: "w", displayName: "W", amountType: "N/A", assignee });

beforeEach(async () => {
  fs = await openFlowstore("memory:", {});
  for (const id of ["mary", "tom", "jane", "ann"]) await fs.identity.createUser(SYSTEM, { id, displayName: id, password: "a long enough password" });
  await fs.identity.createGroup(SYSTEM, { id: "crew", displayName: "Crew", members: ["jane", "ann"] });
  await fs.global.grant(SYSTEM, "global.createProject", "mary");
  await fs.workflow.createProject(mary, { id: "p", displayName: "P" });
  await fs.workflow.createSubproject(mary, "p", { id: "s", displayName: "S", currency: "EUR" });
  await follow(); // the follower starts at the feed's head
});
afterEach(() => fs.close());

it("an update is told to the assignee it had then, though later assigns came before the pass", async () => {
  await createW("tom");
  await fs.workflow.update(mary, item, { description: "one" });
  await fs.workflow.assign(mary, item, "crew");
  await fs.workflow.update(mary, item, { description: "two" });
  await fs.workflow.assign(mary, item, "mary");
  await follow();
  expect(await inboxes()).toEqual({
    mary: [],
    tom: ["workflowitem.created", "workflowitem.updated"],
    jane: ["workflowitem.assigned", "workflowitem.updated"],
    ann: ["workflowitem.assigned", "workflowitem.updated"],
  });
});

it("an update that is its resource's newest event goes to the current assignee, pass after pass", async () => {
  await createW("crew");
  await follow();
  await fs.workflow.update(mary, item, { description: "one" });
  await follow();
  await fs.workflow.assign(mary, item, "tom");
  await follow();
  await fs.workflow.update(mary, item, { description: "two" });
  await follow();
  expect(await inboxes()).toEqual({
    mary: [],
    tom: ["workflowitem.assigned", "workflowitem.updated"],
    jane: ["workflowitem.created", "workflowitem.updated"],
    ann: ["workflowitem.created", "workflowitem.updated"],
  });
});

it("audit.newestSeq names the seq of the resource's newest event, not of its partition's", async () => {
  await createW();
  await fs.workflow.update(mary, item, { description: "one" });
  const [newest] = (await fs.resources.audit.history(SYSTEM, item, { reverse: true, limit: 1 })).items;
  expect(await fs.resources.audit.newestSeq(item)).toBe(newest!.seq);
  await fs.workflow.createWorkflowitem(mary, "p", "s", { id: "v", displayName: "V", amountType: "N/A" });
  await fs.workflow.update(mary, workflowitemRef("p", "s", "v"), { description: "two" });
  expect(await fs.resources.audit.newestSeq(item)).toBe(newest!.seq);
  expect(await fs.resources.audit.newestSeq(workflowitemRef("p", "s", "v"))).toBeGreaterThan(newest!.seq);
  expect(await fs.resources.audit.newestSeq(workflowitemRef("p", "s", "none"))).toBeNull();
});
