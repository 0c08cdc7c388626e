/**
 * Validation and encoding of a commit batch, shared by every backend: everything that can be wrong with
 * a batch (bad partition, bad or too long key, value not bytes, bad version, unknown op) is found here,
 * before a backend touches its data, so a bad batch changes nothing.
 */
import { ValidationError } from "../errors.js";
import { assertKeySize, carriedKey, encodeKey, encodePartition, type Key, type Op, type Partition } from "./contract.js";

/** An op with its keys encoded relative to the partition; both prefix and range deletes are "range". */
export type PreparedOp =
  | { readonly type: "put"; readonly key: Buffer; readonly value: Buffer }
  | { readonly type: "delete"; readonly key: Buffer }
  /** Deletes [start, end). */
  | { readonly type: "range"; readonly start: Buffer; readonly end: Buffer }
  | { readonly type: "check"; readonly key: Buffer; readonly version: number | null };

export interface PreparedBatch {
  /** encodeNested(partition). */
  readonly partition: Buffer;
  /** Every check of the batch, in order (backends evaluate them before any write). */
  readonly checks: readonly Extract<PreparedOp, { type: "check" }>[];
  /** Every write of the batch, in order. */
  readonly writes: readonly Exclude<PreparedOp, { type: "check" }>[];
  /** True when the batch puts at least one key (the partition then enters the index). */
  readonly hasPut: boolean;
}

const TOP = Buffer.from([0xff]);

/**
 * An op's key bytes: the ones it carries (a keyed op's, contract.ts `carriedKey`), held to the size limit
 * with this partition, else its key encoded.
 */
function keyOf(partitionLength: number, op: Extract<Op, { key: Key }>): Buffer {
  const carried = carriedKey(op);
  if (carried === undefined) return encodeKey(partitionLength, op.key);
  assertKeySize(partitionLength, carried.length);
  return carried;
}

export function prepareBatch(partition: Partition, ops: readonly Op[]): PreparedBatch {
  const p = encodePartition(partition);
  if (!Array.isArray(ops)) throw new ValidationError("ops must be an array", "ops");
  const checks: Extract<PreparedOp, { type: "check" }>[] = [];
  const writes: Exclude<PreparedOp, { type: "check" }>[] = [];
  let hasPut = false;
  for (const op of ops) {
    if (typeof op !== "object" || op === null) throw new ValidationError("an op must be an object", "ops");
    switch (op.type) {
      case "put": {
        if (!(op.value instanceof Uint8Array)) throw new ValidationError("a put's value must be bytes", "value");
        const value = Buffer.isBuffer(op.value) ? op.value : Buffer.from(op.value.buffer, op.value.byteOffset, op.value.byteLength);
        writes.push({ type: "put", key: keyOf(p.length, op), value });
        hasPut = true;
        break;
      }
      case "delete":
        writes.push({ type: "delete", key: keyOf(p.length, op) });
        break;
      case "deletePrefix": {
        const start = encodeKey(p.length, op.prefix);
        writes.push({ type: "range", start, end: Buffer.concat([start, TOP]) });
        break;
      }
      case "deleteRange":
        writes.push({ type: "range", start: encodeKey(p.length, op.start), end: encodeKey(p.length, op.end) });
        break;
      case "check": {
        const v = op.version;
        if (v !== null && !(Number.isSafeInteger(v) && v > 0)) {
          throw new ValidationError("a check's version is null (absent) or a positive integer", "version");
        }
        checks.push({ type: "check", key: keyOf(p.length, op), version: v });
        break;
      }
      default:
        throw new ValidationError(`unknown op type ${JSON.stringify((op as { type?: unknown }).type)}`, "ops");
    }
  }
  return { partition: p, checks, writes, hasPut };
}
