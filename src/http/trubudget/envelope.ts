/**
 * TruBudget's envelopes (its api/src/httpd/lib.ts contract): a request body is
 * `{ apiVersion: "1.0", data: {…} }`, a success `{ apiVersion: "1.0", data: {…} }` and an error
 * `{ apiVersion: "1.0", error: { code: <status>, message } }`. Errors are flowstore's own (src/errors.ts
 * and Fastify's client errors), mapped once by problem.ts; this file only re-shapes the problem, so the
 * status and the named field are the native API's too.
 */
import { Type, type Static, type TSchema } from "@sinclair/typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { FlowstoreError } from "../../errors.js";
import { PROBLEM_CONTENT_TYPE, type Problem } from "../problem.js";

export const API_VERSION = "1.0";

/** A request body: the envelope around `data` (TruBudget's Joi schemas refuse other keys, so do we). */
export const Envelope = <T extends TSchema>(data: T) => Type.Object({ apiVersion: Type.Literal(API_VERSION), data }, { additionalProperties: false });
export type Envelope<T extends TSchema> = { apiVersion: typeof API_VERSION; data: Static<T> };

/** A success reply's schema (serialization): the envelope around `data`. */
export const Reply = <T extends TSchema>(data: T) => Type.Object({ apiVersion: Type.String(), data });

/** A success reply. */
export const ok = <T>(data: T): { apiVersion: string; data: T } => ({ apiVersion: API_VERSION, data });

export const ErrorBody = Type.Object({ apiVersion: Type.String(), error: Type.Object({ code: Type.Integer(), message: Type.String() }) });
export type ErrorBody = Static<typeof ErrorBody>;

export const errorBody = (code: number, message: string): ErrorBody => ({ apiVersion: API_VERSION, error: { code, message } });

/** TruBudget's PreconditionError (its http_errors.ts answers it 412): a rule of the domain refuses the request as it stands. */
export class PreconditionError extends FlowstoreError {
  constructor(message: string, field?: string) {
    super("precondition_failed", 412, message, field);
  }
}

/** TruBudget tells an unauthenticated caller no more than this (its http_errors.ts hides the cause). */
export const AUTHENTICATION_FAILED = "Authentication Failed";

/**
 * Every error of the plugin's scope in TruBudget's shape: the server answers an error as a problem
 * (problem.ts: flowstore's error classes, Fastify's validation and client errors, rate limits, overload),
 * and this onSend hook re-shapes that one body, keeping its status and its detail (which names the field).
 * A 401 says only that authentication failed, as TruBudget does. Successes pass untouched.
 */
export function translateProblems(app: FastifyInstance, applies: (request: FastifyRequest) => boolean = () => true): void {
  app.addHook("onSend", (request, reply, payload, done) => {
    const type = reply.getHeader("content-type");
    if (!applies(request) || typeof type !== "string" || !type.startsWith(PROBLEM_CONTENT_TYPE) || typeof payload !== "string") return done(null, payload);
    const problem = JSON.parse(payload) as Problem;
    reply.header("content-type", "application/json; charset=utf-8");
    reply.removeHeader("www-authenticate");
    const named = problem.field === undefined || problem.detail.includes(problem.field) ? problem.detail : `${problem.detail} (${problem.field})`;
    const message = problem.status === 401 ? AUTHENTICATION_FAILED : named;
    done(null, JSON.stringify(errorBody(problem.status, message)));
  });
}
