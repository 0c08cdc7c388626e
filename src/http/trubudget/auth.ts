/**
 * Sessions as TruBudget has them (its user_authenticate.ts, user_refreshToken.ts, user_logout.ts), on
 * flowstore's tokens (identity/tokens.ts), so one user logs in through either API:
 *
 * - `POST /user.authenticate` answers the user (id, displayName, organization, allowedIntents: the global
 *   intents held, by TruBudget's names (intents.ts), groups as {groupId, displayName}) and sets the access token as TruBudget's HttpOnly
 *   `token` cookie and the refresh token as its `refreshToken` cookie (paths /api/user.refreshtoken and
 *   /api/user.logout). TruBudget 2.18 puts no token in the body; its Postman collection, provisioning and
 *   load tests read `data.user.token`, so the body carries it too (for `Authorization: Bearer`).
 * - Every other route takes the `token` cookie, or else a Bearer header (authenticated(), below).
 * - Answers that carry a token (authenticate, refreshtoken) are `Cache-Control: no-store`.
 * - `POST /user.refreshtoken` spends the refresh cookie for a new access token cookie (flowstore rotates
 *   the refresh token, so its cookie is renewed as well); `POST /user.logout` ends the session the token
 *   names and clears the cookies.
 */
import { Type } from "@sinclair/typebox";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { DisabledLoginError, ForbiddenError, UnauthorizedError } from "../../errors.js";
import { PASSWORD_MAX } from "../../identity/index.js";
import type { ExtraClaims, IssuedToken } from "../../identity/index.js";
import { bearerToken } from "../auth.js";
import { withReason } from "../reason.js";
import type { Actor } from "../../access/actor.js";
import { DEFAULT_LOGIN_RATE_LIMITS, loginLimiter, type LoginRateLimits } from "../rate-limit.js";
import type { RoutePlugin } from "../context.js";
import { noStore } from "../conventions.js";
import { Envelope, errorBody, ok, Reply } from "./envelope.js";
import { trubudgetIntents } from "./intents.js";
import { organizationOf } from "./network.js";

/** The cookies TruBudget sets, and where its frontend sends the refresh token. */
export const TOKEN_COOKIE = "token";
export const REFRESH_COOKIE = "refreshToken";
const REFRESH_PATHS = ["/api/user.refreshtoken", "/api/user.logout"] as const;

/** TruBudget's answer to a route called without a valid token (its httpd/server.ts). */
export const TOKEN_REQUIRED = "A valid JWT auth bearer token is required for this route.";

/** The cookies of a request, by name (RFC 6265's `name=value; …`; the first of a name wins). */
export function cookies(request: FastifyRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (request.headers.cookie ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    if (name === "" || name in out) continue;
    let value = part.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1);
    try {
      out[name] = decodeURIComponent(value);
    } catch {
      out[name] = value;
    }
  }
  return out;
}

/** The access token of a request: TruBudget's `token` cookie wins over the Authorization header. */
export function accessToken(request: FastifyRequest): string {
  return cookies(request)[TOKEN_COOKIE] ?? bearerToken(request);
}

/** A `Set-Cookie` value as TruBudget sets its cookies: HttpOnly, SameSite=Strict, Secure over https. */
function cookie(request: FastifyRequest, name: string, value: string, path: string, expire = false): string {
  const attributes = [`${name}=${encodeURIComponent(value)}`, `Path=${path}`, "HttpOnly", "SameSite=Strict"];
  if (request.protocol === "https") attributes.push("Secure");
  if (expire) attributes.push("Expires=Thu, 01 Jan 1970 00:00:00 GMT", "Max-Age=0");
  return attributes.join("; ");
}

export function setSessionCookies(request: FastifyRequest, reply: FastifyReply, issued: IssuedToken | undefined): void {
  const expire = issued === undefined;
  reply.header("set-cookie", [
    cookie(request, TOKEN_COOKIE, issued?.token ?? "", "/", expire),
    ...REFRESH_PATHS.map((path) => cookie(request, REFRESH_COOKIE, issued?.refreshToken ?? "", path, expire)),
  ]);
}

/**
 * Whether a change authenticated by a cookie comes from another origin, by the browser's own word (Fetch
 * Metadata: `Sec-Fetch-Site` other than `same-origin` or `none`). SameSite=Strict keeps the cookies from
 * other sites; this refuses what a sibling origin of the same site (another port or subdomain) would send.
 * Requests that do not say (other clients, older browsers) are taken: they carry no ambient cookie of a
 * browser that a page elsewhere could ride on.
 */
export function crossOriginCookieChange(request: FastifyRequest): boolean {
  if (request.method === "GET" || request.method === "HEAD" || request.method === "OPTIONS") return false;
  const site = request.headers["sec-fetch-site"];
  return site !== undefined && site !== "same-origin" && site !== "none";
}

const CROSS_ORIGIN = "a change authenticated by the session cookie must come from this origin";

/**
 * Makes every route of `scope` need a valid access token (cookie or Bearer): `request.actor` is the
 * caller. Without one the answer is TruBudget's 401, before the body is read; a change the cookie
 * authenticates from another origin is 403 (crossOriginCookieChange).
 */
export function authenticated(scope: FastifyInstance): void {
  scope.addHook("onRequest", async (request, reply) => {
    if (cookies(request)[TOKEN_COOKIE] !== undefined && crossOriginCookieChange(request)) return reply.code(403).send(errorBody(403, CROSS_ORIGIN));
    let actor: Actor;
    try {
      actor = await request.server.flowstore.tokens.verify(accessToken(request));
    } catch (e) {
      if (!(e instanceof UnauthorizedError)) throw e;
      return reply.code(401).send(errorBody(401, TOKEN_REQUIRED));
    }
    request.actor = withReason(request, actor);
    return undefined;
  });
}

const Credentials = Envelope(
  Type.Object(
    {
      user: Type.Object({ id: Type.String({ minLength: 1, maxLength: 256 }), password: Type.String({ minLength: 1, maxLength: PASSWORD_MAX }) }, { additionalProperties: false }),
    },
    { additionalProperties: false },
  ),
);
/** The body of user.refreshtoken and user.logout: TruBudget's frontend sends an empty `data`. */
const Empty = Envelope(Type.Object({}));
const Optional = Type.Optional(Empty);

const LoginUser = Type.Object({
  id: Type.String(),
  displayName: Type.String(),
  organization: Type.String(),
  allowedIntents: Type.Array(Type.String()),
  groups: Type.Array(Type.Object({ groupId: Type.String(), displayName: Type.String() })),
  token: Type.String(),
});
const LoginReply = Reply(Type.Object({ user: LoginUser, accessTokenExp: Type.Number() }));
const RefreshReply = Reply(Type.Object({ accessTokenExp: Type.Number() }));
const Done = Reply(Type.Object({}));

export interface AuthOptions {
  /** Limits on log in and refresh (as the native /auth routes'); false for none. */
  readonly rateLimit?: LoginRateLimits | false;
  /** The node's organization (root's). */
  readonly organization: string;
}

/** The longest joined group list TruBudget puts into a token (its user_authenticate.ts): longer, `groups` is null. */
export const MAX_GROUPS_LENGTH = 3000;

/**
 * TruBudget's claims in an access token (its user_authenticate.ts createJWT), beside flowstore's own:
 * `userId`, `organization` (the node's for root) and `groups` (null when they would not fit a cookie, as
 * TruBudget's). Its services (the Excel export) decode them. TruBudget's `address` and
 * `organizationAddress` are its chain's wallet addresses: a single node has none, so they are left out.
 */
export const trubudgetClaims =
  (node: string): ExtraClaims =>
  (user) => ({
    userId: user.id,
    organization: organizationOf(user, node),
    groups: user.groups.join(",").length < MAX_GROUPS_LENGTH ? [...user.groups] : null,
  });

export const authRoutes: RoutePlugin<AuthOptions> = async (app, options) => {
  const claims = trubudgetClaims(options.organization);
  const { tokens, identity } = app.flowstore;
  const limits = options.rateLimit === false ? undefined : await loginLimiter(app, options.rateLimit ?? DEFAULT_LOGIN_RATE_LIMITS);
  /** The access token's lifetime in milliseconds, as TruBudget's accessTokenExp. */
  const lifetime = (issued: IssuedToken) => Math.max(0, issued.expiresAt * 1000 - app.flowstore.clock());

  app.post(
    "/user.authenticate",
    {
      schema: { body: Credentials, response: { 200: LoginReply } },
      // Failed guesses are counted by the login guard the native log in shares (identity/login-guard.ts).
      ...(limits ? { onRequest: limits.perAddress } : {}),
    },
    async (request, reply) => {
      const { id, password } = request.body.data.user;
      const issued = await tokens.login(id, password, { address: request.ip, claims }).catch((e: unknown) => {
        // TruBudget answers a disabled user's right password 403 (NotAuthorized), not 401.
        throw e instanceof DisabledLoginError ? new ForbiddenError(`user ${id} is disabled`) : e;
      });
      const actor = await tokens.verify(issued.token);
      const user = await identity.getUser(actor.id);
      const groups = await Promise.all(user.groups.map(async (g) => ({ groupId: g, displayName: (await identity.getGroup(g)).displayName })));
      setSessionCookies(request, reply, issued);
      noStore(reply);
      return ok({
        user: {
          id: user.id,
          displayName: user.displayName,
          organization: organizationOf(user, options.organization),
          allowedIntents: trubudgetIntents(await identity.global.held(actor)),
          groups,
          token: issued.token,
        },
        accessTokenExp: lifetime(issued),
      });
    },
  );

  app.post("/user.refreshtoken", { schema: { body: Optional, response: { 200: RefreshReply } }, ...(limits ? { onRequest: limits.perAddress } : {}) }, async (request, reply) => {
    const refresh = cookies(request)[REFRESH_COOKIE];
    if (refresh === undefined || refresh === "") throw new UnauthorizedError("no refresh token cookie");
    if (crossOriginCookieChange(request)) throw new ForbiddenError(CROSS_ORIGIN);
    const issued = await tokens.refresh(refresh, { claims });
    setSessionCookies(request, reply, issued);
    noStore(reply);
    return ok({ accessTokenExp: lifetime(issued) });
  });

  // Ends the session the token names (if it still is one) and clears the cookies in any case: logging
  // out of a session that has already ended is done, not an error.
  app.post("/user.logout", { schema: { body: Optional, response: { 200: Done } } }, async (request, reply) => {
    if (cookies(request)[TOKEN_COOKIE] !== undefined && crossOriginCookieChange(request)) throw new ForbiddenError(CROSS_ORIGIN);
    let session;
    try {
      session = await tokens.verifySession(accessToken(request));
    } catch (e) {
      if (!(e instanceof UnauthorizedError)) throw e;
    }
    if (session) await tokens.logout(session);
    setSessionCookies(request, reply, undefined);
    return ok({});
  });
};
