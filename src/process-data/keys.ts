/**
 * The keyspaces of the registry platform's BPM interim storage and their key patterns: parsing,
 * validation and formatting.
 *
 * A key is the string the reference system used after `<keyspace>:`. Every key is parsed into its
 * parts before it touches the store, and every part is validated, so that one key can never address
 * another record: ids hold no `/` and none of the characters src/ids.ts refuses in every id, are not empty, `.` or `..`; process instance
 * ids also hold no `_` (the signature patterns join them with `_`), uuids are canonical lower-case and
 * batch indexes canonical decimals (so `…_01` and `…_1` cannot name the same record twice).
 *
 * Where a record lives (docs/architecture.md, "The other domains"):
 * - records owned by a process instance (task submissions, signature records) live in the instance's
 *   partition `["pd-instance", owner]`, keyed `[key]`; the owner of `lowcode_{root}_{pid}_…` is the
 *   ROOT instance (the one that lives longest and reads its children's seals), the owner of
 *   `process/{pid}/task/…` is `pid`; a batch signature `lowcode_{pid}_…_{index}` is registered, as the
 *   platform does (its signing delegate puts it under the execution's root process instance), under the
 *   instance its write names (`processInstanceId`: the root), by default `pid`; its bucket pointer names
 *   that owner when it is not `pid` (records.ts, `pointerTo`);
 * - every other record lives in its keyspace bucket partition `["pd-keyspace:<keyspace>", bucket]`
 *   (an external system's start form `lowcode_{def}_start_form_{uuid}` too: no instance exists yet, so
 *   the platform names it when it deletes the instance's data, `deleteProcessInstance`'s `alsoKeys`);
 * - the bucket of a key is a prefix of the key (see `bucketOf`), so walking buckets in order and each
 *   bucket in key order lists a keyspace in key order. Instance-owned records have a pointer entry in
 *   their bucket.
 */
import { ValidationError } from "../errors.js";
import { refuseUnsafeId } from "../ids.js";

export const KEYSPACES = ["bpm-form-submissions", "bpm-message-payloads", "bpm-form-schemas", "bpm-form-scripts"] as const;
export type Keyspace = (typeof KEYSPACES)[number];

/** Accepts a keyspace's name with or without its `bpm-` prefix (`form-submissions`). */
export function parseKeyspace(name: unknown): Keyspace {
  if (typeof name === "string") {
    const full = name.startsWith("bpm-") ? name : `bpm-${name}`;
    if ((KEYSPACES as readonly string[]).includes(full)) return full as Keyspace;
  }
  throw new ValidationError(`unknown keyspace ${JSON.stringify(name)}; one of ${KEYSPACES.join(", ")} (the bpm- prefix may be left out)`, "keyspace");
}

export type ParsedKey =
  | { keyspace: "bpm-form-submissions"; kind: "task"; key: string; processInstanceId: string; taskDefinitionKey: string }
  | { keyspace: "bpm-form-submissions"; kind: "start-form"; key: string; processDefinitionKey: string; uuid: string }
  /** The registry platform's start form of an external system's call (`lowcode_{def}_start_form_{uuid}`): no instance owns it yet. */
  | { keyspace: "bpm-form-submissions"; kind: "external-start-form"; key: string; processDefinitionKey: string; uuid: string }
  | {
      keyspace: "bpm-form-submissions";
      kind: "signature";
      key: string;
      rootProcessInstanceId: string;
      processInstanceId: string;
    }
  | { keyspace: "bpm-form-submissions"; kind: "batch-signature"; key: string; processInstanceId: string; index: number }
  | { keyspace: "bpm-message-payloads"; kind: "start-message"; key: string; processDefinitionKey: string; uuid: string }
  | { keyspace: "bpm-form-schemas"; kind: "form-schema"; key: string; formKey: string }
  | { keyspace: "bpm-form-scripts"; kind: "form-script"; key: string; scriptName: string };

export const PATTERNS: Record<Keyspace, readonly string[]> = {
  "bpm-form-submissions": [
    "process/{processInstanceId}/task/{taskDefinitionKey}",
    "process-definition/{processDefinitionKey}/start-form/{uuid}",
    "lowcode_{rootProcessInstanceId}_{processInstanceId}_system_signature_ceph_key",
    "lowcode_{processInstanceId}_system_signature_ceph_key_{index}",
    "lowcode_{processDefinitionKey}_start_form_{uuid}",
  ],
  "bpm-message-payloads": ["process-definition/{processDefinitionKey}/start-message/{uuid}"],
  "bpm-form-schemas": ["{formKey} (case-insensitive: stored lower-cased)"],
  "bpm-form-scripts": ["{scriptName}"],
};

/**
 * The longest key part, in UTF-8 bytes. Three parts plus the fixed text and a partition stay well under
 * the contract's key size limit (MAX_KEY_BYTES, 1900 encoded bytes with the partition) on every backend.
 */
export const MAX_PART_BYTES = 255;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const INDEX = /^(0|[1-9][0-9]{0,15})$/;
const SIGNATURE_SUFFIX = "_system_signature_ceph_key";
/** `lowcode_{processDefinitionKey}_start_form_{uuid}`: the definition key may hold `_`, the suffix fixes where it ends. */
const EXTERNAL_START_FORM = /^lowcode_(.*)_start_form_([^_]*)$/s;

/**
 * Validates one caller-given part of a key. `underscore: false` refuses `_` too (process instance ids,
 * which the signature patterns join with `_`).
 */
export function validatePart(field: string, value: unknown, options: { underscore?: boolean } = {}): string {
  if (typeof value !== "string") throw new ValidationError(`${field} must be a string`, field);
  if (value === "") throw new ValidationError(`${field} must not be empty`, field);
  if (!value.isWellFormed()) throw new ValidationError(`${field} is not valid Unicode`, field);
  if (value.length > MAX_PART_BYTES || Buffer.byteLength(value, "utf8") > MAX_PART_BYTES) {
    throw new ValidationError(`${field} must be at most ${MAX_PART_BYTES} bytes (UTF-8)`, field);
  }
  refuseUnsafeId(value, field);
  if (value.includes("/")) throw new ValidationError(`${field} must not hold "/"`, field);
  if (options.underscore === false && value.includes("_")) {
    throw new ValidationError(`${field} must not hold "_" (the signature key patterns join process ids with "_")`, field);
  }
  return value;
}

export const validateProcessInstanceId = (v: unknown, field = "processInstanceId"): string => validatePart(field, v, { underscore: false });

function validateUuid(v: string): string {
  if (!UUID.test(v)) throw new ValidationError("uuid must be a lower-case canonical UUID", "uuid");
  return v;
}

function validateIndex(v: string): number {
  if (!INDEX.test(v) || !Number.isSafeInteger(Number(v))) {
    throw new ValidationError("index must be a non-negative decimal integer without leading zeros", "index");
  }
  return Number(v);
}

function mismatch(keyspace: Keyspace, key: string, pattern?: string): never {
  const patterns = pattern ? [pattern] : PATTERNS[keyspace];
  throw new ValidationError(`key ${JSON.stringify(key.slice(0, 300))} does not match ${patterns.join(" or ")} of ${keyspace}`, "key");
}

/** Parses a key of a keyspace into its parts; a ValidationError names the part at fault. */
export function parseKey(keyspaceName: string, key: unknown): ParsedKey {
  const keyspace = parseKeyspace(keyspaceName);
  if (typeof key !== "string" || key === "") throw new ValidationError("key must be a non-empty string", "key");
  switch (keyspace) {
    case "bpm-form-submissions":
      return parseFormSubmissionKey(key);
    case "bpm-message-payloads": {
      const parts = key.split("/");
      const pattern = PATTERNS[keyspace][0];
      if (parts.length !== 4 || parts[0] !== "process-definition" || parts[2] !== "start-message") {
        mismatch(keyspace, key, pattern);
      }
      return {
        keyspace,
        kind: "start-message",
        key,
        processDefinitionKey: validatePart("processDefinitionKey", parts[1]),
        uuid: validateUuid(parts[3]!),
      };
    }
    case "bpm-form-schemas": {
      // form keys are case-insensitive, as the platform's form-schema provider has them: stored lower-cased
      const formKey = validatePart("formKey", key.toLowerCase());
      return { keyspace, kind: "form-schema", key: formKey, formKey };
    }
    case "bpm-form-scripts":
      return { keyspace, kind: "form-script", key, scriptName: validatePart("scriptName", key) };
  }
}

function parseFormSubmissionKey(key: string): ParsedKey {
  const keyspace = "bpm-form-submissions";
  const [task, startForm, signature] = PATTERNS[keyspace];
  const external = EXTERNAL_START_FORM.exec(key);
  if (external) {
    return {
      keyspace,
      kind: "external-start-form",
      key,
      processDefinitionKey: validatePart("processDefinitionKey", external[1]),
      uuid: validateUuid(external[2]!),
    };
  }
  if (key.startsWith("lowcode_")) {
    const body = key.slice("lowcode_".length);
    if (body.endsWith(SIGNATURE_SUFFIX)) {
      const ids = body.slice(0, -SIGNATURE_SUFFIX.length).split("_");
      if (ids.length !== 2) mismatch(keyspace, key, signature);
      return {
        keyspace,
        kind: "signature",
        key,
        rootProcessInstanceId: validateProcessInstanceId(ids[0], "rootProcessInstanceId"),
        processInstanceId: validateProcessInstanceId(ids[1]),
      };
    }
    const at = body.lastIndexOf(`${SIGNATURE_SUFFIX}_`);
    if (at < 0) mismatch(keyspace, key);
    const index = body.slice(at + SIGNATURE_SUFFIX.length + 1);
    return {
      keyspace,
      kind: "batch-signature",
      key,
      processInstanceId: validateProcessInstanceId(body.slice(0, at)),
      index: validateIndex(index),
    };
  }
  const parts = key.split("/");
  if (parts[0] === "process") {
    if (parts.length !== 4 || parts[2] !== "task") mismatch(keyspace, key, task);
    return {
      keyspace,
      kind: "task",
      key,
      processInstanceId: validateProcessInstanceId(parts[1]),
      taskDefinitionKey: validatePart("taskDefinitionKey", parts[3]),
    };
  }
  if (parts[0] === "process-definition") {
    if (parts.length !== 4 || parts[2] !== "start-form") mismatch(keyspace, key, startForm);
    return {
      keyspace,
      kind: "start-form",
      key,
      processDefinitionKey: validatePart("processDefinitionKey", parts[1]),
      uuid: validateUuid(parts[3]!),
    };
  }
  return mismatch(keyspace, key);
}

/** Key builders: each validates its parts and returns the key string of the pattern. */
export const keys = {
  task(processInstanceId: string, taskDefinitionKey: string): string {
    return `process/${validateProcessInstanceId(processInstanceId)}/task/${validatePart("taskDefinitionKey", taskDefinitionKey)}`;
  },
  startForm(processDefinitionKey: string, uuid: string): string {
    return `process-definition/${validatePart("processDefinitionKey", processDefinitionKey)}/start-form/${validateUuid(uuid)}`;
  },
  signature(rootProcessInstanceId: string, processInstanceId: string): string {
    return `lowcode_${validateProcessInstanceId(rootProcessInstanceId, "rootProcessInstanceId")}_${validateProcessInstanceId(processInstanceId)}${SIGNATURE_SUFFIX}`;
  },
  batchSignature(processInstanceId: string, index: number): string {
    if (!Number.isSafeInteger(index) || index < 0) {
      throw new ValidationError("index must be a non-negative integer", "index");
    }
    return `lowcode_${validateProcessInstanceId(processInstanceId)}${SIGNATURE_SUFFIX}_${index}`;
  },
  externalStartForm(processDefinitionKey: string, uuid: string): string {
    return `lowcode_${validatePart("processDefinitionKey", processDefinitionKey)}_start_form_${validateUuid(uuid)}`;
  },
  startMessage(processDefinitionKey: string, uuid: string): string {
    return `process-definition/${validatePart("processDefinitionKey", processDefinitionKey)}/start-message/${validateUuid(uuid)}`;
  },
};

// ---- placement ---------------------------------------------------------------------------------

/**
 * The process instance the key names as the record's owner (its data goes when that instance is deleted),
 * if any. A batch signature's owner is the instance its write registers it under: this is the default,
 * the instance in its key.
 */
export function ownerOf(p: ParsedKey): string | null {
  switch (p.kind) {
    case "task":
    case "batch-signature":
      return p.processInstanceId;
    case "signature":
      return p.rootProcessInstanceId;
    default:
      return null;
  }
}

/** The first `n` code points of `s`. */
function head(s: string, n: number): string {
  let end = 0;
  for (let i = 0; i < n && end < s.length; i++) end += s.codePointAt(end)! > 0xffff ? 2 : 1;
  return s.slice(0, end);
}

/**
 * The bucket of a key: always a prefix of the key, and the buckets of one keyspace are either cut at
 * a fixed length within a family of keys or form a prefix-free set, so bucket order agrees with key
 * order. Task and signature keys are cut after two characters of the process instance id (uuids:
 * 256 buckets per family); start forms and start messages have one bucket per process definition;
 * form schemas and scripts are cut after two characters of their name.
 */
export function bucketOf(p: ParsedKey): string {
  switch (p.kind) {
    case "task":
    case "signature":
    case "batch-signature":
    case "external-start-form":
      return head(p.key, 10); // "process/" or "lowcode_" + two characters
    case "start-form":
      return `process-definition/${p.processDefinitionKey}/start-form/`;
    case "start-message":
      return `process-definition/${p.processDefinitionKey}/start-message/`;
    case "form-schema":
    case "form-script":
      return head(p.key, 2);
  }
}

/** The string range [start, end) of every key that begins with `prefix`. */
export function prefixBounds(prefix: string): { start: string; end: string } {
  const last = prefix.charCodeAt(prefix.length - 1);
  return { start: prefix, end: prefix.slice(0, -1) + String.fromCharCode(last + 1) };
}
