/** Global permissions: list (global.listPermissions), grant and revoke (global.grant/revokePermission). */
import { Type, type Static } from "@sinclair/typebox";
import type { FastifyPluginAsync } from "fastify";
import { ValidationError } from "../../errors.js";
import { GLOBAL_INTENTS, type GlobalIntent as GlobalIntentName } from "../../resources/global.js";
import { problems } from "../problem.js";
import { IdentityId } from "./users.js";

export const PermissionMap = Type.Record(Type.String(), Type.Array(Type.String()), {
  title: "Permissions",
  description: "intent → identities (user or group ids) holding it",
});
export type PermissionMap = Static<typeof PermissionMap>;

export const GlobalIntent = Type.Unsafe<GlobalIntentName>({ type: "string", enum: [...GLOBAL_INTENTS], description: "a global intent" });

export const PermissionChange = Type.Object({ intent: GlobalIntent, identity: IdentityId }, { additionalProperties: false });
export type PermissionChange = Static<typeof PermissionChange>;

export const globalRoutes: FastifyPluginAsync = async (app) => {
  const { identity } = app.flowstore;
  const global = identity.global;

  app.get(
    "/global/permissions",
    {
      schema: {
        tags: ["permissions"],
        summary: "List global permissions (global.listPermissions)",
        response: { 200: PermissionMap, ...problems(403) },
      },
    },
    async (request) => global.list(request.actor),
  );

  for (const action of ["grant", "revoke"] as const) {
    app.post<{ Body: PermissionChange }>(
      `/global/permissions/${action}`,
      {
        schema: {
          tags: ["permissions"],
          summary: `${action === "grant" ? "Grant" : "Revoke"} a global intent to a user or group (global.${action}Permission)`,
          body: PermissionChange,
          response: { 204: Type.Null({ description: "done" }), ...problems(400, 403, 415) },
        },
      },
      async (request, reply) => {
        const { intent, identity: who } = request.body;
        if (action === "grant" && !(await identity.exists(who))) {
          throw new ValidationError(`no user or group ${who}`, "identity");
        }
        if (action === "grant") await global.grant(request.actor, intent, who);
        else await global.revoke(request.actor, intent, who);
        return reply.code(204).send();
      },
    );
  }
};
