/** Users: create, list, get, disable. Administering users needs global.createUser. */
import { Type, type Static } from "@sinclair/typebox";
import type { FastifyPluginAsync } from "fastify";
import { ORGANIZATION_MAX, PASSWORD_MAX, PASSWORD_MIN } from "../../identity/index.js";
import { PageOf } from "../pagination.js";
import { IdentityId, identityCollection, identityFields, newIdentityFields } from "./identities.js";
import { problems } from "../problem.js";

export { IdentityId };

export const User = Type.Object(
  {
    ...identityFields,
    organization: Type.Optional(Type.String()),
    enabled: Type.Boolean(),
    groups: Type.Array(Type.String()),
  },
  { $id: "User", title: "User" },
);
export type User = Static<typeof User>;

export const NewUser = Type.Object(
  {
    ...newIdentityFields,
    organization: Type.Optional(Type.String({ minLength: 1, maxLength: ORGANIZATION_MAX })),
    password: Type.String({ minLength: PASSWORD_MIN, maxLength: PASSWORD_MAX }),
  },
  { additionalProperties: false, $id: "NewUser", title: "NewUser" },
);
export type NewUser = Static<typeof NewUser>;

export const NewPassword = Type.Object({ password: Type.String({ minLength: PASSWORD_MIN, maxLength: PASSWORD_MAX }) }, { additionalProperties: false, $id: "NewPassword" });
export type NewPassword = Static<typeof NewPassword>;

export const DisableQuery = Type.Object(
  { force: Type.Optional(Type.Boolean({ description: "disable even while the user still has assignments" })) },
  { additionalProperties: false },
);

/** A resource assigned to a user (`GET /users/{u}/assignments`). */
export const Assignment = Type.Object(
  {
    type: Type.String({ description: "project, subproject or workflowitem" }),
    ids: Type.Array(Type.String(), { description: "the ids from the project down" }),
    displayName: Type.Optional(Type.String()),
    status: Type.String(),
  },
  { $id: "Assignment" },
);
export const Assignments = Type.Object({ items: Type.Array(Assignment) }, { $id: "Assignments" });
export type Assignments = Static<typeof Assignments>;

export const UserParams = Type.Object({ u: IdentityId });
export const UserPage = PageOf(User, "UserPage");
export type UserPage = Static<typeof UserPage>;

export const userRoutes: FastifyPluginAsync = async (app) => {
  identityCollection(app, { segment: "users", param: "u", intent: "global.createUser", record: User, create: NewUser, page: UserPage, params: UserParams, methods: ["createUser", "listUserBytes", "getUser"] });
  const { identity } = app.flowstore;

  app.post<{ Params: Static<typeof UserParams>; Querystring: Static<typeof DisableQuery> }>(
    "/users/:u/disable",
    {
      schema: {
        tags: ["users"],
        summary: "Disable a user: its tokens stop working (global.createUser). Refused (409, naming them) while it has assignments, unless force=true",
        params: UserParams,
        querystring: DisableQuery,
        response: { 200: User, ...problems(400, 403, 404, 409) },
      },
    },
    async (request) => app.flowstore.disableUser(request.actor, request.params.u, { force: request.query.force === true }),
  );

  app.post<{ Params: Static<typeof UserParams> }>(
    "/users/:u/enable",
    {
      schema: { tags: ["users"], summary: "Enable a disabled user (global.createUser)", params: UserParams, response: { 200: User, ...problems(400, 403, 404) } },
    },
    async (request) => identity.enableUser(request.actor, request.params.u),
  );

  app.put<{ Params: Static<typeof UserParams>; Body: NewPassword }>(
    "/users/:u/password",
    {
      schema: {
        tags: ["users"],
        summary: "Reset a user's password (global.createUser); every token of the user is revoked",
        params: UserParams,
        body: NewPassword,
        response: { 204: Type.Null({ description: "done" }), ...problems(400, 403, 404, 415) },
      },
    },
    async (request, reply) => {
      await identity.setPassword(request.actor, request.params.u, request.body.password);
      return reply.code(204).send();
    },
  );

  app.get<{ Params: Static<typeof UserParams> }>(
    "/users/:u/assignments",
    {
      schema: {
        tags: ["users"],
        summary: "The projects, subprojects and workflowitems assigned to a user (the user itself, or global.createUser)",
        params: UserParams,
        response: { 200: Assignments, ...problems(400, 403, 404) },
      },
    },
    async (request) => ({ items: await app.flowstore.assignmentsOf(request.actor, request.params.u) }),
  );
};
