/**
 * The Redis backend: the storage contract on one Redis server or a Redis Cluster, through the same code
 * (an ioredis `Redis` or `Cluster` client). See layout.ts for the keys and scripts.ts for the scripts.
 *
 * - get / getMany are one HGET / HMGET; scan is one script call returning keys and values together.
 * - commit is one script call (checks, then writes, with the partition's commit sequence); when the
 *   batch puts into a partition not yet indexed, a second call adds it to its kind's index bucket (the
 *   index lives in another slot, so it cannot be in the same script). If that second call is lost, the
 *   next commit with a put adds it again.
 * - `waitReplicas: n` sends WAIT n in the same pipeline as the write it confirms, so both run on one
 *   connection: a WAIT sent later could reach another server after a failover (a fresh connection's WAIT
 *   counts every replica at once) and acknowledge a write that died with the old master. The commit is
 *   acknowledged only when n replicas have it, otherwise it fails with UnavailableError (the write may
 *   still be applied).
 * - Every call is bounded by `timeoutMs`; connection failures become UnavailableError.
 */
import type { Cluster, Redis } from "ioredis";
import { ConflictError, FlowstoreError, UnavailableError, ValidationError } from "../../errors.js";
import {
  cursorBytes,
  cursorOf,
  DEFAULT_SCAN_LIMIT,
  encodeKey,
  Entry,
  type CommitResult,
  type Key,
  type KvStore,
  type Op,
  type Partition,
  type PartitionPage,
  type ScanOptions,
  type ScanPage,
} from "../contract.js";
import { resolveRange } from "../range.js";
import { decode, TupleError } from "../tuple.js";
import { prepareBatch } from "../batch.js";
import { assertNamespace, INDEX_BUCKETS, indexKey, PartitionKeys, partitionKeys } from "./layout.js";
import { COMMIT_LUA, SCAN_LUA } from "./scripts.js";

export interface RedisKvOptions {
  /** Prefix of every key this store writes (default "flowstore"). */
  readonly namespace?: string;
  /** Acknowledge a commit only once this many replicas have it (Redis WAIT). Default 0. */
  readonly waitReplicas?: number;
  /** How long WAIT may block, in ms (default 2000). */
  readonly waitTimeoutMs?: number;
  /** Upper bound of any one store call, in ms, after which it fails with UnavailableError (default 10000). */
  readonly timeoutMs?: number;
}

type Client = Redis | Cluster;
type Reply = Buffer | number | null | Reply[];

interface ScriptedClient {
  fsCommitBuffer(...args: (string | Buffer)[]): Promise<Reply[]>;
  fsScanBuffer(...args: (string | Buffer)[]): Promise<Reply[]>;
}
/** The pipeline of a client with the scripts defined: the commit script, queued. */
interface ScriptedPipeline {
  fsCommitBuffer(...args: (string | Buffer)[]): ScriptedPipeline;
}
type Pipeline = ReturnType<Client["pipeline"]>;

const COLON = 0x3a;
const EMPTY = Buffer.alloc(0);
const OP_CHECK = Buffer.from("c");
const OP_PUT = Buffer.from("p");
const OP_DELETE = Buffer.from("d");
const OP_RANGE = Buffer.from("r");
/** Pages up to this size are read by the scan script (one round trip), larger ones in two steps. */
const SCRIPT_SCAN_MAX = 256;

function execResults(results: [Error | null, unknown][] | null): unknown[] {
  if (!results) throw new UnavailableError("redis discarded a transaction");
  return results.map(([err, value]) => {
    if (err) throw err;
    return value;
  });
}

/** Splits a stored "<version>:<value>" into an Entry. */
function entryOf(keyBytes: Buffer, stored: Buffer): Entry {
  const colon = stored.indexOf(COLON);
  return new Entry(keyBytes, stored.subarray(colon + 1), Number(stored.toString("latin1", 0, colon)));
}

const inclusive = (b: Buffer): Buffer => Buffer.concat([Buffer.from("["), b]);
const exclusive = (b: Buffer): Buffer => Buffer.concat([Buffer.from("("), b]);

export class RedisKv implements KvStore {
  readonly namespace: string;
  readonly #client: Client;
  readonly #scripts: ScriptedClient;
  readonly #waitReplicas: number;
  readonly #waitTimeoutMs: number;
  readonly #timeoutMs: number;
  #closed = false;
  #connecting: Promise<void> | undefined;
  readonly #boundedByClient: boolean;
  /** The last connection error ioredis reported (for messages); never thrown by itself. */
  lastConnectionError: Error | undefined;

  constructor(
    client: Client,
    readonly backend: "redis" | "redis-cluster" | "redis-sentinel",
    options: RedisKvOptions = {},
  ) {
    const o = resolveRedisKvOptions(options);
    this.namespace = o.namespace;
    this.#waitReplicas = o.waitReplicas;
    this.#waitTimeoutMs = o.waitTimeoutMs;
    this.#timeoutMs = o.timeoutMs;
    this.#client = client;
    // A standalone client whose commands time out (and give up while disconnected) bounds every call
    // itself; a cluster client can hold commands back while it refreshes its slot map, so it gets ours.
    const own = (client as Redis).options as { commandTimeout?: number; maxRetriesPerRequest?: number | null } | undefined;
    this.#boundedByClient =
      !("isCluster" in client && client.isCluster) &&
      typeof own?.commandTimeout === "number" &&
      own.commandTimeout <= this.#timeoutMs &&
      typeof own.maxRetriesPerRequest === "number";
    client.defineCommand("fsCommit", { numberOfKeys: 3, lua: COMMIT_LUA });
    client.defineCommand("fsScan", { numberOfKeys: 2, lua: SCAN_LUA });
    this.#scripts = client as unknown as ScriptedClient;
    // ioredis reports connection trouble as events; without a listener it would only print them. The
    // calls that hit the trouble fail with UnavailableError, so recording the last one is enough.
    const record = (err: Error): void => {
      this.lastConnectionError = err;
    };
    client.on("error", record);
    client.on("node error", record);
  }

  /**
   * Resolves when the client is connected. While it is between reconnection attempts (or gave up), a
   * call fails at once instead of queueing: a write queued now could be applied long after its caller
   * was told it failed. While it is connecting, calls wait for the outcome (bounded by the timeout).
   */
  #whenReady(what: string): Promise<void> | undefined {
    const status = this.#client.status;
    if (status === "ready") return undefined;
    if (status === "reconnecting" || status === "end" || status === "close") {
      return Promise.reject(this.#unreachable(what));
    }
    return (this.#connecting ??= new Promise<void>((resolve, reject) => {
      const done = (): void => {
        this.#client.off("ready", onReady);
        this.#client.off("reconnecting", onFail);
        this.#client.off("end", onFail);
        this.#connecting = undefined;
      };
      const onReady = (): void => {
        done();
        resolve();
      };
      const onFail = (): void => {
        done();
        reject(this.#unreachable(what));
      };
      this.#client.on("ready", onReady);
      this.#client.on("reconnecting", onFail);
      this.#client.on("end", onFail);
    }));
  }

  #unreachable(what: string): UnavailableError {
    const cause = this.lastConnectionError ? `: ${this.lastConnectionError.message}` : "";
    return new UnavailableError(`redis is unreachable (${what})${cause}`);
  }

  /** Runs one I/O step, bounded in time, with connection failures mapped to UnavailableError. */
  async #io<T>(what: string, step: () => Promise<T>): Promise<T> {
    if (this.#closed) throw new UnavailableError("the store is closed");
    if (this.#boundedByClient && this.#client.status === "ready") {
      // Fast path: the client's own command timeout bounds the call, no timer of ours needed.
      try {
        return await step();
      } catch (err) {
        throw this.#mapError(what, err);
      }
    }
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new UnavailableError(`redis did not answer ${what} within ${this.#timeoutMs} ms`)), this.#timeoutMs);
    });
    try {
      const ready = this.#whenReady(what);
      if (ready) await Promise.race([ready, deadline]);
      return await Promise.race([step(), deadline]);
    } catch (err) {
      throw this.#mapError(what, err);
    } finally {
      clearTimeout(timer);
    }
  }

  #mapError(what: string, err: unknown): Error {
    if (err instanceof FlowstoreError || err instanceof TupleError) return err;
    const message = err instanceof Error ? err.message : String(err);
    return new UnavailableError(`redis ${what} failed: ${message}`);
  }

  async get(partition: Partition, key: Key): Promise<Entry | undefined> {
    const { values, member } = partitionKeys(this.namespace, partition);
    const kb = encodeKey(member.length, key);
    const stored = await this.#io("get", () => this.#client.hgetBuffer(values, kb));
    return stored ? entryOf(kb, stored) : undefined;
  }

  async getMany(partition: Partition, keys: readonly Key[]): Promise<(Entry | undefined)[]> {
    const { values, member } = partitionKeys(this.namespace, partition);
    if (!Array.isArray(keys)) throw new ValidationError("keys must be an array of tuples", "keys");
    const encoded = keys.map((k) => encodeKey(member.length, k));
    if (encoded.length === 0) {
      if (this.#closed) throw new UnavailableError("the store is closed");
      return [];
    }
    const stored = await this.#io("getMany", () => this.#client.hmgetBuffer(values, ...encoded));
    return encoded.map((kb, i) => {
      const s = stored[i];
      return s ? entryOf(kb, s) : undefined;
    });
  }

  async scan(partition: Partition, options: ScanOptions = {}): Promise<ScanPage> {
    const pk = partitionKeys(this.namespace, partition);
    const { start, end, limit, reverse } = resolveRange(options, pk.member.length);
    if (Buffer.compare(start, end) >= 0) {
      if (this.#closed) throw new UnavailableError("the store is closed");
      return { entries: [], cursor: null };
    }
    const min = inclusive(start);
    const max = exclusive(end);
    let page: { keys: Buffer[]; values: (Buffer | null)[]; more: boolean } | undefined;
    if (limit > SCRIPT_SCAN_MAX) {
      for (let attempt = 0; attempt < 3 && !page; attempt++) page = await this.#scanInTwoSteps(pk, min, max, limit, reverse);
    }
    page ??= await this.#scanByScript(pk, min, max, limit, reverse);
    const entries: Entry[] = [];
    for (let i = 0; i < page.keys.length; i++) {
      const v = page.values[i];
      if (v) entries.push(entryOf(page.keys[i]!, v));
    }
    const more = page.more && entries.length > 0;
    return { entries, cursor: more ? cursorOf(entries[entries.length - 1]!.keyBytes) : null };
  }

  /** One round trip: the scan script reads keys and values together. */
  async #scanByScript(pk: PartitionKeys, min: Buffer, max: Buffer, limit: number, reverse: boolean) {
    const reply = await this.#io("scan", () => this.#scripts.fsScanBuffer(pk.keys, pk.values, min, max, String(limit), reverse ? "1" : "0"));
    return { more: reply[0] === 1, keys: (reply[1] ?? []) as Buffer[], values: (reply[2] ?? []) as (Buffer | null)[] };
  }

  /**
   * Large pages: copying thousands of values through Lua costs Redis several times what the plain
   * commands cost, so read the keys, then the values, each step in MULTI with the partition's commit
   * sequence. Equal sequences mean no commit ran in between: the page is one consistent state.
   * Returns undefined when a commit did run in between (the caller retries, then uses the script).
   */
  async #scanInTwoSteps(pk: PartitionKeys, min: Buffer, max: Buffer, limit: number, reverse: boolean) {
    return this.#io("scan", async () => {
      const range = this.#client.multi().hget(pk.meta, "s");
      if (reverse) range.zrevrangebylexBuffer(pk.keys, max, min, "LIMIT", 0, limit + 1);
      else range.zrangebylexBuffer(pk.keys, min, max, "LIMIT", 0, limit + 1);
      const [seq1, keys] = execResults(await range.exec()) as [string | null, Buffer[]];
      const more = keys.length > limit;
      if (more) keys.length = limit;
      if (keys.length === 0) return { more: false, keys, values: [] };
      const [values, seq2] = execResults(
        await this.#client
          .multi()
          .hmgetBuffer(pk.values, ...keys)
          .hget(pk.meta, "s")
          .exec(),
      ) as [(Buffer | null)[], string | null];
      return seq1 === seq2 ? { more, keys, values } : undefined;
    });
  }

  async commit(partition: Partition, ops: readonly Op[]): Promise<CommitResult> {
    // Validate and encode everything before any I/O, so a bad batch fails whole with nothing sent.
    const batch = prepareBatch(partition, ops);
    const pk = new PartitionKeys(this.namespace, partition, batch.partition);
    const args: Buffer[] = [];
    for (const check of batch.checks) {
      args.push(OP_CHECK, check.key, check.version === null ? EMPTY : Buffer.from(String(check.version)));
    }
    for (const w of batch.writes) {
      if (w.type === "put") args.push(OP_PUT, w.key, w.value);
      else if (w.type === "delete") args.push(OP_DELETE, w.key);
      else args.push(OP_RANGE, inclusive(w.start), exclusive(w.end));
    }
    const reply =
      this.#waitReplicas > 0
        ? ((await this.#replicated("commit", (p) => (p as unknown as ScriptedPipeline).fsCommitBuffer(pk.keys, pk.values, pk.meta, ...args))) as Reply[])
        : await this.#io("commit", () => this.#scripts.fsCommitBuffer(pk.keys, pk.values, pk.meta, ...args));
    if (reply[0] !== 1) {
      const failed = batch.checks[(reply[1] as number) - 1]!;
      const have = reply[2] instanceof Buffer && reply[2].length > 0 ? reply[2].toString() : null;
      throw new ConflictError(
        failed.version === null
          ? `precondition failed: key ${describeKey(failed.key)} exists (at version ${have})`
          : `precondition failed: key ${describeKey(failed.key)} is not at version ${failed.version}` + (have === null ? " (it is absent)" : ` (it is at version ${have})`),
      );
    }
    const version = reply[1] as number;
    if (reply[2] === 1) {
      // The index entry first, the mark second, each confirmed by the replicas before the next: a mark
      // without its entry would keep the partition out of the index for good.
      if (this.#waitReplicas > 0) {
        await this.#replicated("commit (partition index)", (p) => p.zadd(pk.index, 0, pk.member));
        await this.#replicated("commit (partition index)", (p) => p.hset(pk.meta, "i", "1"));
      } else {
        await this.#io("commit (partition index)", async () => {
          await this.#client.zadd(pk.index, 0, pk.member);
          await this.#client.hset(pk.meta, "i", "1");
        });
      }
    }
    return { version };
  }

  /**
   * Runs one keyed write and WAIT in one pipeline: one connection, the node that holds the key (a
   * pipeline cut by a closed connection fails whole, it is never re-sent in part). WAIT counts the
   * writes made on its own connection, so the write is acknowledged only once the replicas have it.
   * Returns the write's reply.
   */
  async #replicated(what: string, write: (p: Pipeline) => unknown): Promise<unknown> {
    const results = await this.#io(what, async () => {
      const p = this.#client.pipeline();
      write(p);
      return (await p.wait(this.#waitReplicas, this.#waitTimeoutMs).exec()) ?? [];
    });
    const [written, waited] = results;
    if (written?.[0] instanceof FlowstoreError) throw written[0];
    if (!written || written[0] || !waited || waited[0]) {
      const err = written?.[0] ?? waited?.[0];
      if (written && !written[0]) throw new UnavailableError(`redis ${what}: applied, but its replication could not be confirmed: ${err ? err.message : "no reply"}`);
      throw this.#mapError(what, err ?? new Error("no reply"));
    }
    const acked = waited[1] as number;
    if (acked < this.#waitReplicas) {
      throw new UnavailableError(`redis ${what}: applied, but only ${acked} of ${this.#waitReplicas} replicas acknowledged it within ${this.#waitTimeoutMs} ms`);
    }
    return written[1];
  }

  async listPartitions(kind: string, options: { limit?: number; after?: string | null } = {}): Promise<PartitionPage> {
    if (typeof kind !== "string" || kind === "") throw new ValidationError("kind must be a non-empty string", "kind");
    const limit = options.limit ?? DEFAULT_SCAN_LIMIT;
    if (!Number.isSafeInteger(limit) || limit < 1) throw new ValidationError("limit must be a positive integer", "limit");
    const min = options.after ? exclusive(cursorBytes(options.after)) : "-";
    const pages = await this.#io("listPartitions", () =>
      Promise.all(Array.from({ length: INDEX_BUCKETS }, (_, b) => this.#client.zrangebylexBuffer(indexKey(this.namespace, kind, b), min, "+", "LIMIT", 0, limit + 1))),
    );
    const members = pages.flat().sort(Buffer.compare);
    const page = members.slice(0, limit);
    return {
      partitions: page.map((m) => decode(m)[0] as Partition),
      cursor: members.length > limit ? cursorOf(page[page.length - 1]!) : null,
    };
  }

  async dropPartition(partition: Partition): Promise<void> {
    const pk = partitionKeys(this.namespace, partition);
    // Unlist first: a commit racing with the drop either lands before the UNLINK (and is dropped with
    // the partition) or after it (and lists the partition again, as its first put).
    await this.#io("dropPartition", async () => {
      await this.#client.zrem(pk.index, pk.member);
      // The commit sequence in meta stays (only the "indexed" flag goes): versions never repeat after a drop.
      await this.#client.unlink(pk.keys, pk.values);
      await this.#client.hdel(pk.meta, "i");
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await closeClient(this.#client);
  }
}

/** Closes a client politely when it is connected, and at once when it is not; never hangs. */
export async function closeClient(client: Client): Promise<void> {
  if (client.status === "ready") {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([client.quit().catch(() => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, 1000)))]);
    clearTimeout(timer);
  }
  client.disconnect();
}

/** Validates the options and fills in the defaults (throws ValidationError naming the option). */
export function resolveRedisKvOptions(options: RedisKvOptions): Required<RedisKvOptions> {
  const namespace = options.namespace ?? "flowstore";
  assertNamespace(namespace);
  const waitReplicas = options.waitReplicas ?? 0;
  if (!Number.isSafeInteger(waitReplicas) || waitReplicas < 0) {
    throw new ValidationError("waitReplicas must be a non-negative integer", "waitReplicas");
  }
  const timeoutMs = positive(options.timeoutMs ?? 10_000, "timeoutMs");
  const waitTimeoutMs = positive(options.waitTimeoutMs ?? Math.min(2000, Math.floor(timeoutMs / 2)), "waitTimeoutMs");
  if (waitTimeoutMs >= timeoutMs) {
    throw new ValidationError("waitTimeoutMs must be less than timeoutMs", "waitTimeoutMs");
  }
  return { namespace, waitReplicas, waitTimeoutMs, timeoutMs };
}

function positive(v: number, field: string): number {
  if (!Number.isSafeInteger(v) || v < 1) throw new ValidationError(`${field} must be a positive integer`, field);
  return v;
}

function describeKey(key: Buffer): string {
  return JSON.stringify(decode(key), (_, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString("hex") : v));
}
