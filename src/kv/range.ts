/** Resolves ScanOptions to a byte range, shared by every backend so they agree on its meaning. */
import { ValidationError } from "../errors.js";
import { assertKeySize, CursorError, cursorBytes, DEFAULT_SCAN_LIMIT, encodeKey, type ScanOptions } from "./contract.js";

export interface ResolvedRange {
  /** Inclusive, relative to the partition. */
  start: Buffer;
  /** Exclusive, relative to the partition. */
  end: Buffer;
  limit: number;
  reverse: boolean;
}

const EMPTY = Buffer.alloc(0);
const TOP = Buffer.from([0xff]);

/**
 * `partitionLength` (the partition's encoded size) lets the key size limit (MAX_KEY_BYTES) apply to
 * prefix/start/end and cursors too, so a huge bound is a ValidationError rather than a backend failure.
 */
export function resolveRange(options: ScanOptions, partitionLength = 0): ResolvedRange {
  const limit = options.limit ?? DEFAULT_SCAN_LIMIT;
  if (!Number.isSafeInteger(limit) || limit < 1) throw new ValidationError("limit must be a positive integer", "limit");
  if (options.prefix && (options.start || options.end)) {
    throw new ValidationError("a scan takes a prefix or start/end, not both", "prefix");
  }
  let start: Buffer;
  let end: Buffer;
  if (options.prefix) {
    start = encodeKey(partitionLength, options.prefix);
    end = Buffer.concat([start, TOP]);
  } else {
    start = options.start ? encodeKey(partitionLength, options.start) : EMPTY;
    end = options.end ? encodeKey(partitionLength, options.end) : TOP;
  }
  const reverse = options.reverse === true;
  if (options.after) {
    const after = cursorBytes(options.after);
    try {
      assertKeySize(partitionLength, after.length);
    } catch {
      throw new CursorError();
    }
    if (reverse) {
      if (Buffer.compare(after, end) < 0) end = after;
    } else {
      // The smallest key strictly greater than `after` is `after` followed by 0x00.
      const next = Buffer.concat([after, Buffer.from([0])]);
      if (Buffer.compare(next, start) > 0) start = next;
    }
  }
  return { start, end, limit, reverse };
}
