/** Resolves ScanOptions to a byte range, shared by every backend so they agree on its meaning. */
import { ValidationError } from "../errors.js";
import { cursorBytes, DEFAULT_SCAN_LIMIT, type ScanOptions } from "./contract.js";
import { encode, prefixRange } from "./tuple.js";

export interface ResolvedRange {
  /** Inclusive. */
  start: Buffer;
  /** Exclusive. */
  end: Buffer;
  limit: number;
  reverse: boolean;
}

const EMPTY = Buffer.alloc(0);
const TOP = Buffer.from([0xff]);

export function resolveRange(options: ScanOptions): ResolvedRange {
  const limit = options.limit ?? DEFAULT_SCAN_LIMIT;
  if (!Number.isSafeInteger(limit) || limit < 1) throw new ValidationError("limit must be a positive integer", "limit");
  if (options.prefix && (options.start || options.end)) {
    throw new ValidationError("a scan takes a prefix or start/end, not both", "prefix");
  }
  let start: Buffer;
  let end: Buffer;
  if (options.prefix) ({ start, end } = prefixRange(options.prefix));
  else {
    start = options.start ? encode(options.start) : EMPTY;
    end = options.end ? encode(options.end) : TOP;
  }
  const reverse = options.reverse === true;
  if (options.after) {
    const after = cursorBytes(options.after);
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
