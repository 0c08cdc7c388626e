/** The one list shape, `{"items":[…],"nextCursor":…}`, joined from items that are already JSON bytes. */
const OPEN = Buffer.from('{"items":[');
const COMMA = Buffer.from(",");

export function pageJson(items: readonly Uint8Array[], nextCursor: string | null): Buffer {
  const parts: Uint8Array[] = [OPEN];
  items.forEach((item, i) => {
    if (i > 0) parts.push(COMMA);
    parts.push(item);
  });
  parts.push(Buffer.from(`],"nextCursor":${JSON.stringify(nextCursor)}}`));
  return Buffer.concat(parts);
}
