/** The one list shape, `{"items":[…],"nextCursor":…}`, joined from items that are already JSON bytes. */
const OPEN = Buffer.from('{"items":[');
const COMMA = 0x2c;
/** What ends a page: its items' closing bracket and its cursor. */
const closeOf = (nextCursor: string | null): Buffer => Buffer.from(`],"nextCursor":${JSON.stringify(nextCursor)}}`);

/** Where a JSON object's closing brace is: what a tail (`,"allowedIntents":[…]}`) replaces. */
export const closingBrace = (json: Uint8Array): number => (json[json.length - 1] === 0x7d ? json.length - 1 : json.lastIndexOf(0x7d));

/** The length of an item's bytes before its tail: up to its closing brace (as `subarray(0, closingBrace)` cuts it). */
const beforeTail = (item: Uint8Array): number => {
  const at = closingBrace(item);
  return at < 0 ? Math.max(0, item.byteLength + at) : at;
};

/**
 * The page of `items`; with `tails`, each item's closing brace replaced by its tail (core.ts
 * `withAllowedIntents`, the same bytes), joined in the one copy of the page rather than an item's copy each.
 */
export function pageJson(items: readonly Uint8Array[], nextCursor: string | null, tails?: readonly Buffer[] | null): Buffer {
  const close = closeOf(nextCursor);
  // each item's bytes up to `ends[i]`, then its tail: measured first, then copied into one allocation
  const ends = items.map((item) => (tails ? beforeTail(item) : item.byteLength));
  let size = OPEN.length + Math.max(0, items.length - 1) + close.length;
  for (let i = 0; i < items.length; i++) size += ends[i]! + (tails ? tails[i]!.length : 0);
  const out = Buffer.allocUnsafe(size);
  out.set(OPEN, 0);
  let at = OPEN.length;
  for (let i = 0; i < items.length; i++) {
    if (i > 0) out[at++] = COMMA;
    const item = items[i]!;
    out.set(ends[i] === item.byteLength ? item : item.subarray(0, ends[i]), at);
    at += ends[i]!;
    if (tails) {
      out.set(tails[i]!, at);
      at += tails[i]!.length;
    }
  }
  out.set(close, at);
  return out;
}

/**
 * The items of a page copied once each, as they are answered (with its tail, when given, in place of its
 * closing brace: `pageJson`'s bytes), from bytes valid only while they are added (a record visited in a
 * backend's read buffer), into a few large buffers of its own rather than a Buffer per item; then joined in
 * any order (`page`). Each item is followed by a comma where it is kept, so items that follow one another in
 * both the order they were added and the page's order are copied into the page as one run.
 */
export class PageItems {
  readonly #chunks: Buffer[] = [];
  /** Per item: the index of its chunk, where it starts and ends there. */
  readonly #chunkOf: number[] = [];
  readonly #start: number[] = [];
  readonly #end: number[] = [];
  #chunk: Buffer;
  #at = 0;

  /** `firstChunk`: the bytes of the first buffer (each further one twice the one before, or an item's size when larger). */
  constructor(firstChunk = 64 * 1024) {
    this.#chunk = Buffer.allocUnsafe(firstChunk);
    this.#chunks.push(this.#chunk);
  }

  /** How many items were added. */
  get length(): number {
    return this.#start.length;
  }

  /** Adds an item (its JSON, and its tail when the page has tails); answers its index. */
  add(json: Uint8Array, tail?: Uint8Array): number {
    const body = tail ? beforeTail(json) : json.byteLength;
    const end = body + (tail ? tail.byteLength : 0);
    // the whole item is copied, then its tail over what follows its body (no view of the item made to cut it)
    const room = Math.max(end, json.byteLength) + 1;
    if (this.#at + room > this.#chunk.length) {
      this.#chunk = Buffer.allocUnsafe(Math.max(2 * this.#chunk.length, room));
      this.#chunks.push(this.#chunk);
      this.#at = 0;
    }
    const chunk = this.#chunk;
    const start = this.#at;
    chunk.set(json, start);
    if (tail) chunk.set(tail, start + body);
    const at = start + end;
    chunk[at] = COMMA;
    this.#at = at + 1;
    this.#chunkOf.push(this.#chunks.length - 1);
    this.#start.push(start);
    this.#end.push(at);
    return this.#start.length - 1;
  }

  /** The `i`-th item's bytes as answered (a view of its chunk). */
  item(i: number): Buffer {
    return this.#chunks[this.#chunkOf[i]!]!.subarray(this.#start[i], this.#end[i]);
  }

  /** The page of the items `order` names (each index once), in that order: the bytes `pageJson` joins of them. */
  page(order: readonly number[], nextCursor: string | null): Buffer {
    const close = closeOf(nextCursor);
    let size = OPEN.length + Math.max(0, order.length - 1) + close.length;
    for (const i of order) size += this.#end[i]! - this.#start[i]!;
    const out = Buffer.allocUnsafe(size);
    out.set(OPEN, 0);
    let at = OPEN.length;
    for (let k = 0; k < order.length; ) {
      if (k > 0) out[at++] = COMMA;
      const i = order[k]!;
      const c = this.#chunkOf[i]!;
      let last = i;
      // a run: the items added after this one, in the page's order, in its chunk (the commas between them kept)
      while (++k < order.length && order[k] === last + 1 && this.#chunkOf[last + 1] === c) last++;
      at += this.#chunks[c]!.copy(out, at, this.#start[i], this.#end[last]);
    }
    out.set(close, at);
    return out;
  }
}
