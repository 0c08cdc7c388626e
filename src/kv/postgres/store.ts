/**
 * The PostgreSQL backend: the storage contract on one PostgreSQL database (12 or newer), through the `pg`
 * driver and a pool of connections. See docs/postgres.md for the operator's side (URL, durability);
 * url.ts reads the URL and options, schema.ts creates the tables and functions, statements.ts holds the
 * queries and unpacks their rows.
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
import { commitSignature, schemaSql } from "./schema.js";
import { END, SNAPSHOT, statements, unpack, type Row, type Statements } from "./statements.js";
import { parsePostgresUrl, resolvePostgresKvOptions, type PostgresKvOptions } from "./url.js";

const EMPTY = Buffer.alloc(0);

export class PostgresKv implements KvStore {
  readonly backend = "postgres";
  readonly schema: string;
  readonly #pool: pg.Pool;
  readonly #sql: Statements;
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
      const probe = `SELECT to_regprocedure('${commitSignature(this.schema)}') IS NOT NULL AS ok`;
      const { rows } = await this.#pool.query<{ ok: boolean }>(probe);
      if (!rows[0]?.ok) await this.#pool.query(schemaSql(this.schema));
      this.#isSetUp = true;
    })().catch((err: unknown) => {
      this.#ready = undefined;
      throw err;
    }));
  }

  async #query<R extends object>(what: string, q: { name: string; text: string }, values: unknown[], client: pg.Pool | pg.PoolClient = this.#pool): Promise<R[]> {
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
    return new UnavailableError(timedOut ? `postgres did not answer ${what} within ${this.#timeoutMs} ms${code}` : `postgres ${what} failed: ${e.message ?? String(err)}${code}`);
  }

  async get(partition: Partition, key: Key): Promise<Entry | undefined> {
    this.#assertOpen();
    const p = encodePartition(partition);
    const kb = encodeKey(p.length, key);
    const [row] = await this.#read("get", p, async (client) => (await this.#query<Omit<Row, "key">>("get", this.#sql.get, [p, kb], client)).map((r) => ({ ...r, key: kb })));
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
          : `precondition failed: key ${describeKey(failed.key)} is not at version ${failed.version}` + (row.have === null ? " (it is absent)" : ` (it is at version ${row.have})`),
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
