/** Size limits of a snapshot: document bytes plus every file's bytes, counted as they stream in. */
import { TooLargeError, ValidationError } from "../errors.js";

export const MiB = 1024 * 1024;
export const DEFAULT_MAX_SNAPSHOT_BYTES = 100 * MiB;

export function validateLimit(limit: unknown, field: string): number {
  if (typeof limit !== "number" || !Number.isSafeInteger(limit) || limit < 1) {
    throw new ValidationError("a size limit is a positive integer of bytes", field);
  }
  return limit;
}

function human(bytes: number): string {
  return bytes % MiB === 0 ? `${bytes / MiB} MiB` : `${bytes} bytes`;
}

/** Counts the bytes of one snapshot and throws TooLargeError naming the limit once they exceed it. */
export class SizeBudget {
  used = 0;
  constructor(
    readonly limit: number,
    /** What is counted, for the message (default: a snapshot). */
    readonly what = "a snapshot (document + files)",
  ) {}

  add(bytes: number): void {
    this.used += bytes;
    if (this.used > this.limit) throw this.error();
  }

  /** Fails early when a declared size alone would not fit. */
  ensureRoom(bytes: number): void {
    if (this.used + bytes > this.limit) throw this.error();
  }

  error(): TooLargeError {
    return new TooLargeError(`${this.what} may hold at most ${human(this.limit)} (limit ${this.limit} bytes)`, this.limit);
  }
}
