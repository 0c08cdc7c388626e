/**
 * Sessions: POST /auth/token (username and password → an access token and a refresh token) and
 * POST /auth/refresh (a refresh token → new ones; the one shown is spent) are public and rate-limited
 * (so is POST /auth/password: a user sets its own password proving the current one, which a reset
 * requiring a new password asks for before any session opens)
 * (rate-limit.ts); POST /auth/logout ends the caller's session, POST /auth/logout-all every session of
 * the caller (its token version is bumped). Answers that carry tokens are `Cache-Control: no-store`. Tokens: see identity/tokens.ts; shapes: identity/wire.ts.
 */
import { Type } from "@sinclair/typebox";
import { refreshTokenUser } from "../../identity/index.js";
import { PasswordChangeRequest, RefreshRequest, TokenRequest, TokenResponse } from "../../identity/wire.js";
import { bearerToken, requireAuthentication } from "../auth.js";
import type { RoutePlugin } from "../context.js";
import { noStore } from "../conventions.js";
import { problems } from "../problem.js";
import { DEFAULT_LOGIN_RATE_LIMITS, loginLimiter, type LoginRateLimits } from "../rate-limit.js";

export interface AuthRouteOptions {
  /** Limits on log in and refresh; false for none (default DEFAULT_LOGIN_RATE_LIMITS). */
  readonly rateLimit?: LoginRateLimits | false;
}

export const authRoutes: RoutePlugin<AuthRouteOptions> = async (app, options) => {
  const { tokens } = app.flowstore;
  const limits = options.rateLimit === false ? undefined : await loginLimiter(app, options.rateLimit ?? DEFAULT_LOGIN_RATE_LIMITS);
  const limited = (userOf: (body: unknown) => string | undefined) => (limits ? { onRequest: limits.perAddress, preHandler: limits.perUser((r) => userOf(r.body)) } : {});
  const refused = limits ? problems(400, 401, 415, 429) : problems(400, 401, 415);
  // A log in may also be refused while a reset requires a new password (403, PasswordChangeRequiredError).
  const loginRefused = limits ? problems(400, 401, 403, 415, 429) : problems(400, 401, 403, 415);

  app.post(
    "/auth/token",
    {
      schema: { tags: ["auth"], summary: "Log in: an access token and a refresh token", body: TokenRequest, response: { 200: TokenResponse, ...loginRefused } },
      // Per address only: failed guesses per user are the login guard's (identity/login-guard.ts), which
      // a correct password passes and which TruBudget's log in shares.
      ...(limits ? { onRequest: limits.perAddress } : {}),
    },
    async (request, reply) => {
      noStore(reply);
      return tokens.login(request.body.username, request.body.password, { address: request.ip });
    },
  );

  app.post(
    "/auth/password",
    {
      schema: {
        tags: ["auth"],
        summary: "Set one's own password proving the current one, and log in with the new one (what a reset requiring a new password asks for)",
        body: PasswordChangeRequest,
        response: { 200: TokenResponse, ...loginRefused },
      },
      ...(limits ? { onRequest: limits.perAddress } : {}),
    },
    async (request, reply) => {
      noStore(reply);
      const { username, currentPassword, password } = request.body;
      return tokens.changePassword(username, currentPassword, password, { address: request.ip });
    },
  );

  app.post(
    "/auth/refresh",
    {
      schema: {
        tags: ["auth"],
        summary: "Spend a refresh token for a new access token and refresh token (a spent one revokes the session)",
        body: RefreshRequest,
        response: { 200: TokenResponse, ...refused },
      },
      ...limited((body) => refreshTokenUser((body as RefreshRequest).refreshToken)),
    },
    async (request, reply) => {
      noStore(reply);
      return tokens.refresh(request.body.refreshToken);
    },
  );

  await app.register(async (secured) => {
    requireAuthentication(secured);
    // One session, or every session of the caller: their access and refresh tokens stop working.
    const endings = [
      ["/auth/logout", "End this session: its access and refresh tokens stop working", tokens.logout.bind(tokens)],
      ["/auth/logout-all", "End every session of the caller: all its tokens stop working", tokens.logoutAll.bind(tokens)],
    ] as const;
    for (const [path, summary, end] of endings) {
      secured.post(path, { schema: { tags: ["auth"], summary, response: { 204: Type.Null() } } }, async (request, reply) => {
        await end(await tokens.verifySession(bearerToken(request)));
        return reply.code(204).send();
      });
    }
  });
};
