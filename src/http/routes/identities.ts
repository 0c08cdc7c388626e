/**
 * Users and groups are both identities, administered the same way: create (behind a global intent),
 * list (a page of stored JSON bytes), get by id. This registers those three routes for one kind; the
 * kind's own plugin adds what is particular to it (disable a user, add a group member).
 */
import { Type, type TObject, type TSchema } from "@sinclair/typebox";
import { DISPLAY_NAME_MAX, ID_PATTERN } from "../../identity/index.js";
import type { FastifyInstance } from "fastify";
import { PageQuery, sendJsonPage } from "../pagination.js";
import { problems } from "../problem.js";

/** A user or group id as a path parameter or body field. */
export const IdentityId = Type.String({ pattern: ID_PATTERN, minLength: 1, maxLength: 64, description: "1-64 of A-Z a-z 0-9 . _ @ -" });

/** The fields every identity has, as answered and as created (each kind adds its own). */
export const identityFields = { id: Type.String(), displayName: Type.String(), createdAt: Type.String({ format: "date-time" }) };
export const newIdentityFields = { id: IdentityId, displayName: Type.String({ minLength: 1, maxLength: DISPLAY_NAME_MAX }) };

export interface IdentityCollection {
  /** The collection's path segment and OpenAPI tag (`users`, `groups`). */
  readonly segment: string;
  /** The path parameter naming one identity (`u`, `g`). */
  readonly param: string;
  /** The global intent that administers this kind (`global.createUser`). */
  readonly intent: string;
  readonly record: TSchema;
  readonly create: TObject;
  readonly page: TSchema;
  /** The params schema of one identity's routes (`{ u: IdentityId }`). */
  readonly params: TObject;
  /** Identity's methods that create one, list a page of stored JSON and get one, in that order. */
  readonly methods: readonly ["createUser", "listUserBytes", "getUser"] | readonly ["createGroup", "listGroupBytes", "getGroup"];
}

export function identityCollection(app: FastifyInstance, c: IdentityCollection): void {
  const identity = app.flowstore.identity;
  const [add, list, get] = c.methods;
  const one = c.segment.slice(0, -1);
  const tags = [c.segment];
  app.post(
    `/${c.segment}`,
    { schema: { tags, summary: `Create a ${one} (${c.intent})`, body: c.create, response: { 201: c.record, ...problems(400, 403, 409, 413, 415) } } },
    async (request, reply) => reply.code(201).send(await identity[add](request.actor, request.body as never)),
  );
  app.get<{ Querystring: PageQuery }>(
    `/${c.segment}`,
    { schema: { tags, summary: `List ${c.segment}`, querystring: PageQuery, response: { 200: c.page, ...problems(400) } } },
    async (request, reply) => {
      const page = await identity[list](request.actor, request.query);
      return sendJsonPage(reply, page.items, page.nextCursor);
    },
  );
  app.get<{ Params: Record<string, string> }>(
    `/${c.segment}/:${c.param}`,
    { schema: { tags, summary: `Get a ${one}`, params: c.params, response: { 200: c.record, ...problems(400, 404) } } },
    async (request) => identity[get](request.params[c.param]!),
  );
}
