/**
 * The store-level restore fence: one record kept in the store (partition ["fence"], a kind kept on
 * restore) that every process over the store honours, whichever server shut it. A restore shuts it
 * before it reads the upload and opens it when the store is whole again.
 *
 * The record: `{ shut, epoch, tokenEpoch }`. `shut` is null while the store is open, else who shut it,
 * when, why and in which phase: `checking` (the upload is read and checked; nothing changed yet; held by
 * a lease the restorer renews, so a restorer that dies there lets the store open again by itself) or
 * `replacing` (the old content is archived and dropped and the backup imported; no lease: a store left
 * there is shut until `flowstore import --resume` finishes the restore). `epoch` counts the restores
 * (epochs.ts), `tokenEpoch` is the epoch of every session and access token: a restore bumps it, so
 * every token that existed before it stops working (identity/tokens.ts checks it).
 *
 * Rules:
 * - every write of the store's parts goes through `fenced(kv)`: a commit (or drop) to a partition of a
 *   kind that is not kept on restore reads the fence first (cached for at most FENCE_CACHE_MS) and is
 *   refused (UnavailableError, 503) while it is shut; after the commit the fence is read again, and a
 *   write that finds it shut then is not acknowledged (503: a restore began while it committed, it may
 *   be replaced). So every write acknowledged committed before the fence shut, and is in the content
 *   the restore archives as the replaced epoch: nothing acknowledged is erased;
 * - the restorer waits FENCE_GRACE_MS after shutting before it changes anything, longer than any
 *   write's window between its fence read and its commit;
 * - the restorer itself writes through the unfenced store; so do the kinds kept on restore.
 */
import { ConflictError, UnavailableError } from "../errors.js";
import type { KvStore, Partition } from "../kv/contract.js";
import { kindOf } from "../kv/contract.js";
import { keyFamilies, PartitionKind } from "../kv/subspace.js";

/** The kinds of the restore's own records, all kept on restore (kinds.ts). */
const FENCE = new PartitionKind("fence");
export const FENCE_KIND = FENCE.kind;
/** How long a process trusts the fence it read last before a write reads it again. */
export const FENCE_CACHE_MS = 100;
/** How long a restore waits after shutting the fence before it changes anything. */
export const FENCE_GRACE_MS = 1000;
/** How long a `checking` fence holds without its restorer renewing it. */
export const FENCE_LEASE_MS = 30_000;

const PARTITION: Partition = FENCE.partition();
const STATE_KEY = keyFamilies(["state"]).state.pack();

export type FencePhase = "checking" | "replacing";

export interface FenceShut {
  readonly phase: FencePhase;
  readonly reason: string;
  readonly by: string;
  readonly at: string;
  /** Epoch ms; while `checking`, past it the fence counts as open (its restorer died). */
  readonly leaseUntil?: number;
}

export interface FenceState {
  readonly shut: FenceShut | null;
  /** Restores done so far (each one an epoch, epochs.ts). */
  readonly epoch: number;
  /** The epoch of sessions and access tokens: bumped by each restore. */
  readonly tokenEpoch: number;
}

const OPEN: FenceState = { shut: null, epoch: 0, tokenEpoch: 0 };

/** Why a fence state refuses requests, or null when it lets them through (a `checking` fence past its lease is open). */
export function shutReason(state: FenceState, now: number): string | null {
  const s = state.shut;
  if (s === null) return null;
  if (s.phase === "checking" && s.leaseUntil !== undefined && s.leaseUntil < now) return null;
  return s.phase === "replacing" ? `a restore is replacing the store (${s.reason})` : `a restore is checking a backup (${s.reason})`;
}

export class StoreFence {
  #cached: FenceState = OPEN;
  #version: number | null = null;
  #readAt = Number.NEGATIVE_INFINITY;
  /** The kinds whose writes the fence lets through (kept on restore). */
  readonly #exempt: ReadonlySet<string>;

  constructor(
    /** The unfenced store. */
    readonly kv: KvStore,
    exemptKinds: readonly string[],
    private readonly clock: () => number = Date.now,
  ) {
    this.#exempt = new Set(exemptKinds);
  }

  /** Reads the fence from the store (and caches it). */
  async read(): Promise<FenceState> {
    const startedAt = performance.now();
    const e = await this.kv.get(PARTITION, STATE_KEY);
    const version = e?.version ?? null;
    // Reads may overlap: one that answers an older version than the copy kept (a write's own read came
    // back first) does not replace it. A key's version only grows.
    if (this.#version !== null && (version === null || version < this.#version)) return this.#cached;
    this.#cached = e ? { ...OPEN, ...(JSON.parse(e.value.toString("utf8")) as FenceState) } : OPEN;
    this.#version = version;
    this.#readAt = Math.max(this.#readAt, startedAt);
    return this.#cached;
  }

  /** The fence as read at most `maxAgeMs` ago. */
  async current(maxAgeMs = FENCE_CACHE_MS): Promise<FenceState> {
    return performance.now() - this.#readAt <= maxAgeMs ? this.#cached : this.read();
  }

  /** The fence as last read (no I/O), and whether that read is younger than `maxAgeMs`. */
  cached(maxAgeMs = FENCE_CACHE_MS): { state: FenceState; fresh: boolean } {
    return { state: this.#cached, fresh: performance.now() - this.#readAt <= maxAgeMs };
  }

  /** Why requests are refused now (null: open), from a fence read at most `maxAgeMs` ago. */
  async reason(maxAgeMs = FENCE_CACHE_MS): Promise<string | null> {
    return shutReason(await this.current(maxAgeMs), this.clock());
  }

  /** Writes the fence if it is still the version read last (a ConflictError when another process changed it). */
  async #write(next: FenceState): Promise<void> {
    await this.kv.commit(PARTITION, [
      { type: "check", key: STATE_KEY, version: this.#version },
      { type: "put", key: STATE_KEY, value: Buffer.from(JSON.stringify(next)) },
    ]);
    await this.read();
  }

  /** Shuts the fence for a restore by `by` (checking phase, under a lease); 503 when it is shut already. */
  async shut(by: string, reason: string): Promise<void> {
    const state = await this.read();
    const already = shutReason(state, this.clock());
    if (already !== null) throw new UnavailableError(`${already}: one restore at a time`);
    const shut: FenceShut = { phase: "checking", reason, by, at: new Date(this.clock()).toISOString(), leaseUntil: this.clock() + FENCE_LEASE_MS };
    try {
      await this.#write({ ...state, shut });
    } catch (e) {
      if (e instanceof ConflictError) throw new UnavailableError("another restore shut the store's fence first: one restore at a time");
      throw e;
    }
  }

  /** Renews a `checking` fence's lease (the restorer is alive). */
  async renew(): Promise<void> {
    const state = await this.read();
    if (state.shut?.phase !== "checking") return;
    await this.#write({ ...state, shut: { ...state.shut, leaseUntil: this.clock() + FENCE_LEASE_MS } });
  }

  /** Moves a shut fence to `replacing`: no lease; it stays shut until the restore (or its resume) opens it. */
  async replacing(): Promise<void> {
    const state = await this.read();
    if (state.shut === null) throw new ConflictError("the fence is not shut", "store");
    const { leaseUntil: _, ...shut } = state.shut;
    await this.#write({ ...state, shut: { ...shut, phase: "replacing" } });
  }

  /**
   * Opens the fence; `restored` when a restore completed: the epoch moves on (to `epoch` when given) and
   * so does the token epoch (every session and access token issued before stops working).
   */
  async open(restored = false, epoch?: number): Promise<FenceState> {
    const state = await this.read();
    const next = restored ? { shut: null, epoch: epoch ?? state.epoch + 1, tokenEpoch: state.tokenEpoch + 1 } : { ...state, shut: null };
    if (state.shut === null && !restored) return state;
    await this.#write(next);
    return next;
  }

  /** Refuses (503) a write while the fence is shut, from a fence read at most FENCE_CACHE_MS ago. */
  async #assertOpen(fresh: boolean): Promise<void> {
    const reason = shutReason(fresh ? await this.read() : await this.current(), this.clock());
    if (reason !== null) throw new UnavailableError(`${reason}: retry later`);
  }

  /** True when a write to `partition` is fenced (its kind is not kept on restore). */
  guards(partition: Partition): boolean {
    return !this.#exempt.has(kindOf(partition));
  }

  /** Runs a write under the fence: refused while shut, and not acknowledged when the fence shut while it ran. */
  async guarded<T>(partition: Partition, write: () => Promise<T>): Promise<T> {
    if (!this.guards(partition)) return write();
    await this.#assertOpen(false);
    const result = await write();
    const reason = shutReason(await this.read(), this.clock());
    if (reason !== null) throw new UnavailableError(`${reason}: this write committed as the restore began and may be replaced by it; retry later`);
    return result;
  }

  /**
   * `guarded` for a commit across partitions (`KvStore.commitAcross`, the resource writer's one commit):
   * refused while shut, and not acknowledged when the fence shut while it ran and it wrote a fenced kind.
   */
  async guardedAcross(kv: KvStore, build: Parameters<NonNullable<KvStore["commitAcross"]>>[0]): ReturnType<NonNullable<KvStore["commitAcross"]>> {
    await this.#assertOpen(false);
    let fencedWrite = false;
    const result = await kv.commitAcross!((tx) => {
      const batches = build(tx);
      fencedWrite = batches.some((b) => this.guards(b.partition));
      return batches;
    });
    const reason = fencedWrite ? shutReason(await this.read(), this.clock()) : null;
    if (reason !== null) throw new UnavailableError(`${reason}: this write committed as the restore began and may be replaced by it; retry later`);
    return result;
  }

  /** The store with every write fenced (what the store's parts are built on); reads pass through. */
  fenced(kv: KvStore): KvStore {
    const fenced: KvStore = {
      backend: kv.backend,
      get: (partition, key) => kv.get(partition, key),
      getMany: (partition, keys) => kv.getMany(partition, keys),
      scan: (partition, options) => kv.scan(partition, options),
      listPartitions: (kind, options) => kv.listPartitions(kind, options),
      commit: (partition, ops) => this.guarded(partition, () => kv.commit(partition, ops)),
      dropPartition: (partition) => this.guarded(partition, () => kv.dropPartition(partition)),
      close: () => kv.close(),
    };
    if (kv.getSync) fenced.getSync = (partition, key) => kv.getSync!(partition, key);
    if (kv.scanViews) fenced.scanViews = (partition, options, visit) => kv.scanViews!(partition, options, visit);
    if (kv.countSync) fenced.countSync = (partition, options) => kv.countSync!(partition, options);
    if (kv.partitionVersionSync) fenced.partitionVersionSync = (partition) => kv.partitionVersionSync!(partition);
    if (kv.commitVisible) fenced.commitVisible = (partition, ops) => this.guarded(partition, () => kv.commitVisible!(partition, ops));
    if (kv.commitAcross) fenced.commitAcross = (build) => this.guardedAcross(kv, build);
    return fenced;
  }
}
