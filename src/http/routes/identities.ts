/**
 * Users and groups are both identities, administered the same way: create (behind a global intent),
 * list (a page of stored JSON bytes), get by id. This gives the create route's options and registers
 * the list and get routes for one kind; the kind's own plugin adds its create route (typed by its own
 * body) and what is particular to it (disable a user, add a group member). The shapes are identity's
 * (identity/wire.ts).
 */
import type { TObject, TSchema, TString } from "@sinclair/typebox";
import type { Actor } from "../../access/actor.js";
import { IdentityPageQuery } from "../../identity/wire.js";
import type { App } from "../context.js";
import { sendJsonPage } from "../pagination.js";
import { problems } from "../problem.js";

export interface IdentityCollection {
  /** The collection's path segment and OpenAPI tag (`users`, `groups`). */
  readonly segment: string;
  /** The path parameter naming one identity (`u`, `g`). */
  readonly param: string;
  /** The global intent that administers this kind (`global.createUser`). */
  readonly intent: string;
  readonly record: TSchema;
  readonly page: TSchema;
  /** The params schema of one identity's routes (`{ u: IdentityId }`). */
  readonly params: TObject<Record<string, TString>>;
  /** A page of stored JSON. */
  list(actor: Actor, page: IdentityPageQuery): Promise<{ items: readonly Uint8Array[]; nextCursor: string | null }>;
  /** One by id. */
  get(id: string): Promise<unknown>;
}

const one = (c: IdentityCollection): string => c.segment.slice(0, -1);

/** The options of `POST /<segment>`, creating one from `body` (the kind's create schema). */
export function createRoute<Body extends TObject>(c: IdentityCollection, body: Body) {
  return { schema: { tags: [c.segment], summary: `Create a ${one(c)} (${c.intent})`, body, response: { 201: c.record, ...problems(400, 403, 409, 413, 415) } } };
}

/** Registers `GET /<segment>` (a page) and `GET /<segment>/:<param>` (one). */
export function identityCollection(app: App, c: IdentityCollection): void {
  const tags = [c.segment];
  app.get(
    `/${c.segment}`,
    { schema: { tags, summary: `List ${c.segment}`, querystring: IdentityPageQuery, response: { 200: c.page, ...problems(400) } } },
    async (request, reply) => {
      const page = await c.list(request.actor, request.query);
      return sendJsonPage(reply, page.items, page.nextCursor);
    },
  );
  app.get(`/${c.segment}/:${c.param}`, { schema: { tags, summary: `Get a ${one(c)}`, params: c.params, response: { 200: c.record, ...problems(400, 404) } } }, async (request) =>
    c.get(request.params[c.param]!),
  );
}
