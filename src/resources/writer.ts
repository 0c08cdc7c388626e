/**
 * The write path of a partition: commands run against the partition's current state and produce puts,
 * deletes and events; the events are chained (seq, prev, hash) and committed atomically with the state.
 *
 * Group commit: commands queued for the same partition while a commit is in flight are run one after
 * another against an in-memory overlay and committed together in ONE kv commit (one fsync on LMDB, one
 * script call on Redis). A command that fails (validation, permission, conflict) is dropped from the
 * group without affecting the others.
 *
 * Every commit carries a precondition on the chain head's version, so a write by another process in
 * between fails the commit with a ConflictError; the group is then re-run against fresh state.
 */
import { ConflictError } from "../errors.js";
import { encodeKey, scanAll, type Key, type KvStore, type Op, type Partition } from "../kv/contract.js";
import { encode, encodeNested, prefixRange } from "../kv/tuple.js";
import type { Actor } from "./actor.js";
import { sealEvent, type EventPayload, type PathItem, type ResourceEvent } from "./events.js";
import { HEAD_KEY, logKey } from "./keys.js";

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
  /** Appends an event; returns it sealed (seq, prev and hash assigned). `historyKey` indexes it by resource. */
  append(type: string, path: PathItem[], payload: EventPayload, historyKey: (seq: number) => Key): ResourceEvent;
}

const latin1 = (b: Buffer): string => b.toString("latin1");

/** Writes of one command (or of a whole group), readable before they are committed. */
class Overlay {
  readonly ops: Op[] = [];
  readonly values = new Map<string, Buffer | null>();
  readonly deletedRanges: { start: string; end: string }[] = [];
  readonly events: ResourceEvent[] = [];

  read(k: string): Buffer | null | undefined {
    const v = this.values.get(k);
    if (v !== undefined) return v;
    for (const r of this.deletedRanges) if (k >= r.start && k < r.end) return null;
    return undefined;
  }

  merge(child: Overlay): void {
    this.ops.push(...child.ops);
    for (const r of child.deletedRanges) {
      for (const k of [...this.values.keys()]) if (k >= r.start && k < r.end) this.values.delete(k);
      this.deletedRanges.push(r);
    }
    for (const [k, v] of child.values) this.values.set(k, v);
    this.events.push(...child.events);
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

export class PartitionWriter {
  readonly #queues = new Map<string, Queue>();
  readonly #heads = new Map<string, Head>();
  readonly #listeners = new Set<(partition: Partition, events: readonly ResourceEvent[]) => void>();

  constructor(
    private readonly kv: KvStore,
    private readonly clock: Clock = Date.now,
    private readonly maxGroup = 128,
  ) {}

  /** Called after every successful commit with the events it appended. */
  onCommit(listener: (partition: Partition, events: readonly ResourceEvent[]) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
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
    const e = await this.kv.get(partition, HEAD_KEY);
    if (!e) return { seq: 0, hash: null, version: null };
    const h = JSON.parse(e.value.toString("utf8")) as { seq: number; hash: string };
    return { seq: h.seq, hash: h.hash, version: e.version };
  }

  /** Forgets cached chain heads (after a partition is dropped or rewritten outside the writer). */
  forget(partition: Partition): void {
    this.#heads.delete(latin1(encodeNested(partition)));
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
      const results: { p: Pending<unknown>; value: unknown }[] = [];
      const failed: { p: Pending<unknown>; error: unknown }[] = [];
      let chain = { seq: head.seq, hash: head.hash };
      for (const p of live) {
        const layer = new Overlay();
        const tx = this.#tx(partition, p.actor, overlay, layer, chain);
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
        for (const r of results) r.p.resolve(r.value);
        return;
      }
      const ops: Op[] = [{ type: "check", key: HEAD_KEY, version: startHead.version }, ...overlay.ops];
      if (overlay.events.length > 0) {
        ops.push({ type: "put", key: HEAD_KEY, value: Buffer.from(JSON.stringify({ seq: chain.seq, hash: chain.hash })) });
      }
      try {
        const { version } = await this.kv.commit(partition, ops);
        if (overlay.events.length > 0) this.#heads.set(id, { seq: chain.seq, hash: chain.hash, version });
        for (const r of results) r.p.resolve(r.value);
        if (overlay.events.length > 0) for (const l of this.#listeners) l(partition, overlay.events);
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

  #tx(partition: Partition, actor: Actor, group: Overlay, layer: Overlay, chain: { seq: number; hash: string | null }): Tx {
    const kv = this.kv;
    const now = new Date(this.clock()).toISOString();
    const partitionLength = encodeNested(partition).length;
    // Keys are checked against the backend's size limit here, inside the command, so that a key too long
    // fails this command alone rather than the whole group's commit.
    const keyOf = (key: Key): string => latin1(encodeKey(partitionLength, key));
    let seq = chain.seq;
    let prev = chain.hash;
    const read = (k: string): Buffer | null | undefined => {
      const v = layer.read(k);
      return v !== undefined ? v : group.read(k);
    };
    const scanPrefix = async (prefix: Key): Promise<{ keyBytes: Buffer; value: Buffer }[]> => {
      const out = new Map<string, Buffer>();
      for await (const e of scanAll(kv, partition, { prefix, limit: 5000 })) out.set(latin1(e.keyBytes), e.value);
      const { start, end } = prefixRange(prefix);
      const s = latin1(start);
      const en = latin1(end);
      for (const ov of [group, layer]) {
        for (const r of ov.deletedRanges) for (const k of [...out.keys()]) if (k >= r.start && k < r.end) out.delete(k);
        for (const [k, v] of ov.values) {
          if (k < s || k >= en) continue;
          if (v === null) out.delete(k);
          else out.set(k, v);
        }
      }
      return [...out.keys()].sort().map((k) => ({ keyBytes: Buffer.from(k, "latin1"), value: out.get(k)! }));
    };
    return {
      actor,
      partition,
      now,
      async get(key) {
        const k = latin1(encode(key));
        const v = read(k);
        if (v !== undefined) return v ?? undefined;
        return (await kv.get(partition, key))?.value;
      },
      scanPrefix,
      async anyUnder(prefix) {
        const { start, end } = prefixRange(prefix);
        const s = latin1(start);
        const en = latin1(end);
        const touched = [...group.values.keys(), ...layer.values.keys()].some((k) => k >= s && k < en);
        const rangeDeleted = [...group.deletedRanges, ...layer.deletedRanges].some((r) => r.start < en && r.end > s);
        if (touched || rangeDeleted) return (await scanPrefix(prefix)).length > 0;
        return (await kv.scan(partition, { prefix, limit: 1 })).entries.length > 0;
      },
      put(key, value) {
        const buf = Buffer.from(value);
        const k = keyOf(key);
        layer.ops.push({ type: "put", key, value: buf });
        layer.values.set(k, buf);
      },
      delete(key) {
        const k = keyOf(key);
        layer.ops.push({ type: "delete", key });
        layer.values.set(k, null);
      },
      deletePrefix(prefix) {
        layer.ops.push({ type: "deletePrefix", prefix });
        const { start, end } = prefixRange(prefix);
        const r = { start: latin1(start), end: latin1(end) };
        for (const k of [...layer.values.keys()]) if (k >= r.start && k < r.end) layer.values.delete(k);
        layer.deletedRanges.push(r);
      },
      append(type, path, payload, historyKey) {
        const hk = historyKey(seq + 1);
        const hkey = keyOf(hk);
        seq++;
        const event = sealEvent({ seq, at: now, actor: actor.id, type, path, payload, prev });
        prev = event.hash;
        const bytes = Buffer.from(JSON.stringify(event));
        layer.ops.push({ type: "put", key: logKey(seq), value: bytes });
        layer.values.set(latin1(encode(logKey(seq))), bytes);
        layer.ops.push({ type: "put", key: hk, value: Buffer.alloc(0) });
        layer.values.set(hkey, Buffer.alloc(0));
        layer.events.push(event);
        return event;
      },
    };
  }
}
