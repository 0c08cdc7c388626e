/**
 * The TruBudget API's test harness: a real server on 127.0.0.1 (test/http/harness.ts) built with
 * `trubudgetApi`, root logged in through TruBudget's own `user.authenticate`, and calls of
 * `/api/<intent>` with TruBudget's envelope. `expectShape` checks a body against a schema written, as
 * data in the test, from TruBudget's swagger schema of the route.
 */
import { Ajv, type AnySchema } from "ajv";
import { expect } from "vitest";
import type { KvStore } from "../../../src/kv/contract.js";
import { MemoryKv } from "../../../src/kv/memory.js";
import { raw, ROOT_PASSWORD, startServer, type Running, type StartOptions } from "../harness.js";

export const TB = "/api";

/** The organization the harness's node runs for (TruBudget's ORGANIZATION); its users belong to it. */
export const TB_ORGANIZATION = "KfW";

export type Answer = Awaited<ReturnType<typeof raw>>;

export interface CallOptions {
  /** Sent as `Authorization: Bearer`. */
  readonly token?: string;
  /** Sent as the Cookie header, verbatim. */
  readonly cookie?: string;
  /** A POST's `data` (wrapped in the envelope); ignored when `body` is given. */
  readonly data?: unknown;
  /** A POST's whole body, verbatim (a bad envelope, say). */
  readonly body?: unknown;
  readonly query?: Record<string, string>;
  readonly headers?: Record<string, string>;
}

/** Calls `/api/<intent>`: a GET when there is neither `data` nor `body`, else a POST with the envelope. */
export async function tbCall(base: string, intent: string, options: CallOptions = {}): Promise<Answer> {
  const post = options.data !== undefined || options.body !== undefined;
  const body = options.body !== undefined ? options.body : { apiVersion: "1.0", data: options.data };
  const query = options.query ? `?${new URLSearchParams(options.query)}` : "";
  return raw(base, post ? "POST" : "GET", `${TB}/${intent}${query}`, {
    headers: {
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      ...(options.cookie ? { cookie: options.cookie } : {}),
      ...(post ? { "content-type": "application/json" } : {}),
      ...options.headers,
    },
    body: post ? (typeof body === "string" ? body : JSON.stringify(body)) : undefined,
  });
}

/** The cookies an answer sets, as `name=value` by name (the first of each name) and their raw lines. */
export function setCookies(answer: Answer): { values: Record<string, string>; lines: string[]; header: string } {
  const lines = answer.headers.getSetCookie();
  const values: Record<string, string> = {};
  for (const line of lines) {
    const [pair] = line.split(";");
    const eq = pair!.indexOf("=");
    const name = pair!.slice(0, eq);
    values[name] ??= decodeURIComponent(pair!.slice(eq + 1));
  }
  const header = Object.entries(values)
    .map(([n, v]) => `${n}=${encodeURIComponent(v)}`)
    .join("; ");
  return { values, lines, header };
}

/** Logs in through `user.authenticate`; expects a 200. */
export async function tbLogin(base: string, id: string, password: string): Promise<{ token: string; cookie: string; answer: Answer }> {
  const answer = await tbCall(base, "user.authenticate", { data: { user: { id, password } } });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return { token: answer.body.data.user.token as string, cookie: setCookies(answer).header, answer };
}

export interface TbRunning extends Running {
  /** Root's access token, from TruBudget's log in (the latest `loginRoot`'s). */
  readonly rootToken: string;
  /** Logs root in again (a restore ends every session): `call` and `rootToken` use the new token. */
  loginRoot(): Promise<string>;
  /** Calls `/api/<intent>` as root (Bearer) unless the options name another token or cookie. */
  call(intent: string, options?: CallOptions): Promise<Answer>;
  /** Creates a user through `global.createUser` (as root) and logs it in; its token. */
  user(id: string, password?: string, extra?: Record<string, unknown>): Promise<string>;
}

/** A server with TruBudget's API on, over `kv` (default: memory) which stays the caller's to close. */
export async function startTruBudget(kv: KvStore = new MemoryKv(), options: StartOptions = {}): Promise<TbRunning> {
  const s = await startServer(kv, { webRoot: false, loginRateLimit: false, ...options, trubudgetApi: { organization: TB_ORGANIZATION } });
  let { token: rootToken } = await tbLogin(s.base, "root", ROOT_PASSWORD);
  const call = (intent: string, o: CallOptions = {}) => tbCall(s.base, intent, o.token || o.cookie ? o : { ...o, token: rootToken });
  return {
    ...s,
    get rootToken() {
      return rootToken;
    },
    async loginRoot() {
      ({ token: rootToken } = await tbLogin(s.base, "root", ROOT_PASSWORD));
      return rootToken;
    },
    call,
    async user(id, password = `${id} password 123`, extra = {}) {
      const created = await call("global.createUser", { data: { user: { id, displayName: id, organization: TB_ORGANIZATION, password, ...extra } } });
      expect(created.status, JSON.stringify(created.body)).toBeLessThan(300);
      return (await tbLogin(s.base, id, password)).token;
    },
  };
}

const ajv = new Ajv({ allErrors: true, strict: false });

/** Expects `value` to match `schema` (JSON schema, as data), listing every mismatch when it does not. */
export function expectShape(schema: AnySchema, value: unknown): void {
  const validate = ajv.compile(schema);
  const valid = validate(value);
  expect(valid ? [] : validate.errors, JSON.stringify(value)).toEqual([]);
}

/** TruBudget's error body (api/src/http_errors.ts): status and message under `error`. */
export const ERROR_SCHEMA = {
  type: "object",
  required: ["apiVersion", "error"],
  additionalProperties: false,
  properties: {
    apiVersion: { type: "string" },
    error: { type: "object", required: ["code", "message"], additionalProperties: false, properties: { code: { type: "number" }, message: { type: "string" } } },
  },
} as const;

/** Expects TruBudget's error: the status, the same code in the body, and a message containing `includes`. */
export function expectError(answer: Answer, status: number, includes?: string): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(status);
  expectShape(ERROR_SCHEMA, answer.body);
  expect(answer.body.error.code).toBe(status);
  if (includes !== undefined) expect(answer.body.error.message).toContain(includes);
}

/** A success envelope around `data`'s schema. */
export const envelopeOf = (data: AnySchema) => ({
  type: "object",
  required: ["apiVersion", "data"],
  properties: { apiVersion: { type: "string", const: "1.0" }, data },
});
