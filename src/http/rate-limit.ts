/**
 * Rate limits on the credential routes (log in, refresh), with @fastify/rate-limit's counters: one per
 * client address, counted before the body is read, and one per user named by the body, counted once it
 * is validated. Every attempt counts, right or wrong. Over a limit the answer is a 429 problem with
 * `Retry-After` (RFC 9110 §10.2.3, RFC 6585 §4) in seconds.
 */
import rateLimit from "@fastify/rate-limit";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { problem, sendProblem } from "./problem.js";

export interface RateLimit {
  /** Attempts allowed in one window. */
  readonly max: number;
  readonly windowSeconds: number;
}

export interface LoginRateLimits {
  readonly perAddress: RateLimit;
  readonly perUser: RateLimit;
}

export const DEFAULT_LOGIN_RATE_LIMITS: LoginRateLimits = {
  perAddress: { max: 100, windowSeconds: 60 },
  perUser: { max: 10, windowSeconds: 60 },
};

type Hook = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply | undefined>;

/**
 * The two hooks of a limited route: `perAddress` (onRequest) and `perUser` (preHandler, keyed by
 * `userOf(request)`; a request naming no user is counted per address only). Registers the plugin on `app`.
 */
export async function loginLimiter(
  app: FastifyInstance,
  limits: LoginRateLimits,
): Promise<{ perAddress: Hook; perUser: (userOf: (request: FastifyRequest) => string | undefined) => Hook }> {
  await app.register(rateLimit, { global: false });
  const limiter = (limit: RateLimit, name: string, key: (request: FastifyRequest) => string | undefined): Hook => {
    const check = app.createRateLimit({ max: limit.max, timeWindow: limit.windowSeconds * 1000, keyGenerator: (r) => `${name}:${key(r)}` });
    return async (request, reply) => {
      if (key(request) === undefined) return undefined;
      const r = await check(request);
      if (r.isAllowed || !r.isExceeded) return undefined;
      reply.header("retry-after", String(Math.max(1, r.ttlInSeconds)));
      return sendProblem(reply, problem(429, `too many attempts ${name === "address" ? "from this address" : "for this user"}: retry in ${r.ttlInSeconds} s`));
    };
  };
  return {
    perAddress: limiter(limits.perAddress, "address", (r) => r.ip),
    perUser: (userOf) => limiter(limits.perUser, "user", (r) => userOf(r)?.toLowerCase()),
  };
}
