/**
 * The deepest nesting a JSON value may have, anywhere: a body, a resource's data, a process-data record.
 * Deeper values are refused with a ValidationError naming the path at which the limit was crossed, before
 * any recursive code (schema checks, record encoding) walks them: a value nested thousands of levels
 * overflowed the stack. The walk below is iterative, so checking cannot overflow either.
 */
import { ValidationError } from "./errors.js";

/** The largest nesting depth of a JSON value (a scalar is depth 0, `{}` and `[]` are depth 1). */
export const MAX_JSON_DEPTH = 64;

/** Throws a ValidationError naming `<field>.<path>` when `value` nests deeper than MAX_JSON_DEPTH. */
export function assertJsonDepth(value: unknown, field: string): void {
  const stack: Array<{ value: unknown; depth: number; path: string }> = [{ value, depth: 0, path: field }];
  while (stack.length > 0) {
    const { value: v, depth, path } = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (depth + 1 > MAX_JSON_DEPTH) {
      throw new ValidationError(`${path} nests deeper than ${MAX_JSON_DEPTH} levels`, path);
    }
    for (const [k, child] of Object.entries(v)) {
      if (child !== null && typeof child === "object") stack.push({ value: child, depth: depth + 1, path: `${path}.${k}` });
    }
  }
}
