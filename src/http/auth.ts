/**
 * Authentication: `Authorization: Bearer <jwt>` → `request.actor`. Registered as an onRequest hook
 * in the authenticated scope, so it runs before the body is read: an anonymous caller gets its 401
 * without the server parsing anything. Routes in that scope are documented as needing the bearer
 * scheme and answering 401.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { UnauthorizedError } from "../errors.js";
import type { Verified } from "../identity/index.js";
import { problems } from "./problem.js";
import { withReason } from "./reason.js";

const BEARER = /^Bearer +([A-Za-z0-9_.~+/-]+=*) *$/i;
const MAX_TOKEN = 4096;

export function requireAuthentication(app: FastifyInstance): void {
  app.addHook("onRoute", (route) => {
    const schema = (route.schema ??= {}) as Record<string, unknown>;
    schema.security ??= [{ bearer: [] }];
    const response = (schema.response ??= {}) as Record<number, unknown>;
    Object.assign(response, { ...problems(401), ...response });
  });
  // Callback-style: on a store that reads synchronously a known token is verified with no promise (Tokens.verifyNow).
  app.addHook("onRequest", (request, _reply, done) => {
    let verified: Verified | Promise<Verified>;
    try {
      verified = request.server.flowstore.tokens.verifyNow(bearerToken(request));
    } catch (e) {
      return done(e as Error);
    }
    if (verified instanceof Promise) verified.then((v) => admit(request, v, done), done);
    else admit(request, verified, done);
  });
}

function admit(request: FastifyRequest, verified: Verified, done: (error?: Error) => void): void {
  let error: Error | undefined;
  try {
    request.actor = withReason(request, verified.actor);
  } catch (e) {
    error = e as Error;
  }
  done(error);
}

/** The bearer token a request carries; UnauthorizedError when there is none. */
export function bearerToken(request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (header === undefined) throw new UnauthorizedError("missing Authorization: Bearer <token>");
  const match = header.length <= MAX_TOKEN ? BEARER.exec(header) : null;
  if (!match) throw new UnauthorizedError("the Authorization header must be Bearer <token>");
  return match[1]!;
}
