/**
 * The public shapes of the resources layer as TypeBox schemas: the envelope every resource is answered
 * in (`{id, type, data, meta}`), its meta, a child shown redacted, an event of the log, a chain check,
 * and the page limits. Each carries an `$id`, so a server registers it once as a named component and
 * refers to it (`$ref`) wherever it appears; the client and the web explorer take their types from
 * these same declarations.
 *
 * Rule: a shape declared here is the only declaration of it; `record.ts`, `events.ts`, the HTTP layer
 * and the client take their types from it.
 */
import { Type, type Static, type TSchema } from "@sinclair/typebox";
import { FORBIDDEN_ID_CHARS } from "../../ids.js";

/** The default and the largest number of items a caller may ask for in one page of a list or history. */
export const PAGE_LIMIT = { default: 100, max: 10_000 } as const;

/**
 * The order an ordered collection is listed in: `manual`, the effective order of its ordering (seed 002:
 * listed ids first, the rest by creation time), or `closedFirst`, its declared second order (TruBudget's:
 * closed children first by close time, then the effective order).
 */
export const ListSequence = Type.Union([Type.Literal("manual"), Type.Literal("closedFirst")], {
  default: "manual",
  description: "manual: the ordering's ids, then the rest by creation time (default); closedFirst: closed items first by close time, then that order (TruBudget's)",
});
export type ListSequence = Static<typeof ListSequence>;

/**
 * The rule of a resource id, declared once: 1–128 code points of well-formed Unicode; not `.` or `..`;
 * no surrounding white space; none of `/ ? # % \\`; none of the characters src/ids.ts forbids in every id.
 * It is a JSON Schema pattern (Ajv compiles it with the `u` flag) and assertId in schema.ts compiles the
 * same text, so HTTP validation and the library agree.
 */
export const RESOURCE_ID_PATTERN = `^(?!\\.\\.?$)(?!\\s)(?!.*\\s$)[^${FORBIDDEN_ID_CHARS}/?#%\\\\\\ud800-\\udfff]{1,128}$`;

/** A resource id as a path parameter or body field. */
export const ResourceId = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: RESOURCE_ID_PATTERN,
  description: "1-128 characters; not . or ..; no control, bidi-formatting or zero-width characters, surrounding spaces or / ? # % \\",
});

export const Meta = Type.Object(
  {
    createdAt: Type.String({ format: "date-time" }),
    createdBy: Type.String(),
    updatedAt: Type.String({ format: "date-time" }),
    version: Type.Integer({ minimum: 1, description: "grows by one with every change; the resource's ETag" }),
  },
  { $id: "Meta" },
);
export type Meta = Static<typeof Meta>;

/** The intents the caller holds on a resource (a read's and a list's answer carry them: what a UI shows buttons for). */
export const AllowedIntents = Type.Array(Type.String(), { $id: "AllowedIntents", description: "the intents the caller holds on this resource" });

/** The envelope of a resource of `type` whose domain fields are `data`, named `title`. */
export const EnvelopeOf = <T extends string, D extends TSchema>(type: T, data: D, title: string) =>
  Type.Object({ id: Type.String(), type: Type.Literal(type), data, meta: Meta, allowedIntents: Type.Optional(AllowedIntents) }, { $id: title });

/** A child the caller may not view, kept in its place: id, status and creation time only. */
export const Redacted = Type.Object(
  {
    id: Type.String(),
    type: Type.String(),
    redacted: Type.Literal(true),
    data: Type.Object({ status: Type.Optional(Type.String()) }),
    meta: Type.Object({ createdAt: Type.String({ format: "date-time" }) }),
    allowedIntents: Type.Optional(AllowedIntents),
  },
  { $id: "Redacted", description: "a child the caller may not view, kept in its place" },
);
export type Redacted = Static<typeof Redacted>;

export const PathItem = Type.Object({ type: Type.String(), id: Type.String() }, { $id: "PathItem" });

/**
 * One field an update changed (diff.ts): `path` a JSON Pointer into the resource's data, `old` its value
 * before (absent when the field was added), `new` its value after (absent when it was removed).
 */
export const FieldChange = Type.Object(
  {
    path: Type.String({ description: "RFC 6901 JSON Pointer into the resource's data, e.g. /amount or /projectedBudgets/0/value" }),
    old: Type.Optional(Type.Unknown({ description: "the value before; absent when the field was added" })),
    new: Type.Optional(Type.Unknown({ description: "the value after; absent when the field was removed" })),
    key: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description: "in an array its type declares keyed (keyedArrays, e.g. projected budgets by organization and currency): the key of the element changed",
      }),
    ),
  },
  { $id: "FieldChange" },
);

/** The most characters of the reason a writer gives for a change (the `Flowstore-Reason` header; an event's `payload.reason`). */
export const REASON_MAX = 1000;

/** An event of a partition's log (see events.ts): the change feed and history answer these. */
export const Event = Type.Object(
  {
    seq: Type.Integer({ minimum: 1 }),
    at: Type.String({ format: "date-time" }),
    actor: Type.String(),
    type: Type.String({ description: "<resourceType>.<verb>, e.g. project.created" }),
    path: Type.Array(PathItem, { description: "from the partition owner down to the resource" }),
    payload: Type.Record(Type.String(), Type.Unknown(), {
      description:
        "what the event did: data (a create's data, a change's patch), changes (a change of the data field by field: [{path (a JSON Pointer), old?, new?, key? (a keyed array element's key)}]), reason (the writer's, from the Flowstore-Reason header), and the verb's own members",
    }),
    prev: Type.Union([Type.String(), Type.Null()]),
    hash: Type.String(),
  },
  { $id: "Event" },
);
export type Event = Static<typeof Event>;

/** The result of recomputing a partition's hash chain. */
export const VerifyResult = Type.Object(
  {
    ok: Type.Boolean(),
    checked: Type.Integer(),
    firstBad: Type.Optional(
      Type.Object({
        seq: Type.Integer({ description: "the event at fault, or 0 when a stored record diverges from the replay" }),
        reason: Type.String(),
        family: Type.Optional(Type.String({ description: "the key family: l log, s state, a access, o ordering, c flat children, h history index, m meta, ledger" })),
        key: Type.Optional(Type.String({ description: "the divergent key, as a JSON array" })),
      }),
    ),
  },
  { $id: "VerifyResult" },
);

/** A partition's chain head signed by the server (checkpoint.ts). */
export const SignedCheckpoint = Type.Object(
  {
    partition: Type.Array(Type.Union([Type.String(), Type.Integer()])),
    seq: Type.Integer(),
    hash: Type.Union([Type.String(), Type.Null()]),
    time: Type.String({ format: "date-time" }),
    log: Type.Optional(
      Type.Object(
        {
          origin: Type.String(),
          size: Type.Integer({ minimum: 0 }),
          root: Type.String({ description: "base64 root hash of the log's tree of `size` leaves" }),
          index: Type.Integer({ minimum: 0, description: "the leaf of the event at `seq`" }),
        },
        { description: "the transparency log checkpoint (GET /api/v1/log/checkpoint) that covers the head, signed with it" },
      ),
    ),
    publicKey: Type.String({ description: "the signer's Ed25519 public key, SPKI DER, base64" }),
    keyFingerprint: Type.String({ description: "SHA-256 of the public key's DER, hex: what an auditor pins" }),
    signature: Type.String({ description: 'Ed25519 over "flowstore-checkpoint-v1\\n" + canonical JSON of {partition, seq, hash, time} (and log when present), base64' }),
  },
  { $id: "SignedCheckpoint" },
);

/** The receipt of a data subject's erasure and each holder it names: declared with the subjects' keys (src/personal). */
export { ErasedResource, ErasureReceipt } from "../../personal/subjects.js";
