/**
 * Bearer tokens and the sessions behind them (the access/refresh split of OAuth 2.0, RFC 6749 §1.5).
 *
 * - An access token is a short-lived JWT signed with HS256 (jose): subject = user id, `sid` = its
 *   session, `ver` = the user's token version when it was issued. Verifying checks the signature, the
 *   algorithm, the issuer and the expiry, then reads the user record, its token version and the session
 *   in one snapshot, so a disabled user, a changed password, a logout or a logout-all refuses the very
 *   next request (the store is read on every request: another process may have written it). The
 *   signature is checked synchronously with node:crypto (hs256.ts, jose's checks), once per token (the
 *   checked claims are kept per process; the expiry is checked on every request); the user record is
 *   parsed once per version it is read at (a per-process cache keyed by the record's kv version, so a
 *   write by any process, which gives the record a new version, is seen by the next request). On a store
 *   that reads synchronously (LMDB, memory) with the token epoch known, a request is verified with no
 *   promise at all (`verifyNow`), and the three records are read again only once the identity partition's
 *   commit sequence moved (`partitionVersionSync`, read first on every request): every write to a user,
 *   a token version or a session, by any process, moves it, so the next request sees it as before.
 * - A refresh token is opaque: `<base64url user id>.<sid>.<secret>`; the session keeps the SHA-256 of
 *   its secret. Each use rotates it (a new secret, committed on the session's version, so two uses of one
 *   token cannot both win); showing the one it replaced again revokes the session (reuse detection, RFC
 *   9700 §4.14.2). Records: see records.ts.
 * - The store's token epoch (`tokenEpoch`, kept by the store beside the restore fence) is in every access
 *   token (`ep`) and session: a restore moves it on, so no token or session that existed before a
 *   restore works after it (a backup brings back sessions and token versions, never their validity).
 * - A caller may add claims of its own to the access tokens it opens or refreshes (`claims`, computed
 *   from the user's record: TruBudget's adapter adds TruBudget's `userId`, `organization`, `groups`);
 *   flowstore's own (`sub`, `sid`, `ver`, `iss`, `iat`, `exp`) are never replaced by them, and verifying
 *   reads flowstore's own only.
 */
import { createHash, randomBytes, timingSafeEqual, webcrypto } from "node:crypto";
import { SignJWT } from "jose";
import { ConflictError, UnauthorizedError } from "../errors.js";
import type { Actor } from "../access/actor.js";
import type { Entry, Op } from "../kv/contract.js";
import { Hs256, JwtRefused } from "./hs256.js";
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
  /**
   * The store's token epoch now (default: always 0). Tokens and sessions of another epoch are refused.
   * A number when it is known without I/O (a fence read recently): verifying then needs no promise.
   */
  readonly tokenEpoch?: () => number | Promise<number>;
}

/** Claims a caller adds to an access token, from the user's record (flowstore's own claims win over them). */
export type ExtraClaims = (user: UserRecord) => Record<string, unknown>;

/** flowstore's own claims: extra claims of these names are dropped. */
const OWN_CLAIMS = new Set(["sub", "sid", "ver", "ep", "iss", "iat", "exp", "nbf", "aud", "jti"]);

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

/** User records kept decoded per process (the oldest entry goes first past this). */
const USER_CACHE = 10_000;
/** Access tokens whose signature was checked, kept per process (the oldest entry goes first past this). */
const TOKEN_CACHE = 10_000;

/** What a checked access token says (flowstore's own claims, their types checked). */
interface Claims {
  readonly sub: string;
  readonly sid: string;
  readonly ver: number;
  readonly ep: number;
  readonly exp: number;
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
  /** The HMAC key, imported once (jose imports a raw secret again on every sign and verify): signing. */
  readonly #secret: Promise<webcrypto.CryptoKey>;
  /** The same key as a node:crypto KeyObject: verifying, synchronously. */
  readonly #verifier: Hs256;
  /** Per user id, the user record last decoded, the kv version it was read at, and its Actor. */
  readonly #users = new Map<string, { version: number; bytes: Buffer; record: UserRecord; actor: Actor }>();
  /**
   * Per access token, its claims once its signature and claims were checked: a token is a string the
   * server signed, so the HMAC and the JSON parses are done once per token, not once per request. The
   * expiry, the epoch and the user's records are still checked on every request.
   */
  readonly #claims = new Map<string, Claims>();
  /**
   * Per checked token (its Claims, kept as long as #claims keeps them), what its stored records decided
   * last: the Verified, and the identity partition's commit sequence read before those records were. A
   * request whose read of the sequence answers the same reuses it (no key of the partition changed, by
   * any process: `partitionVersionSync`); any write to users, token versions or sessions moves the
   * sequence on, so a revoked token or a disabled user is refused at the next request as before.
   */
  readonly #decided = new WeakMap<Claims, { readonly version: number; readonly verified: Verified }>();
  readonly #ttl: number;
  readonly #refreshTtl: number;
  readonly #now: () => Date;
  readonly #epoch: () => number | Promise<number>;
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
    this.#verifier = new Hs256(options.secret);
    this.#ttl = options.ttlSeconds ?? DEFAULT_TOKEN_TTL_SECONDS;
    this.#refreshTtl = options.refreshTtlSeconds ?? DEFAULT_REFRESH_TTL_SECONDS;
    this.#now = options.now ?? (() => new Date());
    this.#epoch = options.tokenEpoch ?? (() => 0);
    const g = options.loginGuard;
    // Counted in the store (login-guard.ts): every server of a fleet and every restart share the counters.
    this.guard = g === false ? undefined : g instanceof LoginGuard ? g : new LoginGuard(identity.kv, g ?? DEFAULT_LOGIN_GUARD, () => this.#now().getTime());
  }

  #seconds(): number {
    return Math.floor(this.#now().getTime() / 1000);
  }

  /**
   * Checks the credentials and opens a session (UnauthorizedError when they are wrong). `address` is the
   * client's, for the login guard: an attempt in a backoff is refused (TooManyRequestsError) unchecked.
   */
  async login(username: unknown, password: unknown, options: { address?: string; claims?: ExtraClaims } = {}): Promise<IssuedToken> {
    const name = typeof username === "string" ? username.slice(0, 256) : "";
    await this.guard?.check(name, options.address);
    let checked;
    try {
      checked = await this.identity.credentials(username, password);
    } catch (e) {
      if (e instanceof UnauthorizedError) await this.guard?.failed(name, options.address);
      throw e;
    }
    await this.guard?.succeeded(name, options.address);
    const { user, tokenVersion: version, checks, passwordReset } = checked;
    const issued = await this.#open(user.id, version, checks, options.claims?.(user));
    return passwordReset ? { ...issued, passwordReset } : issued;
  }

  /**
   * A user sets its own password proving its current one, and logs in with the new one: what a user
   * whose password an administrator reset requiring a new one must do first (`login` refuses it with a
   * PasswordChangeRequiredError until then); any user may. Guarded as a log in (the current password is
   * a guess like any other). It proves the current password only, which after a reset the administrator
   * knows too: the reset's record stays, shown at every log-in until the user sets its own password
   * from a session (identity.ts `setPassword`'s `afterReset`).
   */
  async changePassword(username: unknown, current: unknown, password: string, options: { address?: string; claims?: ExtraClaims } = {}): Promise<IssuedToken> {
    const name = typeof username === "string" ? username.slice(0, 256) : "";
    await this.guard?.check(name, options.address);
    let user: UserRecord;
    try {
      ({ user } = await this.identity.credentials(username, current, { changing: true }));
    } catch (e) {
      if (e instanceof UnauthorizedError) await this.guard?.failed(name, options.address);
      throw e;
    }
    await this.guard?.succeeded(name, options.address);
    await this.identity.setPassword({ id: user.id, groups: user.groups }, user.id, password, { afterReset: true });
    return this.login(user.id, password, options);
  }

  /** Opens a session for a user without credentials (the caller vouches for it). */
  async issue(userId: string, options: { claims?: ExtraClaims } = {}): Promise<IssuedToken> {
    const [user, tokens] = await this.identity.kv.getMany(PARTITION, [userKey(userId), tokenStateKey(userId)]);
    const record = user ? decodeRecord<UserRecord>(user) : undefined;
    if (!user || !record?.enabled) throw new UnauthorizedError("unknown or disabled user");
    return this.#open(
      userId,
      tokenVersion(tokens),
      [
        { type: "check", key: userKey(userId), version: user.version },
        { type: "check", key: tokenStateKey(userId), version: tokens?.version ?? null },
      ],
      options.claims?.(record),
    );
  }

  async #open(userId: string, version: number, checks: Op[], extra?: Record<string, unknown>): Promise<IssuedToken> {
    const now = this.#seconds();
    // Session ids sort by age: the oldest go first when a user has too many.
    const sid = now.toString(36).padStart(8, "0") + randomBytes(12).toString("hex");
    const secret = randomBytes(32).toString("base64url");
    const expiresAt = now + this.#refreshTtl;
    const epoch = await this.#epoch();
    const record: SessionRecord = { version, refresh: hashOf(secret), expiresAt, createdAt: this.#now().toISOString(), ...(epoch === 0 ? {} : { epoch }) };
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
    return { ...(await this.#access(userId, sid, version, now, epoch, extra)), refreshToken: this.#refreshToken(userId, sid, secret), refreshExpiresAt: expiresAt };
  }

  async #access(userId: string, sid: string, version: number, now: number, epoch: number, extra: Record<string, unknown> = {}): Promise<{ token: string; expiresAt: number }> {
    const expiresAt = now + this.#ttl;
    const theirs = Object.fromEntries(Object.entries(extra).filter(([name]) => !OWN_CLAIMS.has(name)));
    const token = await new SignJWT({ ...theirs, sid, ver: version, ...(epoch === 0 ? {} : { ep: epoch }) })
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
  async refresh(refreshToken: unknown, options: { claims?: ExtraClaims } = {}): Promise<IssuedToken> {
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
    const epoch = await this.#epoch();
    if (record.version !== version || record.expiresAt <= now || (record.epoch ?? 0) !== epoch) throw invalid();
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
    const extra = options.claims?.(decodeRecord<UserRecord>(user));
    return { ...(await this.#access(userId, sid, version, now, epoch, extra)), refreshToken: this.#refreshToken(userId, sid, next), refreshExpiresAt: expiresAt };
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
    return this.verifyNow(token);
  }

  /**
   * `verifySession` with no promise where it can: the token's claims checked before (#claimsOf), the
   * token epoch known without I/O and a store that reads synchronously (LMDB, memory: `getSync`) answer
   * at once; otherwise the promise of the same checks. Throws (or rejects with) UnauthorizedError.
   */
  verifyNow(token: string): Verified | Promise<Verified> {
    const claims = this.#claimsOf(token);
    const epoch = this.#epoch();
    return typeof epoch === "number" ? this.#checkStored(claims, epoch) : epoch.then((e) => this.#checkStored(claims, e));
  }

  /** The token's claims: checked once per token (signature, algorithm, issuer, types), its expiry every time. */
  #claimsOf(token: string): Claims {
    const now = this.#seconds();
    const known = this.#claims.get(token);
    if (known) {
      if (known.exp > now) return known;
      this.#claims.delete(token);
      throw new UnauthorizedError(new JwtRefused(true).message);
    }
    let sub: unknown;
    let sid: unknown;
    let ver: unknown;
    let ep: unknown;
    let exp: unknown;
    try {
      ({ sub, sid, ver, ep, exp } = this.#verifier.verify(token, { issuer: ISSUER, requiredClaims: ["exp", "sub"], now }));
    } catch (e) {
      if (e instanceof JwtRefused) throw new UnauthorizedError(e.message);
      throw e;
    }
    if (typeof sub !== "string" || sub === "" || typeof sid !== "string" || !SID.test(sid) || typeof ver !== "number" || (ep !== undefined && typeof ep !== "number")) {
      throw new UnauthorizedError("invalid token");
    }
    const claims: Claims = { sub, sid, ver, ep: (ep as number | undefined) ?? 0, exp: exp as number };
    if (this.#claims.size >= TOKEN_CACHE) this.#claims.delete(this.#claims.keys().next().value!);
    this.#claims.set(token, claims);
    return claims;
  }

  /**
   * The epoch, then the user record, its token version and the session, read in one snapshot
   * (synchronously where the store can); where the store reads the identity partition's commit sequence
   * synchronously, not read again while it stands where it stood when they were last read (#decided).
   */
  #checkStored(claims: Claims, epoch: number): Verified | Promise<Verified> {
    if (claims.ep !== epoch) throw new UnauthorizedError("the token was issued before the store was restored: log in again");
    const { kv } = this.identity;
    const keys = [userKey(claims.sub), tokenStateKey(claims.sub), sessionKey(claims.sub, claims.sid)];
    if (kv.getSync) {
      // The sequence first: records read after it are at least as new, so an equal sequence later means
      // they are still what was read (a newer record read meanwhile only makes the next read come sooner).
      const version = kv.partitionVersionSync?.(PARTITION);
      if (version !== undefined) {
        const known = this.#decided.get(claims);
        if (known?.version === version) return known.verified;
      }
      // Synchronous reads in one event turn share one read transaction (as getMany's do).
      const verified = this.#decide(
        claims,
        keys.map((k) => kv.getSync!(PARTITION, k)),
      );
      if (version !== undefined) this.#decided.set(claims, { version, verified });
      return verified;
    }
    return kv.getMany(PARTITION, keys).then((entries) => this.#decide(claims, entries));
  }

  #decide(claims: Claims, [user, tokens, session]: readonly (Entry | undefined)[]): Verified {
    if (!user) throw new UnauthorizedError("unknown user");
    const { record, actor } = this.#userRecord(claims.sub, user);
    if (!record.enabled) throw new UnauthorizedError("the user is disabled");
    if (claims.ver !== tokenVersion(tokens) || !session) throw new UnauthorizedError("the token has been revoked");
    return { actor, userId: claims.sub, sessionId: claims.sid };
  }

  /**
   * The user record of an entry (and its Actor), decoded once per version: a write by any process gives
   * the record a new version. The bytes are compared too, so a store replaced by a restore (whose versions may repeat)
   * cannot serve a stale record.
   */
  #userRecord(userId: string, entry: Entry): { record: UserRecord; actor: Actor } {
    const cached = this.#users.get(userId);
    if (cached && cached.version === entry.version && cached.bytes.equals(entry.value)) return cached;
    const record = decodeRecord<UserRecord>(entry);
    // One Actor per record version: what is derived per actor (record.ts's identity needles) is kept.
    const decoded = { version: entry.version, bytes: Buffer.from(entry.value), record, actor: { id: record.id, groups: record.groups } };
    if (this.#users.size >= USER_CACHE) this.#users.delete(this.#users.keys().next().value!);
    this.#users.set(userId, decoded);
    return decoded;
  }
}
