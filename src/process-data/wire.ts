/**
 * The public shapes of process data as TypeBox schemas: a record as answered, its fields as sent, what a
 * create answers and a delete counts, the list query and page, and the parameters and queries that
 * address records (a keyspace and key, a process instance, a process definition). Named ones carry an
 * `$id` (a component of the OpenAPI document); the HTTP routes and the client take their types from
 * these same declarations.
 *
 * Rule: a shape declared here is the only declaration of it; keyspaces, limits and the time-to-live
 * bound come from keys.ts, records.ts and service.ts.
 */
import { Type } from "@sinclair/typebox";
import { PageOf, pageQueryOf } from "../wire.js";
import { KEYSPACES } from "./keys.js";
import { MAX_TTL_MS } from "./records.js";
import { LIST_LIMIT, MAX_ALSO_KEYS } from "./service.js";

export const Keyspace = Type.String({
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
  { $id: "ProcessRecord", title: "ProcessRecord" },
);
export const ProcessRecordPage = PageOf(ProcessRecord, "ProcessRecordPage");
/** `?cursor=&limit=` within process data's page limits. */
export const ProcessPageQuery = pageQueryOf(LIST_LIMIT);
export const Fields = Type.Record(Type.String(), Type.Unknown(), { $id: "ProcessFields", description: "the record's fields (see the keyspace)" });
export const TtlQuery = Type.Object(
  { ttlMs: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TTL_MS, description: "time to live in milliseconds" })) },
  { additionalProperties: false },
);
export const PutQuery = Type.Object(
  {
    ...TtlQuery.properties,
    processInstanceId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        description:
          "the process instance the record is registered under: a batch signature's root instance (default: the instance in its key); for other instance-owned keys, the one the key names",
      }),
    ),
  },
  { additionalProperties: false },
);
export const Deleted = Type.Object({ deleted: Type.Integer({ description: "how many records were deleted" }) }, { $id: "DeletedCount", title: "DeletedCount" });
export const ProcessRecordCreated = Type.Object({ key: Type.String(), uuid: Type.String(), record: ProcessRecord }, { $id: "ProcessRecordCreated" });
const Key = Type.String({ minLength: 1, maxLength: 2048, description: "the record's key, URL-encoded as one segment (e.g. process%2Fp1%2Ftask%2Ft1)" });
/** A record's address: its keyspace and its key as one (URL-encoded) segment. */
export const KeyParams = Type.Object({ keyspace: Keyspace, key: Key });
/** A record's address with the key's slashes sent raw (the wildcard route kept for earlier clients). */
export const PathParams = Type.Object({ keyspace: Keyspace, "*": Key });
export const KeyspaceParams = Type.Object({ keyspace: Keyspace });
export const PidParams = Type.Object({ pid: Type.String({ minLength: 1, maxLength: 255 }) });
const AlsoKey = Type.String({ minLength: 1, maxLength: 2048 });
export const AlsoKeysQuery = Type.Object(
  {
    alsoKeys: Type.Optional(
      Type.Union([AlsoKey, Type.Array(AlsoKey, { maxItems: MAX_ALSO_KEYS })], { description: "form-submission keys deleted with the instance (repeat the parameter for several)" }),
    ),
  },
  { additionalProperties: false },
);
export const DefParams = Type.Object({ def: Type.String({ minLength: 1, maxLength: 255 }) });
