/**
 * Global permissions: list (global.listPermissions), grant and revoke (global.grant/revokePermission).
 * The intents a body may name are the registry's (the domains' declarations), read when the routes are
 * registered; the domain refuses a grant to an unknown user or group. Shapes: identity/wire.ts.
 */
import { Type } from "@sinclair/typebox";
import { requestedIntent } from "../../access/intents.js";
import { GrantAll, GrantedAll, PermissionMap, permissionChange } from "../../identity/wire.js";
import type { RoutePlugin } from "../context.js";
import { problems } from "../problem.js";

export const globalRoutes: RoutePlugin = async (app) => {
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
    app.post(
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
        const { identity: who } = request.body;
        const intent = requestedIntent(request.body.intent);
        if (action === "grant") await global.grant(request.actor, intent, who);
        else await global.revoke(request.actor, intent, who);
        return reply.code(204).send();
      },
    );
  }

  app.post(
    "/global/permissions/grant-all",
    {
      schema: {
        tags: ["permissions"],
        summary: "Grant every global intent to a user or group at once (global.grantAllPermissions)",
        body: GrantAll,
        response: { 200: GrantedAll, ...problems(400, 403, 415) },
      },
    },
    async (request) => ({ intents: [...(await global.grantAll(request.actor, request.body.identity))] }),
  );
};
