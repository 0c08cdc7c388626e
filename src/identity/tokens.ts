/**
 * Bearer tokens: JWTs signed with HS256 (jose), subject = user id, with an expiry. Verifying checks
 * the signature, the algorithm, the issuer and the expiry, then builds the Actor from the stored user,
 * so a disabled (or removed) user's token stops working at once.
 */
import { errors as joseErrors, jwtVerify, SignJWT } from "jose";
import { UnauthorizedError } from "../errors.js";
import type { Actor } from "../resources/actor.js";
import type { Identity } from "./identity.js";

export const ISSUER = "flowstore";
export const DEFAULT_TOKEN_TTL_SECONDS = 8 * 3600;

export interface TokenOptions {
  /** At least 32 bytes. */
  readonly secret: Uint8Array;
  readonly ttlSeconds?: number;
  readonly now?: () => Date;
}

export interface IssuedToken {
  readonly token: string;
  /** Seconds since the epoch. */
  readonly expiresAt: number;
}

export class Tokens {
  readonly #secret: Uint8Array;
  readonly #ttl: number;
  readonly #now: () => Date;

  constructor(
    private readonly identity: Identity,
    options: TokenOptions,
  ) {
    if (!(options.secret instanceof Uint8Array) || options.secret.length < 32) {
      throw new RangeError("the token secret must be at least 32 bytes");
    }
    this.#secret = options.secret;
    this.#ttl = options.ttlSeconds ?? DEFAULT_TOKEN_TTL_SECONDS;
    this.#now = options.now ?? (() => new Date());
  }

  /** Checks the credentials and issues a token (UnauthorizedError when they are wrong). */
  async login(username: unknown, password: unknown): Promise<IssuedToken> {
    const user = await this.identity.authenticate(username, password);
    return this.issue(user.id);
  }

  async issue(userId: string): Promise<IssuedToken> {
    const now = Math.floor(this.#now().getTime() / 1000);
    const expiresAt = now + this.#ttl;
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject(userId)
      .setIssuer(ISSUER)
      .setIssuedAt(now)
      .setExpirationTime(expiresAt)
      .sign(this.#secret);
    return { token, expiresAt };
  }

  /** The Actor of a valid token; UnauthorizedError for a forged, malformed or expired one, or a disabled user. */
  async verify(token: string): Promise<Actor> {
    let sub: string | undefined;
    try {
      const { payload } = await jwtVerify(token, this.#secret, {
        algorithms: ["HS256"],
        issuer: ISSUER,
        currentDate: this.#now(),
        requiredClaims: ["exp", "sub"],
      });
      sub = payload.sub;
    } catch (e) {
      if (e instanceof joseErrors.JWTExpired) throw new UnauthorizedError("the token has expired");
      if (e instanceof joseErrors.JOSEError || e instanceof TypeError) throw new UnauthorizedError("invalid token");
      throw e;
    }
    if (typeof sub !== "string") throw new UnauthorizedError("invalid token");
    return this.identity.actorFor(sub);
  }
}
