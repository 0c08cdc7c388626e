/**
 * The characters no id of any kind may hold, declared once for every layer (resource ids, identity ids,
 * archive unique ids, process-data key parts):
 * - `.` and `..` as a whole id: URL normalization (RFC 3986 §5.2.4 "remove dot segments", done by curl,
 *   fetch and browsers) would turn `…/workflowitems/../assign` into a call on the parent.
 * - C0/C1 control characters and DEL, and the line/paragraph separators U+2028/U+2029.
 * - Bidirectional formatting characters (Unicode UAX #9: U+061C, U+200E, U+200F, U+202A–U+202E,
 *   U+2066–U+2069) and zero-width characters (U+200B–U+200D, U+2060, U+FEFF): they make lookalike ids
 *   (the "Trojan Source" attack, CVE-2021-42574).
 * The class is written as regular-expression source, so JSON Schema patterns (TypeBox, Ajv with the
 * `u` flag) and the library's checks derive from the same text.
 */
import { ValidationError } from "./errors.js";

/** The forbidden characters as the body of a regular-expression character class. */
export const FORBIDDEN_ID_CHARS = "\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069\\u200b-\\u200d\\u2060\\ufeff";

const FORBIDDEN = new RegExp(`[${FORBIDDEN_ID_CHARS}]`, "u");

/** A dot segment (`.` or `..`) as a whole id. */
export const isDotSegment = (id: string): boolean => id === "." || id === "..";

/** Throws a ValidationError naming `field` when `id` is a dot segment or holds a forbidden character. */
export function refuseUnsafeId(id: string, field: string): void {
  if (isDotSegment(id)) throw new ValidationError(`${field} must not be "." or ".."`, field);
  if (FORBIDDEN.test(id)) {
    throw new ValidationError(`${field} must not hold control, bidirectional-formatting or zero-width characters`, field);
  }
}
