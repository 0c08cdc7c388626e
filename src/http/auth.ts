/**
 * Authentication: `Authorization: Bearer <jwt>` → `request.actor`. Registered as an onRequest hook
 * in the authenticated scope, so it runs before the body is read: an anonymous caller gets its 401
 * without the server parsing anything. Routes in that scope are documented as needing the bearer
 * scheme and answering 401.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { UnauthorizedError } from "../errors.js";
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
  app.addHook("onRequest", async (request: FastifyRequest) => {
    request.actor = withReason(request, await request.server.flowstore.tokens.verify(bearerToken(request)));
  });
}

/** The bearer token a request carries; UnauthorizedError when there is none. */
export function bearerToken(request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (header === undefined) throw new UnauthorizedError("missing Authorization: Bearer <token>");
  const match = header.length <= MAX_TOKEN ? BEARER.exec(header) : null;
  if (!match) throw new UnauthorizedError("the Authorization header must be Bearer <token>");
  return match[1]!;
}
