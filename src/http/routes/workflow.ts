/**
 * Projects, subprojects and workflowitems over HTTP. Their generic routes (create, list, get, update,
 * delete, history, permissions, verify) come from the declaration (declared.ts), with the workflow's
 * commands in place of the generic writes where it has rules (create with defaults and guards, update,
 * delete). The routes here are the domain's own commands only: close, assign, projected budgets and
 * the workflowitem ordering. Bodies are the workflow schema's own TypeBox fields, so validation,
 * serialization and the OpenAPI document share one declaration with the store.
 */
import { Type, type Static } from "@sinclair/typebox";
import type { FastifyReply } from "fastify";
import type { Actor } from "../../access/actor.js";
import { IdentityId } from "../../identity/wire.js";
import type { Envelope } from "../../resources/model/record.js";
import type { Ref } from "../../resources/model/ref.js";
import { Event, Redacted, ResourceId, VerifyResult } from "../../resources/model/wire.js";
import { ProjectedBudget, RejectReason, workflowSchema, type WorkflowSchema } from "../../workflow/schema.js";
import type { App } from "../context.js";
import { problems } from "../problem.js";
import { asBody, declaredRoutes, ifMatch, sendResource, sendWritten, servedTypes, typeSchemas, type ServedType } from "./declared.js";

export { HistoryQuery, OrderedListQuery, ResourcePermissionChange } from "./declared.js";
export { Event as HistoryEvent, Redacted, ResourceId, VerifyResult };

export const ProjectSchemas = typeSchemas(workflowSchema, "project");
export const SubprojectSchemas = typeSchemas(workflowSchema, "subproject");
export const WorkflowitemSchemas = typeSchemas(workflowSchema, "workflowitem");

export const AssignBody = Type.Object({ assignee: IdentityId }, { additionalProperties: false, $id: "AssignBody" });
export const CloseBody = Type.Object({ rejectReason: Type.Optional(RejectReason) }, { additionalProperties: false });
export const OrderingBody = Type.Object({ ordering: Type.Array(ResourceId, { maxItems: 10_000 }) }, { additionalProperties: false, $id: "NewOrdering", title: "NewOrdering" });
export const Ordering = Type.Object({ ordering: Type.Array(Type.String()) }, { $id: "Ordering" });
export const BudgetKey = Type.Object({ organization: Type.String({ minLength: 1, maxLength: 200 }), currencyCode: Type.String({ pattern: "^[A-Z]{3}$" }) });

type Budgeted = Ref & { type: "project" | "subproject" };

/** A close body: declared (and validated) on a workflowitem's close only, so its type is stated here. */
const closeBody = (body: unknown): Static<typeof CloseBody> | undefined => (body ?? undefined) as Static<typeof CloseBody> | undefined;

/** The workflow's own commands on one level: close, assign, and (projects, subprojects) budgets, ordering. */
function commandRoutes(app: App, s: ServedType): void {
  const { workflow } = app.flowstore;
  const { item, params, tags } = s;
  const updated = s.schemas.updated;
  const { resources } = app.flowstore;
  /** A write's answer: the resource to an actor that may view it now, else 204 (declared.ts sendWritten). */
  const written = (request: { actor: Actor; params: Record<string, string> }, reply: FastifyReply, r: Envelope) =>
    sendWritten(reply, resources, request.actor, s.refOf(request.params), r);
  const T = s.type.name;
  const C = T.charAt(0).toUpperCase() + T.slice(1);

  app.post(
    `${item}/close`,
    {
      config: { etag: true },
      schema: {
        tags,
        operationId: `close${C}`,
        summary: `Close a ${T}${T === "workflowitem" ? " (optionally rejecting it with a reason)" : " (every child must be closed)"}`,
        params,
        ...(T === "workflowitem" ? { body: Type.Optional(CloseBody) } : {}),
        response: { ...updated, ...problems(400, 403, 404, 409, 415) },
      },
    },
    async (request, reply) => {
      const [p, sp, w] = s.refOf(request.params).ids as [string, string?, string?];
      const closed = await asBody(() =>
        T === "project"
          ? workflow.closeProject(request.actor, p)
          : T === "subproject"
            ? workflow.closeSubproject(request.actor, p, sp!)
            : workflow.closeWorkflowitem(request.actor, p, sp!, w!, { rejectReason: closeBody(request.body)?.rejectReason }),
      );
      return written(request, reply, closed);
    },
  );

  app.post(
    `${item}/assign`,
    {
      config: { etag: true, ifMatch: true },
      schema: { tags, operationId: `assign${C}`, summary: `Assign a ${T}`, params, body: AssignBody, response: { ...updated, ...problems(400, 403, 404, 409, 415) } },
    },
    async (request, reply) => {
      const r = await workflow.assign(request.actor, s.refOf(request.params), request.body.assignee, { ifVersion: ifMatch(request) });
      return written(request, reply, r);
    },
  );

  if (T !== "workflowitem") {
    app.put(
      `${item}/projected-budgets`,
      {
        config: { etag: true },
        schema: {
          tags,
          operationId: `set${C}ProjectedBudget`,
          summary: `Set the projected budget of an organization in a currency (${T}.budget.updateProjected)`,
          params,
          body: ProjectedBudget,
          response: { ...updated, ...problems(400, 403, 404, 409, 415) },
        },
      },
      async (request, reply) => {
        const r = await asBody(() => workflow.setProjectedBudget(request.actor, s.refOf(request.params) as Budgeted, request.body));
        return written(request, reply, r);
      },
    );
    app.delete(
      `${item}/projected-budgets/:organization/:currencyCode`,
      {
        config: { etag: true },
        schema: {
          tags,
          operationId: `delete${C}ProjectedBudget`,
          summary: `Delete a projected budget (${T}.budget.deleteProjected)`,
          params: Type.Composite([params, BudgetKey]),
          response: { ...updated, ...problems(400, 403, 404, 409) },
        },
      },
      async (request, reply) => {
        // Both are required by BudgetKey; the composite with the id parameters types them as by index.
        const { organization, currencyCode } = request.params;
        const r = await workflow.deleteProjectedBudget(request.actor, s.refOf(request.params) as Budgeted, organization!, currencyCode!);
        return written(request, reply, r);
      },
    );
  }

  if (s.type.decl.orderedChildren) {
    app.get(
      `${item}/workflowitem-ordering`,
      {
        config: { etag: true },
        schema: {
          tags,
          operationId: "getWorkflowitemOrdering",
          summary: "The manual ordering of the workflowitems (ETag: the subproject's version)",
          params,
          response: { 200: Ordering, ...problems(400, 403, 404) },
        },
      },
      async (request, reply) => {
        const { ordering, version } = await app.flowstore.resources.reads.getOrdering(request.actor, s.refOf(request.params));
        return sendResource(reply, { ordering }, version);
      },
    );
    app.put(
      `${item}/workflowitem-ordering`,
      {
        config: { etag: true, ifMatch: true },
        schema: {
          tags,
          operationId: "setWorkflowitemOrdering",
          summary: "Replace the ordering, all or nothing (If-Match: the subproject's version; a stale one is a 412)",
          params,
          body: OrderingBody,
          response: { 200: Ordering, ...problems(400, 403, 404, 409, 413, 415) },
        },
      },
      async (request, reply) => {
        const [p, sp] = s.refOf(request.params).ids as [string, string];
        const r = await asBody(() => workflow.reorderWorkflowitems(request.actor, p, sp, request.body.ordering, { ifVersion: ifMatch(request) }));
        return sendResource(reply, { ordering: request.body.ordering }, r.meta.version);
      },
    );
  }
}

/** Where each level is served: its collection segment (every workflow path derives from these; the id parameters are the default `<type>Id`). */
const WORKFLOW_PATHS = {
  segments: { project: "projects", subproject: "subprojects", workflowitem: "workflowitems" },
} as const;

/** A level as served (its item path, e.g. `/projects/:projectId/subprojects/:subprojectId`, and parameters), for the routes other plugins add under it. */
export function servedLevel(type: keyof WorkflowSchema & string): ServedType {
  return servedTypes(workflowSchema, WORKFLOW_PATHS).find((s) => s.type.name === type)!;
}

export const workflowRoutes = declaredRoutes<WorkflowSchema>({
  store: (context) => context.resources,
  ...WORKFLOW_PATHS,
  commands: ({ workflow }) => ({
    create: workflow.create,
    update: (actor, ref, patch, options) => workflow.update(actor, ref, patch, options),
    delete: (actor, ref, options) => workflow.delete(actor, ref, options),
  }),
  extend: commandRoutes,
});
