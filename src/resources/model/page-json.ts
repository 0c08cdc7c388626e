/** The one list shape, `{"items":[…],"nextCursor":…}`, joined from items that are already JSON bytes. */
const OPEN = Buffer.from('{"items":[');
const COMMA = 0x2c;

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
  const close = Buffer.from(`],"nextCursor":${JSON.stringify(nextCursor)}}`);
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
