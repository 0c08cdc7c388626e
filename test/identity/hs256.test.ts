/**
 * The synchronous HS256 verifier (src/identity/hs256.ts) decides as jose's jwtVerify does with the options
 * tokens.ts used to pass it: every token below is accepted by both or refused by both, expired ones as expired.
 */
import { createHmac } from "node:crypto";
import { errors as joseErrors, jwtVerify, SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { Hs256, JwtRefused } from "../../src/identity/hs256.js";

const secret = new TextEncoder().encode("k".repeat(40));
const NOW = 1_900_000_000;
const b64 = (x: unknown) => Buffer.from(typeof x === "string" ? x : JSON.stringify(x)).toString("base64url");
/** A token with any header and payload bytes, signed with `key`. */
function raw(header: unknown, payload: unknown, key: Uint8Array = secret): string {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${createHmac("sha256", key).update(input).digest("base64url")}`;
}
const good = { sub: "alice", sid: "abcdefgh1234", ver: 0, iss: "flowstore", iat: NOW - 10, exp: NOW + 60 };
const H = { alg: "HS256", typ: "JWT" };

async function joseSays(token: string): Promise<string> {
  try {
    await jwtVerify(token, secret, { algorithms: ["HS256"], issuer: "flowstore", currentDate: new Date(NOW * 1000), requiredClaims: ["exp", "sub"] });
    return "ok";
  } catch (e) {
    if (e instanceof joseErrors.JWTExpired) return "expired";
    if (e instanceof joseErrors.JOSEError || e instanceof TypeError) return "invalid";
    throw e;
  }
}
function oursSays(token: string): string {
  try {
    new Hs256(secret).verify(token, { issuer: "flowstore", requiredClaims: ["exp", "sub"], now: NOW });
    return "ok";
  } catch (e) {
    if (e instanceof JwtRefused) return e.expired ? "expired" : "invalid";
    throw e;
  }
}

describe("HS256 verification with node:crypto", () => {
  it("decides every case as jose does", async () => {
    const signed = await new SignJWT({ sid: "abcdefgh1234", ver: 3 })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject("alice")
      .setIssuer("flowstore")
      .setIssuedAt(NOW)
      .setExpirationTime(NOW + 900)
      .sign(secret);
    const [h, p, s] = signed.split(".") as [string, string, string];
    const cases: Record<string, string> = {
      "jose's own token": signed,
      "a good token": raw(H, good),
      "expired at now": raw(H, { ...good, exp: NOW }),
      "expired before": raw(H, { ...good, exp: NOW - 1 }),
      "no exp": raw(H, { ...good, exp: undefined }),
      "exp a string": raw(H, { ...good, exp: String(NOW + 60) }),
      "no sub": raw(H, { ...good, sub: undefined }),
      "no iss": raw(H, { ...good, iss: undefined }),
      "another iss": raw(H, { ...good, iss: "other" }),
      "iat a string": raw(H, { ...good, iat: "yesterday" }),
      "nbf in the future": raw(H, { ...good, nbf: NOW + 1 }),
      "nbf now": raw(H, { ...good, nbf: NOW }),
      "nbf a string": raw(H, { ...good, nbf: "now" }),
      "another key": raw(H, good, new TextEncoder().encode("x".repeat(40))),
      "alg HS384 label": raw({ alg: "HS384" }, good),
      "alg none": `${b64({ alg: "none" })}.${b64(good)}.`,
      "no alg": raw({ typ: "JWT" }, good),
      "crit b64 true": raw({ alg: "HS256", crit: ["b64"], b64: true }, good),
      "crit b64 false": raw({ alg: "HS256", crit: ["b64"], b64: false }, good),
      "crit unknown": raw({ alg: "HS256", crit: ["exp"], exp: 1 }, good),
      "crit empty": raw({ alg: "HS256", crit: [] }, good),
      "header an array": raw([1], good),
      "payload an array": raw(H, [good]),
      "payload null": raw(H, "null"),
      "payload not JSON": raw(H, "{nope"),
      "payload bad UTF-8": (() => {
        const input = `${b64(H)}.${Buffer.from([0x7b, 0xff, 0x7d]).toString("base64url")}`;
        return `${input}.${createHmac("sha256", secret).update(input).digest("base64url")}`;
      })(),
      "tampered payload": `${h}.${b64({ ...good, sub: "root" })}.${s}`,
      "tampered signature": `${h}.${p}.${s.slice(0, -2)}AA`,
      "short signature": `${h}.${p}.${s.slice(0, 10)}`,
      "two parts": `${h}.${p}`,
      "four parts": `${signed}.x`,
      empty: "",
      "padding in a segment": `${h}=.${p}.${s}`,
      "a space": `${h}.${p} .${s}`,
    };
    for (const [name, token] of Object.entries(cases)) {
      expect(`${name}: ${oursSays(token)}`).toBe(`${name}: ${await joseSays(token)}`);
    }
  });
});
