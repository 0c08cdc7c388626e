/**
 * Users and groups are both identities, administered the same way: create (behind a global intent),
 * list (a page of stored JSON bytes), get by id. This gives the create route's options and registers
 * the list and get routes for one kind; the kind's own plugin adds its create route (typed by its own
 * body) and what is particular to it (disable a user, add a group member). The shapes are identity's
 * (identity/wire.ts).
 */
import type { Static, TObject, TSchema, TString } from "@sinclair/typebox";
import type { Actor } from "../../access/actor.js";
import type { Identity } from "../../identity/index.js";
import { Group, GroupPage, GroupParams, IdentityPageQuery, NewGroup, NewUser, User, UserPage, UserParams } from "../../identity/wire.js";
import type { App } from "../context.js";
import { sendJsonPage } from "../pagination.js";
import { problems } from "../problem.js";

/** What names a kind and its wire shapes. */
export interface IdentityKind<Body extends TObject> {
  /** The collection's path segment and OpenAPI tag (`users`, `groups`). */
  readonly segment: string;
  /** The path parameter naming one identity (`userId`, `groupId`). */
  readonly param: string;
  /** The global intent that administers this kind (`global.createUser`). */
  readonly intent: string;
  readonly record: TSchema;
  readonly page: TSchema;
  /** The params schema of one identity's routes (`{ userId: IdentityId }`). */
  readonly params: TObject<Record<string, TString>>;
  /** The create body (`NewUser`). */
  readonly body: Body;
}

export interface IdentityCollection<Body extends TObject> {
  readonly kind: IdentityKind<Body>;
  /** Creates one from a create body (the intent is checked by identity). */
  create(actor: Actor, body: Static<Body>): Promise<unknown>;
  /** A page of stored JSON. */
  list(actor: Actor, page: IdentityPageQuery): Promise<{ items: readonly Uint8Array[]; nextCursor: string | null }>;
  /** One by id, as the actor may see it. */
  get(actor: Actor, id: string): Promise<unknown>;
}

/** A collection: a kind and the operations on it (its Body inferred from the kind). */
const collection = <Body extends TObject>(kind: IdentityKind<Body>, ops: Omit<IdentityCollection<Body>, "kind">): IdentityCollection<Body> => ({ kind, ...ops });

/** The two kinds: their wire shapes (identity/wire.ts) and identity's operations on them. */
export function identityKinds(identity: Identity) {
  return {
    users: collection(
      { segment: "users", param: "userId", intent: "global.createUser", record: User, page: UserPage, params: UserParams, body: NewUser },
      { create: (actor, body) => identity.createUser(actor, body), list: (actor, page) => identity.listUserBytes(actor, page), get: (actor, id) => identity.getUser(id, actor) },
    ),
    groups: collection(
      { segment: "groups", param: "groupId", intent: "global.createGroup", record: Group, page: GroupPage, params: GroupParams, body: NewGroup },
      { create: (actor, body) => identity.createGroup(actor, body), list: (actor, page) => identity.listGroupBytes(actor, page), get: (_actor, id) => identity.getGroup(id) },
    ),
  };
}

/** Registers `POST /<segment>` (create, 201), `GET /<segment>` (a page) and `GET /<segment>/:<param>` (one). */
export function identityCollection<Body extends TObject>(app: App, c: IdentityCollection<Body>): void {
  const { segment, param, intent, record, page, params, body } = c.kind;
  const tags = [segment];
  const one = segment.slice(0, -1);
  app.post(
    `/${segment}`,
    { schema: { tags, summary: `Create a ${one} (${intent})`, body, response: { 201: record, ...problems(400, 403, 409, 413, 415) } } },
    async (request, reply) => reply.code(201).send(await c.create(request.actor, request.body as Static<Body>)),
  );
  app.get(`/${segment}`, { schema: { tags, summary: `List ${segment}`, querystring: IdentityPageQuery, response: { 200: page, ...problems(400) } } }, async (request, reply) => {
    const found = await c.list(request.actor, request.query);
    return sendJsonPage(reply, found.items, found.nextCursor);
  });
  app.get(`/${segment}/:${param}`, { schema: { tags, summary: `Get a ${one}`, params, response: { 200: record, ...problems(400, 404) } } }, async (request) =>
    c.get(request.actor, request.params[param]!),
  );
}
