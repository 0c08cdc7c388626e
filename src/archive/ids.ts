/**
 * Snapshot ids and the values they are made of: `<uniqueId>-<epochMillis>`, the day bucket of a
 * snapshot (`YYYY-MM-DD`, UTC), and the validation of each.
 */
import { ValidationError } from "../errors.js";
import { refuseUnsafeId } from "../ids.js";

export const MAX_UNIQUE_ID_LENGTH = 256;
/** The latest instant a JavaScript Date can hold. */
const MAX_MILLIS = 8_640_000_000_000_000;

export function validateUniqueId(uniqueId: unknown, field = "uniqueId"): asserts uniqueId is string {
  if (typeof uniqueId !== "string" || uniqueId.length === 0) {
    throw new ValidationError("a unique id is a non-empty string", field);
  }
  if (uniqueId.length > MAX_UNIQUE_ID_LENGTH) {
    throw new ValidationError(`a unique id is at most ${MAX_UNIQUE_ID_LENGTH} characters`, field);
  }
  refuseUnsafeId(uniqueId, field);
  if (!uniqueId.isWellFormed()) throw new ValidationError("a unique id is valid Unicode", field);
}

export function validateMillis(millis: unknown, field: string): asserts millis is number {
  if (typeof millis !== "number" || !Number.isSafeInteger(millis) || millis < 0 || millis > MAX_MILLIS) {
    throw new ValidationError("a snapshot time is a non-negative integer of epoch milliseconds", field);
  }
}

export function snapshotIdOf(uniqueId: string, millis: number): string {
  return `${uniqueId}-${millis}`;
}

export interface ParsedSnapshotId {
  readonly uniqueId: string;
  readonly millis: number;
}

/** Splits a snapshot id at its last `-`; the millis are canonical decimal (no sign, no leading zero). */
export function parseSnapshotId(snapshotId: unknown, field = "snapshotId"): ParsedSnapshotId {
  const bad = (): never => {
    throw new ValidationError("a snapshot id is <uniqueId>-<epochMillis>", field);
  };
  if (typeof snapshotId !== "string") return bad();
  const dash = snapshotId.lastIndexOf("-");
  if (dash <= 0) return bad();
  const digits = snapshotId.slice(dash + 1);
  if (!/^(0|[1-9][0-9]{0,15})$/.test(digits)) return bad();
  const millis = Number(digits);
  const uniqueId = snapshotId.slice(0, dash);
  validateMillis(millis, field);
  validateUniqueId(uniqueId, field);
  return { uniqueId, millis };
}

/** The UTC day of an instant: `YYYY-MM-DD`. */
export function dayOf(millis: number): string {
  return new Date(millis).toISOString().slice(0, 10);
}

export function validateDay(date: unknown, field = "date"): asserts date is string {
  if (typeof date !== "string" || !/^\d{4}-\d{2}-\d{2}$/.test(date)) {
    throw new ValidationError("a date is YYYY-MM-DD", field);
  }
  const t = Date.parse(`${date}T00:00:00Z`);
  if (Number.isNaN(t) || dayOf(t) !== date) throw new ValidationError(`${date} is not a calendar date`, field);
}
