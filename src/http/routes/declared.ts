/**
 * REST routes derived from a resources declaration: every declared type gets create, list, get, update,
 * delete, history and permissions (and verify, on a partition owner), with paths, parameters, bodies,
 * responses and OpenAPI tags derived from its declaration. No per-type route code: a schema passed here
 * is served whole.
 *
 * Paths (the rule):
 *   - a type's collection segment is its name in kebab case, plural (`contentObject` → `content-objects`;
 *     a name ending in s stays as it is), and its id parameter is `<type>Id`; both may be overridden;
 *   - a type is addressed by its chain from its partition owner down: a root or flat type at
 *     `/<segment>/:<param>`, a nested type below its parent's address
 *     (`/tenants/:tenantId/content-objects/:contentObjectId`);
 *   - a type is created and listed under its parent's address (`POST /spaces/:spaceId/tenants`), a root
 *     at `/<segment>`; a flat child is then addressed by its global id (`/tenants/:tenantId`).
 * Bodies: the create body is the type's fields less those a command owns (`ownedFields`, save those a
 * create may set) plus an optional `id`; the update body is some of the fields no command owns. Each
 * type's shapes are named components: `Space`, `NewSpace`, `SpaceUpdate`, `SpacePage`.
 * OperationIds name the type: `create<Type>`, `list<Type>s`, `get<Type>`, `update<Type>`, `delete<Type>`,
 * `get<Type>History`, `list<Type>Permissions`, `grant<Type>Permission`… (a test keeps the list stable).
 * Reads answer the stored JSON bytes as they are; the ETag of a resource is its version, and writes take
 * it back as If-Match (a stale one is a 412; routes say so in their `config`, see http/openapi.ts). A domain with rules plugs its commands in (`commands`)
 * and adds its own routes per type (`extend`), with the same paths, parameters and schemas.
 */
import { Type, type Static, type TObject, type TOptional, type TPartial, type TSchema, type TString } from "@sinclair/typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import { FlowstoreError, PreconditionFailedError, ValidationError } from "../../errors.js";
import type { Actor } from "../../access/actor.js";
import type { Ref } from "../../resources/model/ref.js";
import type { Envelope } from "../../resources/model/record.js";
import type { CommandOnlyKeys, CompiledType, OwnedKeys, Schema, SchemaDecl } from "../../resources/model/schema.js";
import { DEFAULT_SORT, SEARCH_MAX } from "../../resources/read/query.js";
import type { ResourceStore } from "../../resources/store.js";
import { EnvelopeOf, Event, ListSequence, PAGE_LIMIT, Redacted, ResourceId, SignedCheckpoint, VerifyResult } from "../../resources/model/wire.js";
import { IdentityId, PermissionMap } from "../../identity/wire.js";
import type { App, RoutePlugin, ServerContext } from "../context.js";
import { PageOf, pageQueryOf, sendJsonPage } from "../pagination.js";
import { problems } from "../problem.js";

export const ResourcePageQuery = pageQueryOf(PAGE_LIMIT);
export type ResourcePageQuery = Static<typeof ResourcePageQuery>;
export const HistoryQuery = Type.Object(
  {
    ...ResourcePageQuery.properties,
    order: Type.Optional(Type.Union([Type.Literal("asc"), Type.Literal("desc")], { default: "asc" })),
    publisher: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: "only events of this user (TruBudget's history filter)" })),
    since: Type.Optional(Type.String({ format: "date-time", description: "only events at or after this time" })),
    until: Type.Optional(Type.String({ format: "date-time", description: "only events at or before this time" })),
    type: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, pattern: "^[a-z][a-zA-Z0-9_]*\\.[a-z][a-zA-Z0-9_]*$", description: "only events of this type, e.g. workflowitem.closed" }),
    ),
    diff: Type.Optional(
      Type.Boolean({
        default: false,
        description:
          "every event that changed the data with its field-level diff (payload.changes: [{path, old?, new?, key?}]); events written before diffs were recorded get theirs from a replay",
      }),
    ),
  },
  { additionalProperties: false },
);
export const EventPage = PageOf(Event, "EventPage");

/** The list of an ordered collection whose parent declares a second order (`closedFirst`): the page's query and the order to list in. */
export const OrderedListQuery = Type.Object({ ...ResourcePageQuery.properties, sequence: Type.Optional(ListSequence) }, { additionalProperties: false });
export type OrderedListQuery = Static<typeof OrderedListQuery>;

/** The search and sort parameters of a list whose type declares a `query` (resources/query.ts). */
export interface ListQueryParams {
  search?: string;
  sort?: string;
  order?: "asc" | "desc";
}

/** A searchable list's query: the page's, a search text, one of the type's sort fields and an order. */
export const listQueryOf = (sort: readonly string[]) =>
  Type.Object(
    {
      ...ResourcePageQuery.properties,
      search: Type.Optional(Type.String({ maxLength: SEARCH_MAX, description: "free text over display name and id; name:, tag:, status: prefixes (TruBudget's syntax)" })),
      sort: Type.Optional(
        Type.Union(
          sort.map((f) => Type.Literal(f)),
          { description: `default ${DEFAULT_SORT}` },
        ),
      ),
      order: Type.Optional(Type.Union([Type.Literal("asc"), Type.Literal("desc")], { description: "default asc" })),
    },
    { additionalProperties: false },
  );
export const ResourcePermissionChange = Type.Object(
  { intent: Type.String({ minLength: 1, maxLength: 200 }), identity: IdentityId },
  { additionalProperties: false, $id: "ResourcePermissionChange" },
);

const cap = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

/**
 * The named shapes of one declared type: the resource as answered, the create body, the update body and
 * a page of resources or redacted children. Typed, so the client's types are these same declarations.
 */
/** A create body: an optional id and the fields less those only a command sets (typed for the client). */
type CreateBody<F extends TObject, K extends PropertyKey> = TObject<{ id: TOptional<TString> } & Omit<F["properties"], K>>;
/** An update body: some of the fields a generic update may set. */
type UpdateBody<F extends TObject, K extends PropertyKey> = TPartial<TObject<Omit<F["properties"], K> & Record<never, TSchema>>>;

export function typeSchemas<S extends SchemaDecl, T extends keyof S & string>(schema: Schema<S>, type: T) {
  const decl = schema.decl[type]!;
  const fields = decl.fields as S[T]["fields"];
  const title = cap(type);
  const owned = Object.entries(decl.ownedFields ?? {});
  const commandOnly = owned.filter(([, o]) => o.initial !== true).map(([k]) => k) as CommandOnlyKeys<S[T]>[];
  const ownedKeys = owned.map(([k]) => k) as OwnedKeys<S[T]>[];
  const resource = EnvelopeOf(type, fields, title);
  // TypeBox loses the field types of an Omit over generic keys: the bodies are typed by what they are.
  const create = Type.Object(
    { id: Type.Optional(ResourceId), ...Type.Omit(fields, commandOnly).properties },
    { additionalProperties: false, $id: `New${title}` },
  ) as unknown as CreateBody<S[T]["fields"], CommandOnlyKeys<S[T]>>;
  const update = Type.Partial(Type.Omit(fields, ownedKeys), { additionalProperties: false, minProperties: 1, $id: `${title}Update` }) as unknown as UpdateBody<
    S[T]["fields"],
    OwnedKeys<S[T]>
  >;
  const page = PageOf(Type.Union([resource, Redacted]), `${title}Page`);
  return { resource, create, update, page, updated: updatedResponses(resource) };
}

/**
 * What a write to an existing resource answers (an update, an assign, a close…): 200 with the resource to
 * a caller that may view it once written, else 204 with no body (sendWritten). Both carry the new ETag.
 */
export const updatedResponses = <R extends TSchema>(resource: R) => ({
  200: resource,
  204: Type.Null({
    description: "No Content: the write is done; the caller may act on the resource but not view it. The ETag is its new version, for the next If-Match",
  }),
});

/** One declared type as served: its paths, parameters, tags, schemas and the ref a request addresses. */
export interface ServedType {
  readonly type: CompiledType;
  /** Where it is created and listed (under its parent's address; a root at its own segment). */
  readonly collection: string;
  /** Where one is addressed. */
  readonly item: string;
  readonly params: IdParams;
  readonly parentParams: IdParams;
  readonly tags: string[];
  readonly schemas: ReturnType<typeof typeSchemas>;
  refOf(params: Record<string, string>): Ref;
  parentOf(params: Record<string, string>): Ref | null;
}

/** A domain's create of one declared type: the body is the fields (and optional id) its create schema accepted. */
export type CreateCommand = (actor: Actor, parent: Ref | null, body: Record<string, unknown>) => Promise<Envelope>;

/** The writes a domain runs in place of the generic ones, where it has rules (defaults, guards); creates by declared type. */
export interface DeclaredCommands<S extends SchemaDecl = SchemaDecl> {
  create?: { readonly [T in keyof S & string]?: CreateCommand };
  update?(actor: Actor, ref: Ref, patch: Record<string, unknown>, options: { ifVersion?: number }): Promise<Envelope>;
  delete?(actor: Actor, ref: Ref, options: { ifVersion?: number }): Promise<void>;
}

export interface DeclaredRoutesOptions<S extends SchemaDecl> {
  /** The store whose schema is served, from the server's context. */
  readonly store: (context: ServerContext) => ResourceStore<S>;
  /** Collection segments by type (default: kebab-case plural of the name). */
  readonly segments?: Partial<Record<keyof S & string, string>>;
  /** Id parameter names by type (default `<type>Id`). */
  readonly params?: Partial<Record<keyof S & string, string>>;
  readonly commands?: (context: ServerContext) => DeclaredCommands<S>;
  /** Adds a domain's own routes for a type (registered right after the type's generic ones). */
  readonly extend?: (app: App, served: ServedType) => void;
}

/** Store errors name domain fields as `data.x`; over HTTP the body holds the fields, so they are `body.x`. */
export async function asBody<T>(run: () => Promise<T>): Promise<T> {
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

/** One entry of an If-Match list that the strong comparison can match: a quoted version, `"3"`. */
const STRONG_VERSION = /^"(\d{1,9})"$/;

/**
 * `If-Match: "3"` → 3; absent or `*` → undefined (a server that requires If-Match has refused an absent
 * one already, see conventions.ts). If-Match compares strongly (RFC 9110 §13.1.1): a weak tag (`W/"3"`),
 * an unquoted one or a tag that is no version of ours never matches, so the write is refused 412; a list
 * naming two different versions is a 400. Only on a route whose `config` declares `ifMatch`.
 */
export function ifMatch(request: FastifyRequest): number | undefined {
  if (request.routeOptions.config.ifMatch !== true) throw new Error(`${request.routeOptions.url} reads If-Match but does not declare config.ifMatch`);
  const h = request.headers["if-match"];
  if (h === undefined || h.trim() === "*") return undefined;
  const versions = new Set(
    h
      .split(",")
      .map((tag) => STRONG_VERSION.exec(tag.trim())?.[1])
      .filter((v) => v !== undefined),
  );
  if (versions.size === 0)
    throw new PreconditionFailedError(
      `If-Match ${JSON.stringify(h)} matches no version: send the strong ETag a GET gave, e.g. "3" (a weak W/"3" never matches)`,
      "header.if-match",
    );
  if (versions.size > 1) throw new ValidationError('If-Match names more than one version: send the one ETag a GET gave, e.g. "3"', "header.if-match");
  return Number([...versions][0]);
}

/**
 * Answers a write to an existing resource: the resource with the intents the actor holds on it
 * (allowedIntents, as reads answer) when it may view it once written, else 204 and no body (it may act on
 * it but not view it: it learns no more from its write than from a list); its version as the ETag either
 * way (for the next If-Match).
 */
export async function sendWritten(reply: FastifyReply, store: ResourceStore, actor: Actor, ref: Ref, written: Envelope): Promise<FastifyReply> {
  const seen = await store.reads.seenBy(actor, ref, written, { allowedIntents: true });
  if (seen === null) return sendResource(reply, null, written.meta.version, 204);
  return sendResource(reply, seen, written.meta.version);
}

/**
 * Answers a create: 201 and the resource whole, with the intents its creator holds on it, even when they
 * leave the creator no view of it (a restricted workflowitem made for another assignee): it holds what the
 * creator sent and the facts of the creation, no permission map (reads.seenByCreator).
 */
export async function sendCreated(reply: FastifyReply, store: ResourceStore, actor: Actor, ref: Ref, created: Envelope): Promise<FastifyReply> {
  return sendResource(reply, await store.reads.seenByCreator(actor, ref, created, { allowedIntents: true }), created.meta.version, 201);
}

/** Answers a resource (or its stored JSON bytes; null: no body, a 204) with its version as the ETag (the route declares `config.etag`). */
export function sendResource(reply: FastifyReply, json: Buffer | object | null, version: number, code = 200): FastifyReply {
  if (reply.request.routeOptions.config.etag !== true) throw new Error(`${reply.request.routeOptions.url} answers an ETag but does not declare config.etag`);
  reply.header("etag", `"${version}"`).code(code);
  if (json === null) return reply.send();
  if (Buffer.isBuffer(json)) return reply.type("application/json; charset=utf-8").send(json);
  return reply.send(json);
}

const kebabPlural = (name: string): string => {
  const kebab = name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
  return kebab.endsWith("s") ? kebab : `${kebab}s`;
};

/** The path parameters addressing a resource: one id per level of its chain, named by the served type. */
export type IdParams = TObject<Record<string, TString>>;

/** The served types of a schema, parents before children. */
export function servedTypes<S extends SchemaDecl>(schema: Schema<S>, options: Pick<DeclaredRoutesOptions<S>, "segments" | "params"> = {}): ServedType[] {
  const seg = (t: string): string => options.segments?.[t as keyof S & string] ?? kebabPlural(t);
  const param = (t: string): string => options.params?.[t as keyof S & string] ?? `${t}Id`;
  const addressOf = (t: CompiledType): string => {
    const owner = `/${seg(t.chain[0]!)}/:${param(t.chain[0]!)}`;
    return (
      owner +
      t.chain
        .slice(1)
        .map((c) => `/${seg(c)}/:${param(c)}`)
        .join("")
    );
  };
  const paramsOf = (chain: readonly string[]): IdParams => Type.Object(Object.fromEntries(chain.map((c) => [param(c), ResourceId])));
  const out: ServedType[] = [];
  const visit = (t: CompiledType): void => {
    const parent = t.decl.parent === null ? null : schema.type(t.decl.parent);
    // the parameter names of its chain and its parent's, named once here, not on every request
    const names = t.chain.map(param);
    const parentNames = parent?.chain.map(param) ?? [];
    out.push({
      type: t,
      collection: `${parent ? addressOf(parent) : ""}/${seg(t.name)}`,
      item: addressOf(t),
      params: paramsOf(t.chain),
      parentParams: paramsOf(parent?.chain ?? []),
      tags: [seg(t.name)],
      schemas: typeSchemas(schema as Schema, t.name),
      refOf: (p) => ({ type: t.name, ids: names.map((n) => p[n]!) }),
      parentOf: (p) => (parent ? { type: parent.name, ids: parentNames.map((n) => p[n]!) } : null),
    });
    for (const c of t.children) visit(schema.type(c));
  };
  for (const t of schema.types.values()) if (t.decl.parent === null) visit(t);
  return out;
}

/** The Fastify plugin serving every type of a store's schema (see the rules at the top). */
export function declaredRoutes<S extends SchemaDecl>(options: DeclaredRoutesOptions<S>): RoutePlugin {
  return async (app) => {
    const store = options.store(app.flowstore);
    // The generic writes address a type by its name at run time: its fields are checked by the schema.
    const generic: ResourceStore = store;
    const commands = options.commands?.(app.flowstore) ?? {};
    const served = servedTypes(store.schema, options);

    for (const s of served) {
      const { type: t, item, params, tags, schemas } = s;
      const T = t.name;
      /** The type's name in operationIds (`getWorkflowitem`, `listWorkflowitems`). */
      const C = cap(T);
      const orderedUnder = t.decl.parent !== null && store.schema.type(t.decl.parent).decl.orderedChildren === T;
      /** A created resource's Location: its address with its ids (URI-encoded) in place of the parameters. */
      const between = item.split(/:[^/]+/);
      const locationOf = (ids: readonly string[]): string =>
        between.reduce((at, literal, i) => (i === 0 ? `${at}${literal}` : `${at}${encodeURIComponent(ids[i - 1]!)}${literal}`), app.prefix);

      app.post(
        s.collection,
        {
          config: { etag: true, location: true },
          schema: {
            tags,
            operationId: `create${C}`,
            summary: `Create a ${T}; its creator is answered the whole ${T} (what it sent, its defaults and the creation's id, status and meta; no permission map), even when its permissions leave the creator no view of it`,
            params: s.parentParams,
            body: schemas.create,
            response: { 201: schemas.resource, ...problems(400, 403, 404, 409, 413, 415) },
          },
        },
        async (request, reply) => {
          const parent = s.parentOf(request.params);
          const create = commands.create?.[T as keyof S & string];
          const created = await asBody(async () => {
            if (create) return create(request.actor, parent, request.body);
            const { id, ...fields } = request.body;
            return generic.writes.create(request.actor, T, parent, fields, { id: typeof id === "string" ? id : undefined });
          });
          const ids = t.decl.idStyle === "nested" && parent ? [...parent.ids, created.id] : [created.id];
          const ref: Ref = { type: T, ids };
          reply.header("location", locationOf(ids));
          return sendCreated(reply, store, request.actor, ref, created);
        },
      );

      const searchable = t.decl.query;
      const sequenced = orderedUnder && store.schema.type(t.decl.parent!).decl.closedFirst !== undefined;
      app.get(
        s.collection,
        {
          schema: {
            tags,
            operationId: `list${C.endsWith("s") ? C : `${C}s`}`,
            summary: orderedUnder
              ? `List ${T}s in effective order (ordering first, then by creation${sequenced ? "; sequence=closedFirst: closed first, by close time, as TruBudget lists them" : ""})`
              : searchable
                ? `List ${T}s; search (TruBudget's syntax: name:, tag:, status: prefixes) and sort on the server`
                : `List ${T}s`,
            params: s.parentParams,
            querystring: searchable ? listQueryOf(searchable.sort) : sequenced ? OrderedListQuery : ResourcePageQuery,
            response: { 200: schemas.page, ...problems(400, 403, 404) },
          },
        },
        async (request, reply) => {
          const parent = s.parentOf(request.params);
          // One of the three queries above, whichever the type has: each is some of these.
          const query: ResourcePageQuery & ListQueryParams & Pick<OrderedListQuery, "sequence"> = request.query;
          if (orderedUnder) {
            const { json } = await store.reads.listOrderedPage(request.actor, parent!, { ...query, allowedIntents: true });
            return reply.type("application/json; charset=utf-8").send(json);
          }
          const { search, sort, order, ...paging } = query;
          const page =
            searchable && (search !== undefined || sort !== undefined || order !== undefined)
              ? await store.reads.queryChildrenJson(request.actor, parent, T, { search, sort, order, ...paging, allowedIntents: true })
              : await store.reads.listChildrenJson(request.actor, parent, T, { ...paging, allowedIntents: true });
          return sendJsonPage(reply, page.items, page.nextCursor);
        },
      );

      app.get(
        item,
        {
          config: { etag: true },
          schema: {
            tags,
            operationId: `get${C}`,
            summary: `Get a ${T} (ETag: its version), with the intents the caller holds on it (allowedIntents)`,
            params,
            response: { 200: schemas.resource, ...problems(400, 403, 404) },
          },
        },
        async (request, reply) => {
          const { json, version } = await store.reads.getJson(request.actor, s.refOf(request.params), { allowedIntents: true });
          return sendResource(reply, json, version);
        },
      );

      app.patch(
        item,
        {
          config: { etag: true, ifMatch: true },
          schema: {
            tags,
            operationId: `update${C}`,
            summary: `Update some fields of a ${T} (If-Match: a version; a stale one is a 412)`,
            params,
            body: schemas.update,
            response: { ...schemas.updated, ...problems(400, 403, 404, 409, 413, 415) },
          },
        },
        async (request, reply) => {
          const ref = s.refOf(request.params);
          const options = { ifVersion: ifMatch(request) };
          const updated = await asBody(() =>
            commands.update ? commands.update(request.actor, ref, request.body, options) : store.writes.update(request.actor, ref, request.body, options),
          );
          return sendWritten(reply, store, request.actor, ref, updated);
        },
      );

      app.delete(
        item,
        {
          config: { ifMatch: true },
          schema: {
            tags,
            operationId: `delete${C}`,
            summary:
              t.decl.onDelete === "refuse"
                ? `Delete a ${T} (refused while it has children)`
                : t.countedChildren.length > 0
                  ? `Delete a ${T} and everything under it (refused while it counts ${t.countedChildren.join(" or ")} children above 0)`
                  : `Delete a ${T} and everything under it`,
            params,
            response: { 204: Type.Null(), ...problems(400, 403, 404, 409) },
          },
        },
        async (request, reply) => {
          const ref = s.refOf(request.params);
          const options = { ifVersion: ifMatch(request) };
          await (commands.delete ? commands.delete(request.actor, ref, options) : store.lifecycle.delete(request.actor, ref, options));
          return reply.code(204).send();
        },
      );

      app.get(
        `${item}/history`,
        {
          schema: {
            tags,
            operationId: `get${C}History`,
            summary: `The ${T}'s events, oldest first (order=desc: newest first); filtered by publisher, since, until and type`,
            params,
            querystring: HistoryQuery,
            response: { 200: EventPage, ...problems(400, 403, 404) },
          },
        },
        async (request, reply) => {
          const { order, ...filters } = request.query;
          // the stored event bytes, joined (parsed only where a filter or a redaction needs it)
          const page = await store.audit.historyJson(request.actor, s.refOf(request.params), { ...filters, reverse: order === "desc" });
          return sendJsonPage(reply, page.items, page.nextCursor);
        },
      );

      app.get(
        `${item}/permissions`,
        {
          schema: {
            tags,
            operationId: `list${C}Permissions`,
            summary: `List the ${T}'s permissions (${t.intents.listPermissions})`,
            params,
            response: { 200: PermissionMap, ...problems(400, 403, 404) },
          },
        },
        async (request) => store.reads.listPermissions(request.actor, s.refOf(request.params)),
      );

      for (const action of ["grant", "revoke"] as const) {
        app.post(
          `${item}/permissions/${action}`,
          {
            schema: {
              tags,
              operationId: `${action}${C}Permission`,
              summary: `${action === "grant" ? "Grant" : "Revoke"} an intent on the ${T} to a user or group (${action === "grant" ? t.intents.grantPermission : t.intents.revokePermission})`,
              params,
              body: ResourcePermissionChange,
              response: { 204: Type.Null(), ...problems(400, 403, 404, 415) },
            },
          },
          async (request, reply) => {
            const ref = s.refOf(request.params);
            const { intent, identity: who } = request.body;
            if (action === "grant") await store.writes.grant(request.actor, ref, intent, who);
            else await store.writes.revoke(request.actor, ref, intent, who);
            return reply.code(204).send();
          },
        );
      }

      if (t.intents.governance) {
        for (const on of [true, false]) {
          app.route({
            method: on ? "PUT" : "DELETE",
            url: `${item}/governance-flag`,
            config: { etag: true, ifMatch: true },
            schema: {
              tags,
              operationId: `${on ? "set" : "clear"}${C}GovernanceFlag`,
              summary: `${on ? "Set" : "Clear"} the ${T}'s governanceDelete flag (${t.intents.governance}): while set, its ${t.children.filter((c) => store.schema.type(c).decl.governanceDelete).join(" and ")} children may be governance-deleted`,
              params,
              response: { ...schemas.updated, ...problems(400, 403, 404, 409) },
            },
            handler: async (request, reply) => {
              const ref = s.refOf(request.params);
              const updated = await store.writes.setGovernanceDelete(request.actor, ref, on, { ifVersion: ifMatch(request) });
              return sendWritten(reply, store, request.actor, ref, updated);
            },
          });
        }
      }

      if (t.decl.governanceDelete) {
        app.post(
          `${item}/governance-delete`,
          {
            config: { ifMatch: true },
            schema: {
              tags,
              operationId: `governanceDelete${C}`,
              summary: `Delete a ${T} with no intent of the caller's, allowed while its ${t.decl.parent} carries the governanceDelete flag (403 otherwise)`,
              params,
              response: { 204: Type.Null(), ...problems(400, 403, 404, 409) },
            },
          },
          async (request, reply) => {
            await store.lifecycle.governanceDelete(request.actor, s.refOf(request.params), { ifVersion: ifMatch(request) });
            return reply.code(204).send();
          },
        );
      }

      if (t.depth === 0) {
        app.get(
          `${item}/verify`,
          {
            schema: {
              tags,
              operationId: `verify${C}`,
              summary: `Recompute the ${T}'s hash chain (${t.intents.history})`,
              params,
              response: { 200: VerifyResult, ...problems(400, 403, 404) },
            },
          },
          async (request) => {
            const ref = s.refOf(request.params);
            await store.audit.history(request.actor, ref, { limit: 1 });
            return store.audit.verify(store.partitionOf(ref));
          },
        );
        app.get(
          `${item}/checkpoint`,
          {
            schema: {
              tags,
              operationId: `get${C}Checkpoint`,
              summary: `The ${T}'s chain head signed by the server (${t.intents.history}): keep it, and later prove with \`flowstore verify --checkpoint\` that history extends it`,
              params,
              response: { 200: SignedCheckpoint, ...problems(400, 403, 404) },
            },
          },
          async (request) => {
            const ref = s.refOf(request.params);
            await store.audit.history(request.actor, ref, { limit: 1 });
            return app.flowstore.checkpoints.take(store.partitionOf(ref));
          },
        );
      }

      options.extend?.(app, s);
    }
  };
}
