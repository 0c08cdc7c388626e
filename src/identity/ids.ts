/**
 * Input rules for identities. User and group ids share one namespace (a permission names an identity
 * without saying whether it is a user or a group), so both follow the same rule.
 */
import { ValidationError } from "../errors.js";
import { refuseUnsafeId } from "../ids.js";
import { refuseSealed } from "../personal/subjects.js";

/** ASCII letters, digits and `. _ @ -`; never `.` or `..` alone (the dot segments src/ids.ts refuses in every id). */
export const ID_PATTERN = "^(?!\\.\\.?$)[A-Za-z0-9._@-]{1,64}$";
const ID_RE = new RegExp(ID_PATTERN);
/** Ids no user or group may take: `system` is the name of the system actor. */
const RESERVED = new Set(["system"]);

export const PASSWORD_MIN = 8;
export const PASSWORD_MAX = 1024;
export const DISPLAY_NAME_MAX = 200;
/** The longest e-mail address (RFC 5321's path limit, less its angle brackets). */
export const EMAIL_MAX = 254;
/** An e-mail address as flowstore accepts one: a local part, one `@`, a domain with a dot; no spaces or controls (RFC 5322's full grammar is not checked). */
export const EMAIL_PATTERN = "^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$";
const EMAIL_RE = new RegExp(EMAIL_PATTERN, "u");
/** The longest organization a user may belong to (TruBudget's user field). */
export const ORGANIZATION_MAX = 200;
export const MAX_GROUP_MEMBERS = 1000;

export function checkId(value: unknown, field: string): string {
  if (typeof value !== "string" || !ID_RE.test(value)) {
    throw new ValidationError(`${field} must be 1-64 characters of A-Z a-z 0-9 . _ @ -, not "." or ".."`, field);
  }
  return value;
}

export function checkNewId(value: unknown, field: string): string {
  const id = checkId(value, field);
  if (RESERVED.has(id)) throw new ValidationError(`${field} ${JSON.stringify(id)} is reserved`, field);
  return id;
}

export function checkDisplayName(value: unknown, field = "displayName"): string {
  if (typeof value !== "string" || value.trim().length === 0 || value.length > DISPLAY_NAME_MAX) {
    throw new ValidationError(`${field} must be a non-blank string of at most ${DISPLAY_NAME_MAX} characters`, field);
  }
  // A user's display name is stored sealed (identity.ts): only the store makes sealed values.
  refuseSealed(value, field);
  return value;
}

/** A user's e-mail address (optional): personal data, stored sealed under the user's subject key (identity.ts). */
export function checkEmail(value: unknown, field = "email"): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value.length > EMAIL_MAX || !EMAIL_RE.test(value)) {
    throw new ValidationError(`${field} must be an e-mail address (local part, @, domain) of at most ${EMAIL_MAX} characters`, field);
  }
  refuseSealed(value, field);
  return value;
}

export function checkOrganization(value: unknown, field = "organization"): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value.trim().length === 0 || value.length > ORGANIZATION_MAX) {
    throw new ValidationError(`${field} must be a non-blank string of at most ${ORGANIZATION_MAX} characters`, field);
  }
  // An organization names projected budgets (an id in their paths): the rule of every id holds for it.
  refuseUnsafeId(value, field);
  return value;
}

/**
 * Which passwords are accepted: `standard` (PASSWORD_MIN to PASSWORD_MAX characters, the default
 * everywhere) or `test` (any non-empty string up to PASSWORD_MAX: TruBudget's rule outside production,
 * which its provisioning data relies on; only ever an operator's explicit, logged option).
 */
export type PasswordRule = "standard" | "test";

export function checkPassword(value: unknown, field = "password", rule: PasswordRule = "standard"): string {
  const min = rule === "test" ? 1 : PASSWORD_MIN;
  if (typeof value !== "string" || value.length < min || value.length > PASSWORD_MAX) {
    throw new ValidationError(`${field} must be a string of ${min}-${PASSWORD_MAX} characters`, field);
  }
  return value;
}
