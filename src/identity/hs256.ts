/**
 * HS256 JWT verification with node:crypto, synchronously: the HMAC of `header.payload` under a KeyObject
 * made once, compared in constant time. WebCrypto's verify (jose's jwtVerify) is a promise whose job runs
 * on the thread pool, which the profile of a GET showed as a fifth of the server's time; this is the same
 * check with no promise. Tokens are still signed by jose (tokens.ts): the format is jose's.
 *
 * The checks are jose's for `jwtVerify(token, key, {algorithms: ["HS256"], issuer, currentDate,
 * requiredClaims})`, in its order: compact form, protected header a JSON object with `alg` "HS256" and no
 * critical parameter but `b64` (and `b64` true when present), the signature, the claims a JSON object in
 * strict UTF-8, the required claims and `iss` present, `iss` equal, `iat`/`nbf`/`exp` numbers when present,
 * `nbf` not in the future, `exp` in the future (no clock tolerance).
 */
import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from "node:crypto";

/** Why a token was refused: expired (its `exp` has passed) or invalid (anything else). */
export class JwtRefused extends Error {
  constructor(readonly expired: boolean) {
    super(expired ? "the token has expired" : "invalid token");
  }
}

const SEGMENT = /^[A-Za-z0-9_-]*$/;
const strict = new TextDecoder("utf-8", { fatal: true });

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;

function json(segment: string): unknown {
  try {
    return JSON.parse(strict.decode(Buffer.from(segment, "base64url")));
  } catch {
    throw new JwtRefused(false);
  }
}

export interface Hs256Options {
  readonly issuer: string;
  readonly requiredClaims: readonly string[];
  /** Seconds since the epoch. */
  readonly now: number;
}

export class Hs256 {
  readonly #key: KeyObject;

  constructor(secret: Uint8Array) {
    this.#key = createSecretKey(secret);
  }

  /** The claims of a valid token; JwtRefused otherwise. */
  verify(token: string, options: Hs256Options): Record<string, unknown> {
    const parts = token.split(".");
    if (parts.length !== 3) throw new JwtRefused(false);
    const [h, p, s] = parts as [string, string, string];
    if (!SEGMENT.test(h) || !SEGMENT.test(p) || !SEGMENT.test(s) || h === "") throw new JwtRefused(false);
    const header = json(h);
    if (!isObject(header) || header.alg !== "HS256") throw new JwtRefused(false);
    if (header.crit !== undefined) {
      const crit = header.crit;
      if (!Array.isArray(crit) || crit.length === 0 || crit.some((c) => c !== "b64" || header[c] === undefined)) throw new JwtRefused(false);
    }
    if (header.b64 !== undefined && header.b64 !== true) throw new JwtRefused(false);
    const expected = createHmac("sha256", this.#key).update(`${h}.${p}`).digest();
    const shown = Buffer.from(s, "base64url");
    if (shown.length !== expected.length || !timingSafeEqual(shown, expected)) throw new JwtRefused(false);
    const claims = json(p);
    if (!isObject(claims)) throw new JwtRefused(false);
    for (const claim of new Set([...options.requiredClaims, "iss"])) if (!Object.hasOwn(claims, claim)) throw new JwtRefused(false);
    if (claims.iss !== options.issuer) throw new JwtRefused(false);
    for (const c of ["iat", "nbf", "exp"]) if (claims[c] !== undefined && typeof claims[c] !== "number") throw new JwtRefused(false);
    if (claims.nbf !== undefined && (claims.nbf as number) > options.now) throw new JwtRefused(false);
    if (claims.exp !== undefined && (claims.exp as number) <= options.now) throw new JwtRefused(true);
    return claims;
  }
}
