/** Users: create, list, get, disable. Administering users needs global.createUser. */
import { Type, type Static } from "@sinclair/typebox";
import type { FastifyPluginAsync } from "fastify";
import { DISPLAY_NAME_MAX, ID_PATTERN, PASSWORD_MAX, PASSWORD_MIN } from "../../identity/index.js";
import { PageOf, PageQuery, sendJsonPage } from "../pagination.js";
import { problems } from "../problem.js";

export const IdentityId = Type.String({ pattern: ID_PATTERN, minLength: 1, maxLength: 64, description: "1-64 of A-Z a-z 0-9 . _ @ -" });

export const User = Type.Object(
  {
    id: Type.String(),
    displayName: Type.String(),
    enabled: Type.Boolean(),
    groups: Type.Array(Type.String()),
    createdAt: Type.String({ format: "date-time" }),
  },
  { title: "User" },
);
export type User = Static<typeof User>;

export const NewUser = Type.Object(
  {
    id: IdentityId,
    displayName: Type.String({ minLength: 1, maxLength: DISPLAY_NAME_MAX }),
    password: Type.String({ minLength: PASSWORD_MIN, maxLength: PASSWORD_MAX }),
  },
  { additionalProperties: false },
);
export type NewUser = Static<typeof NewUser>;

export const UserParams = Type.Object({ u: IdentityId });
export const UserPage = PageOf(User);
export type UserPage = Static<typeof UserPage>;

export const userRoutes: FastifyPluginAsync = async (app) => {
  const { identity } = app.flowstore;

  app.post<{ Body: NewUser }>(
    "/users",
    {
      schema: {
        tags: ["users"],
        summary: "Create a user (global.createUser)",
        body: NewUser,
        response: { 201: User, ...problems(400, 403, 409, 413, 415) },
      },
    },
    async (request, reply) => reply.code(201).send(await identity.createUser(request.actor, request.body)),
  );

  app.get<{ Querystring: PageQuery }>(
    "/users",
    {
      schema: { tags: ["users"], summary: "List users", querystring: PageQuery, response: { 200: UserPage, ...problems(400) } },
    },
    async (request, reply) => {
      const page = await identity.listUserBytes(request.actor, request.query);
      return sendJsonPage(reply, page.items, page.nextCursor);
    },
  );

  app.get<{ Params: Static<typeof UserParams> }>(
    "/users/:u",
    { schema: { tags: ["users"], summary: "Get a user", params: UserParams, response: { 200: User, ...problems(400, 404) } } },
    async (request) => identity.getUser(request.params.u),
  );

  app.post<{ Params: Static<typeof UserParams> }>(
    "/users/:u/disable",
    {
      schema: {
        tags: ["users"],
        summary: "Disable a user: its tokens stop working (global.createUser)",
        params: UserParams,
        response: { 200: User, ...problems(400, 403, 404) },
      },
    },
    async (request) => identity.disableUser(request.actor, request.params.u),
  );
};
