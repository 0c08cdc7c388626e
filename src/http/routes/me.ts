/**
 * GET /me: who the token belongs to, its groups and the global intents (of the registry) it holds. Any valid token may
 * ask (it tells the caller only about itself), so a client such as the web explorer can offer only the
 * global actions the user may take without needing global.listPermissions. Shapes: identity/wire.ts.
 */
import { Type } from "@sinclair/typebox";
import { Me, PasswordChange } from "../../identity/wire.js";
import type { RoutePlugin } from "../context.js";
import { problems } from "../problem.js";

export const meRoutes: RoutePlugin = async (app) => {
  const global = app.flowstore.identity.global;
  app.get("/me", { schema: { tags: ["users"], summary: "The caller: id, groups and the global intents it holds", response: { 200: Me } } }, async (request) => {
    const actor = request.actor;
    return { id: actor.id, groups: [...actor.groups], intents: await global.held(actor) };
  });

  app.put(
    "/me/password",
    {
      schema: {
        tags: ["users"],
        summary: "Change one's own password, giving the current one; every token of the caller is revoked",
        body: PasswordChange,
        response: { 204: Type.Null({ description: "done" }), ...problems(400, 415) },
      },
    },
    async (request, reply) => {
      await app.flowstore.identity.changeOwnPassword(request.actor, request.body.currentPassword, request.body.password);
      return reply.code(204).send();
    },
  );
};
