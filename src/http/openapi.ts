/**
 * The OpenAPI document's conventions, derived in one place for every route (present and future): a
 * route states what is particular to it (its summary, schemas, the domain errors it answers and, in
 * `config`, the HTTP facts below), and every operation then gets from these rules:
 *
 * - an `operationId` from its method and path (unless it names its own), a tag (its first path segment,
 *   unless it names its own) and a description (its summary, unless it has its own, and what the rules
 *   below add);
 * - `security: []` on a public route (one the authenticated scope did not mark), the bearer scheme at the
 *   root for all others;
 * - the statuses the server answers for any route of its kind: 400 (a malformed request), 413 and 415 for
 *   one that takes a body, 414 for one with path parameters, 401 behind
 *   authentication, 503 with `Retry-After` everywhere (overload and shutdown);
 * - from its `config`: `etag` answers an `ETag` (and a GET answers 304 to a matching `If-None-Match`),
 *   `ifMatch` takes an `If-Match` (a stale one is a 412), `location` answers 201 with a `Location`;
 * - an answer that several operations give alike (a problem of one status, Not Modified, an updated
 *   resource) is declared once in `components.responses`, named by its description (`NotFound`), and
 *   every operation refers to it (`$ref`), as it does to a schema.
 *
 * The rules run when the document is generated (@fastify/swagger's `transform` and `transformObject`),
 * after every plugin has added its routes; they change the document only, never how a route validates.
 */
import { STATUS_CODES } from "node:http";
import { OptionalKind } from "@sinclair/typebox";
import type { SwaggerTransform, SwaggerTransformObject } from "@fastify/swagger";
import type { RouteOptions } from "fastify";
import { problems } from "./problem.js";

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => v !== null && typeof v === "object" && !Array.isArray(v);

/** The tags' descriptions; a tag a route uses that is not here is described by its name. */
const TAG_DESCRIPTIONS: Record<string, string> = {
  auth: "Log in, refresh and end sessions (public: log in and refresh)",
  system: "Health, readiness and metrics (public)",
  events: "The change feed (Server-Sent Events)",
  permissions: "Global permissions",
  users: "Users and the caller",
  groups: "Groups and their members",
  projects: "Projects (TruBudget's top level)",
  subprojects: "Subprojects of a project",
  workflowitems: "Workflowitems of a subproject, in their ordering",
  archive: "Snapshots of process instances and archived projects",
  "process-data": "BPM interim storage: form submissions, message payloads, form schemas and scripts",
  store: "Backup and restore of the whole store (each restore a new epoch)",
  subjects: "Data subjects: erasure of their personal data (crypto-shredding) and its receipt",
  "exchange-rates": "Exchange rates as dated data: budget analytics convert each amount at the rate of its date",
};

/** Response headers, as @fastify/swagger takes them (a JSON schema with its description). */
const HEADERS = {
  etag: { type: "string", description: "the resource's version; send it back as If-Match (writes) or If-None-Match (reads)" },
  location: { type: "string", description: "the created resource's address" },
  retryAfter: { type: "integer", description: "seconds to wait before retrying" },
} as const;

const HEADER_PARAMS = {
  ifMatch: {
    name: "If-Match",
    in: "header",
    required: false,
    description: "the ETag the resource had when read: the write is refused with 412 if it changed since",
    schema: { type: "string" },
  },
  ifNoneMatch: {
    name: "If-None-Match",
    in: "header",
    required: false,
    description: "the ETag of the copy the caller holds: 304 (no body) while it is current",
    schema: { type: "string" },
  },
} as const;

const BODY_METHODS = new Set(["POST", "PUT", "PATCH"]);

const words = (s: string): string[] => s.split(/[^A-Za-z0-9]+/).filter(Boolean);
const cap = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

/** `projects` → `project`, `process-instances` → `process-instance`, `process-data` as it is. */
const singular = (word: string): string => (word.endsWith("ies") ? `${word.slice(0, -3)}y` : word.endsWith("s") && !word.endsWith("ss") ? word.slice(0, -1) : word);

/**
 * A route's operationId unless it declares its own (the declared types' routes do: `getWorkflowitem`, see
 * routes/declared.ts): the method, then the path's segments after the API prefix in camel case, where a
 * collection followed by its id parameter is singular and the parameter itself is left out
 * (`GET /groups/:groupId/members` → `getGroupMembers`, `GET /users/:userId` → `getUser`); a parameter
 * that follows another is `By<Name>` (`…/:organization/:currencyCode` → `…ByCurrencyCode`). Unique as long
 * as method and path are (finishDocument checks).
 */
export function operationIdOf(method: string, url: string, prefix: string): string {
  const path = url.startsWith(prefix) ? url.slice(prefix.length) : url;
  const segments = path.split("/").filter(Boolean);
  const parts: string[] = [];
  segments.forEach((seg, i) => {
    const param = seg.startsWith(":") || seg === "*";
    const previous = segments[i - 1];
    if (!param) parts.push(...words(seg));
    else if (previous !== undefined && !previous.startsWith(":") && previous !== "*" && parts.length > 0) parts.push(singular(parts.pop()!));
    else parts.push("by", ...(seg === "*" ? ["path"] : words(seg.slice(1))));
  });
  return method.toLowerCase() + parts.map(cap).join("");
}

/** What a status answers: its reason phrase and, for a named schema, its name ("OK: Project"). */
function described(status: string, r: unknown): Json {
  if (!isObject(r) || isObject(r.content) || typeof r.description === "string") return isObject(r) ? r : {};
  const reason = STATUS_CODES[Number(status)] ?? "Answer";
  if (r.type === "null") return { ...r, description: reason };
  const name = typeof r.$ref === "string" ? r.$ref.replace(/#.*$/, "") : typeof r.title === "string" ? r.title : undefined;
  return { description: name ? `${reason}: ${name}` : reason, content: { "application/json": { schema: r } } };
}

const methodOf = (route: RouteOptions): string => (Array.isArray(route.method) ? route.method[0]! : route.method) as string;

/** @fastify/swagger's per-route `transform`: the conventions above, applied to one route's schema. */
export function documentRoute(prefix: string): SwaggerTransform {
  return ({ schema, url, route }) => {
    const s: Json = { ...(isObject(schema) ? schema : {}) };
    if (s.hide === true) return { schema: s, url };
    const method = methodOf(route);
    const config = (route.config ?? {}) as { etag?: boolean; ifMatch?: boolean; location?: boolean };
    const secured = Array.isArray(s.security) && s.security.length > 0;
    const hasParams = isObject(s.params) || url.includes(":") || url.includes("*");
    const takesBody = BODY_METHODS.has(method);
    const isGet = method === "GET";

    s.operationId ??= operationIdOf(method, url, prefix);
    s.tags ??= [words(url.slice(url.startsWith(prefix) ? prefix.length : 0))[0] ?? "system"];
    if (!secured) s.security = [];

    // Any request may be malformed (no Host, a bad URL): 400; any may meet an overloaded or closing server: 503.
    const derived: number[] = [400, 503];
    if (hasParams) derived.push(414);
    if (takesBody) derived.push(413, 415);
    if (secured) derived.push(401);
    if (config.ifMatch) derived.push(412);
    const response: Json = {};
    for (const [status, r] of Object.entries({ ...problems(...derived), ...(isObject(s.response) ? s.response : {}) })) response[status] = described(status, r);
    // Response headers: Retry-After on 503 (and 429), ETag on the successes (and 304), Location on 201.
    const withHeaders = (status: string, headers: Json): void => {
      const r = response[status];
      if (isObject(r)) response[status] = { ...r, headers: { ...(isObject(r.headers) ? r.headers : {}), ...headers } };
    };
    for (const status of ["429", "503"]) withHeaders(status, { "Retry-After": HEADERS.retryAfter });
    if (config.etag) for (const status of Object.keys(response)) if (/^2\d\d$/.test(status)) withHeaders(status, { ETag: HEADERS.etag });
    if (config.etag && isGet) response[304] = { description: STATUS_CODES[304], headers: { ETag: HEADERS.etag }, type: "null" };
    if (config.location) withHeaders("201", { Location: HEADERS.location });
    s.response = response;

    const notes: string[] = [];
    if (secured) notes.push("Needs `Authorization: Bearer <token>` (POST /api/v1/auth/token).");
    else notes.push("Public: no token needed.");
    if (config.etag) notes.push(isGet ? "Answers an ETag; with a matching If-None-Match, 304 and no body." : "Answers the new ETag.");
    if (config.ifMatch) notes.push("With If-Match, refused with 412 if the resource changed since.");
    const summary = typeof s.summary === "string" ? s.summary : "";
    s.description ??= [summary.endsWith(".") ? summary : `${summary}.`, ...notes].join(" ");

    // Request headers a route reads by convention (named parameters, the same for every route).
    const parameters: Json[] = [];
    if (config.ifMatch) parameters.push({ ...HEADER_PARAMS.ifMatch });
    if (config.etag && isGet) parameters.push({ ...HEADER_PARAMS.ifNoneMatch });
    if (parameters.length > 0) s["x-flowstore-headers"] = parameters;
    // A body declared Type.Optional(…) is not required (@fastify/swagger marks every body required).
    const body = s.body as Record<string | symbol, unknown> | undefined;
    if (isObject(body) && body[OptionalKind] === "Optional") s["x-flowstore-optional-body"] = true;
    return { schema: s, url };
  };
}

/** A response's name in `components.responses`: its description's first clause in Pascal case ("Not Found" is `NotFound`, "OK: Project" `OKProject`). */
const answerName = (r: Json): string => {
  const clause = String(r.description ?? "").split(/[;.]/)[0]!;
  return words(clause.replace(/'/g, "")).map(cap).join("");
};

/**
 * Every answer that two operations or more give alike (a problem of one status, an updated resource, Not
 * Modified…) as a `$ref` to its one declaration in `components.responses`, named by its description
 * (answerName). Two different answers under one name are refused when the document is built (the first
 * GET /openapi.json, which @fastify/swagger then caches; test/http/openapi*.test.ts build it in every CI
 * run), as two schemas under one name are (components.ts): such a name is to be described apart. The names
 * are public through the client's `components["responses"]`: rewording a description renames one.
 */
function shareAnswers(doc: Json, paths: Record<string, Record<string, Json>>): void {
  const answers: { status: string; responses: Record<string, Json>; json: string }[] = [];
  const uses = new Map<string, number>();
  for (const methods of Object.values(paths)) {
    for (const op of Object.values(methods)) {
      const responses = (isObject(op.responses) ? op.responses : {}) as Record<string, Json>;
      for (const [status, r] of Object.entries(responses)) {
        const json = JSON.stringify(r);
        answers.push({ status, responses, json });
        uses.set(json, (uses.get(json) ?? 0) + 1);
      }
    }
  }
  const shared = new Map<string, { status: number; json: string }>();
  for (const { status, responses, json } of answers) {
    if (uses.get(json)! < 2) continue;
    const name = answerName(responses[status]!);
    const known = shared.get(name);
    if (known && known.json !== json) throw new Error(`two different answers are named ${name} (${known.json} and ${json}): describe one apart`);
    shared.set(name, { status: known?.status ?? Number(status), json });
    responses[status] = { $ref: `#/components/responses/${name}` };
  }
  const components = (isObject(doc.components) ? doc.components : {}) as Json;
  const declared = [...shared].sort(([an, a], [bn, b]) => a.status - b.status || an.localeCompare(bn)).map(([name, { json }]) => [name, JSON.parse(json)]);
  doc.components = { ...components, responses: { ...(isObject(components.responses) ? components.responses : {}), ...Object.fromEntries(declared) } };
}

/**
 * @fastify/swagger's `transformObject`: the document-wide part of the conventions (root security, the
 * tags, servers, license), the per-route markers turned into OpenAPI, and a check that every operation
 * id is unique (a duplicate is a startup-time bug: generated clients would collide).
 */
export const finishDocument: SwaggerTransformObject = (document) => {
  if (!("openapiObject" in document)) throw new Error("flowstore documents OpenAPI 3 only");
  // The document is completed in place: read and written as JSON here (its x-flowstore-* markers are
  // no OpenAPI fields), answered as the OpenAPI document it is.
  const openapi = document.openapiObject;
  const doc: Json = openapi;
  const paths = (isObject(doc.paths) ? doc.paths : {}) as Record<string, Record<string, Json>>;
  doc.security = [{ bearer: [] }];
  doc.servers = [{ url: "/", description: "this server" }];
  doc.info = {
    ...(isObject(doc.info) ? doc.info : {}),
    license: { name: "MIT", url: "https://opensource.org/licenses/MIT" },
    contact: { name: "flowstore", url: "https://github.com/flowstore" },
  };
  const tags = new Set<string>();
  const ids = new Map<string, string>();
  for (const [path, methods] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(methods)) {
      for (const t of (op.tags as string[] | undefined) ?? []) tags.add(t);
      const id = op.operationId as string;
      const where = `${method.toUpperCase()} ${path}`;
      if (ids.has(id)) throw new Error(`two operations have the operationId ${id}: ${ids.get(id)} and ${where}`);
      ids.set(id, where);
      const headers = op["x-flowstore-headers"];
      delete op["x-flowstore-headers"];
      if (Array.isArray(headers)) {
        const params = ((op.parameters as Json[] | undefined) ?? []).filter(
          (p) => !(p.in === "header" && headers.some((h: Json) => String(h.name).toLowerCase() === String(p.name).toLowerCase())),
        );
        op.parameters = [...params, ...headers];
      }
      if (op["x-flowstore-optional-body"] === true && isObject(op.requestBody)) op.requestBody = { ...op.requestBody, required: false };
      delete op["x-flowstore-optional-body"];
    }
  }
  shareAnswers(doc, paths);
  doc.tags = [...tags].sort().map((name) => ({ name, description: TAG_DESCRIPTIONS[name] ?? cap(name.replace(/-/g, " ")) }));
  return openapi;
};
