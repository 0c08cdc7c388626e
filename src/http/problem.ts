/**
 * Errors as `application/problem+json` (RFC 9457): {type, title, status, detail, field?, limit?}.
 * FlowstoreErrors map by their status; Fastify's own client errors (validation, malformed JSON, wrong
 * content type, body too large) keep their 4xx status with the field named where there is one; any
 * other error is a 500 whose body says nothing about internals.
 */
import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import { Type, type Static } from "@sinclair/typebox";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { FlowstoreError, TooLargeError } from "../errors.js";
import { refTo } from "./components.js";

export const PROBLEM_CONTENT_TYPE = "application/problem+json";

export const Problem = Type.Object(
  {
    type: Type.String({ description: "a URN naming the kind of problem" }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    field: Type.Optional(Type.String({ description: "the offending input, e.g. body.displayName or query.limit" })),
    limit: Type.Optional(Type.Integer({ description: "the limit that was exceeded (413)" })),
  },
  { $id: "Problem", title: "Problem" },
);
export type Problem = Static<typeof Problem>;

/**
 * Response schema entries for the given error statuses (for validation of docs and serialization): each
 * refers to the one registered Problem component.
 */
export function problems(...statuses: number[]): Record<number, unknown> {
  const out: Record<number, unknown> = {};
  for (const s of statuses) {
    out[s] = { description: STATUS_CODES[s] ?? "error", content: { [PROBLEM_CONTENT_TYPE]: { schema: refTo("Problem") } } };
  }
  return out;
}

const CODES: Record<number, string> = {
  400: "validation",
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  405: "method_not_allowed",
  406: "not_acceptable",
  408: "request_timeout",
  409: "conflict",
  412: "precondition_failed",
  413: "too_large",
  414: "uri_too_long",
  415: "unsupported_media_type",
  428: "precondition_required",
  429: "too_many_requests",
  431: "headers_too_large",
  500: "internal",
  503: "unavailable",
  507: "insufficient_storage",
};

export function problem(status: number, detail: string, extra: { field?: string; limit?: number; code?: string } = {}): Problem {
  const p: Problem = {
    type: `urn:flowstore:problem:${extra.code ?? CODES[status] ?? (status < 500 ? "client_error" : "server_error")}`,
    title: STATUS_CODES[status] ?? "Error",
    status,
    detail,
  };
  if (extra.field !== undefined) p.field = extra.field;
  if (extra.limit !== undefined) p.limit = extra.limit;
  return p;
}

export function sendProblem(reply: FastifyReply, p: Problem): FastifyReply {
  if (p.status === 401) reply.header("www-authenticate", 'Bearer realm="flowstore"');
  return reply.code(p.status).type(PROBLEM_CONTENT_TYPE).send(p);
}

interface AjvError {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: { missingProperty?: string; additionalProperty?: string };
}

const PARTS: Record<string, string> = { body: "body", querystring: "query", params: "params", headers: "headers" };

/** `body.members[2]` from an ajv error in the body. */
function fieldOf(context: string | undefined, error: AjvError): string {
  const segments = (error.instancePath ?? "")
    .split("/")
    .slice(1)
    .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
  const extra = error.params?.missingProperty ?? error.params?.additionalProperty;
  if (extra !== undefined) segments.push(extra);
  let field = PARTS[context ?? "body"] ?? "body";
  for (const s of segments) field += /^\d+$/.test(s) ? `[${s}]` : `.${s}`;
  return field;
}

function validationDetail(field: string, error: AjvError): string {
  switch (error.keyword) {
    case "additionalProperties":
      return `${field} is not a known property`;
    case "required":
      return `${field} is required`;
    default:
      return `${field} ${error.message ?? "is invalid"}`;
  }
}

export function toProblem(error: unknown, request: FastifyRequest): Problem {
  if (error instanceof FlowstoreError) {
    return problem(error.status, error.message, {
      code: error.code,
      field: error.field,
      limit: error instanceof TooLargeError ? error.limit : undefined,
    });
  }
  const fe = error as Partial<FastifyError> & { validation?: AjvError[]; validationContext?: string };
  if (Array.isArray(fe.validation) && fe.validation.length > 0) {
    const first = fe.validation[0]!;
    const field = fieldOf(fe.validationContext, first);
    return problem(400, validationDetail(field, first), { field });
  }
  const status = typeof fe.statusCode === "number" ? fe.statusCode : 500;
  switch (fe.code) {
    case "FST_ERR_CTP_INVALID_JSON_BODY":
      return problem(400, "the body is not valid JSON", { field: "body" });
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return problem(400, "the body is empty but its content type is JSON", { field: "body" });
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return problem(413, `the body exceeds the limit of ${request.routeOptions.bodyLimit} bytes`, { limit: request.routeOptions.bodyLimit });
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return problem(415, "unsupported content type: send application/json");
    case "FST_ERR_BAD_URL":
      return problem(400, "the URL is not valid (bad percent-encoding?)");
    case "FST_ERR_MAX_PARAM_LENGTH":
      return problem(414, "a path parameter is too long");
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return problem(400, "the content length does not match the body");
  }
  if (fe instanceof SyntaxError && status === 400) return problem(400, "the body is not valid JSON", { field: "body" });
  if (status >= 400 && status < 500) return problem(status, typeof fe.message === "string" ? fe.message : "bad request");
  return problem(500, `internal error (request ${request.id})`);
}

/**
 * Fastify's `clientErrorHandler`: a request Node's HTTP parser refuses before Fastify sees it (headers
 * too large, bytes that are not HTTP, a body that is not framed, a timeout) answers a problem too, and
 * says `Connection: close`, so a keep-alive client does not send its next request on the dead socket.
 */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  const status = error.code === "ERR_HTTP_REQUEST_TIMEOUT" ? 408 : error.code === "HPE_HEADER_OVERFLOW" ? 431 : 400;
  const detail = status === 408 ? "the request did not arrive in time" : status === 431 ? "the request line and headers are too large" : "the request is not valid HTTP/1.1";
  const body = JSON.stringify(problem(status, detail));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}
