/**
 * The write path of a partition: commands run against the partition's current state and produce puts,
 * deletes and events; the events are chained (seq, prev, hash) and committed atomically with the state.
 *
 * Group commit: commands queued for the same partition while a commit is in flight are run one after
 * another against an in-memory overlay and committed together in ONE kv commit (one fsync on LMDB, one
 * script call on Redis). A command that fails (validation, permission, conflict) is dropped from the
 * group without affecting the others.
 *
 * The ledger: after each commit that appended events, and before any of its commands is acknowledged,
 * the new head `{seq, hash}` is also put in the store-wide ledger partition (layout.ledger), so a cut
 * tail (events removed and the head rewritten inside the partition) no longer matches it. The two
 * commits are not atomic: a crash between them leaves the ledger BEHIND the partition (never ahead),
 * so `verify` accepts a ledger seq at or below the head when the logged event at that seq has the
 * ledger's hash. Guaranteed: every acknowledged event is at or below its partition's ledger entry. A
 * failed ledger write is retried by the next commit (it carries the newer head).
 *
 * Every commit carries a precondition on the chain head's version, so a write by another process in
 * between fails the commit with a ConflictError; the group is then re-run against fresh state.
 *
 * After a commit with events, its log range is appended to the store-wide feed (feed.ts) before the
 * commands resolve. A crash between the commit and these two appends leaves the partition's head past
 * its ledger entry: `repairAnchor` (run at open and periodically) appends the missing range to the feed
 * and anchors it, so no committed event stays out of the feed.
 *
 * Pipelining (LMDB, `commitStaged`): a commit resolves once visible, and the next group is computed and
 * committed while its flush is in flight; the commands of a group are acknowledged, in commit order,
 * once it is durable and anchored. A commit's precondition on the head version the previous one gave
 * keeps another process from committing in between.
 */
import { ConflictError } from "../../errors.js";
import { commitStaged, KeyedDelete, KeyedPut, scanAll, type Key, type KvStore, type Op, type Partition, type PartitionOps } from "../../kv/contract.js";
import type { RecordAnchor } from "../../kv/record-chain.js";
import { encode, encodeNested, prefixRange } from "../../kv/tuple.js";
import type { Actor } from "../../access/actor.js";
import { Feed } from "./feed.js";
import { sealEventBytes, type EventPayload, type PathItem, type ResourceEvent } from "../model/events.js";
import { layout } from "../model/layout.js";

export interface Head {
  seq: number;
  hash: string | null;
  /** kv version of the head key; null when the partition has no event yet. */
  version: number | null;
}

export interface Tx {
  readonly actor: Actor;
  readonly partition: Partition;
  /** The time of this command (ISO 8601). */
  readonly now: string;
  get(key: Key): Promise<Buffer | undefined>;
  /** Every entry under a prefix, in key order, as this transaction sees it. */
  scanPrefix(prefix: Key): Promise<{ keyBytes: Buffer; value: Buffer }[]>;
  /** True when at least one key under the prefix exists, as this transaction sees it. */
  anyUnder(prefix: Key): Promise<boolean>;
  put(key: Key, value: Uint8Array): void;
  delete(key: Key): void;
  deletePrefix(prefix: Key): void;
  /**
   * An op on ANOTHER partition (a derived index, e.g. the visible roots of an identity, visibility.ts):
   * committed after this partition's commit and before any command of the group is acknowledged, as the
   * ledger is; a conflict retry of the group recomputes it.
   */
  alsoCommit(partition: Partition, op: Op): void;
  /**
   * An op on ANOTHER partition that only widens a derived index whose reads check each entry against
   * the record (the assignments, assignments.ts): committed BEFORE this partition's commit, so a crash
   * between the two leaves the index wider than the truth, never narrower. A conflict retry of the group
   * recomputes it; an entry of a command that then fails stays, as a wider one.
   */
  widenFirst(partition: Partition, op: Op): void;
  /** Appends an event; returns it sealed (seq, prev and hash assigned). `historyKey` indexes it by resource. */
  append(type: string, path: PathItem[], payload: EventPayload, historyKey: (seq: number) => Key): ResourceEvent;
}

const latin1 = (b: Buffer): string => b.toString("latin1");

/** Writes of one command (or of a whole group), readable before they are committed. */
class Overlay {
  readonly ops: Op[] = [];
  /** The encoded key (latin1) of each op of `ops` that writes one key (put, delete); undefined for the others. */
  readonly opKeys: (string | undefined)[] = [];
  readonly values = new Map<string, Buffer | null>();
  readonly deletedRanges: { start: string; end: string }[] = [];
  readonly events: ResourceEvent[] = [];
  /** Ops on other partitions (derived indexes), committed after the partition's own commit, in order. */
  readonly side: { partition: Partition; op: Op }[] = [];
  /** Ops on other partitions that only widen an index, committed before the partition's own commit. */
  readonly before: { partition: Partition; op: Op }[] = [];

  read(k: string): Buffer | null | undefined {
    const v = this.values.get(k);
    if (v !== undefined) return v;
    for (const r of this.deletedRanges) if (k >= r.start && k < r.end) return null;
    return undefined;
  }

  /** True when this overlay wrote a key in [start, end) or deleted a range meeting it. */
  touches(start: string, end: string): boolean {
    for (const k of this.values.keys()) if (k >= start && k < end) return true;
    for (const r of this.deletedRanges) if (r.start < end && r.end > start) return true;
    return false;
  }

  merge(child: Overlay): void {
    this.ops.push(...child.ops);
    this.opKeys.push(...child.opKeys);
    for (const r of child.deletedRanges) {
      for (const k of [...this.values.keys()]) if (k >= r.start && k < r.end) this.values.delete(k);
      this.deletedRanges.push(r);
    }
    for (const [k, v] of child.values) this.values.set(k, v);
    this.events.push(...child.events);
    this.side.push(...child.side);
    this.before.push(...child.before);
  }

  /**
   * `ops` without the writes a later op of the group overwrites (a group of creates puts its parent's sum
   * entries once per command): the state the commit leaves is the same, since a later put or delete of a
   * key decides its value whatever came before it. A put is dropped only for a later put of its key (not
   * a delete), so whether the batch puts anything (the partition index, kv/batch.ts's hasPut) is unchanged.
   */
  finalOps(): Op[] {
    const { ops, opKeys } = this;
    const put = new Set<string>();
    const written = new Set<string>();
    const kept: Op[] = [];
    let dropped = 0;
    for (let i = ops.length - 1; i >= 0; i--) {
      const k = opKeys[i];
      const op = ops[i]!;
      if (k !== undefined) {
        if (op.type === "put" ? put.has(k) : written.has(k)) {
          dropped++;
          continue;
        }
        if (op.type === "put") put.add(k);
        written.add(k);
      }
      kept.push(op);
    }
    if (dropped === 0) return ops;
    return kept.reverse();
  }
}

interface Pending<T> {
  actor: Actor;
  command: (tx: Tx) => Promise<T>;
  resolve: (v: T) => void;
  reject: (e: unknown) => void;
}

interface Queue {
  pending: Pending<unknown>[];
  running: boolean;
}

export type Clock = () => number;

/** The head the ledger anchors for a partition of `kv`, or null. */
export async function readLedger(kv: KvStore, partition: Partition): Promise<{ seq: number; hash: string } | null> {
  const e = await kv.get(layout.ledger, layout.ledgerEntry(partition));
  return e ? (JSON.parse(e.value.toString("utf8")) as { seq: number; hash: string }) : null;
}

export class PartitionWriter {
  readonly #queues = new Map<string, Queue>();
  readonly #heads = new Map<string, Head>();
  /** Per partition, the acknowledgment of its last group committed (groups are answered in commit order). */
  readonly #acks = new Map<string, Promise<void>>();
  readonly #listeners = new Set<(partition: Partition, events: readonly ResourceEvent[]) => void>();
  readonly #groupListeners = new Set<(commands: number) => void>();
  /** The store-wide change feed every commit with events is recorded in (feed.ts). */
  readonly feed: Feed;

  constructor(
    private readonly kv: KvStore,
    private readonly clock: Clock = Date.now,
    private readonly maxGroup = 128,
  ) {
    this.feed = new Feed(kv);
  }

  /** Called after every successful commit with the events it appended. */
  onCommit(listener: (partition: Partition, events: readonly ResourceEvent[]) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Called after every successful commit with the number of commands it carried (the group's size). */
  onGroupCommit(listener: (commands: number) => void): () => void {
    this.#groupListeners.add(listener);
    return () => this.#groupListeners.delete(listener);
  }

  run<T>(partition: Partition, actor: Actor, command: (tx: Tx) => Promise<T>): Promise<T> {
    const id = latin1(encodeNested(partition));
    let q = this.#queues.get(id);
    if (!q) this.#queues.set(id, (q = { pending: [], running: false }));
    return new Promise<T>((resolve, reject) => {
      q.pending.push({ actor, command, resolve, reject } as Pending<unknown>);
      if (!q.running) void this.#drain(id, partition, q);
    });
  }

  async readHead(partition: Partition): Promise<Head> {
    const e = await this.kv.get(partition, layout.head);
    if (!e) return { seq: 0, hash: null, version: null };
    const h = JSON.parse(e.value.toString("utf8")) as { seq: number; hash: string };
    return { seq: h.seq, hash: h.hash, version: e.version };
  }

  /** The head the ledger anchors for a partition, or null. */
  readLedger(partition: Partition): Promise<{ seq: number; hash: string } | null> {
    return readLedger(this.kv, partition);
  }

  /**
   * The anchor of the record chains (kv/record-chain.ts: users, groups, global grants), handed to them by
   * the composition root: a chain's head goes in the ledger and its new events in the feed, as a
   * partition's here, so the transparency log takes them in. The feed range starts just past the head
   * the ledger held (all of a chain the ledger never held), so a range a crash left out is covered by the
   * next. Record chains change rarely: the extra ledger and feed entries cost nothing on the resources' path.
   */
  readonly records: RecordAnchor = {
    staged: (tx, partition, head) => {
      const held = tx.get(layout.ledger, layout.ledgerEntry(partition));
      const from = (held ? (JSON.parse(held.value.toString("utf8")) as { seq: number }).seq : 0) + 1;
      return [this.#ledgerOps(partition, head.seq, head.hash), this.feed.stage(tx, [{ partition, from, to: head.seq }])];
    },
    after: async (partition, head) => {
      const from = ((await this.readLedger(partition).catch(() => null))?.seq ?? 0) + 1;
      await this.feed.append(partition, from, head.seq);
      await this.#anchor(partition, head.seq, head.hash);
    },
    anchored: (partition) => this.readLedger(partition),
  };

  /** The ledger's op putting a partition's head. */
  #ledgerOps(partition: Partition, seq: number, hash: string | null): PartitionOps {
    return { partition: layout.ledger, ops: [{ type: "put", key: layout.ledgerEntry(partition), value: Buffer.from(JSON.stringify({ seq, hash })) }] };
  }

  /** Removes a partition's ledger entry (the partition was dropped: a purge, a swept flat child). */
  async unanchor(partition: Partition): Promise<void> {
    await this.kv.commit(layout.ledger, [{ type: "delete", key: layout.ledgerEntry(partition) }]);
  }

  async #anchor(partition: Partition, seq: number, hash: string | null): Promise<void> {
    await this.anchor(partition, seq, hash).catch(() => undefined);
  }

  /** Puts a partition's head in the ledger (after a commit; after a restore, which brings its own log). */
  async anchor(partition: Partition, seq: number, hash: string | null): Promise<void> {
    const { partition: ledger, ops } = this.#ledgerOps(partition, seq, hash);
    await this.kv.commit(ledger, ops);
  }

  /**
   * Closes the gap a crash between a commit and its anchors leaves (see the file header): when the
   * partition's head is past its ledger entry and its last event is at least `settleMs` old (a live
   * writer anchors within milliseconds of its commit), the missing log range is appended to the feed
   * and the head anchored. Returns whether it repaired. Run over every partition at open and
   * periodically (the composition root does), so a commit acknowledged or not is in the feed even
   * when its partition is never written again, and every follower (the change feed, notifications) sees it.
   */
  async repairAnchor(partition: Partition, settleMs: number): Promise<boolean> {
    const head = await this.readHead(partition);
    if (head.seq === 0) return false;
    const anchored = (await this.readLedger(partition))?.seq ?? 0;
    if (anchored >= head.seq) return false;
    const last = await this.kv.get(partition, layout.log(head.seq));
    if (!last) return false;
    const at = Date.parse((JSON.parse(last.value.toString("utf8")) as ResourceEvent).at);
    if (this.clock() - at < settleMs) return false;
    await this.feed.append(partition, anchored + 1, head.seq);
    await this.anchor(partition, head.seq, head.hash);
    return true;
  }

  /**
   * Commits the side ops of a group: one commit per partition, in the order the commands gave them. A
   * failure is not the command's (its own commit is durable): the index it leaves behind is what `verify`
   * reports and `visibility.ts` rebuilds.
   */
  async #commitSide(side: readonly { partition: Partition; op: Op }[], failures: "ignore" | "throw" = "ignore"): Promise<void> {
    if (side.length === 0) return;
    const byPartition = new Map<string, { partition: Partition; ops: Op[] }>();
    for (const { partition, op } of side) {
      const id = latin1(encodeNested(partition));
      let g = byPartition.get(id);
      if (!g) byPartition.set(id, (g = { partition, ops: [] }));
      g.ops.push(op);
    }
    await Promise.all(
      [...byPartition.values()].map((g) => (failures === "throw" ? this.kv.commit(g.partition, g.ops) : this.kv.commit(g.partition, g.ops).catch(() => undefined))),
    );
  }

  /** Forgets cached chain heads (after a partition is dropped or rewritten outside the writer). */
  forget(partition: Partition): void {
    this.#heads.delete(latin1(encodeNested(partition)));
  }

  /** Forgets every cached chain head (after the whole store was replaced: a restore). */
  forgetAll(): void {
    this.#heads.clear();
  }

  async #drain(id: string, partition: Partition, q: Queue): Promise<void> {
    q.running = true;
    try {
      while (q.pending.length > 0) {
        const group = q.pending.splice(0, this.maxGroup);
        await this.#runGroup(id, partition, group);
      }
    } finally {
      q.running = false;
      if (q.pending.length === 0) this.#queues.delete(id);
      else void this.#drain(id, partition, q);
    }
  }

  async #runGroup(id: string, partition: Partition, group: Pending<unknown>[]): Promise<void> {
    let live = group;
    for (let attempt = 0; ; attempt++) {
      let head = this.#heads.get(id);
      if (!head) {
        try {
          head = await this.readHead(partition);
        } catch (e) {
          for (const p of live) p.reject(e);
          return;
        }
      }
      const startHead = head;
      const overlay = new Overlay();
      // What the group's commands read from the store (the state every command of the group starts from,
      // under the overlay): read once per group, e.g. the parent each create of a group checks.
      const reads = new Map<string, Buffer | null>();
      const results: { p: Pending<unknown>; value: unknown }[] = [];
      const failed: { p: Pending<unknown>; error: unknown }[] = [];
      let chain = { seq: head.seq, hash: head.hash };
      for (const p of live) {
        const layer = new Overlay();
        // id is the partition's encoding in latin1, a character a byte: its length is the encoding's.
        const tx = this.#tx(partition, id.length, p.actor, overlay, layer, chain, reads);
        try {
          const value = await p.command(tx);
          overlay.merge(layer);
          chain = { seq: chain.seq + layer.events.length, hash: layer.events.at(-1)?.hash ?? chain.hash };
          results.push({ p, value });
        } catch (error) {
          failed.push({ p, error });
        }
      }
      for (const f of failed) f.p.reject(f.error);
      if (results.length === 0) return;
      if (overlay.ops.length === 0) {
        // Nothing to write, but what the commands read may be an earlier group's, not yet durable.
        this.#acknowledgeInOrder(
          id,
          async () => undefined,
          () => {
            for (const r of results) r.p.resolve(r.value);
          },
          () => undefined,
        );
        return;
      }
      const ops: Op[] = [{ type: "check", key: layout.head, version: startHead.version }, ...overlay.finalOps()];
      if (overlay.events.length > 0) {
        ops.push({ type: "put", key: layout.head, value: Buffer.from(JSON.stringify({ seq: chain.seq, hash: chain.hash })) });
      }
      if (this.kv.commitAcross) {
        if (await this.#commitAtomic(id, partition, startHead, chain, overlay, ops, results)) return;
        this.#heads.delete(id);
        if (attempt < 50) {
          live = results.map((r) => r.p);
          continue;
        }
        const conflict = new ConflictError("the partition kept changing under the group: try again");
        for (const r of results) r.p.reject(conflict);
        return;
      }
      try {
        // The widening side ops first (see Tx.widenFirst): a failure fails the group, as its own commit's would.
        await this.#commitSide(overlay.before, "throw");
        // Resolved once visible: the next group is computed while this one's flush is in flight; its
        // commit is guarded by this one's head version, so no other process's commit can come between.
        const { version, durable } = await commitStaged(this.kv, partition, ops);
        if (overlay.events.length > 0) this.#heads.set(id, { seq: chain.seq, hash: chain.hash, version });
        const events = overlay.events;
        const side = overlay.side;
        // Acknowledged in commit order, once durable and (with events) anchored in the ledger and in the
        // feed (a write that answered is in every follower's feed). The anchors are later commits: on a
        // backend that flushes in commit order they can never be on disk without this one, so the ledger
        // is never ahead of the partition.
        // The anchors wait for the previous group's, so the ledger never moves back and the feed keeps the
        // partition's ranges in order on any backend.
        const settle = async (): Promise<void> => {
          const anchors = events.length > 0 ? [this.#anchor(partition, chain.seq, chain.hash), this.feed.append(partition, startHead.seq + 1, chain.seq)] : [];
          if (side.length > 0) anchors.push(this.#commitSide(side));
          await Promise.all([durable, ...anchors]);
        };
        durable.catch(() => undefined); // awaited in settle, after the previous group
        this.#acknowledgeGroup(id, settle, partition, events, results);
        return;
      } catch (e) {
        this.#heads.delete(id);
        if (e instanceof ConflictError && attempt < 50) {
          live = results.map((r) => r.p);
          continue;
        }
        for (const r of results) r.p.reject(e);
        return;
      }
    }
  }

  /**
   * The group's ONE commit where the backend commits across partitions (`KvStore.commitAcross`: memory,
   * LMDB): the partition's ops, its ledger entry, its feed entry (positions read inside the transaction),
   * the widening index ops and the derived index ops, all in one atomic and durable commit, so no crash
   * can leave the ledger behind, the feed without the range or an index without its entry. Returns false
   * on a conflict (the caller re-runs the group against fresh state); any other failure rejects the group.
   */
  async #commitAtomic(
    id: string,
    partition: Partition,
    startHead: Head,
    chain: { seq: number; hash: string | null },
    overlay: Overlay,
    ops: Op[],
    results: { p: Pending<unknown>; value: unknown }[],
  ): Promise<boolean> {
    const events = overlay.events;
    let committed: { versions: readonly number[]; durable: Promise<void> };
    try {
      committed = await this.kv.commitAcross!((tx) => {
        const byPartition = new Map<string, { partition: Partition; ops: Op[] }>();
        const add = (p: Partition, op: Op) => {
          const key = latin1(encodeNested(p));
          let g = byPartition.get(key);
          if (!g) byPartition.set(key, (g = { partition: p, ops: [] }));
          g.ops.push(op);
        };
        for (const { partition: p, op } of overlay.before) add(p, op);
        for (const { partition: p, op } of overlay.side) add(p, op);
        const batches: PartitionOps[] = [{ partition, ops }, ...byPartition.values()];
        if (events.length > 0) {
          batches.push(this.#ledgerOps(partition, chain.seq, chain.hash));
          batches.push(this.feed.stage(tx, [{ partition, from: startHead.seq + 1, to: chain.seq }]));
        }
        return batches;
      });
    } catch (e) {
      if (e instanceof ConflictError) return false;
      this.#heads.delete(id);
      for (const r of results) r.p.reject(e);
      return true;
    }
    if (events.length > 0) this.#heads.set(id, { seq: chain.seq, hash: chain.hash, version: committed.versions[0]! });
    const { durable } = committed;
    durable.catch(() => undefined); // awaited in order, after the previous group
    this.#acknowledgeGroup(id, () => durable, partition, events, results);
    return true;
  }

  /**
   * A written group's acknowledgement, in order (`#acknowledgeInOrder`): once `settle` holds, its commands
   * resolve and the group and commit listeners hear of it; otherwise they reject and the cached head goes
   * (the next group reads it again). The same on the one-commit path and the per-partition one.
   */
  #acknowledgeGroup(
    id: string,
    settle: () => Promise<void>,
    partition: Partition,
    events: readonly ResourceEvent[],
    results: readonly { p: Pending<unknown>; value: unknown }[],
  ): void {
    this.#acknowledgeInOrder(
      id,
      settle,
      () => {
        for (const r of results) r.p.resolve(r.value);
        for (const l of this.#groupListeners) l(results.length);
        if (events.length > 0) for (const l of this.#listeners) l(partition, events);
      },
      (e) => {
        this.#heads.delete(id);
        for (const r of results) r.p.reject(e);
      },
    );
  }

  /** Once every earlier group of the partition was acknowledged: runs `settle`, then `ok` (or `failed` with its error). */
  #acknowledgeInOrder(id: string, settle: () => Promise<void>, ok: () => void, failed: (e: unknown) => void): void {
    const previous = this.#acks.get(id);
    const mine: Promise<void> = (async () => {
      await previous;
      let error: unknown = null;
      try {
        await settle();
      } catch (e) {
        error = e;
      }
      try {
        if (error === null) ok();
        else failed(error);
      } catch {
        // a listener's failure is not the commit's
      }
    })();
    this.#acks.set(id, mine);
    void mine.finally(() => {
      if (this.#acks.get(id) === mine) this.#acks.delete(id);
    });
  }

  #tx(
    partition: Partition,
    partitionLength: number,
    actor: Actor,
    group: Overlay,
    layer: Overlay,
    chain: { seq: number; hash: string | null },
    reads: Map<string, Buffer | null>,
  ): Tx {
    return new GroupTx(this.kv, partition, partitionLength, actor, this.#isoNow(), group, layer, chain, reads);
  }

  #lastMs = Number.NaN;
  #lastIso = "";

  /** The clock's time as ISO 8601, formatted once per millisecond (the commands of a group mostly share it). */
  #isoNow(): string {
    const ms = this.clock();
    if (ms !== this.#lastMs) {
      this.#lastIso = new Date(ms).toISOString();
      this.#lastMs = ms;
    }
    return this.#lastIso;
  }
}

/**
 * A command's transaction in its group (`PartitionWriter.#tx`): reads see the command's own writes
 * (`layer`), then the group's before it (`group`), then the store (read once per group, `reads`); writes go
 * to `layer`. A class, not an object of closures: one is made per command.
 */
class GroupTx implements Tx {
  #seq: number;
  #prev: string | null;

  constructor(
    private readonly kv: KvStore,
    readonly partition: Partition,
    /** The length of the partition's encoding (the key size limit counts it). */
    private readonly partitionLength: number,
    readonly actor: Actor,
    readonly now: string,
    private readonly group: Overlay,
    private readonly layer: Overlay,
    chain: { seq: number; hash: string | null },
    private readonly reads: Map<string, Buffer | null>,
  ) {
    this.#seq = chain.seq;
    this.#prev = chain.hash;
  }

  #read(k: string): Buffer | null | undefined {
    const v = this.layer.read(k);
    return v !== undefined ? v : this.group.read(k);
  }

  async get(key: Key): Promise<Buffer | undefined> {
    const k = latin1(encode(key));
    const v = this.#read(k);
    if (v !== undefined) return v ?? undefined;
    const known = this.reads.get(k);
    if (known !== undefined) return known ?? undefined;
    const kv = this.kv;
    const value = (kv.getSync ? kv.getSync(this.partition, key) : await kv.get(this.partition, key))?.value;
    this.reads.set(k, value ?? null);
    return value;
  }

  async scanPrefix(prefix: Key): Promise<{ keyBytes: Buffer; value: Buffer }[]> {
    const out = new Map<string, Buffer>();
    for await (const e of scanAll(this.kv, this.partition, { prefix, limit: 5000 })) out.set(latin1(e.keyBytes), e.value);
    const { start, end } = prefixRange(prefix);
    const s = latin1(start);
    const en = latin1(end);
    for (const ov of [this.group, this.layer]) {
      for (const r of ov.deletedRanges) for (const k of [...out.keys()]) if (k >= r.start && k < r.end) out.delete(k);
      for (const [k, v] of ov.values) {
        if (k < s || k >= en) continue;
        if (v === null) out.delete(k);
        else out.set(k, v);
      }
    }
    return [...out.keys()].sort().map((k) => ({ keyBytes: Buffer.from(k, "latin1"), value: out.get(k)! }));
  }

  async anyUnder(prefix: Key): Promise<boolean> {
    const { start, end } = prefixRange(prefix);
    const s = latin1(start);
    const en = latin1(end);
    // Walked in place: a group of creates asks this once per command, over every key the group wrote.
    if (this.group.touches(s, en) || this.layer.touches(s, en)) return (await this.scanPrefix(prefix)).length > 0;
    const kv = this.kv;
    if (kv.scanViews) {
      // where the backend visits its entries in place (LMDB, memory): no copy of the entry found
      let found = false;
      await kv.scanViews(this.partition, { prefix, limit: 1 }, () => {
        found = true;
      });
      return found;
    }
    return (await kv.scan(this.partition, { prefix, limit: 1 })).entries.length > 0;
  }

  // Each op carries the bytes its key was encoded to here, so the commit does not encode it again (kv/contract.ts
  // KeyedPut). Keys are held to the backend's size limit here, inside the command, so that a key too long
  // fails this command alone rather than the whole group's commit.
  put(key: Key, value: Uint8Array): void {
    const buf = Buffer.from(value);
    const op = new KeyedPut(this.partitionLength, key, buf);
    const k = latin1(op.keyBytes);
    this.layer.ops.push(op);
    this.layer.opKeys.push(k);
    this.layer.values.set(k, buf);
  }

  delete(key: Key): void {
    const op = new KeyedDelete(this.partitionLength, key);
    const k = latin1(op.keyBytes);
    this.layer.ops.push(op);
    this.layer.opKeys.push(k);
    this.layer.values.set(k, null);
  }

  alsoCommit(other: Partition, op: Op): void {
    this.layer.side.push({ partition: other, op });
  }

  widenFirst(other: Partition, op: Op): void {
    this.layer.before.push({ partition: other, op });
  }

  deletePrefix(prefix: Key): void {
    const layer = this.layer;
    layer.ops.push({ type: "deletePrefix", prefix });
    layer.opKeys.push(undefined);
    const { start, end } = prefixRange(prefix);
    const r = { start: latin1(start), end: latin1(end) };
    for (const k of [...layer.values.keys()]) if (k >= r.start && k < r.end) layer.values.delete(k);
    layer.deletedRanges.push(r);
  }

  append(type: string, path: PathItem[], payload: EventPayload, historyKey: (seq: number) => Key): ResourceEvent {
    const layer = this.layer;
    const seq = this.#seq + 1;
    // The reason the actor gave for this write goes with each of its events.
    const recorded = this.actor.reason === undefined ? payload : { ...payload, reason: this.actor.reason };
    const { event, bytes } = sealEventBytes({ seq, at: this.now, actor: this.actor.id, type, path, payload: recorded, prev: this.#prev });
    // The history key is held to the size limit (a throw) before the chain moves on.
    const history = new KeyedPut(this.partitionLength, historyKey(seq), bytes);
    const log = new KeyedPut(this.partitionLength, layout.log(seq), bytes);
    this.#seq = seq;
    this.#prev = event.hash;
    const lkey = latin1(log.keyBytes);
    layer.ops.push(log);
    layer.opKeys.push(lkey);
    layer.values.set(lkey, bytes);
    // The history index entry carries the event's bytes too, so a history page is one range read (audit.ts).
    const hkey = latin1(history.keyBytes);
    layer.ops.push(history);
    layer.opKeys.push(hkey);
    layer.values.set(hkey, bytes);
    layer.events.push(event);
    return event;
  }
}
