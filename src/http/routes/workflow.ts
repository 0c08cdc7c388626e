/**
 * Projects, subprojects and workflowitems over HTTP. The three levels share one generic set of routes
 * (create, list, get, update, delete, close, assign, history, permissions), derived from a table of
 * levels rather than written three times; the few level-specific routes (budgets, ordering, verify)
 * follow. Bodies are the workflow schema's own TypeBox fields, so validation, serialization and the
 * OpenAPI document share one declaration with the store.
 */
import { Type, type Static, type TObject } from "@sinclair/typebox";
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { FlowstoreError, ValidationError } from "../../errors.js";
import type { Ref } from "../../resources/keys.js";
import { ProjectedBudget, ProjectFields, SubprojectFields, WorkflowitemFields } from "../../workflow/schema.js";
import { PageOf, PageQuery, sendJsonPage } from "../pagination.js";
import { problems } from "../problem.js";
import { PermissionMap } from "./global.js";
import { IdentityId } from "./users.js";

export const ResourceId = Type.String({
  minLength: 1,
  maxLength: 128,
  description: "1-128 characters; no control characters, surrounding spaces or / ? # % \\",
});

const Meta = Type.Object({
  createdAt: Type.String({ format: "date-time" }),
  createdBy: Type.String(),
  updatedAt: Type.String({ format: "date-time" }),
  version: Type.Integer({ minimum: 1 }),
});

const Redacted = Type.Object(
  {
    id: Type.String(),
    type: Type.String(),
    redacted: Type.Literal(true),
    data: Type.Object({ status: Type.Optional(Type.String()) }),
    meta: Type.Object({ createdAt: Type.String({ format: "date-time" }) }),
  },
  { title: "Redacted", description: "a child the caller may not view, kept in its place" },
);

interface Level {
  readonly type: "project" | "subproject" | "workflowitem";
  readonly segment: string;
  readonly param: string;
}

const LEVELS: readonly Level[] = [
  { type: "project", segment: "projects", param: "p" },
  { type: "subproject", segment: "subprojects", param: "s" },
  { type: "workflowitem", segment: "workflowitems", param: "w" },
];

const UPDATE_EXCLUDED = ["status", "assignee", "projectedBudgets", "rejectReason"] as const;

/**
 * The schemas of one level: the resource as answered, the create body (the fields less those set by
 * commands, plus an optional id), the update body (some fields) and a page of resources or redacted
 * children. Typed, so the client's types are these same declarations.
 */
function schemasOf<T extends Level["type"], F extends TObject, C extends keyof F["properties"] & string>(type: T, fields: F, commandFields: readonly C[]) {
  const title = type.charAt(0).toUpperCase() + type.slice(1);
  const resource = Type.Object({ id: Type.String(), type: Type.Literal(type), data: fields, meta: Meta }, { title });
  const create = Type.Object(
    { id: Type.Optional(ResourceId), ...Type.Omit(fields, commandFields).properties },
    { additionalProperties: false, title: `New${title}` },
  );
  const update = Type.Partial(Type.Omit(fields, UPDATE_EXCLUDED), {
    additionalProperties: false,
    minProperties: 1,
    title: `${title}Update`,
  });
  return { resource, create, update, page: PageOf(Type.Union([resource, Redacted])) };
}

export const ProjectSchemas = schemasOf("project", ProjectFields, ["status"]);
export const SubprojectSchemas = schemasOf("subproject", SubprojectFields, ["status"]);
export const WorkflowitemSchemas = schemasOf("workflowitem", WorkflowitemFields, ["status", "rejectReason"]);
const SCHEMAS = [ProjectSchemas, SubprojectSchemas, WorkflowitemSchemas] as const;

export const AssignBody = Type.Object({ assignee: IdentityId }, { additionalProperties: false });
export const CloseBody = Type.Object({ rejectReason: Type.Optional(Type.String({ minLength: 1, maxLength: 2000 })) }, { additionalProperties: false });
export const ResourcePermissionChange = Type.Object({ intent: Type.String({ minLength: 1, maxLength: 200 }), identity: IdentityId }, { additionalProperties: false });
export const HistoryQuery = Type.Object(
  {
    cursor: Type.Optional(Type.String({ maxLength: 2048 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
    order: Type.Optional(Type.Union([Type.Literal("asc"), Type.Literal("desc")], { default: "asc" })),
  },
  { additionalProperties: false },
);
export const HistoryEvent = Type.Object(
  {
    seq: Type.Integer(),
    at: Type.String({ format: "date-time" }),
    actor: Type.String(),
    type: Type.String(),
    path: Type.Array(Type.Object({ type: Type.String(), id: Type.String() })),
    payload: Type.Record(Type.String(), Type.Unknown()),
    prev: Type.Union([Type.String(), Type.Null()]),
    hash: Type.String(),
  },
  { title: "Event" },
);
export const OrderingBody = Type.Object({ ordering: Type.Array(ResourceId, { maxItems: 10_000 }) }, { additionalProperties: false });
export const Ordering = Type.Object({ ordering: Type.Array(Type.String()) });
export const VerifyResult = Type.Object({
  ok: Type.Boolean(),
  checked: Type.Integer(),
  firstBad: Type.Optional(Type.Object({ seq: Type.Integer(), reason: Type.String() })),
});
export const BudgetKey = Type.Object({ organization: Type.String({ minLength: 1, maxLength: 200 }), currencyCode: Type.String({ pattern: "^[A-Z]{3}$" }) });

type Params = Record<string, string>;

/** The resource a request addresses, from its path parameters. */
function refOf(depth: number, params: Params): Ref {
  return { type: LEVELS[depth]!.type, ids: LEVELS.slice(0, depth + 1).map((l) => params[l.param]!) };
}

/** Store errors name domain fields as `data.x`; over HTTP the body holds the fields, so they are `body.x`. */
async function asBody<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    if (e instanceof FlowstoreError && e.field?.startsWith("data.")) {
      Object.defineProperty(e, "field", { value: `body.${e.field.slice(5)}` });
    } else if (e instanceof FlowstoreError && e.field === "data") {
      Object.defineProperty(e, "field", { value: "body" });
    }
    throw e;
  }
}

/** `If-Match: "3"` → 3; absent or `*` → undefined. */
export function ifMatch(request: FastifyRequest): number | undefined {
  const h = request.headers["if-match"];
  if (h === undefined || h === "*") return undefined;
  const m = typeof h === "string" ? /^\s*(?:W\/)?"?(\d{1,9})"?\s*$/.exec(h) : null;
  if (!m) throw new ValidationError('If-Match must be an ETag given by this server, e.g. "3"', "header.if-match");
  return Number(m[1]);
}

function sendResource(reply: FastifyReply, json: Buffer | object, version: number, code = 200): FastifyReply {
  reply.header("etag", `"${version}"`).code(code);
  if (Buffer.isBuffer(json)) return reply.type("application/json; charset=utf-8").send(json);
  return reply.send(json);
}

export const workflowRoutes: FastifyPluginAsync = async (app: FastifyInstance) => {
  const { workflow } = app.flowstore;
  const store = workflow.store;

  LEVELS.forEach((level, depth) => {
    const s = SCHEMAS[depth]!;
    const parentPath = LEVELS.slice(0, depth).map((l) => `/${l.segment}/:${l.param}`).join("");
    const collection = `${parentPath}/${level.segment}`;
    const item = `${collection}/:${level.param}`;
    const params = Type.Object(Object.fromEntries(LEVELS.slice(0, depth + 1).map((l) => [l.param, ResourceId])));
    const parentParams = Type.Object(Object.fromEntries(LEVELS.slice(0, depth).map((l) => [l.param, ResourceId])));
    const tags = [`${level.type}s`];
    const T = level.type;

    app.post<{ Params: Params; Body: Record<string, unknown> }>(
      collection,
      { schema: { tags, summary: `Create a ${T}`, params: parentParams, body: s.create, response: { 201: s.resource, ...problems(400, 403, 404, 409, 413, 415) } } },
      async (request, reply) => {
        const p = request.params;
        const body = request.body as never;
        const created = await asBody(() =>
          T === "project"
            ? workflow.createProject(request.actor, body)
            : T === "subproject"
              ? workflow.createSubproject(request.actor, p.p!, body)
              : workflow.createWorkflowitem(request.actor, p.p!, p.s!, body),
        );
        reply.header("location", `${request.url.split("?")[0]}/${encodeURIComponent(created.id)}`);
        return sendResource(reply, created, created.meta.version, 201);
      },
    );

    app.get<{ Params: Params; Querystring: PageQuery }>(
      collection,
      {
        schema: {
          tags,
          summary: T === "workflowitem" ? "List workflowitems in effective order (ordering first, then by creation)" : `List ${T}s`,
          params: parentParams,
          querystring: PageQuery,
          response: { 200: s.page, ...problems(400, 403, 404) },
        },
      },
      async (request, reply) => {
        const p = request.params;
        const page =
          T === "project"
            ? await workflow.listProjects(request.actor, request.query)
            : T === "subproject"
              ? await store.listChildrenJson(request.actor, refOf(0, p), "subproject", request.query)
              : await workflow.listWorkflowitemsJson(request.actor, p.p!, p.s!, request.query);
        return sendJsonPage(reply, page.items, page.nextCursor);
      },
    );

    app.get<{ Params: Params }>(
      item,
      { schema: { tags, summary: `Get a ${T} (ETag: its version)`, params, response: { 200: s.resource, ...problems(400, 403, 404) } } },
      async (request, reply) => {
        const { json, version } = await store.getJson(request.actor, refOf(depth, request.params));
        return sendResource(reply, json, version);
      },
    );

    app.patch<{ Params: Params; Body: Record<string, unknown> }>(
      item,
      {
        schema: {
          tags,
          summary: `Update some fields of a ${T} (If-Match: a version; a stale one is a 409)`,
          params,
          body: s.update,
          response: { 200: s.resource, ...problems(400, 403, 404, 409, 413, 415) },
        },
      },
      async (request, reply) => {
        const updated = await asBody(() => workflow.update(request.actor, refOf(depth, request.params), request.body, { ifVersion: ifMatch(request) }));
        return sendResource(reply, updated, updated.meta.version);
      },
    );

    app.delete<{ Params: Params }>(
      item,
      { schema: { tags, summary: `Delete a ${T} and everything under it`, params, response: { 204: Type.Null(), ...problems(400, 403, 404, 409) } } },
      async (request, reply) => {
        await workflow.delete(request.actor, refOf(depth, request.params), { ifVersion: ifMatch(request) });
        return reply.code(204).send();
      },
    );

    app.post<{ Params: Params; Body: Static<typeof CloseBody> | undefined }>(
      `${item}/close`,
      {
        schema: {
          tags,
          summary: `Close a ${T}${T === "workflowitem" ? " (optionally rejecting it with a reason)" : " (every child must be closed)"}`,
          params,
          ...(T === "workflowitem" ? { body: Type.Optional(CloseBody) } : {}),
          response: { 200: s.resource, ...problems(400, 403, 404, 409, 415) },
        },
      },
      async (request, reply) => {
        const p = request.params;
        const closed = await asBody(() =>
          T === "project"
            ? workflow.closeProject(request.actor, p.p!)
            : T === "subproject"
              ? workflow.closeSubproject(request.actor, p.p!, p.s!)
              : workflow.closeWorkflowitem(request.actor, p.p!, p.s!, p.w!, { rejectReason: request.body?.rejectReason }),
        );
        return sendResource(reply, closed, closed.meta.version);
      },
    );

    app.post<{ Params: Params; Body: Static<typeof AssignBody> }>(
      `${item}/assign`,
      { schema: { tags, summary: `Assign a ${T}`, params, body: AssignBody, response: { 200: s.resource, ...problems(400, 403, 404, 409, 415) } } },
      async (request, reply) => {
        const r = await workflow.assign(request.actor, refOf(depth, request.params), request.body.assignee, { ifVersion: ifMatch(request) });
        return sendResource(reply, r, r.meta.version);
      },
    );

    app.get<{ Params: Params; Querystring: Static<typeof HistoryQuery> }>(
      `${item}/history`,
      { schema: { tags, summary: `The ${T}'s events, oldest first (order=desc: newest first)`, params, querystring: HistoryQuery, response: { 200: PageOf(HistoryEvent), ...problems(400, 403, 404) } } },
      async (request) => {
        const { cursor, limit, order } = request.query;
        return workflow.history(request.actor, refOf(depth, request.params), { cursor, limit, reverse: order === "desc" });
      },
    );

    app.get<{ Params: Params }>(
      `${item}/permissions`,
      { schema: { tags, summary: `List the ${T}'s permissions (${T}.intent.listPermissions)`, params, response: { 200: PermissionMap, ...problems(400, 403, 404) } } },
      async (request) => workflow.listPermissions(request.actor, refOf(depth, request.params)),
    );

    for (const action of ["grant", "revoke"] as const) {
      app.post<{ Params: Params; Body: Static<typeof ResourcePermissionChange> }>(
        `${item}/permissions/${action}`,
        {
          schema: {
            tags,
            summary: `${action === "grant" ? "Grant" : "Revoke"} an intent on the ${T} to a user or group (${T}.intent.${action}Permission)`,
            params,
            body: ResourcePermissionChange,
            response: { 204: Type.Null(), ...problems(400, 403, 404, 415) },
          },
        },
        async (request, reply) => {
          const ref = refOf(depth, request.params);
          const { intent, identity } = request.body;
          if (action === "grant" && !(await app.flowstore.identity.exists(identity))) {
            throw new ValidationError(`no user or group ${identity}`, "body.identity");
          }
          if (action === "grant") await workflow.grant(request.actor, ref, intent, identity);
          else await workflow.revoke(request.actor, ref, intent, identity);
          return reply.code(204).send();
        },
      );
    }

    if (T !== "workflowitem") {
      app.put<{ Params: Params; Body: Static<typeof ProjectedBudget> }>(
        `${item}/projected-budgets`,
        { schema: { tags, summary: `Set the projected budget of an organization in a currency (${T}.budget.updateProjected)`, params, body: ProjectedBudget, response: { 200: s.resource, ...problems(400, 403, 404, 409, 415) } } },
        async (request, reply) => {
          const r = await asBody(() => workflow.setProjectedBudget(request.actor, refOf(depth, request.params) as Ref & { type: "project" }, request.body));
          return sendResource(reply, r, r.meta.version);
        },
      );
      app.delete<{ Params: Params & Static<typeof BudgetKey> }>(
        `${item}/projected-budgets/:organization/:currencyCode`,
        {
          schema: {
            tags,
            summary: `Delete a projected budget (${T}.budget.deleteProjected)`,
            params: Type.Composite([params, BudgetKey]),
            response: { 200: s.resource, ...problems(400, 403, 404, 409) },
          },
        },
        async (request, reply) => {
          const { organization, currencyCode } = request.params;
          const r = await workflow.deleteProjectedBudget(request.actor, refOf(depth, request.params) as Ref & { type: "project" }, organization, currencyCode);
          return sendResource(reply, r, r.meta.version);
        },
      );
    }

    if (T === "subproject") {
      app.get<{ Params: Params }>(
        `${item}/workflowitem-ordering`,
        { schema: { tags, summary: "The manual ordering of the workflowitems (ETag: the subproject's version)", params, response: { 200: Ordering, ...problems(400, 403, 404) } } },
        async (request, reply) => {
          const { ordering, version } = await store.getOrdering(request.actor, refOf(depth, request.params));
          return sendResource(reply, { ordering }, version);
        },
      );
      app.put<{ Params: Params; Body: Static<typeof OrderingBody> }>(
        `${item}/workflowitem-ordering`,
        {
          schema: {
            tags,
            summary: "Replace the ordering, all or nothing (If-Match: the subproject's version; a stale one is a 409)",
            params,
            body: OrderingBody,
            response: { 200: Ordering, ...problems(400, 403, 404, 409, 413, 415) },
          },
        },
        async (request, reply) => {
          const p = request.params;
          const r = await asBody(() => workflow.reorderWorkflowitems(request.actor, p.p!, p.s!, request.body.ordering, { ifVersion: ifMatch(request) }));
          return sendResource(reply, { ordering: request.body.ordering }, r.meta.version);
        },
      );
    }

    if (T === "project") {
      app.get<{ Params: Params }>(
        `${item}/verify`,
        { schema: { tags, summary: "Recompute the project's hash chain (project.viewHistory)", params, response: { 200: VerifyResult, ...problems(400, 403, 404) } } },
        async (request) => {
          const ref = refOf(0, request.params);
          await store.history(request.actor, ref, { limit: 1 });
          return store.verify(store.partitionOf(ref));
        },
      );
    }
  });
};
