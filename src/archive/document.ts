/**
 * The snapshot document: an item collection, i.e. a JSON object mapping item names to lists of values
 * (the shape of an Imixs ItemCollection). Validation names the offending field; encoding is JSON bytes.
 */
import { ValidationError } from "../errors.js";

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type ArchiveDocument = Record<string, JsonValue[]>;

export const MAX_ITEM_NAME_LENGTH = 1024;
const MAX_DEPTH = 64;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

function validateValue(v: unknown, field: string, depth: number): void {
  if (depth > MAX_DEPTH) throw new ValidationError(`values nest at most ${MAX_DEPTH} levels deep`, field);
  if (v === null || typeof v === "boolean" || typeof v === "string") return;
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new ValidationError("numbers must be finite", field);
    return;
  }
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) validateValue(v[i], `${field}[${i}]`, depth + 1);
    return;
  }
  if (isPlainObject(v)) {
    for (const [k, x] of Object.entries(v)) validateValue(x, `${field}.${k}`, depth + 1);
    return;
  }
  throw new ValidationError(`not a JSON value (${typeof v})`, field);
}

export function validateDocument(document: unknown, field = "document"): asserts document is ArchiveDocument {
  if (!isPlainObject(document)) {
    throw new ValidationError("a document is a JSON object of item names to lists of values", field);
  }
  for (const [name, values] of Object.entries(document)) {
    const itemField = `${field}.${name}`;
    if (name.length > MAX_ITEM_NAME_LENGTH) {
      throw new ValidationError(`an item name is at most ${MAX_ITEM_NAME_LENGTH} characters`, itemField);
    }
    if (!Array.isArray(values)) throw new ValidationError(`item ${JSON.stringify(name)} must be a list of values`, itemField);
    for (let i = 0; i < values.length; i++) validateValue(values[i], `${itemField}[${i}]`, 1);
  }
}

/** Validates and encodes a document to the bytes that are stored (and counted against the limit). */
export function encodeDocument(document: unknown): Buffer {
  validateDocument(document);
  return Buffer.from(JSON.stringify(document), "utf8");
}

export function decodeDocument(bytes: Buffer): ArchiveDocument {
  return JSON.parse(bytes.toString("utf8")) as ArchiveDocument;
}

/**
 * The time a document's item holds (its first value: epoch milliseconds, or an ISO 8601 date-time), or
 * undefined when the document has no such item. A value that is no time is refused, naming the item.
 */
export function itemTime(document: ArchiveDocument, item: string): number | undefined {
  const values = Object.hasOwn(document, item) ? document[item] : undefined;
  if (!values || values.length === 0) return undefined;
  const v = values[0];
  const t = typeof v === "number" ? v : typeof v === "string" && /^\d{4}-\d{2}-\d{2}T/.test(v) ? Date.parse(v) : Number.NaN;
  if (!Number.isSafeInteger(t) || t < 0) {
    throw new ValidationError(`item ${item} holds a time: epoch milliseconds or an ISO 8601 date-time`, `document.${item}[0]`);
  }
  return t;
}

/** A positive integer a document's item holds (its first value), or undefined without the item. */
export function itemCount(document: ArchiveDocument, item: string): number | undefined {
  const values = Object.hasOwn(document, item) ? document[item] : undefined;
  if (!values || values.length === 0) return undefined;
  const v = values[0];
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1) throw new ValidationError(`item ${item} holds a positive integer`, `document.${item}[0]`);
  return v;
}
