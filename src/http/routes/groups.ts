/** Groups: create, list, get, add a member. Administering groups needs global.createGroup. Shapes: identity/wire.ts. */
import { Group, GroupParams, MemberParams, NewMember } from "../../identity/wire.js";
import type { RoutePlugin } from "../context.js";
import { problems } from "../problem.js";
import { identityCollection, identityKinds } from "./identities.js";

export const groupRoutes: RoutePlugin = async (app) => {
  const { identity } = app.flowstore;
  const tags = ["groups"];
  identityCollection(app, identityKinds(identity).groups);

  app.post(
    "/groups/:groupId/members",
    {
      schema: {
        tags,
        summary: "Add a user to a group (global.createGroup)",
        params: GroupParams,
        body: NewMember,
        response: { 200: Group, ...problems(400, 403, 404, 415) },
      },
    },
    async (request) => identity.addMember(request.actor, request.params.groupId, request.body.userId),
  );

  app.delete(
    "/groups/:groupId/members/:userId",
    {
      schema: {
        tags,
        summary: "Remove a user from a group (global.createGroup); a no-op when it is no member",
        params: MemberParams,
        response: { 200: Group, ...problems(400, 403, 404) },
      },
    },
    async (request) => identity.removeMember(request.actor, request.params.groupId, request.params.userId),
  );
};
