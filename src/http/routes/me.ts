/**
 * GET /me: who the token belongs to, its groups and the global intents it holds. Any valid token may
 * ask (it tells the caller only about itself), so a client such as the web explorer can offer only the
 * global actions the user may take without needing global.listPermissions.
 */
import { Type } from "@sinclair/typebox";
import type { FastifyPluginAsync } from "fastify";
import { GLOBAL_INTENTS } from "../../resources/global.js";

const Me = Type.Object(
  {
    id: Type.String(),
    groups: Type.Array(Type.String()),
    intents: Type.Array(Type.String(), { description: "the global intents the caller holds, directly or through a group" }),
  },
  { title: "Me" },
);

export const meRoutes: FastifyPluginAsync = async (app) => {
  const global = app.flowstore.identity.global;
  app.get("/me", { schema: { tags: ["users"], summary: "The caller: id, groups and the global intents it holds", response: { 200: Me } } }, async (request) => {
    const actor = request.actor;
    const held = await Promise.all(GLOBAL_INTENTS.map(async (i) => ((await global.has(actor, i)) ? i : null)));
    return { id: actor.id, groups: [...actor.groups], intents: held.filter((i): i is (typeof GLOBAL_INTENTS)[number] => i !== null) };
  });
};
