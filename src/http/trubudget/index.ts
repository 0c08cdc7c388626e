/**
 * TruBudget's HTTP API (v2.18, openkfw/TruBudget api/src/*.ts) over flowstore's domain: a compatibility
 * surface, mounted at /api (next to the native /api/v1) when the server is built with `trubudgetApi`.
 * It translates and does not re-implement: each route calls the command the native route calls, with the
 * same permission checks, history and notifications; identities and sessions are the native API's.
 *
 * One file per area; an area is a route plugin (../context.ts: its request types derived from its route
 * schemas, its bodies read by validation.ts) registered here, public or behind authentication. Its
 * routes are TruBudget's (`/<intent>`, e.g. `/project.list`, and `/v2/<intent>`), they take and answer
 * TruBudget's envelopes (envelope.ts), and they stay out of flowstore's OpenAPI document: TruBudget's
 * contract is its own.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { RoutePlugin } from "../context.js";
import type { LoginRateLimits } from "../rate-limit.js";
import { authenticated, authRoutes } from "./auth.js";
import { collectDocumentation, documentationRoutes } from "./documentation.js";
import { translateProblems } from "./envelope.js";
import { globalRoutes } from "./global.js";
import { groupRoutes } from "./groups.js";
import { levelRoutes } from "./levels.js";
import { DEFAULT_ORGANIZATION, networkRoutes } from "./network.js";
import { notificationRoutes } from "./notifications.js";
import { projectRoutes } from "./projects.js";
import { subprojectRoutes } from "./subprojects.js";
import { publicSystemRoutes, systemRoutes } from "./system.js";
import { userRoutes } from "./users.js";
import { trubudgetValidatorCompiler } from "./validation.js";
import { workflowitemRoutes } from "./workflowitems.js";

/** Where TruBudget's frontend (its nginx proxy) and tools expect the API. */
export const TRUBUDGET_PREFIX = "/api";

export { DEFAULT_ORGANIZATION };

/** Areas anyone may call (besides log in, refresh and log out: auth.ts). */
const PUBLIC_AREAS: readonly RoutePlugin[] = [
  publicSystemRoutes, // readiness, liveness
]; // and documentation (documentation.ts)

/** Areas behind authentication (a `token` cookie or a Bearer header): request.actor is the caller. */
const SECURED_AREAS: readonly RoutePlugin[] = [
  groupRoutes, // global.createGroup, group.list|addUser|removeUser
  globalRoutes, // global.listPermissions|grantPermission|grantAllPermissions|revokePermission
  systemRoutes, // version, provisioned, system.createBackup, system.restoreBackup
  projectRoutes, // global.createProject, project.list (and v2), project.viewDetails, project.createSubproject
  subprojectRoutes, // subproject.list, subproject.viewDetails, subproject.reorderWorkflowitems
  workflowitemRoutes, // subproject.createWorkflowitem (and v2), workflowitem.list|viewDetails|update (and v2), documents
  levelRoutes, // <level>.viewHistory|update|assign|close|intent.*|budget.* of projects, subprojects, workflowitems
  notificationRoutes, // notification.list|count|markRead
];

export interface TrubudgetApiOptions {
  /** The server's not-found handler (404, or 405 with Allow for a known path): answered here in TruBudget's error body. */
  readonly notFound?: (request: FastifyRequest, reply: FastifyReply) => FastifyReply;
  /** Where the native API is mounted (under this prefix too): its unknown routes keep the native answer. */
  readonly nativePrefix?: string;
  /** Limits on log in and refresh, as the native API's (false for none). */
  readonly rateLimit?: LoginRateLimits | false;
  /**
   * The organization this node runs for (TruBudget's ORGANIZATION; default "flowstore"): root's, as
   * network.list answers it, and the only one global.createUser knows.
   */
  readonly organization?: string;
  /**
   * Accept any non-empty password in global.createUser and user.changePassword, as TruBudget does
   * outside production (its provisioning data's users have the password "test"). Off by default; the
   * operator's explicit option (--trubudget-test-passwords), logged at start.
   */
  readonly testPasswords?: boolean;
  /** Where the server serves Swagger UI's assets (its own documentation's): the adapter's documentation page loads them. */
  readonly swaggerUiAssets?: string;
}

export const trubudgetApi: RoutePlugin<TrubudgetApiOptions> = async (app, options) => {
  // Each route's own compiler (a scope's compiler is rebuilt from the server's wherever a plugin adds a
  // schema), knowing the named schemas of the route's scope (registered by the server's onRoute hook, before this one).
  app.addHook("onRoute", function (this: FastifyInstance, route) {
    route.schema = { ...route.schema, hide: true };
    route.validatorCompiler = trubudgetValidatorCompiler(this.getSchemas() as Record<string, unknown>);
  });
  // The native API lives under this prefix too (/api/v1): its answers stay problems.
  const native = (url: string) =>
    options.nativePrefix !== undefined && (url === options.nativePrefix || url.startsWith(`${options.nativePrefix}/`) || url.startsWith(`${options.nativePrefix}?`));
  translateProblems(app, (request) => !native(request.url));
  // The adapter's own OpenAPI document, of the routes registered below (GET /api/documentation).
  await collectDocumentation(app);
  // An unknown route or a method a path does not serve (404, 405 with Allow) answers TruBudget's error body.
  if (options.notFound) {
    const notFound = options.notFound;
    app.setNotFoundHandler((request, reply) => notFound(request, reply));
  }
  const organization = options.organization ?? DEFAULT_ORGANIZATION;
  await app.register(authRoutes, { rateLimit: options.rateLimit, organization });
  for (const area of PUBLIC_AREAS) await app.register(area);
  await app.register(documentationRoutes, { mountedAt: TRUBUDGET_PREFIX, uiAssets: options.swaggerUiAssets ?? "/docs/static" });
  await app.register(async (secured) => {
    authenticated(secured);
    for (const area of SECURED_AREAS) await secured.register(area);
    await secured.register(userRoutes, { organization, passwordRule: options.testPasswords === true ? "test" : "standard" }); // user.list, user.changePassword, global.createUser|enableUser|disableUser|listAssignments
    await secured.register(networkRoutes, { organization });
  });
};
