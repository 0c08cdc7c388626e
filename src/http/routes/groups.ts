/** Groups: create, list, get, add a member. Administering groups needs global.createGroup. */
import { Type, type Static } from "@sinclair/typebox";
import type { FastifyPluginAsync } from "fastify";
import { DISPLAY_NAME_MAX, MAX_GROUP_MEMBERS } from "../../identity/index.js";
import { PageOf, PageQuery, sendJsonPage } from "../pagination.js";
import { problems } from "../problem.js";
import { IdentityId } from "./users.js";

export const Group = Type.Object(
  {
    id: Type.String(),
    displayName: Type.String(),
    members: Type.Array(Type.String()),
    createdAt: Type.String({ format: "date-time" }),
  },
  { title: "Group" },
);
export type Group = Static<typeof Group>;

export const NewGroup = Type.Object(
  {
    id: IdentityId,
    displayName: Type.String({ minLength: 1, maxLength: DISPLAY_NAME_MAX }),
    members: Type.Optional(Type.Array(IdentityId, { maxItems: MAX_GROUP_MEMBERS })),
  },
  { additionalProperties: false },
);
export type NewGroup = Static<typeof NewGroup>;

export const NewMember = Type.Object({ userId: IdentityId }, { additionalProperties: false });
export type NewMember = Static<typeof NewMember>;

export const GroupParams = Type.Object({ g: IdentityId });
export const GroupPage = PageOf(Group);
export type GroupPage = Static<typeof GroupPage>;

export const groupRoutes: FastifyPluginAsync = async (app) => {
  const { identity } = app.flowstore;

  app.post<{ Body: NewGroup }>(
    "/groups",
    {
      schema: {
        tags: ["groups"],
        summary: "Create a group (global.createGroup)",
        body: NewGroup,
        response: { 201: Group, ...problems(400, 403, 409, 413, 415) },
      },
    },
    async (request, reply) => reply.code(201).send(await identity.createGroup(request.actor, request.body)),
  );

  app.get<{ Querystring: PageQuery }>(
    "/groups",
    {
      schema: { tags: ["groups"], summary: "List groups", querystring: PageQuery, response: { 200: GroupPage, ...problems(400) } },
    },
    async (request, reply) => {
      const page = await identity.listGroupBytes(request.actor, request.query);
      return sendJsonPage(reply, page.items, page.nextCursor);
    },
  );

  app.get<{ Params: Static<typeof GroupParams> }>(
    "/groups/:g",
    { schema: { tags: ["groups"], summary: "Get a group", params: GroupParams, response: { 200: Group, ...problems(400, 404) } } },
    async (request) => identity.getGroup(request.params.g),
  );

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
};
