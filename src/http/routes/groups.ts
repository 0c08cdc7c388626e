/** Groups: create, list, get, add a member. Administering groups needs global.createGroup. */
import { Type, type Static } from "@sinclair/typebox";
import type { FastifyPluginAsync } from "fastify";
import { MAX_GROUP_MEMBERS } from "../../identity/index.js";
import { PageOf } from "../pagination.js";
import { IdentityId, identityCollection, identityFields, newIdentityFields } from "./identities.js";
import { problems } from "../problem.js";

export const Group = Type.Object(
  {
    ...identityFields,
    members: Type.Array(Type.String()),
  },
  { $id: "Group", title: "Group" },
);
export type Group = Static<typeof Group>;

export const NewGroup = Type.Object(
  {
    ...newIdentityFields,
    members: Type.Optional(Type.Array(IdentityId, { maxItems: MAX_GROUP_MEMBERS })),
  },
  { additionalProperties: false, $id: "NewGroup", title: "NewGroup" },
);
export type NewGroup = Static<typeof NewGroup>;

export const NewMember = Type.Object({ userId: IdentityId }, { additionalProperties: false, $id: "NewMember", title: "NewMember" });
export type NewMember = Static<typeof NewMember>;

export const GroupParams = Type.Object({ g: IdentityId });
export const MemberParams = Type.Object({ g: IdentityId, u: IdentityId });
export const GroupPage = PageOf(Group, "GroupPage");
export type GroupPage = Static<typeof GroupPage>;

export const groupRoutes: FastifyPluginAsync = async (app) => {
  identityCollection(app, { segment: "groups", param: "g", intent: "global.createGroup", record: Group, create: NewGroup, page: GroupPage, params: GroupParams, methods: ["createGroup", "listGroupBytes", "getGroup"] });
  const { identity } = app.flowstore;

  app.post<{ Params: Static<typeof GroupParams>; Body: NewMember }>(
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

  app.delete<{ Params: Static<typeof MemberParams> }>(
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
