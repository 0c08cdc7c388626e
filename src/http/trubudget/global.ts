/**
 * Global permissions as TruBudget's API has them (api/src/global_permission*.ts, v2.18) on flowstore's
 * (access/global.ts), with TruBudget's intent names (intents.ts): `global.listPermissions` (intent →
 * identities), `global.grantPermission`, `global.revokePermission` and `global.grantAllPermissions`.
 */
import { Type } from "@sinclair/typebox";
import { requestedIntent } from "../../access/intents.js";
import { IdentityId } from "../../identity/wire.js";
import type { RoutePlugin } from "../context.js";
import { Envelope, ok, Reply } from "./envelope.js";
import { grantableIntent, TRUBUDGET_GLOBAL_INTENTS, trubudgetPermissions } from "./intents.js";

const strict = { additionalProperties: false } as const;
const Change = Envelope(Type.Object({ identity: IdentityId, intent: Type.Unsafe<string>({ type: "string", enum: [...TRUBUDGET_GLOBAL_INTENTS] }) }, strict));
const GrantAll = Envelope(Type.Object({ identity: IdentityId }, strict));
const Done = Reply(Type.Object({}));

export const globalRoutes: RoutePlugin = async (app) => {
  const global = app.flowstore.identity.global;

  app.get("/global.listPermissions", { schema: { response: { 200: Reply(Type.Record(Type.String(), Type.Array(Type.String()))) } } }, async (request) =>
    ok(trubudgetPermissions(await global.list(request.actor))),
  );

  for (const action of ["grant", "revoke"] as const) {
    app.post(`/global.${action}Permission`, { schema: { body: Change, response: { 200: Done } } }, async (request) => {
      const { identity, intent } = request.body.data;
      const target = requestedIntent(grantableIntent(intent, "data.intent"));
      if (action === "grant") await global.grant(request.actor, target, identity);
      else await global.revoke(request.actor, target, identity);
      return ok({});
    });
  }

  app.post("/global.grantAllPermissions", { schema: { body: GrantAll, response: { 200: Done } } }, async (request) => {
    await global.grantAll(request.actor, request.body.data.identity);
    return ok({});
  });
};
