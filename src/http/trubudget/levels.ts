/**
 * The routes TruBudget has alike on projects, subprojects and workflowitems, one set per level:
 *
 *   GET  /<level>.viewHistory?<ids>&offset&limit&publisher&startAt&endAt&eventType
 *                                           → {historyItemsCount, events} (chronological)
 *   POST /<level>.update                    {<ids>, …fields} → {} (workflowitems: workflowitems.ts)
 *   POST /<level>.assign                    {<ids>, identity} → {}
 *   POST /<level>.close                     {<ids>, rejectReason? (workflowitem)} → {}
 *   GET  /<level>.intent.listPermissions?<ids>  → {intent: [identity]}
 *   POST /<level>.intent.grantPermission    {<ids>, identity, intent} → {}
 *   POST /<level>.intent.revokePermission   {<ids>, identity, intent} → {}
 *   POST /<level>.budget.updateProjected    {<ids>, organization, currencyCode, value} → {<id>, projectedBudgets}
 *   POST /<level>.budget.deleteProjected    {<ids>, organization, currencyCode} → {<id>, projectedBudgets}
 *
 * Each calls the workflow command the native route calls (routes/workflow.ts, declared.ts).
 */
import { Type, type TObject, type TOptional } from "@sinclair/typebox";
import type { ResourceEvent } from "../../resources/model/events.js";
import type { Ref } from "../../resources/model/ref.js";
import { IdentityId } from "../../identity/wire.js";
import { ProjectedBudget, ProjectFields, RejectReason, SubprojectFields } from "../../workflow/schema.js";
import { ConflictError, ForbiddenError, StaleVersionError } from "../../errors.js";
import type { RoutePlugin } from "../context.js";
import { Envelope, errorBody, ok } from "./envelope.js";
import { exposeHistory, nativeEventType } from "./expose.js";
import { tbIntents, toNativeIntent } from "./intents.js";
import { dropsUnknown } from "./validation.js";
import { fieldsAt, ID_FIELDS, idsWith, LEVELS, OffsetLimit, optional, readAll, refOf, sliceOf, type Ids } from "./workflow-common.js";

const HistoryFilter = {
  ...OffsetLimit,
  publisher: Type.Optional(Type.String({ minLength: 1 })),
  startAt: Type.Optional(Type.String({ minLength: 1, description: "ISO timestamp: entries at or after it" })),
  endAt: Type.Optional(Type.String({ minLength: 1, description: "ISO timestamp: entries at or before it" })),
  eventType: Type.Optional(Type.String({ minLength: 1, description: "TruBudget's event type, e.g. project_updated" })),
};

/**
 * Where TruBudget's route schema closes `data` (its Ajv then drops unknown properties instead of its Joi
 * refusing them): subproject.update, subproject.assign|close, workflowitem.assign; and the whole body of
 * workflowitem.intent.grantPermission|revokePermission.
 */
const DROPS_DATA = new Set(["subproject.update", "subproject.assign", "subproject.close", "workflowitem.assign"]);
const DROPS_BODY = new Set(["workflowitem.intent.grantPermission", "workflowitem.intent.revokePermission"]);
const body = <T extends TObject>(route: string, data: T) => {
  const envelope = Envelope(DROPS_DATA.has(route) ? dropsUnknown(data) : data);
  return DROPS_BODY.has(route) ? dropsUnknown(envelope) : envelope;
};

/** The fields TruBudget's update of a project or subproject takes (its project_update.ts, subproject_update.ts). */
const P = ProjectFields.properties;
const UPDATABLE = {
  // `markdown` is TruBudget's project text, which flowstore's project does not hold: taken and not stored.
  project: { displayName: P.displayName, description: P.description, thumbnail: P.thumbnail, additionalData: P.additionalData, tags: P.tags, markdown: Type.String() },
  subproject: { displayName: SubprojectFields.properties.displayName, description: P.description, additionalData: P.additionalData },
};

type Budgeted = Ref & { type: "project" | "subproject" };

export const levelRoutes: RoutePlugin = async (app) => {
  const { workflow } = app.flowstore;
  const intents = tbIntents(workflow.store);

  for (const level of LEVELS) {
    const idField = ID_FIELDS[level].at(-1)!;
    const ref = (ids: Ids) => refOf(level, ids);

    const HistoryQuery = idsWith(level, HistoryFilter);
    app.get(`/${level}.viewHistory`, { schema: { querystring: HistoryQuery } }, async (request) => {
      const { offset = 0, limit, publisher, startAt, endAt, eventType, ...ids } = request.query;
      const r = ref(ids);
      const history = (filter: { publisher?: string; since?: string; until?: string; type?: string }) =>
        readAll<ResourceEvent>((cursor, max) => workflow.history(request.actor, r, { ...filter, cursor, limit: max }));
      const filtered = publisher !== undefined || startAt !== undefined || endAt !== undefined || eventType !== undefined;
      // A range that ends before it starts selects nothing on TruBudget (200, no events: its history filter
      // applies each bound on its own); the native history refuses it, so it is read without the end here.
      const inverted = startAt !== undefined && endAt !== undefined && Date.parse(startAt) > Date.parse(endAt);
      const read = await fieldsAt(
        (f) => ({ since: "querystring.startAt", until: "querystring.endAt" })[f] ?? f,
        () => history({ publisher, since: startAt, until: inverted ? undefined : endAt, type: eventType === undefined ? undefined : nativeEventType(level, eventType) }),
      );
      const selected = inverted ? [] : read;
      const all = filtered ? await history({}) : selected;
      return ok({ historyItemsCount: selected.length, events: exposeHistory(level, r.ids.at(-1)!, all, sliceOf(selected, offset, limit)) });
    });

    if (level !== "workflowitem") {
      const Update = body(`${level}.update`, idsWith(level, optional(UPDATABLE[level])));
      app.post(`/${level}.update`, { schema: { body: Update } }, async (request) => {
        const { projectId, subprojectId, ...patch } = request.body.data;
        if ("markdown" in patch) delete patch.markdown; // a project's, taken and not stored (UPDATABLE)
        await workflow.update(request.actor, ref({ projectId, subprojectId }), patch);
        return ok({});
      });
    }

    const Assign = body(`${level}.assign`, idsWith(level, { identity: IdentityId }));
    app.post(`/${level}.assign`, { schema: { body: Assign } }, async (request) => {
      const { identity, ...ids } = request.body.data;
      try {
        await fieldsAt(
          (f) => (f === "assignee" ? "data.identity" : f),
          () => workflow.assign(request.actor, ref(ids), identity),
        );
      } catch (e) {
        // TruBudget answers assigning the assignee it already has 200 and changes nothing (a closed resource included).
        if (!(e instanceof ConflictError) || (await workflow.store.reads.get(request.actor, { ...ref(ids), type: level }).catch(() => undefined))?.data.assignee !== identity)
          throw e;
      }
      return ok({});
    });

    const closeFields: { rejectReason?: TOptional<typeof RejectReason> } = level === "workflowitem" ? { rejectReason: Type.Optional(RejectReason) } : {};
    const Close = body(`${level}.close`, idsWith(level, closeFields));
    const byAssignment = { authority: "assignment" } as const;
    // TruBudget's close rule: the assignee (or validator) who can see the resource closes it; there is no close
    // intent on its API (rules.ts CloseAuthority). A close its preconditions refuse (not the assignee; an open
    // child; an earlier item still open) is TruBudget's PreconditionError, a 412.
    app.post(`/${level}.close`, { schema: { body: Close } }, async (request, reply) => {
      const { projectId, subprojectId, workflowitemId, rejectReason } = request.body.data;
      const refused = (e: unknown) => {
        if (e instanceof ConflictError && !(e instanceof StaleVersionError) && e.field === "status") return reply.code(412).send(errorBody(412, e.message));
        if (e instanceof ForbiddenError && e.field === "assignee") return reply.code(412).send(errorBody(412, e.message));
        throw e;
      };
      await fieldsAt(
        (f) => (f === "rejectReason" ? "data.rejectReason" : f),
        () =>
          level === "project"
            ? workflow.closeProject(request.actor, projectId, byAssignment)
            : level === "subproject"
              ? workflow.closeSubproject(request.actor, projectId, subprojectId!, byAssignment)
              : workflow.closeWorkflowitem(request.actor, projectId, subprojectId!, workflowitemId!, { ...byAssignment, rejectReason }),
      ).then(() => reply.send(ok({})), refused);
    });

    app.get(`/${level}.intent.listPermissions`, { schema: { querystring: idsWith(level) } }, async (request) =>
      ok(intents.permissions(level, await workflow.listPermissions(request.actor, ref(request.query)))),
    );

    const Permission = (verb: string) => body(`${level}.intent.${verb}`, idsWith(level, { identity: IdentityId, intent: intents.schema(level) }));
    for (const [verb, run] of [
      ["grantPermission", workflow.grant.bind(workflow)],
      ["revokePermission", workflow.revoke.bind(workflow)],
    ] as const) {
      app.post(`/${level}.intent.${verb}`, { schema: { body: Permission(verb) } }, async (request) => {
        const { identity, intent, ...ids } = request.body.data;
        await fieldsAt(
          (f) => (f === "identity" ? "data.identity" : f),
          () => run(request.actor, ref(ids), toNativeIntent(intent), identity),
        );
        return ok({});
      });
    }

    if (level !== "workflowitem") {
      const B = ProjectedBudget.properties;
      const budgetAnswer = (ids: Ids, data: Record<string, unknown>) => ok({ [idField]: ids[idField as keyof Ids], projectedBudgets: data.projectedBudgets ?? [] });
      const UpdateBudget = Envelope(idsWith(level, { organization: B.organization, currencyCode: B.currencyCode, value: B.value }));
      app.post(`/${level}.budget.updateProjected`, { schema: { body: UpdateBudget } }, async (request) => {
        const { organization, currencyCode, value, ...ids } = request.body.data;
        const r = await fieldsAt(
          (f) => f.replace(/^(data\.)?projectedBudgets\.\d+\./, "data."),
          () => workflow.setProjectedBudget(request.actor, ref(ids) as Budgeted, { organization, currencyCode, value }),
        );
        return budgetAnswer(ids, r.data);
      });
      const DeleteBudget = Envelope(idsWith(level, { organization: B.organization, currencyCode: B.currencyCode }));
      app.post(`/${level}.budget.deleteProjected`, { schema: { body: DeleteBudget } }, async (request) => {
        const { organization, currencyCode, ...ids } = request.body.data;
        const r = await workflow.deleteProjectedBudget(request.actor, ref(ids) as Budgeted, organization, currencyCode);
        return budgetAnswer(ids, r.data);
      });
    }
  }
};
