/**
 * The store-wide change feed: an index of committed log ranges, in the order they were committed, that
 * every process over the same store follows (two servers on one LMDB directory, a CLI writer beside a
 * server, servers on one Redis or PostgreSQL). It follows the outbox idea (a transactional log that
 * readers tail by position), stored in the storage contract's own terms, so every backend has it.
 *
 * Layout (partition `["feed"]`, see layout.ts): `["e", position]` → `{p: partition, from, to}`, naming the
 * events `from..to` of that partition's log; `["m", "head"]` → `{position}`, the last position given.
 * Positions are 1, 2, 3… with no gap: every append checks the head's version, so appends by several
 * processes are serialized by the backend (a lost race re-reads the head and tries again).
 *
 * The partition writer appends after each commit with events and before the command's caller hears of
 * success, so a write that answered is in the feed. Where the backend commits across partitions
 * (`commitAcross`: memory, LMDB) the entry is written in the partition's own commit (`stage`), so it
 * can never be missing. Entries are only read, never rewritten; the events
 * stay in the partitions' logs (the feed holds no payload).
 *
 * A crash between a commit and its feed entry leaves those events without an entry. They are not lost
 * for a connected follower: the next entry of the same partition starts after them (its `from` is past
 * the last seq the follower saw of that partition), and the follower reads the gap from the log and
 * delivers it first (without a position of its own). A partition that is never written again gets
 * its entry from the repair (writer.ts `repairAnchor`, run at open and periodically): its head is past
 * its ledger entry, which the repair appends to the feed (later, and out of order with other entries).
 */
import { ConflictError } from "../../errors.js";
import type { KvStore, Partition, PartitionOps, TxReader } from "../../kv/contract.js";
import { outsideActor } from "../../kv/record-chain.js";
import type { ResourceEvent } from "../model/events.js";
import { layout } from "../model/layout.js";

export interface FeedEntry {
  readonly position: number;
  readonly partition: Partition;
  readonly from: number;
  readonly to: number;
}

interface Pending {
  partition: Partition;
  from: number;
  to: number;
  done: () => void;
}

const ATTEMPTS = 100;

export class Feed {
  #pending: Pending[] = [];
  #running = false;

  constructor(private readonly kv: KvStore) {}

  /** The last position given (0 when the feed is empty). */
  async head(): Promise<number> {
    const e = await this.kv.get(layout.feed, layout.head);
    return e ? (JSON.parse(e.value.toString("utf8")) as { position: number }).position : 0;
  }

  /**
   * Records that `partition` committed the events `from..to`. Appends queued while one is in flight are
   * committed together (group commit); resolves once stored, never rejects (see the file header).
   */
  append(partition: Partition, from: number, to: number): Promise<void> {
    return new Promise((done) => {
      this.#pending.push({ partition, from, to, done });
      if (!this.#running) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#running = true;
    try {
      while (this.#pending.length > 0) {
        const group = this.#pending.splice(0, 256);
        await this.#commit(group).catch(() => undefined);
        for (const p of group) p.done();
      }
    } finally {
      this.#running = false;
    }
  }

  async #commit(group: Pending[]): Promise<void> {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const e = await this.kv.get(layout.feed, layout.head);
      const head = e ? (JSON.parse(e.value.toString("utf8")) as { position: number }).position : 0;
      const last = head + group.length;
      try {
        await this.kv.commit(layout.feed, [
          { type: "check", key: layout.head, version: e?.version ?? null },
          ...group.map((p, i) => ({ type: "put" as const, key: layout.feedEntry(head + 1 + i), value: Buffer.from(JSON.stringify({ p: p.partition, from: p.from, to: p.to })) })),
          { type: "put", key: layout.head, value: Buffer.from(JSON.stringify({ position: last })) },
        ]);
        return;
      } catch (err) {
        if (!(err instanceof ConflictError)) throw err;
      }
    }
  }

  /**
   * The ops that append `ranges` to the feed inside a commit across partitions (`KvStore.commitAcross`,
   * writer.ts): the head is read inside that write transaction, so the positions follow every append
   * committed before, by any process, with no gap; the entries and the head are those `append` writes.
   */
  stage(tx: TxReader, ranges: readonly { partition: Partition; from: number; to: number }[]): PartitionOps {
    const e = tx.get(layout.feed, layout.head);
    const head = e ? (JSON.parse(e.value.toString("utf8")) as { position: number }).position : 0;
    return {
      partition: layout.feed,
      ops: [
        { type: "check", key: layout.head, version: e?.version ?? null },
        ...ranges.map((r, i) => ({ type: "put" as const, key: layout.feedEntry(head + 1 + i), value: Buffer.from(JSON.stringify({ p: r.partition, from: r.from, to: r.to })) })),
        { type: "put", key: layout.head, value: Buffer.from(JSON.stringify({ position: head + ranges.length })) },
      ],
    };
  }

  /** The entries after `position`, oldest first (one range read). */
  async read(position: number, limit = 100): Promise<FeedEntry[]> {
    const page = await this.kv.scan(layout.feed, { start: layout.feedEntry(position + 1), end: layout.feedEnd, limit });
    return page.entries.map((e) => {
      const v = JSON.parse(e.value.toString("utf8")) as { p: Partition; from: number; to: number };
      return { position: layout.positionOfFeedEntry(e.key), partition: v.p, from: v.from, to: v.to };
    });
  }

  /** The events `from..to` of a partition's log (one range read); fewer when the partition was dropped. */
  async events(partition: Partition, from: number, to: number): Promise<ResourceEvent[]> {
    if (to < from) return [];
    const page = await this.kv.scan(partition, { start: layout.log(from), end: layout.log(to + 1), limit: to - from + 1 });
    return page.entries.map((e) => JSON.parse(e.value.toString("utf8")) as ResourceEvent);
  }
}

/**
 * Polls the feed's head for every follower in this process: one point read per tick while anyone
 * listens, and a call of each listener when the head moved.
 */
export class FeedWatcher {
  readonly #listeners = new Set<(head: number) => void>();
  #timer: NodeJS.Timeout | undefined;
  #last = -1;
  #busy = false;

  constructor(
    private readonly feed: Feed,
    private readonly intervalMs = 200,
    /** Called on every tick, moved or not (for checks that ride along, e.g. disabled users). */
    private readonly onTick?: () => Promise<void>,
  ) {}

  subscribe(listener: (head: number) => void): () => void {
    this.#listeners.add(listener);
    // (Unreferenced: a follower alone does not keep a process alive.)
    // (Started outside any actor's scope: its passes run for every subscriber, as the system.)
    this.#timer ??= outsideActor(() => setInterval(() => void this.#tick(), this.intervalMs).unref());
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0) this.stop();
    };
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#last = -1;
  }

  async #tick(): Promise<void> {
    if (this.#busy) return;
    this.#busy = true;
    try {
      const head = await this.feed.head();
      if (head !== this.#last) {
        this.#last = head;
        for (const l of this.#listeners) l(head);
      }
      await this.onTick?.();
    } catch {
      // The store did not answer this tick; the next one tries again.
    } finally {
      this.#busy = false;
    }
  }
}
