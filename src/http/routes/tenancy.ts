/**
 * The tenancy hierarchy (space → provider/tenant → node, kms, content object → version) under
 * /api/v1/tenancy: its declaration served as it is (declared.ts), with no route code of its own.
 */
import type { FastifyPluginAsync } from "fastify";
import type { TenancySchema } from "../../tenancy/schema.js";
import { declaredRoutes } from "./declared.js";

export const tenancyRoutes: FastifyPluginAsync = async (app) => {
  await app.register(declaredRoutes<TenancySchema>({ store: (context) => context.tenancy }), { prefix: "/tenancy" });
};
