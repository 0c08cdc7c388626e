/** Users: create, list, get, disable. Administering users needs global.createUser. Shapes: identity/wire.ts. */
import { Type } from "@sinclair/typebox";
import { Assignments, DisableQuery, NewPassword, NewUser, User, UserPage, UserParams } from "../../identity/wire.js";
import type { RoutePlugin } from "../context.js";
import { problems } from "../problem.js";
import { createRoute, identityCollection, type IdentityCollection } from "./identities.js";

export const userRoutes: RoutePlugin = async (app) => {
  const { identity } = app.flowstore;
  const collection: IdentityCollection = {
    segment: "users",
    param: "u",
    intent: "global.createUser",
    record: User,
    page: UserPage,
    params: UserParams,
    list: (actor, page) => identity.listUserBytes(actor, page),
    get: (id) => identity.getUser(id),
  };
  app.post("/users", createRoute(collection, NewUser), async (request, reply) => reply.code(201).send(await identity.createUser(request.actor, request.body)));
  identityCollection(app, collection);

  app.post(
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

  app.post(
    "/users/:u/enable",
    {
      schema: { tags: ["users"], summary: "Enable a disabled user (global.createUser)", params: UserParams, response: { 200: User, ...problems(400, 403, 404) } },
    },
    async (request) => identity.enableUser(request.actor, request.params.u),
  );

  app.put(
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

  app.get(
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
