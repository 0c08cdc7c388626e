/**
 * TruBudget's HTTP API (v2.18, openkfw/TruBudget api/src/*.ts) over flowstore's domain: a compatibility
 * surface, mounted at /api (next to the native /api/v1) when the server is built with `trubudgetApi`.
 * It translates and does not re-implement: each route calls the command the native route calls, with the
 * same permission checks, history and notifications; identities and sessions are the native API's.
 *
 * One file per area; an area is a Fastify plugin registered here, public or behind authentication. Its
 * routes are TruBudget's (`/<intent>`, e.g. `/project.list`, and `/v2/<intent>`), they take and answer
 * TruBudget's envelopes (envelope.ts), and they stay out of flowstore's OpenAPI document: TruBudget's
 * contract is its own.
 */
import type { FastifyPluginAsync } from "fastify";
import type { LoginRateLimits } from "../rate-limit.js";
import { authenticated, authRoutes } from "./auth.js";
import { translateProblems } from "./envelope.js";
import { levelRoutes } from "./levels.js";
import { notificationRoutes } from "./notifications.js";
import { projectRoutes } from "./projects.js";
import { subprojectRoutes } from "./subprojects.js";
import { workflowitemRoutes } from "./workflowitems.js";

/** Where TruBudget's frontend (its nginx proxy) and tools expect the API. */
export const TRUBUDGET_PREFIX = "/api";

/** Areas anyone may call (besides log in, refresh and log out: auth.ts). */
const PUBLIC_AREAS: readonly FastifyPluginAsync[] = [];

/** Areas behind authentication (a `token` cookie or a Bearer header): request.actor is the caller. */
const SECURED_AREAS: readonly FastifyPluginAsync[] = [projectRoutes, subprojectRoutes, workflowitemRoutes, levelRoutes, notificationRoutes];

export interface TrubudgetApiOptions {
  /** Limits on log in and refresh, as the native API's (false for none). */
  readonly rateLimit?: LoginRateLimits | false;
}

export const trubudgetApi: FastifyPluginAsync<TrubudgetApiOptions> = async (app, options) => {
  app.addHook("onRoute", (route) => {
    route.schema = { ...route.schema, hide: true };
  });
  translateProblems(app);
  await app.register(authRoutes, { rateLimit: options.rateLimit });
  for (const area of PUBLIC_AREAS) await app.register(area);
  await app.register(async (secured) => {
    authenticated(secured);
    for (const area of SECURED_AREAS) await secured.register(area);
  });
};
