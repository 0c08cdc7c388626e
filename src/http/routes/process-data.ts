/**
 * Process data (seed 004) over HTTP. The URL follows the record's key pattern under its keyspace:
 *
 *   PUT|GET|DELETE /process-data/form-submissions/process/{pid}/task/{taskKey}
 *   POST           /process-data/form-submissions/process-definition/{def}/start-form   → 201 {key, uuid, record}
 *   POST           /process-data/message-payloads/process-definition/{def}/start-message → 201 {key, uuid, record}
 *   GET            /process-data/{keyspace}                     → a page of records (never access tokens)
 *   GET|DELETE     /process-data/process-instances/{pid}         → an instance's records / remove them all
 *
 * Reading needs global.readProcessData, writing global.writeProcessData. A single-record GET is the only
 * answer that carries a decrypted access token.
 */
import { Type, type Static } from "@sinclair/typebox";
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { NotFoundError, ValidationError } from "../../errors.js";
import { KEYSPACES } from "../../process-data/keys.js";
import { PageOf, PageQuery } from "../pagination.js";
import { problems } from "../problem.js";

const Keyspace = Type.String({
  minLength: 1,
  maxLength: 64,
  description: `one of ${KEYSPACES.join(", ")} (the bpm- prefix may be left out)`,
});
export const ProcessRecord = Type.Object(
  {
    keyspace: Type.String(),
    key: Type.String(),
    fields: Type.Record(Type.String(), Type.Unknown()),
    expiresAt: Type.Union([Type.Integer(), Type.Null()]),
    updatedAt: Type.Integer(),
    version: Type.Integer(),
  },
  { title: "ProcessRecord" },
);
const Fields = Type.Record(Type.String(), Type.Unknown(), { description: "the record's fields (see the keyspace)" });
export const TtlQuery = Type.Object(
  { ttlMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 366 * 24 * 3600 * 1000, description: "time to live in milliseconds" })) },
  { additionalProperties: false },
);
export const ProcessRecordCreated = Type.Object({ key: Type.String(), uuid: Type.String(), record: ProcessRecord });
const KeyParams = Type.Object({ keyspace: Keyspace, "*": Type.String({ minLength: 1, maxLength: 2048 }) });
const PidParams = Type.Object({ pid: Type.String({ minLength: 1, maxLength: 255 }) });
const DefParams = Type.Object({ def: Type.String({ minLength: 1, maxLength: 255 }) });

export const processDataRoutes: FastifyPluginAsync = async (app) => {
  const { identity, processData: pd } = app.flowstore;
  const can = (request: FastifyRequest, what: "read" | "write") =>
    identity.global.assert(request.actor, what === "read" ? "global.readProcessData" : "global.writeProcessData");
  const tags = ["process-data"];

  app.get<{ Params: Static<typeof PidParams> } & { Querystring: PageQuery }>(
    "/process-data/process-instances/:pid",
    { schema: { tags, summary: "Records of a process instance (task submissions and signatures)", params: PidParams, querystring: PageQuery, response: { 200: PageOf(ProcessRecord), ...problems(400, 403) } } },
    async (request) => {
      await can(request, "read");
      return pd.listByProcessInstance(request.params.pid, request.query);
    },
  );

  app.delete<{ Params: Static<typeof PidParams> }>(
    "/process-data/process-instances/:pid",
    { schema: { tags, summary: "Delete every record of a finished process instance", params: PidParams, response: { 200: Type.Object({ deleted: Type.Integer() }), ...problems(400, 403) } } },
    async (request) => {
      await can(request, "write");
      return pd.deleteProcessInstance(request.params.pid);
    },
  );

  for (const [keyspace, kind] of [
    ["form-submissions", "start-form"],
    ["message-payloads", "start-message"],
  ] as const) {
    app.post<{ Params: Static<typeof DefParams>; Body: Record<string, unknown>; Querystring: Static<typeof TtlQuery> }>(
      `/process-data/${keyspace}/process-definition/:def/${kind}`,
      { schema: { tags, summary: `Store a ${kind} record under a generated uuid`, params: DefParams, querystring: TtlQuery, body: Fields, response: { 201: ProcessRecordCreated, ...problems(400, 403, 413, 415) } } },
      async (request, reply) => {
        await can(request, "write");
        const options = { ttlMs: request.query.ttlMs };
        const created =
          kind === "start-form"
            ? await pd.createStartForm(request.params.def, request.body, options)
            : await pd.createStartMessage(request.params.def, request.body, options);
        return reply.code(201).send(created);
      },
    );
  }

  app.get<{ Params: { keyspace: string }; Querystring: PageQuery }>(
    "/process-data/:keyspace",
    { schema: { tags, summary: "List a keyspace in key order (access tokens never listed)", params: Type.Object({ keyspace: Keyspace }), querystring: PageQuery, response: { 200: PageOf(ProcessRecord), ...problems(400, 403) } } },
    async (request) => {
      await can(request, "read");
      return pd.list(request.params.keyspace, request.query);
    },
  );

  app.put<{ Params: Static<typeof KeyParams>; Body: Record<string, unknown>; Querystring: Static<typeof TtlQuery> }>(
    "/process-data/:keyspace/*",
    { schema: { tags, summary: "Store (replace) the record at a key", params: KeyParams, querystring: TtlQuery, body: Fields, response: { 200: ProcessRecord, ...problems(400, 403, 413, 415) } } },
    async (request) => {
      await can(request, "write");
      return pd.put(request.params.keyspace, keyOf(request.params), request.body, { ttlMs: request.query.ttlMs });
    },
  );

  app.get<{ Params: Static<typeof KeyParams> }>(
    "/process-data/:keyspace/*",
    { schema: { tags, summary: "Read the record at a key (with its access token, decrypted)", params: KeyParams, response: { 200: ProcessRecord, ...problems(400, 403, 404) } } },
    async (request) => {
      await can(request, "read");
      return pd.get(request.params.keyspace, keyOf(request.params));
    },
  );

  app.delete<{ Params: Static<typeof KeyParams> }>(
    "/process-data/:keyspace/*",
    { schema: { tags, summary: "Delete the record at a key", params: KeyParams, response: { 204: Type.Null(), ...problems(400, 403, 404) } } },
    async (request, reply) => {
      await can(request, "write");
      if (!(await pd.delete(request.params.keyspace, keyOf(request.params)))) {
        throw new NotFoundError("no record at that key");
      }
      return reply.code(204).send();
    },
  );
};

function keyOf(params: { "*": string }): string {
  const key = params["*"];
  if (typeof key !== "string" || key === "") throw new ValidationError("a key is required after the keyspace", "key");
  return key;
}
