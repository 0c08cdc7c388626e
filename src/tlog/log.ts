/**
 * The store-wide transparency log (issue 27): an append-only RFC 9162 Merkle tree whose leaves are the
 * events of every chained partition, in the change feed's order (resources/log/feed.ts), appended by a
 * follower that trails the feed (`appendPending`, driven by compose/background.ts). The record chains of
 * the users, groups and global grants (kv/record-chain.ts) are in the feed too: their leaves are their
 * events', in the same shape (a leaf's hash is the record event's chain hash).
 *
 * A leaf is the bytes `flowstore-leaf/v1\n` + canonical JSON `{"e":epoch,"h":eventHash,"p":partition,"s":seq}`:
 * it names the event by its partition and seq and binds its content through the event's chain hash
 * (which covers the event's JSON and the hash before it), so an auditor holding an export recomputes
 * every leaf. `e` is the epoch: 0 at first, one more after each restore of the whole store (the
 * restored events are appended again as new leaves of the new epoch; nothing is ever truncated).
 *
 * Layout (one partition, `["tlog"]`, so every append is one atomic commit):
 * - `["m","head"]` → `{size, cursor, mark, epoch, start?}`: leaves so far, the feed position consumed, a mark
 *   of the feed entry at that position (to notice a feed that was replaced), the epoch, and the first leaf
 *   held (`start`, only in a tree seeded from an export's epoch start: see `seed`);
 * - `["n", level, index]` → the 32-byte hash of each complete subtree (level 0: the leaf hashes);
 * - `["l", index]` → the leaf's bytes; `["i", epoch, partition, seq]` → the leaf index of an event;
 * - `["p", epoch, partition]` → the last seq of that partition in the log (so a feed entry that a
 *   repair appended late, or one that starts after a gap, yields each event exactly once);
 * - `["w", size, name]` → a witness's cosignature line of the checkpoint of that size.
 * An append of k leaves writes O(k + log n) keys and reads the O(log n) frontier nodes; a root, an
 * inclusion or a consistency proof reads O(log n) nodes (one batch read).
 *
 * Several processes may append (a fleet, a CLI beside a server): every append is guarded by the head's
 * version, so two appenders never fork the tree — the loser re-reads and goes on from the winner's
 * state, and since the leaves are a function of the feed and the stored state, both would have written
 * the same. A SIGKILL loses at most an uncommitted batch: the next pass starts from the stored head.
 */
import { createHash } from "node:crypto";
import { ConflictError, NotFoundError, ValidationError } from "../errors.js";
import { canonicalJson } from "../kv/canonical.js";
import type { KvStore, Op, Partition } from "../kv/contract.js";
import { recordEvents } from "../kv/record-chain.js";
import { PartitionKind, Subspace } from "../kv/subspace.js";
import type { Feed, FeedEntry } from "../resources/log/feed.js";
import * as merkle from "./merkle.js";
import { appendNodes, consistencyRanges, EMPTY_ROOT, frontierOf, type Hash, inclusionRanges, leafHash, type NodeId, nodeHash, nodeKey, nodesOf, rangeHash } from "./merkle.js";

/** The transparency log's partition kind, declared once (compose/kinds.ts gathers it; kept across a restore). */
export const TLOG = new PartitionKind("tlog");
export const TLOG_KINDS: readonly string[] = [TLOG.kind];

const P = TLOG.partition();
/** The key families of the log's partition (the layout above), each a subspace. */
const F = { meta: new Subspace(["m"]), node: new Subspace(["n"]), leaf: new Subspace(["l"]), index: new Subspace(["i"]), last: new Subspace(["p"]), cosig: new Subspace(["w"]) };
const K = {
  head: F.meta.pack(["head"]),
  node: (n: NodeId) => F.node.pack([n.level, n.index]),
  leaf: (i: number) => F.leaf.pack([i]),
  index: (epoch: number, partition: Partition, seq: number) => F.index.pack([epoch, [...partition], seq]),
  last: (epoch: number, partition: Partition) => F.last.pack([epoch, [...partition]]),
  lasts: (epoch: number) => F.last.pack([epoch]),
  cosig: (size: number, name: string) => F.cosig.pack([size, name]),
  cosigs: (size: number) => F.cosig.pack([size]),
  allCosigs: F.cosig.pack(),
} as const;

export const LEAF_PREFIX = "flowstore-leaf/v1\n";

export interface LeafData {
  readonly epoch: number;
  readonly partition: Partition;
  readonly seq: number;
  /** The event's chain hash (hex). */
  readonly hash: string;
}

export function leafBytes(l: LeafData): Buffer {
  return Buffer.from(LEAF_PREFIX + canonicalJson({ e: l.epoch, h: l.hash, p: l.partition, s: l.seq }), "utf8");
}

export function parseLeaf(bytes: Uint8Array): LeafData {
  const s = Buffer.from(bytes).toString("utf8");
  if (!s.startsWith(LEAF_PREFIX)) throw new ValidationError("not a flowstore leaf", "leaf");
  const v = JSON.parse(s.slice(LEAF_PREFIX.length)) as { e: number; h: string; p: Partition; s: number };
  return { epoch: v.e, partition: v.p, seq: v.s, hash: v.h };
}

interface Head {
  size: number;
  cursor: number;
  mark: string | null;
  epoch: number;
  /** The first leaf this store holds (absent: 0); the leaves before are summed up by the nodes of their complete subtrees. */
  start?: number;
}

const EMPTY_HEAD: Head = { size: 0, cursor: 0, mark: null, epoch: 0 };

/** The mark of a feed entry: what the head remembers of the entry at its cursor. */
const markOf = (e: FeedEntry): string =>
  createHash("sha256")
    .update(canonicalJson({ p: e.partition, from: e.from, to: e.to }))
    .digest("base64")
    .slice(0, 16);

export interface TreeHead {
  readonly size: number;
  readonly root: Hash;
  readonly epoch: number;
  /** The feed position the log has consumed. */
  readonly cursor: number;
  /** The first leaf this store holds: 0, but in a log seeded from an export's epoch start (`seed`). */
  readonly start: number;
}

export interface InclusionProof {
  readonly index: number;
  readonly size: number;
  readonly leaf: Buffer;
  readonly proof: Hash[];
}

/** Where an epoch of the log begins (`epochStart`), in the JSON an export's header carries. */
export interface EpochStart {
  readonly epoch: number;
  /** The index of the epoch's first leaf. */
  readonly start: number;
  /** The hashes (base64) of the complete subtrees of the tree of `start` leaves, left first. */
  readonly frontier: readonly string[];
  /** The leaf at `start` − 1 (base64) and its inclusion proof in the tree of `start` leaves; null when `start` is 0. */
  readonly last: { readonly leaf: string; readonly proof: readonly string[] } | null;
}

export interface AppendOptions {
  /** At most this many feed entries per commit (default 128). */
  readonly entries?: number;
  /** Says whether appending must wait (an unfinished import); checked before each batch. */
  readonly blocked?: () => Promise<boolean>;
}

/** The log over one store: appends from the feed, roots and proofs, cosignatures kept. */
export class TransparencyLog {
  constructor(
    private readonly kv: KvStore,
    private readonly feed: Feed,
    /**
     * True for a partition whose feed entries name events of its record chain (kv/record-chain.ts: the
     * users, groups and global grants), not of a resource log: their leaves are those events'.
     */
    private readonly recordChained: (partition: Partition) => boolean = () => false,
  ) {}

  /** The events `from..to` of a partition's log, or of its record chain: what the leaves name. */
  #events(partition: Partition, from: number, to: number): Promise<readonly { readonly seq: number; readonly hash: string; readonly at: string }[]> {
    return this.recordChained(partition) ? recordEvents(this.kv, partition, from, to) : this.feed.events(partition, from, to);
  }

  async #head(): Promise<{ head: Head; version: number | null }> {
    const e = await this.kv.get(P, K.head);
    return e ? { head: JSON.parse(e.value.toString("utf8")) as Head, version: e.version } : { head: EMPTY_HEAD, version: null };
  }

  /** The tree's current size, root, epoch and feed cursor. */
  async head(): Promise<TreeHead> {
    const { head } = await this.#head();
    return { size: head.size, root: await this.root(head.size), epoch: head.epoch, cursor: head.cursor, start: head.start ?? 0 };
  }

  /** How far the log trails the feed, in feed entries. */
  async lag(): Promise<number> {
    const [{ head }, feedHead] = await Promise.all([this.#head(), this.feed.head()]);
    return Math.max(0, feedHead - head.cursor);
  }

  /**
   * How far the log trails the feed, in seconds at `now` (epoch ms): the age (its `at`) of the oldest
   * acknowledged event the log does not hold yet, 0 when it holds them all. That event is the first
   * past the log's last seq of its partition, in the first feed entries past the log's cursor that
   * still name events the log lacks (an entry whose events a repair appended to the feed late, or that
   * the log already took in through a later entry of its partition, is passed over). Reads at most
   * `window` feed entries, their partitions' last logged seqs (one batch) and one event; answers 0
   * when none of the `window` entries names a missing event.
   */
  async lagSeconds(now: number, window = 64): Promise<number> {
    const { head } = await this.#head();
    const entries = await this.feed.read(head.cursor, window);
    if (entries.length === 0) return 0;
    const names = [...new Map(entries.map((e) => [JSON.stringify(e.partition), e.partition])).entries()];
    const stored = await this.kv.getMany(
      P,
      names.map(([, p]) => K.last(head.epoch, p)),
    );
    const last = new Map(names.map(([name], i) => [name, stored[i] ? Number(stored[i].value.toString("utf8")) : 0]));
    for (const e of entries) {
      const seq = last.get(JSON.stringify(e.partition))! + 1;
      if (seq > e.to) continue;
      const [event] = await this.#events(e.partition, seq, seq);
      if (!event) continue; // the partition was dropped since
      return Math.max(0, (now - Date.parse(event.at)) / 1000);
    }
    return 0;
  }

  async #nodes(ids: readonly NodeId[]): Promise<Map<string, Hash>> {
    const got = await this.kv.getMany(
      P,
      ids.map((n) => K.node(n)),
    );
    const out = new Map<string, Hash>();
    ids.forEach((n, i) => {
      const e = got[i];
      if (!e) throw new Error(`transparency log: node ${nodeKey(n)} is missing`);
      out.set(nodeKey(n), e.value);
    });
    return out;
  }

  async #assertSize(size: number, field: string): Promise<number> {
    const { head } = await this.#head();
    if (!Number.isSafeInteger(size) || size < 0) throw new ValidationError(`${field} is a whole number of leaves`, field);
    if (size > head.size) throw new ValidationError(`${field} ${size} is beyond the log's size ${head.size}`, field);
    return head.size;
  }

  /** The root hash of the tree of `size` leaves (any size the log has reached). */
  async root(size: number): Promise<Hash> {
    if (size === 0) return EMPTY_ROOT;
    const nodes = await this.#nodes(frontierOf(size));
    return rangeHash(0, size, (n) => nodes.get(nodeKey(n))!);
  }

  async #rangesHashes(ranges: readonly (readonly [number, number])[]): Promise<Hash[]> {
    const nodes = await this.#nodes(nodesOf(ranges));
    return ranges.map(([s, e]) => rangeHash(s, e, (n) => nodes.get(nodeKey(n))!));
  }

  /** The inclusion proof of leaf `index` in the tree of `size` leaves (default: the current size). */
  async inclusion(index: number, size?: number): Promise<InclusionProof> {
    const current = (await this.#head()).head.size;
    const at = size ?? current;
    await this.#assertSize(at, "size");
    if (!Number.isSafeInteger(index) || index < 0 || index >= at) throw new ValidationError(`index ${index} is not a leaf of the tree of ${at}`, "index");
    const leaf = await this.kv.get(P, K.leaf(index));
    if (!leaf) throw new Error(`transparency log: leaf ${index} is missing`);
    return { index, size: at, leaf: leaf.value, proof: await this.#rangesHashes(inclusionRanges(index, at)) };
  }

  /** The leaf index of an event (the newest epoch that holds it), or null when the log does not hold it (yet). */
  async indexOf(partition: Partition, seq: number): Promise<number | null> {
    const { head } = await this.#head();
    for (let epoch = head.epoch; epoch >= 0; epoch--) {
      const e = await this.kv.get(P, K.index(epoch, partition, seq));
      if (e) return Number(e.value.toString("utf8"));
    }
    return null;
  }

  /** The consistency proof from the tree of `from` leaves to the tree of `to` leaves (default: the current size). */
  async consistency(from: number, to?: number): Promise<{ from: number; to: number; proof: Hash[] }> {
    const current = (await this.#head()).head.size;
    const at = to ?? current;
    await this.#assertSize(at, "to");
    if (!Number.isSafeInteger(from) || from < 0 || from > at) throw new ValidationError(`from ${from} is not a size between 0 and ${at}`, "from");
    return { from, to: at, proof: await this.#rangesHashes(consistencyRanges(from, at)) };
  }

  /**
   * Starts a new epoch: the feed was replaced (a restore of the whole store), so the log goes on from
   * the new feed's first entry, appending the restored events again as new leaves; nothing is removed.
   */
  async newEpoch(): Promise<number> {
    for (;;) {
      const { head, version } = await this.#head();
      const next: Head = { ...head, cursor: 0, mark: null, epoch: head.epoch + 1 };
      try {
        await this.kv.commit(P, [
          { type: "check", key: K.head, version },
          { type: "put", key: K.head, value: Buffer.from(JSON.stringify(next)) },
        ]);
        return next.epoch;
      } catch (err) {
        if (!(err instanceof ConflictError)) throw err;
      }
    }
  }

  /**
   * Where the current epoch begins: its number, the index of its first leaf (`start`: the log's size
   * when it began; 0 in epoch 0), the hashes of the complete subtrees of the tree of `start` leaves
   * (left first: what the tree before the epoch comes to) and, when `start` > 0, the leaf before it with
   * its inclusion proof in that tree. An export carries it (compose/transfer.ts), so that an auditor
   * holding the export rebuilds the current epoch's leaves on top of it (`seed`) and checks the result
   * against a cosigned checkpoint. Finds `start` by a binary search over the leaves' epochs (O(log² n) reads).
   */
  async epochStart(): Promise<EpochStart> {
    const { head } = await this.#head();
    let lo = head.start ?? 0;
    let hi = head.size;
    if (head.epoch === 0) hi = lo;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      if ((await this.leaf(mid)).epoch < head.epoch) lo = mid + 1;
      else hi = mid;
    }
    const start = lo;
    const frontier = start > 0 ? await this.#nodes(frontierOf(start)) : new Map<string, Hash>();
    const last = start > 0 ? await this.inclusion(start - 1, start) : null;
    return {
      epoch: head.epoch,
      start,
      frontier: frontierOf(start).map((n) => frontier.get(nodeKey(n))!.toString("base64")),
      last: last ? { leaf: last.leaf.toString("base64"), proof: last.proof.map((h) => h.toString("base64")) } : null,
    };
  }

  /**
   * Makes an empty log the tree an `epochStart` describes, with no leaf before `start` (an auditor's store
   * over an export: the leaves of earlier epochs belong to histories the export does not carry). Checks
   * what it can: as many subtree hashes as a tree of `start` leaves has, the leaf before `start` proven
   * in their tree and of an earlier epoch. Appends then go on from `start` in the given epoch.
   */
  async seed(s: EpochStart): Promise<void> {
    const { head, version } = await this.#head();
    if (head.size > 0 || version !== null) throw new ValidationError("only an empty log can be seeded", "log");
    if (typeof s !== "object" || s === null) throw new ValidationError("an epoch start is an object", "log");
    if (!Number.isSafeInteger(s.epoch) || s.epoch < 0 || !Number.isSafeInteger(s.start) || s.start < 0)
      throw new ValidationError("an epoch start is a whole epoch and leaf index", "log");
    if (s.epoch === 0 && s.start > 0) throw new ValidationError("epoch 0 starts at leaf 0", "log");
    const nodes = frontierOf(s.start);
    const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((h) => typeof h === "string");
    if (!strings(s.frontier)) throw new ValidationError("the subtree hashes are a list of base64 strings", "log.frontier");
    const hashes = s.frontier.map((h) => Buffer.from(h, "base64"));
    if (hashes.length !== nodes.length || hashes.some((h) => h.length !== 32))
      throw new ValidationError(`a tree of ${s.start} leaves is summed up by ${nodes.length} subtree hashes`, "log.frontier");
    const byKey = new Map(nodes.map((n, i) => [nodeKey(n), hashes[i]!]));
    if (s.start > 0) {
      if (!s.last || typeof s.last.leaf !== "string" || !strings(s.last.proof))
        throw new ValidationError("the leaf before the epoch's start and its proof are missing", "log.last");
      const leaf = Buffer.from(s.last.leaf, "base64");
      const root = rangeHash(0, s.start, (n) => byKey.get(nodeKey(n))!);
      const proof = s.last.proof.map((h) => Buffer.from(h, "base64"));
      if (!merkle.verifyInclusion(s.start - 1, s.start, leafHash(leaf), proof, root))
        throw new ValidationError("the leaf before the epoch's start is not proven in the tree before it", "log.last");
      let epoch: number;
      try {
        epoch = parseLeaf(leaf).epoch;
      } catch {
        throw new ValidationError("the leaf before the epoch's start is not a flowstore leaf", "log.last");
      }
      if (!(epoch < s.epoch)) throw new ValidationError("the leaf before the epoch's start is not of an earlier epoch", "log.last");
    }
    const next: Head = { size: s.start, cursor: 0, mark: null, epoch: s.epoch, start: s.start };
    await this.kv.commit(P, [
      { type: "check", key: K.head, version: null },
      ...nodes.map((n, i) => ({ type: "put" as const, key: K.node(n), value: hashes[i]! })),
      { type: "put", key: K.head, value: Buffer.from(JSON.stringify(next)) },
    ]);
  }

  /**
   * Appends what the feed holds past the log's cursor, batch by batch, until it is caught up; returns
   * the leaves appended. Safe to run in several processes at once (see the file header).
   */
  async appendPending(options: AppendOptions = {}): Promise<number> {
    let appended = 0;
    for (;;) {
      if (await options.blocked?.()) return appended;
      const step = await this.#appendBatch(options.entries ?? 128);
      if (step === null) return appended;
      appended += step;
    }
  }

  /** One batch: the number of leaves appended (possibly 0 when entries held no new event), or null when caught up. */
  async #appendBatch(maxEntries: number): Promise<number | null> {
    const { head, version } = await this.#head();
    // The feed at the cursor must still be the one consumed; otherwise it was replaced (a restore).
    if (head.cursor > 0) {
      const [atCursor] = await this.feed.read(head.cursor - 1, 1);
      if (!atCursor || atCursor.position !== head.cursor || markOf(atCursor) !== head.mark) {
        await this.newEpoch();
        return 0;
      }
    }
    const entries = await this.feed.read(head.cursor, maxEntries);
    if (entries.length === 0) return null;
    const { epoch } = head;
    // The last seq logged of each partition the batch names.
    const byName = new Map<string, { partition: Partition; last: number; stored: number }>();
    for (const e of entries) byName.set(JSON.stringify(e.partition), { partition: e.partition, last: 0, stored: 0 });
    const parts = [...byName.values()];
    const lasts = await this.kv.getMany(
      P,
      parts.map((p) => K.last(epoch, p.partition)),
    );
    parts.forEach((p, i) => {
      const e = lasts[i];
      p.last = p.stored = e ? Number(e.value.toString("utf8")) : 0;
    });
    const leaves: LeafData[] = [];
    for (const e of entries) {
      const p = byName.get(JSON.stringify(e.partition))!;
      if (e.to <= p.last) continue;
      for (const ev of await this.#events(e.partition, p.last + 1, e.to)) {
        if (ev.seq <= p.last) continue;
        leaves.push({ epoch, partition: e.partition, seq: ev.seq, hash: ev.hash });
        p.last = ev.seq;
      }
    }
    const last = entries.at(-1)!;
    const nextHead: Head = { ...head, size: head.size + leaves.length, cursor: last.position, mark: markOf(last) };
    const ops: Op[] = [{ type: "check", key: K.head, version }];
    if (leaves.length > 0) {
      const frontier = head.size > 0 ? await this.#nodes(frontierOf(head.size)) : new Map<string, Hash>();
      const bytes = leaves.map(leafBytes);
      const created = appendNodes(
        head.size,
        bytes.map((b) => leafHash(b)),
        (n) => {
          const h = frontier.get(nodeKey(n));
          if (!h) throw new Error(`transparency log: frontier node ${nodeKey(n)} is missing`);
          return h;
        },
      );
      for (const { node, hash } of created.values()) ops.push({ type: "put", key: K.node(node), value: hash });
      leaves.forEach((l, i) => {
        ops.push({ type: "put", key: K.leaf(head.size + i), value: bytes[i]! });
        ops.push({ type: "put", key: K.index(epoch, l.partition, l.seq), value: Buffer.from(String(head.size + i)) });
      });
      for (const p of parts) if (p.last !== p.stored) ops.push({ type: "put", key: K.last(epoch, p.partition), value: Buffer.from(String(p.last)) });
    }
    ops.push({ type: "put", key: K.head, value: Buffer.from(JSON.stringify(nextHead)) });
    try {
      await this.kv.commit(P, ops);
    } catch (err) {
      if (err instanceof ConflictError) return 0; // another appender went first: go on from its state
      throw err;
    }
    return leaves.length;
  }

  /** Stores a witness's cosignature line for the checkpoint of `size` (the caller has checked it). */
  async addCosignature(size: number, name: string, line: string): Promise<void> {
    await this.kv.commit(P, [{ type: "put", key: K.cosig(size, name), value: Buffer.from(line, "utf8") }]);
  }

  /** The cosignature lines stored for the checkpoint of `size`. */
  async cosignatures(size: number): Promise<string[]> {
    const page = await this.kv.scan(P, { prefix: K.cosigs(size), limit: 64 });
    return page.entries.map((e) => e.value.toString("utf8"));
  }

  /** The largest size that has cosignatures, or null. */
  async latestCosigned(): Promise<number | null> {
    const page = await this.kv.scan(P, { prefix: K.allCosigs, reverse: true, limit: 1 });
    const e = page.entries[0];
    return e ? (e.key[1] as number) : null;
  }

  /**
   * Recomputes the tree of `size` leaves from the stored leaves (not the stored nodes) and checks each
   * leaf of the current epoch against its partition's log: the event must still be there with the hash
   * the leaf names. Returns the recomputed root and the leaves whose events are gone or changed (a
   * history rewritten after the log took it in). Reads every leaf: O(size).
   */
  async audit(size: number): Promise<{ root: Hash; checked: number; earlierEpochs: number; mismatches: { index: number; partition: Partition; seq: number; reason: string }[] }> {
    const { head } = await this.#head();
    await this.#assertSize(size, "size");
    const start = head.start ?? 0;
    if (size < start) throw new ValidationError(`this log holds the leaves from ${start} on, not the tree of ${size}`, "size");
    // The tree before `start` (a seeded log) comes in as its complete subtrees: the stack's state there.
    const before = start > 0 ? await this.#nodes(frontierOf(start)) : new Map<string, Hash>();
    const stack: { level: number; hash: Hash }[] = frontierOf(start).map((n) => ({ level: n.level, hash: before.get(nodeKey(n))! }));
    const mismatches: { index: number; partition: Partition; seq: number; reason: string }[] = [];
    let checked = 0;
    let earlierEpochs = 0;
    for (let from = start; from < size; from += 1000) {
      const page = await this.kv.scan(P, { start: K.leaf(from), end: K.leaf(Math.min(size, from + 1000)), limit: 1000 });
      for (const [i, e] of page.entries.entries()) {
        const index = from + i;
        if ((e.key[1] as number) !== index) throw new Error(`transparency log: leaf ${index} is missing`);
        let node = { level: 0, hash: leafHash(e.value) };
        while (stack.length > 0 && stack.at(-1)!.level === node.level) node = { level: node.level + 1, hash: nodeHash(stack.pop()!.hash, node.hash) };
        stack.push(node);
        const l = parseLeaf(e.value);
        if (l.epoch !== head.epoch) {
          earlierEpochs++;
          continue;
        }
        const [event] = await this.#events(l.partition, l.seq, l.seq);
        checked++;
        if (!event) mismatches.push({ index, partition: l.partition, seq: l.seq, reason: "the event is gone from its partition" });
        else if (event.hash !== l.hash) mismatches.push({ index, partition: l.partition, seq: l.seq, reason: "the event's hash is not the one the log holds (history rewritten)" });
      }
    }
    let root = stack.pop()?.hash ?? EMPTY_ROOT;
    while (stack.length > 0) root = nodeHash(stack.pop()!.hash, root);
    return { root, checked, earlierEpochs, mismatches };
  }

  /**
   * Checks that each partition's newest logged event is still in the store with the hash the log holds
   * (reads O(partitions) keys: what `serve` checks at start). A history rewritten after the log took it
   * in (re-chained by hand, so its chain alone verifies) changes the head's hash; a history cut back
   * lacks the logged seq. A partition with no events left (purged) is not counted.
   */
  async headsProblems(limit = 20): Promise<{ partition: Partition; seq: number; reason: string }[]> {
    const { head } = await this.#head();
    const problems: { partition: Partition; seq: number; reason: string }[] = [];
    let cursor: string | null = null;
    do {
      const page = await this.kv.scan(P, { prefix: K.lasts(head.epoch), limit: 500, after: cursor });
      for (const e of page.entries) {
        const partition = e.key[2] as Partition;
        const seq = Number(e.value.toString("utf8"));
        const at = await this.kv.get(P, K.index(head.epoch, partition, seq));
        if (!at) throw new Error(`transparency log: the index of ${JSON.stringify(partition)} seq ${seq} is missing`);
        const leaf = await this.leaf(Number(at.value.toString("utf8")));
        const [event] = await this.#events(partition, seq, seq);
        if (event) {
          if (event.hash !== leaf.hash) problems.push({ partition, seq, reason: "the event's hash is not the one the log holds (history rewritten)" });
        } else if ((await this.#events(partition, 1, 1)).length > 0) {
          problems.push({ partition, seq, reason: "the event is gone from a partition that still has history (history cut back)" });
        }
        if (problems.length >= limit) return problems;
      }
      cursor = page.cursor;
    } while (cursor !== null);
    return problems;
  }

  /** The leaf at `index` (its data). */
  async leaf(index: number): Promise<LeafData> {
    const e = await this.kv.get(P, K.leaf(index));
    if (!e) throw new NotFoundError(`leaf ${index} is not in the log`);
    return parseLeaf(e.value);
  }
}
