/**
 * TruBudget's subproject routes (its subproject_list.ts, subproject_view_details.ts,
 * workflowitems_reorder.ts); creating a workflowitem is in workflowitems.ts, the routes every level has
 * in levels.ts.
 *
 *   GET  /subproject.list?projectId                       → {items: [{allowedIntents, data}]}
 *   GET  /subproject.viewDetails?projectId&subprojectId   → {parentProject: {id, displayName}, subproject, workflowitems}
 *   POST /subproject.reorderWorkflowitems {projectId, subprojectId, ordering} → {}
 */
import { Type } from "@sinclair/typebox";
import { projectRef, subprojectRef } from "../../workflow/commands.js";
import { ResourceId } from "../../resources/model/wire.js";
import { OrderingBody } from "../routes/workflow.js";
import type { RoutePlugin } from "../context.js";
import { dropsUnknown } from "./validation.js";
import { Envelope, ok } from "./envelope.js";
import { exposeSubproject, exposeWorkflowitem, type Served } from "./expose.js";
import { tbIntents } from "./intents.js";
import { fieldsAt, idsWith, keptWhenRedacted, ownIntents, parsed, readAll, readerOf } from "./workflow-common.js";

export const subprojectRoutes: RoutePlugin = async (app) => {
  const { workflow } = app.flowstore;
  const store = workflow.store;
  const intents = tbIntents(store);

  const ProjectQuery = Type.Object({ projectId: ResourceId }, { additionalProperties: false });
  app.get("/subproject.list", { schema: { querystring: ProjectQuery } }, async (request) => {
    const { projectId } = request.query;
    const items = await readAll((cursor, limit) =>
      store.reads.listChildrenJson(readerOf(request.actor), projectRef(projectId), "subproject", { cursor, limit, allowedIntents: true }),
    );
    return ok({
      items: (await ownIntents(store, request.actor, "subproject", [projectId], parsed<Served>(items))).filter((r) => !r.redacted).map((r) => exposeSubproject(r, intents)),
    });
  });

  app.get("/subproject.viewDetails", { schema: { querystring: idsWith("subproject") } }, async (request) => {
    const { projectId, subprojectId } = request.query;
    const reader = readerOf(request.actor);
    const project = await store.reads.get(reader, { ...projectRef(projectId), type: "project" });
    const { json } = await store.reads.getJson(reader, subprojectRef(projectId, subprojectId), { allowedIntents: true });
    const [subproject] = await ownIntents(store, request.actor, "subproject", [projectId], [JSON.parse(json.toString("utf8")) as Served]);
    const items = await readAll((cursor, limit) =>
      workflow.listWorkflowitemsJson(reader, projectId, subprojectId, { cursor, limit, allowedIntents: true, sequence: "closedFirst" }),
    );
    return ok({
      parentProject: { id: projectId, displayName: project.data.displayName },
      subproject: exposeSubproject(subproject!, intents),
      workflowitems: (
        await keptWhenRedacted(store, [projectId, subprojectId], await ownIntents(store, request.actor, "workflowitem", [projectId, subprojectId], parsed<Served>(items)))
      ).map((r) => exposeWorkflowitem(r, intents)),
    });
  });

  const Reorder = Envelope(dropsUnknown(idsWith("subproject", { ordering: OrderingBody.properties.ordering })));
  app.post("/subproject.reorderWorkflowitems", { schema: { body: Reorder } }, async (request) => {
    const { projectId, subprojectId, ordering } = request.body.data;
    await fieldsAt(
      (f) => (f.startsWith("ordering") ? `data.${f}` : f),
      () => workflow.reorderWorkflowitems(request.actor, projectId, subprojectId, ordering),
    );
    return ok({});
  });
};
