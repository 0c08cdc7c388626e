/**
 * TruBudget's project routes (its project_*.ts), over the workflow's commands and reads:
 *
 *   POST /global.createProject          {project: {id?, status?: "open", displayName, …}} → {project: {id}}
 *   GET  /project.list                  → {items: [{allowedIntents, data}]}
 *   GET  /v2/project.list?page&limit&search&sort&order → {items, pagination} (apiVersion "2.0")
 *   GET  /project.viewDetails?projectId → {project, subprojects}
 *   POST /project.createSubproject      {projectId, subproject: {…, currency}} → {project: {id}, subproject: {id}}
 *
 * A project the caller may list but not view is listed redacted by flowstore; TruBudget has no redacted
 * project (its list shows viewable ones), so the lists here leave such a project out. Root reads every
 * project whole, as TruBudget's root (workflow-common.ts `readerOf`).
 */
import { Type } from "@sinclair/typebox";
import { projectRef } from "../../workflow/commands.js";
import { ProjectFields, SubprojectFields } from "../../workflow/schema.js";
import { ResourceId } from "../../resources/model/wire.js";
import { SEARCH_MAX } from "../../resources/read/query.js";
import { PageCache } from "../../resources/read/page-cache.js";
import type { RoutePlugin } from "../context.js";
import { API_VERSION, Envelope, ok } from "./envelope.js";
import { exposeProject, exposeSubproject, type Served } from "./expose.js";
import { tbIntents } from "./intents.js";
import { fieldsAt, notRoot, optional, ownIntents, parsed, readAll, readerOf, under, uniqueBudgets } from "./workflow-common.js";

const P = ProjectFields.properties;
const S = SubprojectFields.properties;
/** TruBudget's new project (project_create.ts): status may only say "open". */
const NewProject = Type.Object(
  {
    id: Type.Optional(ResourceId),
    status: Type.Optional(Type.Literal("open")),
    displayName: P.displayName,
    ...optional({ description: P.description, assignee: P.assignee, thumbnail: P.thumbnail, projectedBudgets: P.projectedBudgets, additionalData: P.additionalData, tags: P.tags }),
  },
  { additionalProperties: false },
);
/** TruBudget's new subproject (subproject_create.ts): a currency is required. */
const NewSubproject = Type.Object(
  {
    id: Type.Optional(ResourceId),
    status: Type.Optional(Type.Literal("open")),
    displayName: S.displayName,
    currency: S.currency,
    ...optional({
      description: S.description,
      assignee: S.assignee,
      validator: S.validator,
      workflowitemType: S.workflowitemType,
      projectedBudgets: S.projectedBudgets,
      additionalData: S.additionalData,
      workflowMode: S.workflowMode,
    }),
  },
  { additionalProperties: false },
);

/** TruBudget's v2 sort names → the project query's sort fields (workflow/search.ts). */
const SORTS = { name: "displayName", date: "createdAt", status: "status", assignee: "assignee" } as const;
const V2Query = Type.Object(
  {
    page: Type.Optional(Type.Integer({ minimum: 1 })),
    limit: Type.Optional(Type.Integer({ minimum: 1 })),
    search: Type.Optional(Type.String({ maxLength: SEARCH_MAX })),
    sort: Type.Optional(Type.Union((Object.keys(SORTS) as (keyof typeof SORTS)[]).map((k) => Type.Literal(k)))),
    order: Type.Optional(Type.Union([Type.Literal("asc"), Type.Literal("desc")])),
  },
  { additionalProperties: false },
);
const LIST_OPEN = Buffer.from(`{"apiVersion":"${API_VERSION}","data":{"items":[`);
const LIST_CLOSE = Buffer.from("]}}");
const COMMA = Buffer.from(",");
const EMPTY = Buffer.alloc(0);

/** TruBudget's page size when none is asked for (its lib/pagination.ts). */
const V2_DEFAULT_LIMIT = 10;

export const projectRoutes: RoutePlugin = async (app) => {
  const { workflow } = app.flowstore;
  const store = workflow.store;
  const intents = tbIntents(store);
  /** Viewable projects of a list's pages, exposed. */
  const exposeAll = (items: Served[]) => items.filter((r) => !r.redacted).map((r) => exposeProject(r, intents));

  app.post("/global.createProject", { schema: { body: Envelope(Type.Object({ project: NewProject }, { additionalProperties: false })) } }, async (request) => {
    const { status: _open, ...project } = request.body.data.project;
    notRoot(request.actor, "project");
    uniqueBudgets(project.projectedBudgets, "data.project.projectedBudgets");
    const created = await fieldsAt(under("project"), () => workflow.createProject(request.actor, project));
    return ok({ project: { id: created.id } });
  });

  /**
   * project.list's translated items, by the bytes of the record they translate (which carry the caller's
   * allowedIntents): a project unchanged since the last list is not parsed and written again. Bounded as
   * the store's page cache is (count and bytes, oldest first out).
   */
  const translated = new PageCache(20_000, 32 * 1024 * 1024);
  const REDACTED = Buffer.alloc(0);
  app.get("/project.list", async (request, reply) => {
    const reader = readerOf(request.actor);
    if (reader !== request.actor) {
      const all = await readAll((cursor, limit) => store.reads.listChildrenJson(reader, null, "project", { cursor, limit, allowedIntents: true }));
      return ok({ items: (await ownIntents(store, request.actor, "project", [], parsed<Served>(all))).map((r) => exposeProject(r, intents)) });
    }
    const items = await readAll((cursor, limit) => workflow.store.reads.listChildrenJson(request.actor, null, "project", { cursor, limit, allowedIntents: true }));
    const parts: Buffer[] = [];
    for (const raw of items) {
      const key = raw.toString("latin1");
      let item = translated.get(key);
      if (item === undefined) {
        const r = JSON.parse(raw.toString("utf8")) as Served;
        item = r.redacted ? REDACTED : Buffer.from(JSON.stringify(exposeProject(r, intents)));
        translated.set(key, item);
      }
      if (item.length > 0) parts.push(parts.length > 0 ? COMMA : EMPTY, item);
    }
    return reply.type("application/json; charset=utf-8").send(Buffer.concat([LIST_OPEN, ...parts, LIST_CLOSE]));
  });

  app.get("/v2/project.list", { schema: { querystring: V2Query } }, async (request) => {
    const { page = 1, limit = V2_DEFAULT_LIMIT, search, sort, order } = request.query;
    const q = { search, sort: sort === undefined ? undefined : SORTS[sort], order };
    const read = await readAll((cursor, max) => store.reads.queryChildrenJson(readerOf(request.actor), null, "project", { ...q, cursor, limit: max, allowedIntents: true }));
    const items = exposeAll(await ownIntents(store, request.actor, "project", [], parsed<Served>(read)));
    const totalPages = Math.ceil(items.length / limit);
    const rest = new URLSearchParams(Object.entries({ search, sort, order }).filter((e): e is [string, string] => e[1] !== undefined)).toString();
    const link = (n: number) => `/v2/project.list?page=${n}&limit=${limit}${rest ? `&${rest}` : ""}`;
    return {
      apiVersion: "2.0",
      data: {
        items: items.slice((page - 1) * limit, page * limit),
        pagination: {
          totalRecords: items.length,
          limit,
          totalPages,
          currentPage: page,
          nextPage: page + 1 <= totalPages ? link(page + 1) : null,
          prevPage: page > 1 ? link(page - 1) : null,
        },
      },
    };
  });

  const ProjectQuery = Type.Object({ projectId: ResourceId }, { additionalProperties: false });
  app.get("/project.viewDetails", { schema: { querystring: ProjectQuery } }, async (request) => {
    const { projectId } = request.query;
    const ref = projectRef(projectId);
    const reader = readerOf(request.actor);
    const { json } = await store.reads.getJson(reader, ref, { allowedIntents: true });
    const [project] = await ownIntents(store, request.actor, "project", [], [JSON.parse(json.toString("utf8")) as Served]);
    const subprojects = await readAll((cursor, limit) => store.reads.listChildrenJson(reader, ref, "subproject", { cursor, limit, allowedIntents: true }));
    return ok({
      project: exposeProject(project!, intents),
      subprojects: (await ownIntents(store, request.actor, "subproject", [projectId], parsed<Served>(subprojects)))
        .filter((r) => !r.redacted)
        .map((r) => exposeSubproject(r, intents)),
    });
  });

  app.post(
    "/project.createSubproject",
    { schema: { body: Envelope(Type.Object({ projectId: ResourceId, subproject: NewSubproject }, { additionalProperties: false })) } },
    async (request) => {
      const { projectId, subproject } = request.body.data;
      const { status: _open, ...fields } = subproject;
      notRoot(request.actor, "subproject");
      uniqueBudgets(fields.projectedBudgets, "data.subproject.projectedBudgets");
      // TruBudget stores a subproject's assignee unchecked (only a workflowitem's creation checks its assignee).
      const created = await fieldsAt(under("subproject"), () => workflow.createSubproject(request.actor, projectId, fields, { uncheckedAssignee: true }));
      return ok({ project: { id: projectId }, subproject: { id: created.id } });
    },
  );
};
