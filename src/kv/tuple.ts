/**
 * The tuple key codec: an order-preserving, self-delimiting encoding of tuples to bytes,
 * modelled on FoundationDB's tuple layer.
 *
 * - decode(encode(t)) deep-equals t;
 * - comparing encodings byte-wise orders tuples as `compareTuples` does;
 * - encode(p) is a byte prefix of encode(t) exactly when p is a tuple prefix of t.
 *
 * Type codes (they also order values of different types):
 *   0x00 null · 0x01 bytes · 0x02 string · 0x05 nested tuple · 0x0c–0x1c integer · 0x26 false · 0x27 true
 * Strings, bytes and nested tuples end with the two bytes 0x00 0x00; a 0x00 inside a string or bytes is
 * escaped as 0x00 0xff, and inside a nested tuple null is 0x00 0xff. No item's encoding is therefore a
 * proper prefix of another item's encoding (FoundationDB's single 0x00 terminator is a prefix of its
 * 0x00 0xff escape, which made encode(["a"]) a byte prefix of encode(["a\0"])), so a byte prefix at an
 * item boundary is exactly a tuple prefix.
 */
import { ValidationError } from "../errors.js";

export type TupleItem = null | boolean | number | string | Uint8Array | Tuple;
export type Tuple = readonly TupleItem[];

/** A value the codec cannot hold, or malformed bytes. A ValidationError (field "key" unless told). */
export class TupleError extends ValidationError {
  constructor(message: string, field = "key") {
    super(message, field);
  }
}

const NULL = 0x00;
const BYTES = 0x01;
const STRING = 0x02;
const NESTED = 0x05;
const INT_ZERO = 0x14;
const FALSE = 0x26;
const TRUE = 0x27;
const ESCAPE = 0xff;
/** Ends a string, bytes or nested tuple: 0x00 0x00 (a 0x00 inside is always followed by 0xff). */
const END = 0x00;

/**
 * Encoding goes into one module-level scratch buffer (encoding is synchronous and never re-entered), and
 * the result is copied out once: one allocation per encoded tuple.
 */
class Writer {
  buf = Buffer.allocUnsafe(256);
  len = 0;
  reset(): this {
    this.len = 0;
    return this;
  }
  ensure(n: number): void {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }
  byte(b: number): void {
    this.ensure(1);
    this.buf[this.len++] = b;
  }
  raw(bytes: Uint8Array): void {
    this.ensure(bytes.length);
    this.buf.set(bytes, this.len);
    this.len += bytes.length;
  }
  /** Writes bytes, escaping 0x00 as 0x00 0xff. */
  escaped(bytes: Uint8Array): void {
    this.ensure(bytes.length * 2);
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i]!;
      this.buf[this.len++] = b;
      if (b === 0) this.buf[this.len++] = ESCAPE;
    }
  }
  /** Writes a string as UTF-8, escaping 0x00 as 0x00 0xff. */
  string(s: string): void {
    const n = s.length;
    // short ASCII without NUL (most ids): byte by byte, no native call
    if (n <= 32) {
      this.ensure(n);
      const buf = this.buf;
      let pos = this.len;
      let i = 0;
      for (; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c === 0 || c > 0x7f) break;
        buf[pos++] = c;
      }
      if (i === n) {
        this.len = pos;
        return;
      }
    }
    this.ensure(n * 3);
    const start = this.len;
    const written = this.buf.write(s, start, "utf8");
    const zero = this.buf.indexOf(0, start);
    if (zero === -1 || zero >= start + written) {
      this.len = start + written;
      return;
    }
    const utf8 = Buffer.from(this.buf.subarray(start, start + written));
    this.len = start;
    this.escaped(utf8);
  }
  result(): Buffer {
    const out = Buffer.from(this.buf.subarray(0, this.len));
    if (this.buf.length > 65536) this.buf = Buffer.allocUnsafe(256); // do not keep a huge scratch alive
    return out;
  }
}

const writer = new Writer();

function writeItem(w: Writer, item: TupleItem, nested: boolean): void {
  if (item === null) {
    w.byte(NULL);
    if (nested) w.byte(ESCAPE);
  } else if (typeof item === "string") {
    if (!item.isWellFormed()) {
      throw new TupleError("tuple string holds an unpaired surrogate (not valid Unicode)");
    }
    w.byte(STRING);
    w.string(item);
    w.byte(0x00);
    w.byte(END);
  } else if (typeof item === "number") {
    writeInt(w, item);
  } else if (typeof item === "boolean") {
    w.byte(item ? TRUE : FALSE);
  } else if (item instanceof Uint8Array) {
    w.byte(BYTES);
    w.escaped(item);
    w.byte(0x00);
    w.byte(END);
  } else if (Array.isArray(item)) {
    w.byte(NESTED);
    for (const inner of item) writeItem(w, inner, true);
    w.byte(0x00);
    w.byte(END);
  } else {
    throw new TupleError(`cannot encode a tuple item of type ${typeof item}`);
  }
}

function writeInt(w: Writer, v: number): void {
  if (!Number.isSafeInteger(v)) {
    throw new TupleError(`tuple integers must be safe integers, got ${v}`);
  }
  if (v === 0) {
    w.byte(INT_ZERO);
    return;
  }
  let abs = Math.abs(v);
  let n = 0;
  for (let x = abs; x > 0; x = Math.floor(x / 256)) n++;
  w.ensure(n + 1);
  const buf = w.buf;
  const at = w.len;
  buf[at] = v > 0 ? INT_ZERO + n : INT_ZERO - n;
  // big-endian magnitude; negatives as its complement so that they sort below smaller magnitudes
  for (let i = n; i >= 1; i--) {
    const b = abs % 256;
    buf[at + i] = v > 0 ? b : 255 - b;
    abs = Math.floor(abs / 256);
  }
  w.len = at + n + 1;
}

/** Encodes a tuple to bytes. Throws TupleError for values the codec cannot hold. */
export function encode(tuple: Tuple): Buffer {
  if (!Array.isArray(tuple)) throw new TupleError("a key must be a tuple (an array)");
  const w = writer.reset();
  for (const item of tuple) writeItem(w, item, false);
  return w.result();
}

/**
 * The same bytes as `encode`, as a latin1 string (one character per byte): a map key or a sort key whose
 * string order is the byte order, with no Buffer made on the way.
 */
export function encodeLatin1(tuple: Tuple): string {
  if (!Array.isArray(tuple)) throw new TupleError("a key must be a tuple (an array)");
  const w = writer.reset();
  for (const item of tuple) writeItem(w, item, false);
  const out = w.buf.toString("latin1", 0, w.len);
  if (w.buf.length > 65536) w.buf = Buffer.allocUnsafe(256); // do not keep a huge scratch alive
  return out;
}

/** Encodes a tuple as one nested item (self-delimited even when the tuple is empty). */
export function encodeNested(tuple: Tuple): Buffer {
  const w = writer.reset();
  writeItem(w, tuple, false);
  return w.result();
}

/** prefix ++ encode(tuple) in one buffer. */
export function encodeWithPrefix(prefix: Uint8Array, tuple: Tuple): Buffer {
  if (!Array.isArray(tuple)) throw new TupleError("a key must be a tuple (an array)");
  const w = writer.reset();
  w.raw(prefix);
  for (const item of tuple) writeItem(w, item, false);
  return w.result();
}

/**
 * encodeNested(partition) ++ encode(key) in one buffer, and the length of its first part: the full key
 * of a record in a store (the key's own encoding is `full.subarray(partitionLength)`).
 */
export function encodeNestedThen(partition: Tuple, key: Tuple): { full: Buffer; partitionLength: number } {
  if (!Array.isArray(key)) throw new TupleError("a key must be a tuple (an array)");
  const w = writer.reset();
  writeItem(w, partition, false);
  const partitionLength = w.len;
  for (const item of key) writeItem(w, item, false);
  return { full: w.result(), partitionLength };
}

/**
 * The nested encoding of `tuple` without its terminator: a byte prefix of `encodeNested(t)` exactly for
 * the tuples t that extend `tuple`; those lie in [prefix, prefix ++ 0xff).
 */
export function encodeNestedPrefix(tuple: Tuple): Buffer {
  const w = writer.reset();
  w.byte(NESTED);
  for (const inner of tuple) writeItem(w, inner, true);
  return w.result();
}

/** Decodes bytes produced by `encode`. Throws TupleError on malformed input. */
export function decode(bytes: Uint8Array): TupleItem[] {
  const out: TupleItem[] = [];
  let pos = 0;
  while (pos < bytes.length) {
    const [item, next] = readItem(bytes, pos, false);
    out.push(item);
    pos = next;
  }
  return out;
}

function readTerminated(bytes: Uint8Array, pos: number): [Buffer, number] {
  let start = pos;
  let chunks: Buffer[] | undefined;
  for (let i = pos; i < bytes.length; i++) {
    if (bytes[i] !== 0) continue;
    if (bytes[i + 1] === ESCAPE) {
      (chunks ??= []).push(Buffer.from(bytes.subarray(start, i + 1)));
      i++;
      start = i + 1;
      continue;
    }
    if (bytes[i + 1] !== END) throw new TupleError("malformed tuple: bad terminator");
    const tail = Buffer.from(bytes.subarray(start, i));
    return [chunks ? Buffer.concat([...chunks, tail]) : tail, i + 2];
  }
  throw new TupleError("malformed tuple: unterminated string or bytes");
}

function readItem(bytes: Uint8Array, pos: number, nested: boolean): [TupleItem, number] {
  const code = bytes[pos]!;
  if (code === NULL) {
    if (nested) {
      if (bytes[pos + 1] !== ESCAPE) throw new TupleError("malformed tuple: bad null in nested tuple");
      return [null, pos + 2];
    }
    return [null, pos + 1];
  }
  if (code === STRING) {
    const [raw, next] = readTerminated(bytes, pos + 1);
    return [raw.toString("utf8"), next];
  }
  if (code === BYTES) {
    const [raw, next] = readTerminated(bytes, pos + 1);
    return [new Uint8Array(raw), next];
  }
  if (code === NESTED) {
    const items: TupleItem[] = [];
    let p = pos + 1;
    for (;;) {
      if (p >= bytes.length) throw new TupleError("malformed tuple: unterminated nested tuple");
      if (bytes[p] === 0x00 && bytes[p + 1] === END) return [items, p + 2];
      const [item, next] = readItem(bytes, p, true);
      items.push(item);
      p = next;
    }
  }
  if (code >= INT_ZERO - 8 && code <= INT_ZERO + 8) {
    const n = Math.abs(code - INT_ZERO);
    if (pos + 1 + n > bytes.length) throw new TupleError("malformed tuple: truncated integer");
    let v = 0;
    for (let i = 0; i < n; i++) {
      const b = bytes[pos + 1 + i]!;
      v = v * 256 + (code < INT_ZERO ? 255 - b : b);
    }
    if (!Number.isSafeInteger(v)) throw new TupleError("malformed tuple: integer out of range");
    return [code < INT_ZERO ? -v : v, pos + 1 + n];
  }
  if (code === FALSE) return [false, pos + 1];
  if (code === TRUE) return [true, pos + 1];
  throw new TupleError(`malformed tuple: unknown type code 0x${code.toString(16)}`);
}

function typeRank(item: TupleItem): number {
  if (item === null) return 0;
  if (item instanceof Uint8Array) return 1;
  if (typeof item === "string") return 2;
  if (Array.isArray(item)) return 5;
  if (typeof item === "number") return 20;
  return item ? 39 : 38;
}

function compareCodePoints(a: string, b: string): number {
  // UTF-8 byte order equals code point order (not JavaScript's UTF-16 code unit order).
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const ca = a.codePointAt(i)!;
    const cb = b.codePointAt(j)!;
    if (ca !== cb) return ca < cb ? -1 : 1;
    i += ca > 0xffff ? 2 : 1;
    j += cb > 0xffff ? 2 : 1;
  }
  return i < a.length ? 1 : j < b.length ? -1 : 0;
}

function compareItems(a: TupleItem, b: TupleItem): number {
  const ra = typeRank(a);
  const rb = typeRank(b);
  if (ra !== rb) return ra < rb ? -1 : 1;
  if (typeof a === "string") return compareCodePoints(a, b as string);
  if (typeof a === "number") return a === b ? 0 : a < (b as number) ? -1 : 1;
  if (a instanceof Uint8Array) return Math.sign(Buffer.compare(a, b as Uint8Array));
  if (Array.isArray(a)) return compareTuples(a as Tuple, b as Tuple);
  return 0; // null, or booleans of the same value (ranks differ otherwise)
}

/** Orders tuples element by element; a proper prefix sorts before its extensions. */
export function compareTuples(a: Tuple, b: Tuple): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const c = compareItems(a[i]!, b[i]!);
    if (c !== 0) return c;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

/** True when `prefix` is a tuple prefix of `tuple` (every item equal). */
export function isTuplePrefix(prefix: Tuple, tuple: Tuple): boolean {
  if (prefix.length > tuple.length) return false;
  for (let i = 0; i < prefix.length; i++) if (compareItems(prefix[i]!, tuple[i]!) !== 0) return false;
  return true;
}

/** The byte range [start, end) holding exactly the keys that extend `prefix` (and the prefix itself). */
export function prefixRange(prefix: Tuple): { start: Buffer; end: Buffer } {
  const start = encode(prefix);
  return { start, end: Buffer.concat([start, Buffer.from([0xff])]) };
}
