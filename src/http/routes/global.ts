/**
 * Global permissions: list (global.listPermissions), grant and revoke (global.grant/revokePermission).
 * The intents a body may name are the registry's (the domains' declarations), read when the routes are
 * registered; the domain refuses a grant to an unknown user or group.
 */
import { Type, type Static } from "@sinclair/typebox";
import type { FastifyPluginAsync } from "fastify";
import { problems } from "../problem.js";
import { IdentityId } from "./users.js";

export const PermissionMap = Type.Record(Type.String(), Type.Array(Type.String()), {
  $id: "Permissions",
  title: "Permissions",
  description: "intent → identities (user or group ids) holding it",
});
export type PermissionMap = Static<typeof PermissionMap>;

/** A global intent: `global.<name>`, one of the registry's. */
export type GlobalIntentName = `global.${string}`;

/** The body of a grant or revoke, naming one of `intents` (the registry's). */
export function permissionChange(intents: readonly string[]) {
  const intent = Type.Unsafe<GlobalIntentName>({ type: "string", enum: [...intents], description: "a global intent" });
  return Type.Object({ intent, identity: IdentityId }, { additionalProperties: false, $id: "GlobalPermissionChange" });
}
export type PermissionChange = Static<ReturnType<typeof permissionChange>>;

export const globalRoutes: FastifyPluginAsync = async (app) => {
  const global = app.flowstore.identity.global;
  const PermissionChange = permissionChange(global.intents.list());

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
        if (action === "grant") await global.grant(request.actor, intent, who);
        else await global.revoke(request.actor, intent, who);
        return reply.code(204).send();
      },
    );
  }

  app.post<{ Body: Static<typeof GrantAll> }>(
    "/global/permissions/grant-all",
    {
      schema: {
        tags: ["permissions"],
        summary: "Grant every global intent to a user or group at once (global.grantPermission)",
        body: GrantAll,
        response: { 200: GrantedAll, ...problems(400, 403, 415) },
      },
    },
    async (request) => ({ intents: [...(await global.grantAll(request.actor, request.body.identity))] }),
  );
};

export const GrantAll = Type.Object({ identity: IdentityId }, { additionalProperties: false, $id: "GrantAll" });
export const GrantedAll = Type.Object({ intents: Type.Array(Type.String()) }, { $id: "GrantedAll" });
