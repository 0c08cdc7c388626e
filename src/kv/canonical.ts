/**
 * Canonical JSON: object keys sorted (by UTF-16 code units, as Array#sort) at every level, no whitespace,
 * `undefined` members left out and `undefined` array items written as null (as JSON.stringify does).
 * Two values equal as JSON give the same string: event hashes, checkpoint signatures and archive seals are
 * computed over it.
 */
export function canonicalJson(value: unknown): string {
  // Plain loops and one string (verify hashes every event: no intermediate arrays per level).
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) out += (i > 0 ? "," : "") + canonicalJson(value[i] === undefined ? null : value[i]);
    return out + "]";
  }
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).sort();
  let out = "{";
  for (const k of keys) {
    const v = obj[k];
    if (v === undefined) continue;
    out += (out.length > 1 ? "," : "") + JSON.stringify(k) + ":" + canonicalJson(v);
  }
  return out + "}";
}
