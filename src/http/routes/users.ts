/** Users: create, list, get, disable. Administering users needs global.createUser. Shapes: identity/wire.ts. */
import { Type } from "@sinclair/typebox";
import { Assignments, DisableQuery, NewPassword, User, UserParams } from "../../identity/wire.js";
import type { RoutePlugin } from "../context.js";
import { problems } from "../problem.js";
import { identityCollection, identityKinds } from "./identities.js";

export const userRoutes: RoutePlugin = async (app) => {
  const { identity } = app.flowstore;
  identityCollection(app, identityKinds(identity).users);

  app.post(
    "/users/:userId/disable",
    {
      schema: {
        tags: ["users"],
        summary: "Disable a user: its tokens stop working (global.disableUser). Refused (409, naming them) while it has assignments, unless force=true",
        params: UserParams,
        querystring: DisableQuery,
        response: { 200: User, ...problems(400, 403, 404, 409) },
      },
    },
    async (request) => app.flowstore.disableUser(request.actor, request.params.userId, { force: request.query.force === true }),
  );

  app.post(
    "/users/:userId/enable",
    {
      schema: { tags: ["users"], summary: "Enable a disabled user (global.enableUser)", params: UserParams, response: { 200: User, ...problems(400, 403, 404) } },
    },
    async (request) => identity.enableUser(request.actor, request.params.userId),
  );

  app.put(
    "/users/:userId/password",
    {
      schema: {
        tags: ["users"],
        summary:
          "Reset a user's password (global.createUser, on an account the caller outranks); every token of the user is revoked; with mustChange the user must choose a new one before it logs in again",
        params: UserParams,
        body: NewPassword,
        response: { 204: Type.Null({ description: "done" }), ...problems(400, 403, 404, 415) },
      },
    },
    async (request, reply) => {
      await identity.setPassword(request.actor, request.params.userId, request.body.password, { mustChange: request.body.mustChange === true });
      return reply.code(204).send();
    },
  );

  app.get(
    "/users/:userId/assignments",
    {
      schema: {
        tags: ["users"],
        summary: "The projects, subprojects and workflowitems assigned to a user (the user itself, or global.listAssignments)",
        params: UserParams,
        response: { 200: Assignments, ...problems(400, 403, 404) },
      },
    },
    async (request) => ({ items: await app.flowstore.assignmentsOf(request.actor, request.params.userId) }),
  );
};
