/**
 * Process data (BPM interim storage) over HTTP. The URL follows the record's key pattern under its keyspace:
 *
 *   PUT|GET|DELETE /process-data/form-submissions/process/{pid}/task/{taskKey}
 *   POST           /process-data/form-submissions/process-definition/{def}/start-form   → 201 {key, uuid, record}
 *   POST           /process-data/message-payloads/process-definition/{def}/start-message → 201 {key, uuid, record}
 *   POST           /process-data/form-schemas                  → 201: a form schema under its lower-cased name (409 if taken);
 *                                                                PUT on its key updates it (404 when absent)
 *   GET            /process-data/{keyspace}                     → a page of records (never access tokens)
 *   GET|DELETE     /process-data/process-instances/{pid}         → an instance's records / remove them all
 *                                                                (DELETE ?alsoKeys=…: and the platform's extra keys, its start form)
 *
 * Process data checks its intents itself (reading needs global.readProcessData, writing
 * global.writeProcessData). A single-record GET is the only answer that carries a decrypted access token.
 * The shapes are process data's (process-data/wire.ts).
 */
import { type TSchema, Type } from "@sinclair/typebox";
import { NotFoundError, ValidationError } from "../../errors.js";
import {
  AlsoKeysQuery,
  DefParams,
  Deleted,
  Fields,
  KeyParams,
  KeyspaceParams,
  PathParams,
  PidParams,
  ProcessPageQuery,
  ProcessRecord,
  ProcessRecordCreated,
  ProcessRecordPage,
  PutQuery,
  TtlQuery,
} from "../../process-data/wire.js";
import type { RoutePlugin } from "../context.js";
import { problems } from "../problem.js";

/** A record's address as either route gives it: the key as one segment, or its slashes raw (`*`). */
type KeyAddress = { keyspace: string; key?: string; "*"?: string };

export const processDataRoutes: RoutePlugin = async (app) => {
  const { processData: pd } = app.flowstore;
  const tags = ["process-data"];

  /** The schema of a GET that answers a page of records, addressed by `params`. */
  const pageOfRecords = <P extends TSchema>(summary: string, params: P) => ({
    schema: { tags, summary, params, querystring: ProcessPageQuery, response: { 200: ProcessRecordPage, ...problems(400, 403) } },
  });

  app.get("/process-data/process-instances/:pid", pageOfRecords("Records of a process instance (task submissions and signatures)", PidParams), async (request) =>
    pd.listByProcessInstance(request.actor, request.params.pid, request.query),
  );

  app.delete(
    "/process-data/process-instances/:pid",
    {
      schema: {
        tags,
        summary: "Delete every record of a finished process instance, and the form-submission keys the platform passes with it (?alsoKeys=, repeated: its start form)",
        params: PidParams,
        querystring: AlsoKeysQuery,
        response: { 200: Deleted, ...problems(400, 403) },
      },
    },
    async (request) => {
      const also = request.query.alsoKeys;
      return pd.deleteProcessInstance(request.actor, request.params.pid, { alsoKeys: typeof also === "string" ? [also] : also });
    },
  );

  for (const [keyspace, kind] of [
    ["form-submissions", "start-form"],
    ["message-payloads", "start-message"],
  ] as const) {
    app.post(
      `/process-data/${keyspace}/process-definition/:def/${kind}`,
      {
        schema: {
          tags,
          summary: `Store a ${kind} record under a generated uuid`,
          params: DefParams,
          querystring: TtlQuery,
          body: Fields,
          response: { 201: ProcessRecordCreated, ...problems(400, 403, 413, 415) },
        },
      },
      async (request, reply) => {
        const options = { ttlMs: request.query.ttlMs };
        const created =
          kind === "start-form"
            ? await pd.createStartForm(request.actor, request.params.def, request.body, options)
            : await pd.createStartMessage(request.actor, request.params.def, request.body, options);
        return reply.code(201).send(created);
      },
    );
  }

  app.post(
    "/process-data/form-schemas",
    {
      schema: {
        tags,
        summary: "Create a form schema (a Form.io form in formData) under its name, lower-cased; an existing one is a 409 (update it with PUT on its key)",
        querystring: TtlQuery,
        body: Fields,
        response: { 201: ProcessRecord, ...problems(400, 403, 409, 413, 415) },
      },
    },
    async (request, reply) => {
      return reply.code(201).send(await pd.createFormSchema(request.actor, request.body, { ttlMs: request.query.ttlMs }));
    },
  );

  app.get("/process-data/:keyspace", pageOfRecords("List a keyspace in key order (access tokens never listed)", KeyspaceParams), async (request) =>
    pd.list(request.actor, request.params.keyspace, request.query),
  );

  // A record is addressed by its key as ONE path parameter, `{key}`, URL-encoded (`process%2Fp1%2Ftask%2Ft1`),
  // which generated clients fill like any other; the key's slashes may also be sent raw (the route below
  // `/*`, kept for earlier clients and hidden from the document). Both routes run the same handlers.
  for (const [path, params, hide] of [
    ["/process-data/:keyspace/:key", KeyParams, false],
    ["/process-data/:keyspace/*", PathParams, true],
  ] as const) {
    const at = { params, ...(hide ? { hide } : {}) };
    app.put(
      path,
      {
        schema: {
          tags,
          summary: "Store (replace) the record at a key; a form schema only if it exists (404 otherwise: create it with POST /process-data/form-schemas)",
          ...at,
          querystring: PutQuery,
          body: Fields,
          response: { 200: ProcessRecord, ...problems(400, 403, 404, 409, 413, 415) },
        },
      },
      async (request) => {
        return pd.put(request.actor, request.params.keyspace, keyOf(request.params), request.body, request.query);
      },
    );

    app.get(
      path,
      { schema: { tags, summary: "Read the record at a key (with its access token, decrypted)", ...at, response: { 200: ProcessRecord, ...problems(400, 403, 404) } } },
      async (request) => {
        return pd.get(request.actor, request.params.keyspace, keyOf(request.params));
      },
    );

    app.delete(path, { schema: { tags, summary: "Delete the record at a key", ...at, response: { 204: Type.Null(), ...problems(400, 403, 404) } } }, async (request, reply) => {
      if (!(await pd.delete(request.actor, request.params.keyspace, keyOf(request.params)))) {
        throw new NotFoundError("no record at that key");
      }
      return reply.code(204).send();
    });
  }
};

function keyOf(params: KeyAddress): string {
  const key = params.key ?? params["*"];
  if (typeof key !== "string" || key === "") throw new ValidationError("a key is required after the keyspace", "key");
  return key;
}
