/**
 * The statements the PostgreSQL store runs, as named queries (prepared once per connection), and how
 * the rows of many-row reads come back: packed server-side into a few blobs (PACK), large values in
 * pieces (PIECE), unpacked here.
 */
import { UnavailableError } from "../../errors.js";

/** The statements of a schema, as named (prepared once per connection) queries. */
export function statements(schema: string) {
  const s = `"${schema}"`;
  const r = `${s}.flowstore_records`;
  const named = (name: string, text: string) => ({ name: `flowstore_${schema}_${name}`, text });
  // A value larger than a piece comes as its size only, and is read piece by piece (store.ts, #read).
  const value = (when = "TRUE") => `CASE WHEN ${when} AND length(value) <= ${PIECE} THEN value END AS value, length(value) AS size`;
  // Rows of many-row reads come packed (see PACK): `packed(n, withKey)` is one packed row's bytes (n
  // numbers the rows in their order; a row whose value is left out or too large has its size only),
  // grouped into blobs of about PACK bytes, in order.
  const packed = (source: string, keep: string, withKey: boolean) =>
    `WITH rows AS (${source}), ` +
    `sized AS (SELECT *, sum(coalesce(length(key), 0) + coalesce(least(length(value), ${PIECE}), 0) + 20) OVER (ORDER BY n) AS run FROM rows) ` +
    `SELECT string_agg(` +
    (withKey ? `int4send(length(key)) || key || ` : "") +
    `CASE WHEN version IS NULL THEN int4send(-2) ELSE int8send(version) || ` +
    `CASE WHEN ${keep} AND length(value) <= ${PIECE} THEN int4send(length(value)) || value ELSE int4send(-1) || int4send(length(value)) END END, ` +
    `'' ORDER BY n) AS packed FROM sized GROUP BY (run - 1) / ${PACK} ORDER BY (run - 1) / ${PACK}`;
  // A page asks for one row more than it returns, to know whether there is more; that row's value is
  // left out.
  const scanPage = (order: string) =>
    packed(`SELECT key, version, value, row_number() OVER (${order}) AS n FROM ${r} WHERE partition = $1 AND key >= $2 AND key < $3 ${order} LIMIT $4 + 1`, "n <= $4", true);
  return {
    get: named("get", `SELECT version::text, ${value()} FROM ${r} WHERE partition = $1 AND key = $2`),
    // In the order asked, an absent key as such (version null): no matching of rows to keys here.
    getMany: named(
      "getMany",
      packed(`SELECT k.n, r.key, r.version, r.value FROM unnest($2::bytea[]) WITH ORDINALITY AS k(key, n) LEFT JOIN ${r} r ON r.partition = $1 AND r.key = k.key`, "TRUE", false),
    ),
    pieces: named(
      "pieces",
      `SELECT encode(substring(value FROM g * ${PIECE} + 1 FOR ${PIECE}), 'base64') AS piece ` +
        `FROM ${r}, generate_series(0, (length(value) - 1) / ${PIECE}) AS g ` +
        `WHERE partition = $1 AND key = $2 ORDER BY g`,
    ),
    scanAsc: named("scanAsc", scanPage("ORDER BY key")),
    scanDesc: named("scanDesc", scanPage("ORDER BY key DESC")),
    commit: named("commit", `SELECT ok, info::text, have::text FROM ${s}.flowstore_commit($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`),
    drop: named("drop", `SELECT ${s}.flowstore_drop($1, $2)`),
    listFirst: named("listFirst", `SELECT id FROM ${s}.flowstore_partition_index WHERE kind = $1 ORDER BY id LIMIT $2`),
    listAfter: named("listAfter", `SELECT id FROM ${s}.flowstore_partition_index WHERE kind = $1 AND id > $2 ORDER BY id LIMIT $3`),
  };
}

/**
 * Values up to this size come with their row; a larger one (archive chunks are 1 MiB) comes as rows of
 * pieces of this size. The driver hands every column over as a string (a bytea as hex, twice its size):
 * a string above V8's large-object size (128 KiB) lives until a full garbage collection, so a 200 MiB
 * archive file read in 1 MiB values would pile up hundreds of MiB of them. A piece is sent as base64,
 * about 88 KiB of string, which the young generation collects at once.
 */
const PIECE = 64 * 1024;

/**
 * Reads of many rows (getMany, scan) come packed: each row as its key (length-prefixed; a scan's
 * only), its version (int8) and its value (length-prefixed; -1 and the size when left out or larger
 * than a piece, -2 alone for a key that is absent), joined server-side into blobs of about this many
 * bytes. The driver's cost is per row and per column (a string, a parse, an object each), about
 * the cost of the row's bytes again for short records: a list of 1,000 records is a dozen rows. The
 * blobs stay below V8's large-object size as pieces do.
 */
const PACK = 48 * 1024;

export type Row = { key: Buffer; version: string | number; value: Buffer | null; size: number };

/** The rows of packed blobs (see PACK), in order; `keys` are the keys asked for when the rows carry none (getMany), absent ones undefined. */
export function unpack(blobs: readonly { packed: Buffer }[], keys?: readonly Buffer[]): (Row | undefined)[] {
  const rows: (Row | undefined)[] = [];
  for (const { packed: b } of blobs) {
    let at = 0;
    while (at < b.length) {
      let key: Buffer;
      if (keys) key = keys[rows.length]!;
      else {
        const n = b.readInt32BE(at);
        key = Buffer.from(b.subarray(at + 4, at + 4 + n));
        at += 4 + n;
      }
      if (b.readInt32BE(at) === -2) {
        rows.push(undefined);
        at += 4;
        continue;
      }
      const version = b.readUInt32BE(at) * 2 ** 32 + b.readUInt32BE(at + 4);
      const n = b.readInt32BE(at + 8);
      at += 12;
      if (n === -1) {
        rows.push({ key, version, value: null, size: b.readInt32BE(at) });
        at += 4;
      } else {
        rows.push({ key, version, value: Buffer.from(b.subarray(at, at + n)), size: n });
        at += n;
      }
    }
  }
  if (keys && rows.length !== keys.length) throw new UnavailableError(`postgres getMany: ${rows.length} rows for ${keys.length} keys`);
  return rows;
}

export const SNAPSHOT = { name: "", text: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" };
export const END = { name: "", text: "COMMIT" };

/** The statements of one schema. */
export type Statements = ReturnType<typeof statements>;
