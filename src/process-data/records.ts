/**
 * The records of the four keyspaces: their fields (exactly those the BPM engine stores), validation, and the
 * stored encoding.
 *
 * Stored value of a record: the UTF-8 JSON `{"v":1,"f":{public fields},"t":<sealed token>?,"e":<expiresAt
 * ms>|null,"u":<updatedAt ms>}`. The access token is never in `f`; `t` holds it sealed (crypto.ts).
 * A pointer (an instance-owned record's entry in its keyspace bucket) is the byte `P`, followed by the owning
 * instance's id when the key does not name it (`pointerTo`).
 */
import { TooLargeError, ValidationError } from "../errors.js";
import { validateFormioForm, type FormioForm } from "./form-schema.js";
import type { Keyspace, ParsedKey } from "./keys.js";

export interface FormSubmissionFields {
  id: string;
  accessToken?: string;
  data?: unknown;
  signature?: string;
}
export interface MessagePayloadFields {
  id: string;
  data?: unknown;
}
export interface FormSchemaFields {
  id: string;
  formData: FormioForm;
}
export interface FormScriptFields {
  id: string;
  formScript: string;
}
export type RecordFields = FormSubmissionFields | MessagePayloadFields | FormSchemaFields | FormScriptFields;
/** The fields of a record of any keyspace, as readers see them (which are present depends on the keyspace). */
export interface AnyRecordFields {
  id: string;
  accessToken?: string;
  data?: unknown;
  signature?: string;
  formData?: FormSchemaFields["formData"];
  formScript?: string;
}

export const FIELDS: Record<Keyspace, readonly string[]> = {
  "bpm-form-submissions": ["id", "accessToken", "data", "signature"],
  "bpm-message-payloads": ["id", "data"],
  "bpm-form-schemas": ["id", "formData"],
  "bpm-form-scripts": ["id", "formScript"],
};

export interface Limits {
  /** The largest stored record (JSON bytes of its fields). Default 1 MiB. */
  maxRecordBytes: number;
  /** The largest form script (UTF-8 bytes). Default 256 KiB. */
  maxScriptBytes: number;
  /** The longest access token (characters). Default 16 KiB. */
  maxTokenLength: number;
}

export const DEFAULT_LIMITS: Limits = {
  maxRecordBytes: 1024 * 1024,
  maxScriptBytes: 256 * 1024,
  maxTokenLength: 16 * 1024,
};

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Serializes a JSON value or refuses it naming the field (undefined, bigint, cycles, functions). */
function jsonOf(field: string, value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    text = undefined;
  }
  if (text === undefined) throw new ValidationError(`${field} must be a JSON value`, field);
  return text;
}

function optionalString(field: string, v: unknown, max: number): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== "string") throw new ValidationError(`${field} must be a string`, field);
  if (v.length > max) throw new ValidationError(`${field} must be at most ${max} characters`, field);
  if (!v.isWellFormed()) throw new ValidationError(`${field} is not valid Unicode`, field);
  return v;
}

/** The id a record gets when the caller gives none: the key part that names it. */
function defaultId(p: ParsedKey): string {
  switch (p.kind) {
    case "start-form":
    case "start-message":
      return p.uuid;
    case "form-schema":
      return p.formKey;
    case "form-script":
      return p.scriptName;
    default:
      return p.key;
  }
}

/**
 * Field names the registry platform sends in place of ours (its form data's JSON property names), per
 * keyspace: `x-access-token` is `accessToken`. Giving both is refused.
 */
export const FIELD_ALIASES: Partial<Record<Keyspace, Readonly<Record<string, string>>>> = {
  "bpm-form-submissions": { "x-access-token": "accessToken" },
};

function unalias(p: ParsedKey, input: Record<string, unknown>): Record<string, unknown> {
  const aliases = FIELD_ALIASES[p.keyspace];
  if (!aliases || !Object.keys(input).some((k) => Object.hasOwn(aliases, k))) return input;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(input)) {
    const name = Object.hasOwn(aliases, k) ? aliases[k]! : k;
    if (Object.hasOwn(out, name)) throw new ValidationError(`${k} and ${name} name the same field: give one`, k);
    out[name] = v;
  }
  return out;
}

/**
 * Validates the fields given for the record at `p` and returns them normalized (id filled in).
 * Unknown fields, wrong types, a formData that is not a Form.io form (form-schema.ts) and oversized values are refused
 * with an error naming the field.
 */
export function validateFields(p: ParsedKey, raw: unknown, limits: Limits = DEFAULT_LIMITS): RecordFields {
  if (!isPlainObject(raw)) throw new ValidationError("the record's fields must be a JSON object", "fields");
  const input = unalias(p, raw);
  const allowed = FIELDS[p.keyspace];
  for (const name of Object.keys(input)) {
    if (!allowed.includes(name)) {
      throw new ValidationError(`unknown field ${JSON.stringify(name)}: ${p.keyspace} records have the fields ${allowed.join(", ")}`, name);
    }
  }
  const given = optionalString("id", input["id"], 255);
  if (given === "") throw new ValidationError("id must not be empty", "id");
  // a form schema's key is case-insensitive (keys.ts lower-cases it), and so is the id that repeats it
  const id = given === undefined ? defaultId(p) : p.kind === "form-schema" ? given.toLowerCase() : given;
  if ((p.kind === "form-schema" || p.kind === "form-script") && id !== defaultId(p)) {
    throw new ValidationError(`id must equal the record's key (${p.key})`, "id");
  }

  let fields: RecordFields;
  switch (p.keyspace) {
    case "bpm-form-submissions": {
      const f: FormSubmissionFields = { id };
      const token = optionalString("accessToken", input["accessToken"], limits.maxTokenLength);
      if (token !== undefined) {
        if (token === "") throw new ValidationError("accessToken must not be empty", "accessToken");
        f.accessToken = token;
      }
      if (input["data"] !== undefined) f.data = JSON.parse(jsonOf("data", input["data"]));
      const signature = optionalString("signature", input["signature"], limits.maxRecordBytes);
      if (signature !== undefined) f.signature = signature;
      fields = f;
      break;
    }
    case "bpm-message-payloads": {
      const f: MessagePayloadFields = { id };
      if (input["data"] !== undefined) f.data = JSON.parse(jsonOf("data", input["data"]));
      fields = f;
      break;
    }
    case "bpm-form-schemas": {
      const formData = input["formData"];
      if (formData === undefined) throw new ValidationError("formData is required", "formData");
      fields = { id, formData: JSON.parse(jsonOf("formData", validateFormioForm(formData, p.formKey))) as FormSchemaFields["formData"] };
      break;
    }
    case "bpm-form-scripts": {
      const script = input["formScript"];
      if (script === undefined) throw new ValidationError("formScript is required", "formScript");
      if (typeof script !== "string") throw new ValidationError("formScript must be a string", "formScript");
      if (!script.isWellFormed()) throw new ValidationError("formScript is not valid Unicode", "formScript");
      const bytes = Buffer.byteLength(script, "utf8");
      if (bytes > limits.maxScriptBytes) {
        throw new TooLargeError(`formScript is ${bytes} bytes, more than the limit of ${limits.maxScriptBytes}`, limits.maxScriptBytes);
      }
      fields = { id, formScript: script };
      break;
    }
  }
  const size = Buffer.byteLength(JSON.stringify(fields), "utf8");
  if (size > limits.maxRecordBytes) {
    throw new TooLargeError(`the record is ${size} bytes, more than the limit of ${limits.maxRecordBytes}`, limits.maxRecordBytes);
  }
  return fields;
}

// ---- stored encoding -------------------------------------------------------------------------------

export interface StoredRecord {
  /** Public fields (never the access token). */
  f: Omit<RecordFields, "accessToken">;
  /** The sealed access token, if any. */
  t?: string;
  /** Expiry, epoch ms, or null. */
  e: number | null;
  /** Last write, epoch ms. */
  u: number;
}

export const POINTER = Buffer.from("P");

/**
 * The pointer to a record its key does not place: `P` and the owning instance's id (a batch signature
 * registered under its root instance). A record's stored JSON begins with `{`, never `P`.
 */
export function pointerTo(owner: string | null): Buffer {
  return owner === null ? POINTER : Buffer.concat([POINTER, Buffer.from(owner, "utf8")]);
}

export function isPointer(value: Uint8Array): boolean {
  return value.length >= 1 && value[0] === POINTER[0];
}

/** The owner a pointer names, or null for a bare pointer (the owner is the one the key names). */
export function pointerOwner(value: Uint8Array): string | null {
  return value.length > 1 ? Buffer.from(value.buffer, value.byteOffset + 1, value.byteLength - 1).toString("utf8") : null;
}

export function encodeRecord(r: StoredRecord): Buffer {
  return Buffer.from(JSON.stringify({ v: 1, ...r }), "utf8");
}

export function decodeRecord(value: Uint8Array): StoredRecord {
  const parsed = JSON.parse(Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("utf8")) as StoredRecord & {
    v: number;
  };
  return { f: parsed.f, ...(parsed.t === undefined ? {} : { t: parsed.t }), e: parsed.e ?? null, u: parsed.u };
}

export function isExpired(r: StoredRecord, now: number): boolean {
  return r.e !== null && r.e <= now;
}

/** The longest time to live of interim process data: 366 days (a process running longer keeps no TTL). */
export const MAX_TTL_MS = 366 * 86_400_000;

/** Validates a time-to-live option (ms, positive, at most MAX_TTL_MS). */
export function validateTtl(ttlMs: unknown): number | null {
  if (ttlMs === undefined || ttlMs === null) return null;
  if (typeof ttlMs !== "number" || !Number.isSafeInteger(ttlMs) || ttlMs <= 0 || ttlMs > MAX_TTL_MS) {
    throw new ValidationError(`ttlMs must be a positive integer number of milliseconds (at most ${MAX_TTL_MS}, 366 days)`, "ttlMs");
  }
  return ttlMs;
}
