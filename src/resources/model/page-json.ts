/** The one list shape, `{"items":[…],"nextCursor":…}`, joined from items that are already JSON bytes. */
const OPEN = Buffer.from('{"items":[');
const COMMA = Buffer.from(",");

/** Where a JSON object's closing brace is: what a tail (`,"allowedIntents":[…]}`) replaces. */
export const closingBrace = (json: Buffer): number => (json[json.length - 1] === 0x7d ? json.length - 1 : json.lastIndexOf(0x7d));

/**
 * The page of `items`; with `tails`, each item's closing brace replaced by its tail (core.ts
 * `withAllowedIntents`, the same bytes), joined in the one copy of the page rather than an item's copy each.
 */
export function pageJson(items: readonly Uint8Array[], nextCursor: string | null, tails?: readonly Buffer[] | null): Buffer {
  const parts: Uint8Array[] = [OPEN];
  items.forEach((item, i) => {
    if (i > 0) parts.push(COMMA);
    if (tails) {
      const json = Buffer.isBuffer(item) ? item : Buffer.from(item.buffer, item.byteOffset, item.byteLength);
      parts.push(json.subarray(0, closingBrace(json)), tails[i]!);
    } else parts.push(item);
  });
  parts.push(Buffer.from(`],"nextCursor":${JSON.stringify(nextCursor)}}`));
  return Buffer.concat(parts);
}
