/**
 * The PostgreSQL backend: the storage contract on one PostgreSQL database (12 or newer), through the `pg`
 * driver and a pool of connections. See docs/postgres.md for the operator's side (URL, durability).
 *
 * Tables, in the store's schema (`?schema=`, default `public`), every name starting with `flowstore_`:
 *   flowstore_records          (partition bytea, key bytea, version int8, value bytea), primary key
 *                              (partition, key): partition = encodeNested(P), key = encode(K). bytea
 *                              compares byte-wise, which is the order of the tuple encoding, so a scan is
 *                              one range scan of the primary key index.
 *   flowstore_partitions       (id bytea primary key, seq int8): a partition's commit sequence. A drop
 *                              keeps the row, so the versions of a re-created partition continue.
 *   flowstore_partition_index  (kind bytea, id bytea), primary key (kind, id): the partitions of a kind
 *                              (its UTF-8 bytes: a kind may hold NUL) that hold data, listed in id order.
 * The table layout is part of the stored format.
 *
 * - get / getMany / scan are one statement each; getMany and scan answer packed rows (see PACK).
 * - commit is one call of the function flowstore_commit: one transaction that locks the partition's
 *   sequence row (so concurrent commits of one partition run one after the other and versions grow),
 *   evaluates the checks, and only when all hold increments the sequence and applies the writes in order.
 *   This is the place of the Redis backend's Lua script: one round trip, all or nothing.
 * - dropPartition is one call of flowstore_drop, which takes the same row lock.
 * - Every call is bounded by `timeoutMs` (statement_timeout, and the pool's connect timeout); connection
 *   failures, timeouts and server errors become UnavailableError (HTTP 503), as in the Redis backend.
 *   The pool reconnects by itself: the store serves again once PostgreSQL is back.
 */
import pg from "pg";
import { ConflictError, FlowstoreError, UnavailableError, ValidationError } from "../../errors.js";
import type { CommitResult, Key, KvStore, Op, Partition, PartitionPage, ScanOptions, ScanPage } from "../contract.js";
import { cursorBytes, cursorOf, DEFAULT_SCAN_LIMIT, encodeKey, encodePartition, Entry, kindOf } from "../contract.js";
import { prepareBatch } from "../batch.js";
import { resolveRange } from "../range.js";
import { decode, TupleError } from "../tuple.js";

export interface PostgresKvOptions {
  /** The schema holding flowstore's tables (created if needed; default "public"). */
  readonly schema?: string;
  /** Most connections the store opens (default 10). */
  readonly poolSize?: number;
  /** Upper bound of any one store call, in ms, after which it fails with UnavailableError (default 10000). */
  readonly timeoutMs?: number;
}

const INT_OPTIONS = ["poolSize", "timeoutMs"] as const;

/** Splits a `postgres://` / `postgresql://` URL into the driver's connection string and our options. */
export function parsePostgresUrl(url: string): { connectionString: string; options: PostgresKvOptions } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ValidationError(`not a postgres URL: expected postgres://user@host:port/db[?schema=…]`, "store");
  }
  if (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:") {
    throw new ValidationError(`not a postgres URL (scheme ${parsed.protocol})`, "store");
  }
  const options: Record<string, string | number> = {};
  for (const name of [...parsed.searchParams.keys()]) {
    const value = parsed.searchParams.get(name)!;
    if (name === "schema") options.schema = value;
    else if ((INT_OPTIONS as readonly string[]).includes(name)) {
      if (!/^\d+$/.test(value)) throw new ValidationError(`${name} must be a non-negative integer`, name);
      options[name] = Number(value);
    } else continue; // the driver's own parameters (sslmode, application_name, …) stay in the URL
    parsed.searchParams.delete(name);
  }
  return { connectionString: parsed.toString(), options: options as PostgresKvOptions };
}

export function resolvePostgresKvOptions(options: PostgresKvOptions): Required<PostgresKvOptions> {
  const schema = options.schema ?? "public";
  if (typeof schema !== "string" || !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema)) {
    throw new ValidationError("a postgres schema is 1-63 letters, digits or '_', not starting with a digit", "schema");
  }
  const poolSize = options.poolSize ?? 10;
  const timeoutMs = options.timeoutMs ?? 10_000;
  for (const [field, v] of [["poolSize", poolSize], ["timeoutMs", timeoutMs]] as const) {
    if (!Number.isSafeInteger(v) || v < 1) throw new ValidationError(`${field} must be a positive integer`, field);
  }
  return { schema, poolSize, timeoutMs };
}

/** The tables and functions of a schema; idempotent, run under an advisory lock by the first call. */
function schemaSql(schema: string): string {
  const s = `"${schema}"`;
  return `
BEGIN;
SELECT pg_advisory_xact_lock(hashtext('flowstore schema ${schema}'));
CREATE SCHEMA IF NOT EXISTS ${s};
CREATE TABLE IF NOT EXISTS ${s}.flowstore_records (
  partition bytea NOT NULL, key bytea NOT NULL, version int8 NOT NULL, value bytea NOT NULL,
  PRIMARY KEY (partition, key));
CREATE TABLE IF NOT EXISTS ${s}.flowstore_partitions (id bytea PRIMARY KEY, seq int8 NOT NULL);
CREATE TABLE IF NOT EXISTS ${s}.flowstore_partition_index (kind bytea NOT NULL, id bytea NOT NULL, PRIMARY KEY (kind, id));
-- ops: one letter per write, p(ut) d(elete) r(ange delete [keys[i], its end)). The writes' second
-- operands (a put's value, a range's end; empty for a delete) travel as one binary blob cut by _lens
-- (a bytea[] parameter would go as hex text, twice the size of a value), except the largest, which is a
-- parameter of its own (_big, the operand of write _big_at): a 1 MiB archive chunk is not copied.
-- Returns (1, new sequence, null), or (0, index of the failed check, the key's version or null).
CREATE OR REPLACE FUNCTION ${s}.flowstore_commit(
  _p bytea, _kind bytea, _check_keys bytea[], _check_versions int8[], _ops text, _keys bytea[], _blob bytea,
  _lens int4[], _big bytea, _big_at int4, OUT ok int4, OUT info int8, OUT have int8)
LANGUAGE plpgsql AS $f$
DECLARE
  s int8;
  v int8;
  put boolean := false;
  off int4 := 1;
  val bytea;
BEGIN
  SELECT seq INTO s FROM ${s}.flowstore_partitions WHERE id = _p FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO ${s}.flowstore_partitions (id, seq) VALUES (_p, 0) ON CONFLICT (id) DO NOTHING;
    SELECT seq INTO s FROM ${s}.flowstore_partitions WHERE id = _p FOR UPDATE;
  END IF;
  FOR i IN 1..coalesce(array_length(_check_keys, 1), 0) LOOP
    SELECT version INTO v FROM ${s}.flowstore_records WHERE partition = _p AND key = _check_keys[i];
    IF v IS DISTINCT FROM _check_versions[i] THEN
      ok := 0; info := i; have := v;
      RETURN;
    END IF;
  END LOOP;
  s := s + 1;
  UPDATE ${s}.flowstore_partitions SET seq = s WHERE id = _p;
  FOR i IN 1..length(_ops) LOOP
    IF i = _big_at THEN
      val := _big;
    ELSE
      val := substring(_blob FROM off FOR _lens[i]);
      off := off + _lens[i];
    END IF;
    CASE substr(_ops, i, 1)
      WHEN 'p' THEN
        INSERT INTO ${s}.flowstore_records (partition, key, version, value) VALUES (_p, _keys[i], s, val)
          ON CONFLICT (partition, key) DO UPDATE SET version = excluded.version, value = excluded.value;
        put := true;
      WHEN 'd' THEN
        DELETE FROM ${s}.flowstore_records WHERE partition = _p AND key = _keys[i];
      ELSE
        DELETE FROM ${s}.flowstore_records WHERE partition = _p AND key >= _keys[i] AND key < val;
    END CASE;
  END LOOP;
  IF put THEN
    INSERT INTO ${s}.flowstore_partition_index (kind, id) VALUES (_kind, _p) ON CONFLICT DO NOTHING;
  END IF;
  ok := 1; info := s; have := NULL;
END
$f$;
CREATE OR REPLACE FUNCTION ${s}.flowstore_drop(_p bytea, _kind bytea) RETURNS void
LANGUAGE plpgsql AS $f$
BEGIN
  PERFORM 1 FROM ${s}.flowstore_partitions WHERE id = _p FOR UPDATE;
  DELETE FROM ${s}.flowstore_partition_index WHERE kind = _kind AND id = _p;
  DELETE FROM ${s}.flowstore_records WHERE partition = _p;
END
$f$;
COMMIT;`;
}

/** The statements of a schema, as named (prepared once per connection) queries. */
function statements(schema: string) {
  const s = `"${schema}"`;
  const r = `${s}.flowstore_records`;
  const named = (name: string, text: string) => ({ name: `flowstore_${schema}_${name}`, text });
  // A value larger than a piece comes as its size only, and is read piece by piece (see #readLarge).
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
    listAfter: named(
      "listAfter",
      `SELECT id FROM ${s}.flowstore_partition_index WHERE kind = $1 AND id > $2 ORDER BY id LIMIT $3`,
    ),
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

type Row = { key: Buffer; version: string | number; value: Buffer | null; size: number };

/** The rows of packed blobs (see PACK), in order; `keys` are the keys asked for when the rows carry none (getMany), absent ones undefined. */
function unpack(blobs: readonly { packed: Buffer }[], keys?: readonly Buffer[]): (Row | undefined)[] {
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

const SNAPSHOT = { name: "", text: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" };
const END = { name: "", text: "COMMIT" };

const EMPTY = Buffer.alloc(0);

export class PostgresKv implements KvStore {
  readonly backend = "postgres";
  readonly schema: string;
  readonly #pool: pg.Pool;
  readonly #sql: ReturnType<typeof statements>;
  readonly #timeoutMs: number;
  #ready: Promise<void> | undefined;
  /** Once the setup succeeded: a call then goes to the driver with no wait in between. */
  #isSetUp = false;
  #closed = false;

  constructor(connectionString: string, options: PostgresKvOptions = {}) {
    const o = resolvePostgresKvOptions(options);
    this.schema = o.schema;
    this.#timeoutMs = o.timeoutMs;
    this.#sql = statements(o.schema);
    this.#pool = new pg.Pool({
      connectionString,
      max: o.poolSize,
      connectionTimeoutMillis: o.timeoutMs,
      statement_timeout: o.timeoutMs,
      // The driver's own bound, for a server that stopped answering altogether (statement_timeout is the
      // server's): a query past it fails and its connection is discarded by the pool.
      query_timeout: o.timeoutMs + 1000,
      keepAlive: true,
      idleTimeoutMillis: 30_000,
      application_name: "flowstore",
    });
    // An idle pooled connection that breaks (server restart) is an event, not an exception: without a
    // listener it would crash the process. The pool drops it; the next call gets a fresh connection.
    this.#pool.on("error", () => {});
  }

  /** Opens a store on `postgres://` or `postgresql://`. Connects on the first call; never throws for I/O. */
  static open(url: string, options: PostgresKvOptions = {}): PostgresKv {
    const { connectionString, options: fromUrl } = parsePostgresUrl(url);
    return new PostgresKv(connectionString, { ...fromUrl, ...options });
  }

  /**
   * Creates the schema's tables and functions when they are missing, once per store (again after a
   * failure). A schema set up already (by another process, or by a DBA) needs no CREATE privilege.
   */
  #setup(): Promise<void> {
    return (this.#ready ??= (async () => {
      // The commit function's exact signature names the format: a schema of an older one is brought up to date.
      const commit = `"${this.schema}".flowstore_commit(bytea, bytea, bytea[], int8[], text, bytea[], bytea, int4[], bytea, int4)`;
      const probe = `SELECT to_regprocedure('${commit}') IS NOT NULL AS ok`;
      const { rows } = await this.#pool.query<{ ok: boolean }>(probe);
      if (!rows[0]?.ok) await this.#pool.query(schemaSql(this.schema));
      this.#isSetUp = true;
    })().catch((err: unknown) => {
      this.#ready = undefined;
      throw err;
    }));
  }

  async #query<R extends object>(
    what: string,
    q: { name: string; text: string },
    values: unknown[],
    client: pg.Pool | pg.PoolClient = this.#pool,
  ): Promise<R[]> {
    if (this.#closed) throw new UnavailableError("the store is closed");
    try {
      if (!this.#isSetUp) await this.#setup();
      const result = await client.query<R>({ ...q, values });
      return result.rows;
    } catch (err) {
      throw this.#mapError(what, err);
    }
  }

  #mapError(what: string, err: unknown): Error {
    if (err instanceof FlowstoreError || err instanceof TupleError) return err;
    if (this.#closed) return new UnavailableError("the store is closed");
    const e = err as { message?: string; code?: string };
    const code = typeof e.code === "string" ? ` [${e.code}]` : "";
    const timedOut = e.code === "57014" || /timeout/i.test(e.message ?? "");
    return new UnavailableError(
      timedOut
        ? `postgres did not answer ${what} within ${this.#timeoutMs} ms${code}`
        : `postgres ${what} failed: ${e.message ?? String(err)}${code}`,
    );
  }

  async get(partition: Partition, key: Key): Promise<Entry | undefined> {
    this.#assertOpen();
    const p = encodePartition(partition);
    const kb = encodeKey(p.length, key);
    const [row] = await this.#read("get", p, async (client) =>
      (await this.#query<Omit<Row, "key">>("get", this.#sql.get, [p, kb], client)).map((r) => ({ ...r, key: kb })),
    );
    return row ? new Entry(kb, row.value!, Number(row.version)) : undefined;
  }

  async getMany(partition: Partition, keys: readonly Key[]): Promise<(Entry | undefined)[]> {
    this.#assertOpen();
    const p = encodePartition(partition);
    if (!Array.isArray(keys)) throw new ValidationError("keys must be an array of tuples", "keys");
    const encoded = keys.map((k) => encodeKey(p.length, k));
    if (encoded.length === 0) return [];
    const rows = await this.#read("getMany", p, async (client) => unpack(await this.#query<{ packed: Buffer }>("getMany", this.#sql.getMany, [p, encoded], client), encoded));
    return rows.map((r) => (r ? new Entry(r.key, r.value!, Number(r.version)) : undefined));
  }

  async scan(partition: Partition, options: ScanOptions = {}): Promise<ScanPage> {
    this.#assertOpen();
    const p = encodePartition(partition);
    const { start, end, limit, reverse } = resolveRange(options, p.length);
    if (Buffer.compare(start, end) >= 0) return { entries: [], cursor: null };
    let more = false;
    const rows = await this.#read("scan", p, async (client) => {
      const page = unpack(await this.#query<{ packed: Buffer }>("scan", reverse ? this.#sql.scanDesc : this.#sql.scanAsc, [p, start, end, limit], client)) as Row[];
      more = page.length > limit;
      if (more) page.length = limit;
      return page;
    });
    const entries = rows.map((r) => new Entry(r.key, r.value!, Number(r.version)));
    return { entries, cursor: more ? cursorOf(entries[entries.length - 1]!.keyBytes) : null };
  }

  /**
   * Runs a read. When it meets values larger than a piece, it runs again in one REPEATABLE READ
   * transaction with the pieces of those values, so what it returns is one state of the partition.
   */
  async #read<R extends Row | undefined>(what: string, p: Buffer, rows: (client?: pg.PoolClient) => Promise<R[]>): Promise<R[]> {
    const first = await rows();
    if (first.every((r) => r === undefined || r.value !== null)) return first;
    let client: pg.PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (err) {
      throw this.#mapError(what, err);
    }
    let failed: unknown;
    try {
      await this.#query(what, SNAPSHOT, [], client);
      const page = await rows(client);
      for (const row of page) {
        if (row === undefined || row.value !== null) continue;
        const pieces = await this.#query<{ piece: string }>(what, this.#sql.pieces, [p, row.key], client);
        // Decoded straight into the value's buffer: no copy of a piece on the way.
        const value = Buffer.allocUnsafe(row.size);
        let at = 0;
        for (const { piece } of pieces) at += value.write(piece, at, "base64");
        if (at !== row.size) throw new UnavailableError(`postgres ${what}: a large value came back with ${at} of ${row.size} bytes`);
        row.value = value;
      }
      await this.#query(what, END, [], client);
      return page;
    } catch (err) {
      failed = err;
      throw err;
    } finally {
      // A connection that failed mid-transaction is discarded, not reused.
      client.release(failed instanceof Error ? failed : undefined);
    }
  }

  async commit(partition: Partition, ops: readonly Op[]): Promise<CommitResult> {
    this.#assertOpen();
    // Validate and encode everything before any I/O, so a bad batch fails whole with nothing sent.
    const batch = prepareBatch(partition, ops);
    let letters = "";
    const keys: Buffer[] = [];
    const operands: Buffer[] = [];
    for (const w of batch.writes) {
      letters += w.type === "put" ? "p" : w.type === "delete" ? "d" : "r";
      keys.push(w.type === "range" ? w.start : w.key);
      operands.push(w.type === "put" ? w.value : w.type === "range" ? w.end : EMPTY);
    }
    let big = -1;
    for (let i = 0; i < operands.length; i++) if (big < 0 || operands[i]!.length > operands[big]!.length) big = i;
    const [row] = await this.#query<{ ok: number; info: string; have: string | null }>("commit", this.#sql.commit, [
      batch.partition,
      kindBytes(partition),
      batch.checks.map((c) => c.key),
      batch.checks.map((c) => c.version),
      letters,
      keys,
      Buffer.concat(operands.filter((_, i) => i !== big)),
      operands.map((b, i) => (i === big ? 0 : b.length)),
      operands[big] ?? EMPTY,
      big + 1,
    ]);
    if (!row) throw new UnavailableError("postgres commit returned no row");
    if (row.ok !== 1) {
      const failed = batch.checks[Number(row.info) - 1]!;
      throw new ConflictError(
        failed.version === null
          ? `precondition failed: key ${describeKey(failed.key)} exists (at version ${row.have})`
          : `precondition failed: key ${describeKey(failed.key)} is not at version ${failed.version}` +
              (row.have === null ? " (it is absent)" : ` (it is at version ${row.have})`),
      );
    }
    return { version: Number(row.info) };
  }

  async listPartitions(kind: string, options: { limit?: number; after?: string | null } = {}): Promise<PartitionPage> {
    this.#assertOpen();
    if (typeof kind !== "string" || kind === "") throw new ValidationError("kind must be a non-empty string", "kind");
    const limit = options.limit ?? DEFAULT_SCAN_LIMIT;
    if (!Number.isSafeInteger(limit) || limit < 1) throw new ValidationError("limit must be a positive integer", "limit");
    const k = Buffer.from(kind, "utf8");
    const rows = options.after
      ? await this.#query<{ id: Buffer }>("listPartitions", this.#sql.listAfter, [k, cursorBytes(options.after), limit + 1])
      : await this.#query<{ id: Buffer }>("listPartitions", this.#sql.listFirst, [k, limit + 1]);
    const more = rows.length > limit;
    if (more) rows.length = limit;
    return {
      partitions: rows.map((r) => decode(r.id)[0] as Partition),
      cursor: more ? cursorOf(rows[rows.length - 1]!.id) : null,
    };
  }

  async dropPartition(partition: Partition): Promise<void> {
    this.#assertOpen();
    const p = encodePartition(partition);
    await this.#query("dropPartition", this.#sql.drop, [p, kindBytes(partition)]);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#pool.end().catch(() => undefined);
  }

  #assertOpen(): void {
    if (this.#closed) throw new UnavailableError("the store is closed");
  }
}

const kindBytes = (partition: Partition): Buffer => Buffer.from(kindOf(partition), "utf8");

function describeKey(key: Buffer): string {
  return JSON.stringify(decode(key), (_, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString("hex") : v));
}
