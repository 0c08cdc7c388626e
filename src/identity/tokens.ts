/**
 * Bearer tokens and the sessions behind them (the access/refresh split of OAuth 2.0, RFC 6749 §1.5).
 *
 * - An access token is a short-lived JWT signed with HS256 (jose): subject = user id, `sid` = its
 *   session, `ver` = the user's token version when it was issued. Verifying checks the signature, the
 *   algorithm, the issuer and the expiry, then reads the user record, its token version and the session
 *   in one `getMany`, so a disabled user, a changed password, a logout or a logout-all refuses the very
 *   next request (the store is read on every request, never cached: another process may have written it).
 * - A refresh token is opaque: `<base64url user id>.<sid>.<secret>`; the session keeps the SHA-256 of
 *   its secret. Each use rotates it (a new secret, committed on the session's version, so two uses of one
 *   token cannot both win); showing the one it replaced again revokes the session (reuse detection, RFC
 *   9700 §4.14.2). Records: see records.ts.
 */
import { createHash, randomBytes, timingSafeEqual, webcrypto } from "node:crypto";
import { errors as joseErrors, jwtVerify, SignJWT } from "jose";
import { ConflictError, UnauthorizedError } from "../errors.js";
import type { Actor } from "../access/actor.js";
import type { Op } from "../kv/contract.js";
import type { Identity } from "./identity.js";
import { DEFAULT_LOGIN_GUARD, LoginGuard, type LoginGuardLimits } from "./login-guard.js";
import { decodeRecord, type PasswordReset, PARTITION, sessionKey, sessionPrefix, tokenStateKey, tokenVersion, userKey, type SessionRecord, type UserRecord } from "./records.js";

export const ISSUER = "flowstore";
export const DEFAULT_TOKEN_TTL_SECONDS = 15 * 60;
export const DEFAULT_REFRESH_TTL_SECONDS = 24 * 3600;
/** Live sessions kept per user; opening one more closes the oldest. */
export const MAX_SESSIONS = 100;

export interface TokenOptions {
  /** At least 32 bytes. */
  readonly secret: Uint8Array;
  /** Lifetime of an access token (default 15 minutes). */
  readonly ttlSeconds?: number;
  /** Lifetime of a refresh token, renewed by each use (default 24 hours). */
  readonly refreshTtlSeconds?: number;
  readonly now?: () => Date;
  /**
   * The login guard every log-in goes through (login-guard.ts): a LoginGuard, its limits, or false for
   * none. Default: the default limits, on this clock.
   */
  readonly loginGuard?: LoginGuard | LoginGuardLimits | false;
}

export interface IssuedToken {
  /** The access token (a JWT for Authorization: Bearer). */
  readonly token: string;
  /** Seconds since the epoch. */
  readonly expiresAt: number;
  readonly refreshToken: string;
  readonly refreshExpiresAt: number;
  /** On a login: another account set the user's password since the user last set its own (who, when). */
  readonly passwordReset?: PasswordReset;
}

/** A verified access token: who acts, in which session. */
export interface Verified {
  readonly actor: Actor;
  readonly userId: string;
  readonly sessionId: string;
}

const SID = /^[0-9a-z]{8,64}$/;
const hashOf = (secret: string): string => createHash("sha256").update(secret).digest("base64url");
const sameHash = (a: string, b: string | undefined): boolean => b !== undefined && a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** The user id a refresh token names (undefined when it is not one), e.g. to rate-limit its use per user. */
export function refreshTokenUser(refreshToken: unknown): string | undefined {
  if (typeof refreshToken !== "string" || refreshToken.length > 512) return undefined;
  const parts = refreshToken.split(".");
  if (parts.length !== 3) return undefined;
  const user = Buffer.from(parts[0]!, "base64url").toString("utf8");
  return /^[A-Za-z0-9._@-]{1,64}$/.test(user) ? user : undefined;
}

export class Tokens {
  /** The HMAC key, imported once (jose imports a raw secret again on every sign and verify). */
  readonly #secret: Promise<webcrypto.CryptoKey>;
  readonly #ttl: number;
  readonly #refreshTtl: number;
  readonly #now: () => Date;
  /** Shared by every API that logs in through these Tokens. */
  readonly guard: LoginGuard | undefined;

  constructor(
    private readonly identity: Identity,
    options: TokenOptions,
  ) {
    if (!(options.secret instanceof Uint8Array) || options.secret.length < 32) {
      throw new RangeError("the token secret must be at least 32 bytes");
    }
    this.#secret = webcrypto.subtle.importKey("raw", options.secret, { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
    this.#ttl = options.ttlSeconds ?? DEFAULT_TOKEN_TTL_SECONDS;
    this.#refreshTtl = options.refreshTtlSeconds ?? DEFAULT_REFRESH_TTL_SECONDS;
    this.#now = options.now ?? (() => new Date());
    const g = options.loginGuard;
    this.guard = g === false ? undefined : g instanceof LoginGuard ? g : new LoginGuard(g ?? DEFAULT_LOGIN_GUARD, () => this.#now().getTime());
  }

  #seconds(): number {
    return Math.floor(this.#now().getTime() / 1000);
  }

  /**
   * Checks the credentials and opens a session (UnauthorizedError when they are wrong). `address` is the
   * client's, for the login guard: an attempt in a backoff is refused (TooManyRequestsError) unchecked.
   */
  async login(username: unknown, password: unknown, options: { address?: string } = {}): Promise<IssuedToken> {
    const name = typeof username === "string" ? username.slice(0, 256) : "";
    this.guard?.check(name, options.address);
    let checked;
    try {
      checked = await this.identity.credentials(username, password);
    } catch (e) {
      if (e instanceof UnauthorizedError) this.guard?.failed(name, options.address);
      throw e;
    }
    this.guard?.succeeded(name, options.address);
    const { user, tokenVersion: version, checks, passwordReset } = checked;
    const issued = await this.#open(user.id, version, checks);
    return passwordReset ? { ...issued, passwordReset } : issued;
  }

  /** Opens a session for a user without credentials (the caller vouches for it). */
  async issue(userId: string): Promise<IssuedToken> {
    const [user, tokens] = await this.identity.kv.getMany(PARTITION, [userKey(userId), tokenStateKey(userId)]);
    if (!user || !decodeRecord<UserRecord>(user).enabled) throw new UnauthorizedError("unknown or disabled user");
    return this.#open(userId, tokenVersion(tokens), [
      { type: "check", key: userKey(userId), version: user.version },
      { type: "check", key: tokenStateKey(userId), version: tokens?.version ?? null },
    ]);
  }

  async #open(userId: string, version: number, checks: Op[]): Promise<IssuedToken> {
    const now = this.#seconds();
    // Session ids sort by age: the oldest go first when a user has too many.
    const sid = now.toString(36).padStart(8, "0") + randomBytes(12).toString("hex");
    const secret = randomBytes(32).toString("base64url");
    const expiresAt = now + this.#refreshTtl;
    const record: SessionRecord = { version, refresh: hashOf(secret), expiresAt, createdAt: this.#now().toISOString() };
    const existing = await this.identity.kv.scan(PARTITION, { prefix: sessionPrefix(userId), limit: MAX_SESSIONS + 1 });
    const live = existing.entries.filter((e) => decodeRecord<SessionRecord>(e).expiresAt > now);
    const stale = existing.entries.filter((e) => !live.includes(e)).concat(live.slice(0, Math.max(0, live.length - MAX_SESSIONS + 1)));
    try {
      await this.identity.kv.commit(PARTITION, [
        ...checks,
        ...stale.map((e): Op => ({ type: "delete", key: e.key })),
        { type: "put", key: sessionKey(userId, sid), value: Buffer.from(JSON.stringify(record)) },
      ]);
    } catch (e) {
      // The password, the user or its token version changed since they were read: log in again.
      if (e instanceof ConflictError) throw new UnauthorizedError("the credentials changed meanwhile: log in again");
      throw e;
    }
    return { ...(await this.#access(userId, sid, version, now)), refreshToken: this.#refreshToken(userId, sid, secret), refreshExpiresAt: expiresAt };
  }

  async #access(userId: string, sid: string, version: number, now: number): Promise<{ token: string; expiresAt: number }> {
    const expiresAt = now + this.#ttl;
    const token = await new SignJWT({ sid, ver: version })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject(userId)
      .setIssuer(ISSUER)
      .setIssuedAt(now)
      .setExpirationTime(expiresAt)
      .sign(await this.#secret);
    return { token, expiresAt };
  }

  #refreshToken(userId: string, sid: string, secret: string): string {
    return `${Buffer.from(userId).toString("base64url")}.${sid}.${secret}`;
  }

  /** Rotates a refresh token: a new access token and a new refresh token; the one shown is spent. */
  async refresh(refreshToken: unknown): Promise<IssuedToken> {
    const invalid = () => new UnauthorizedError("invalid or expired refresh token");
    const userId = refreshTokenUser(refreshToken);
    if (userId === undefined) throw invalid();
    const [, sid, secret] = (refreshToken as string).split(".") as [string, string, string];
    if (!SID.test(sid) || secret === "") throw invalid();
    const key = sessionKey(userId, sid);
    const [user, tokens, session] = await this.identity.kv.getMany(PARTITION, [userKey(userId), tokenStateKey(userId), key]);
    if (!user || !session || !decodeRecord<UserRecord>(user).enabled) throw invalid();
    const record = decodeRecord<SessionRecord>(session);
    const now = this.#seconds();
    const version = tokenVersion(tokens);
    if (record.version !== version || record.expiresAt <= now) throw invalid();
    const shown = hashOf(secret);
    if (!sameHash(shown, record.refresh)) {
      if (sameHash(shown, record.previous)) {
        // A spent refresh token came back: someone holds a copy. End the session for both holders.
        await this.identity.kv.commit(PARTITION, [{ type: "delete", key }]);
        throw new UnauthorizedError("the refresh token was already used: the session is revoked");
      }
      throw invalid();
    }
    const next = randomBytes(32).toString("base64url");
    const expiresAt = now + this.#refreshTtl;
    const updated: SessionRecord = { ...record, refresh: hashOf(next), previous: shown, expiresAt };
    try {
      await this.identity.kv.commit(PARTITION, [
        { type: "check", key, version: session.version },
        { type: "check", key: userKey(userId), version: user.version },
        { type: "put", key, value: Buffer.from(JSON.stringify(updated)) },
      ]);
    } catch (e) {
      if (e instanceof ConflictError) throw invalid(); // used twice at once, or the user changed: one wins
      throw e;
    }
    return { ...(await this.#access(userId, sid, version, now)), refreshToken: this.#refreshToken(userId, sid, next), refreshExpiresAt: expiresAt };
  }

  /** Ends the session of a verified access token: its refresh token and every access token of it stop working. */
  async logout(verified: Verified): Promise<void> {
    await this.identity.kv.commit(PARTITION, [{ type: "delete", key: sessionKey(verified.userId, verified.sessionId) }]);
  }

  /** Ends every session of the token's user and bumps its token version (logout-all). */
  async logoutAll(verified: Verified): Promise<void> {
    await this.identity.revokeTokens(verified.actor, verified.userId);
  }

  /** The Actor of a valid token; UnauthorizedError for a forged, malformed, expired or revoked one, or a disabled user. */
  async verify(token: string): Promise<Actor> {
    return (await this.verifySession(token)).actor;
  }

  async verifySession(token: string): Promise<Verified> {
    let sub: unknown;
    let sid: unknown;
    let ver: unknown;
    try {
      const { payload } = await jwtVerify(token, await this.#secret, {
        algorithms: ["HS256"],
        issuer: ISSUER,
        currentDate: this.#now(),
        requiredClaims: ["exp", "sub"],
      });
      ({ sub, sid, ver } = payload);
    } catch (e) {
      if (e instanceof joseErrors.JWTExpired) throw new UnauthorizedError("the token has expired");
      if (e instanceof joseErrors.JOSEError || e instanceof TypeError) throw new UnauthorizedError("invalid token");
      throw e;
    }
    if (typeof sub !== "string" || sub === "" || typeof sid !== "string" || !SID.test(sid) || typeof ver !== "number") {
      throw new UnauthorizedError("invalid token");
    }
    const [user, tokens, session] = await this.identity.kv.getMany(PARTITION, [userKey(sub), tokenStateKey(sub), sessionKey(sub, sid)]);
    if (!user) throw new UnauthorizedError("unknown user");
    const record = decodeRecord<UserRecord>(user);
    if (!record.enabled) throw new UnauthorizedError("the user is disabled");
    if (ver !== tokenVersion(tokens) || !session) throw new UnauthorizedError("the token has been revoked");
    return { actor: { id: record.id, groups: record.groups }, userId: sub, sessionId: sid };
  }
}
