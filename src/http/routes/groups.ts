/** Groups: create, list, get, add a member. Administering groups needs global.createGroup. Shapes: identity/wire.ts. */
import { Group, GroupPage, GroupParams, MemberParams, NewGroup, NewMember } from "../../identity/wire.js";
import type { RoutePlugin } from "../context.js";
import { problems } from "../problem.js";
import { createRoute, identityCollection, type IdentityCollection } from "./identities.js";

export const groupRoutes: RoutePlugin = async (app) => {
  const { identity } = app.flowstore;
  const collection: IdentityCollection = {
    segment: "groups",
    param: "g",
    intent: "global.createGroup",
    record: Group,
    page: GroupPage,
    params: GroupParams,
    list: (actor, page) => identity.listGroupBytes(actor, page),
    get: (id) => identity.getGroup(id),
  };
  app.post("/groups", createRoute(collection, NewGroup), async (request, reply) => reply.code(201).send(await identity.createGroup(request.actor, request.body)));
  identityCollection(app, collection);

  app.post(
    "/groups/:g/members",
    {
      schema: {
        tags: ["groups"],
        summary: "Add a user to a group (global.createGroup)",
        params: GroupParams,
        body: NewMember,
        response: { 200: Group, ...problems(400, 403, 404, 415) },
      },
    },
    async (request) => identity.addMember(request.actor, request.params.g, request.body.userId),
  );

  app.delete(
    "/groups/:g/members/:u",
    {
      schema: {
        tags: ["groups"],
        summary: "Remove a user from a group (global.createGroup); a no-op when it is no member",
        params: MemberParams,
        response: { 200: Group, ...problems(400, 403, 404) },
      },
    },
    async (request) => identity.removeMember(request.actor, request.params.g, request.params.u),
  );
};
