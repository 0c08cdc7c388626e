/**
 * The replay of a partition's log into every key the writer stores beside it: each resource's state
 * record (`s`) and access record (`a`), orderings (`o`), the index of flat children (`c`), the history
 * index (`h`) and a flat owner's parent link (`m parent`). `verify` compares its output with what is
 * stored; a restore can write it (the log alone rebuilds the partition, as event sourcing promises).
 *
 * Rules (each mirrors the code that writes the key: writes.ts, lifecycle.ts, core.ts):
 * - `<type>.created` puts the state (version 1) and access `{permissions, parent}`; a flat resource's
 *   event carries its parent, which also becomes the partition's parent link.
 * - every other verb but the index verbs applies its `data` patch (null removes a field), bumps the
 *   version and updatedAt; `permission_granted`/`_revoked` change one intent's holders; a verb whose
 *   event carries `permissions` (a reassignment) replaces them. The access record is rewritten only
 *   when permissions changed, as mutate does.
 * - `ordering_set` puts the ordering of `payload.childType`.
 * - the order index (`x`) of each live collection of ordered children follows from its ordering and its
 *   live children (ordering.ts `orderIndexOf`), as writes.ts and lifecycle.ts keep it.
 * - `deleted` removes the resource, its nested descendants' state and access, and the orderings at and
 *   below it (one subtree delete); flat children leave by `child_swept`/`child_removed` events.
 * - `child_added` puts the flat child's index entry `{createdAt: event.at}`; for a `counted` child type
 *   it and the removal of an entry move the parent's count (`n`, absent at 0), as core.ts's countChild.
 * - every event puts its history index entry under the resource its path names, with the event's bytes as
 *   the log holds them. The replay keeps 33 bytes per event, not the event (a full verify of a partition
 *   would otherwise hold its whole log in memory), and gives them as the entry's value: a kind byte, then
 *   the event's own hash when verify found it over the stored bytes (`linkOf`'s `bound`: those bytes are
 *   the only ones with that hash as their hash member, so no digest of them is needed), else their SHA-256.
 *   `sameAsReplayed` holds a stored entry to it (an entry written before entries carried bytes is empty).
 * - a parent's sums (`g`, sums.ts) are those of its live children whose type declares `sums`.
 * Outside the partition, a root's entries in its listers' index of visible roots follow from the owner
 * as the log leaves it (`owner()`, visibility.ts); `verify` compares them too.
 */
import crypto, { createHash } from "node:crypto";
import type { Key, Partition } from "../../kv/contract.js";
import { decode, encode, encodeLatin1 } from "../../kv/tuple.js";
import type { Permissions } from "../../access/actor.js";
import { accessJson, encodeResource, recordHolders, type RecordHolders } from "../core/core.js";
import { INDEX_VERBS, storedHashMatches, type ResourceEvent } from "../model/events.js";
import { assigneeOf } from "../indexes/assignments.js";
import { layout } from "../model/layout.js";
import type { Envelope } from "../model/record.js";
import { orderIndexOf, restSortKey } from "../model/ordering.js";
import { locate, type Located, type Ref } from "../model/ref.js";
import type { CompiledType, Schema } from "../model/schema.js";
import { encodeSum, group } from "../model/sums.js";
import { KeyTable } from "./key-table.js";

interface Live {
  l: Located;
  /**
   * Its key in `#live`: its type and ids joined by NUL (`liveKey`). Ids alone do not name a resource:
   * sibling types under one parent may each hold the same id (a `list x` and a `guarded x`).
   */
  key: string;
  /** `layout.address(l)`: what its keys are named from. */
  address: string;
  envelope: Envelope;
  access: Access;
}

/**
 * An access record of the partition: its permissions, parent and bytes, with the record header's holders
 * per type. One object per distinct record, shared by the resources that hold the same (most hold
 * their creator's defaults): a replay keeps one permission map per distinct one, not one per resource.
 */
interface Access {
  readonly permissions: Permissions;
  readonly parent: Ref | null;
  readonly bytes: Buffer;
  readonly holders: Map<CompiledType, RecordHolders>;
}

/** A value the replay gives a key: its bytes, or how to make them (verify makes it only when it reads the stored key). */
export type ReplayedValue = Buffer | (() => Buffer);

/** A replayed key (a tuple, or its encoding as a latin1 string) and value as an entry. */
function entryOf(key: Key | string, value: ReplayedValue): ReplayedEntry {
  if (typeof key !== "string") return { keyBytes: encode(key), key, value: valueOf(value) };
  const keyBytes = Buffer.from(key, "latin1");
  return { keyBytes, key: decode(keyBytes), value: valueOf(value) };
}

/** A replayed value's bytes (made when it is a maker). */
export const valueOf = (v: ReplayedValue): Buffer => (typeof v === "function" ? v() : v);

/** One key the replay produces: its bytes (relative to the partition), tuple and value (for a history entry, its event's digest). */
export interface ReplayedEntry {
  readonly keyBytes: Buffer;
  readonly key: Key;
  readonly value: Buffer;
}

/** The SHA-256 of an event's bytes: what the replay keeps of an event whose hash is not over its stored bytes, and holds a history entry to. */
export const eventDigest: (bytes: Buffer) => Buffer =
  typeof (crypto as { hash?: unknown }).hash === "function" ? (b) => crypto.hash("sha256", b, "buffer") : (b) => createHash("sha256").update(b).digest();
/** What the replay keeps of each event for its history entry: a kind (DIGEST_OF or HASH_OF) and 32 bytes. */
const HISTORY_VALUE = 33;
/** The 32 bytes are the SHA-256 of the event's stored bytes. */
const DIGEST_OF = 0;
/** The 32 bytes are the event's own hash, which verify found over its stored bytes (storedHashMatches). */
const HASH_OF = 1;

/**
 * Whether a stored value is the replayed one: equal bytes; for a history index entry (whose replayed value
 * stands for its event's bytes, `HISTORY_VALUE`), the bytes the event's hash covers as they do in the log
 * (storedHashMatches), or bytes with the SHA-256 kept, or empty (stores written before the entries carried
 * their event's bytes; history reads that event from the log).
 */
export const sameAsReplayed = (keyBytes: Buffer, replayed: Buffer, stored: Buffer): boolean => {
  if (!layout.isHistoryBytes(keyBytes)) return replayed.equals(stored);
  if (stored.length === 0) return true;
  const kept = replayed.subarray(1);
  return replayed[0] === HASH_OF ? storedHashMatches(stored, kept.toString("hex")) : eventDigest(stored).equals(kept);
};

/** Thrown when an event cannot be replayed (it names a resource that does not exist, ...). */
export class ReplayError extends Error {}

const latin1 = (b: Buffer): string => b.toString("latin1");

/** A resource's key in the replay's `#live`: its type, then its ids, joined by NUL (no type name or id holds a control character). */
const liveKey = (type: string, ids: readonly string[]): string => `${type}\u0000${ids.join("\u0000")}`;

/** The `liveKey` of a nested resource's parent (same partition): the parent's type, its own ids but the last. */
const parentKey = (r: Live): string => {
  const { key } = r;
  return r.l.type.decl.parent + key.slice(r.l.type.name.length, key.lastIndexOf("\u0000"));
};

/** Whether two permission maps serialize to the same JSON: the same intents in the same order, each with the same holders in the same order. */
function sameJson(a: Permissions, b: Permissions): boolean {
  if (a === b) return true;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (let i = 0; i < ka.length; i++) {
    const k = ka[i]!;
    if (k !== kb[i]) return false;
    const x = a[k];
    const y = b[k];
    if (!Array.isArray(x) || !Array.isArray(y) || x.length !== y.length) return false;
    for (let j = 0; j < x.length; j++) if (x[j] !== y[j] || typeof x[j] !== "string") return false;
  }
  return true;
}

export class PartitionReplay {
  readonly #live = new Map<string, Live>();
  /** The distinct access records, by their JSON. */
  readonly #accesses = new Map<string, Access>();
  /** The access record the last event gave (`#access`). */
  #lastAccess: Access | null = null;
  readonly #orderings = new Map<string, { key: Key; value: Buffer }>();
  readonly #flat = new Map<string, { key: Key; value: Buffer }>();
  readonly #counts = new Map<string, { key: Key; n: number }>();
  /** The history index entries, as their encoded keys (latin1); entry i's value (`HISTORY_VALUE`) is `#digests` at i × 33. */
  readonly #history: string[] = [];
  #digests = Buffer.allocUnsafe(HISTORY_VALUE * 1024);
  #parentLink: Ref | null = null;

  constructor(
    private readonly schema: Schema,
    readonly partition: Partition,
  ) {}

  /**
   * Applies one event (oldest first), parsed from `bytes` (as the log holds it). `bound`: its hash was
   * checked over `bytes` (`linkOf`), so the hash stands for them (no digest of them is made).
   */
  apply(e: ResourceEvent, bytes: Buffer, bound = false): void {
    const dot = e.type.indexOf(".");
    const verb = e.type.slice(dot + 1);
    const type = e.type.slice(0, dot);
    const path = e.path;
    if (!Array.isArray(path) || path.length === 0 || path.at(-1)!.type !== type) throw new ReplayError(`event ${e.seq} names no ${type} in its path`);
    const ids = path.map((p) => p.id);
    const key = liveKey(type, ids);
    const known = this.#live.get(key);
    let l: Located;
    try {
      l = known?.l ?? locate(this.schema, { type, ids });
    } catch (err) {
      throw new ReplayError(`event ${e.seq}: ${(err as Error).message}`);
    }
    if (l.partition[0] !== this.partition[0] || l.partition[1] !== this.partition[1]) throw new ReplayError(`event ${e.seq} names a resource of another partition`);
    const address = known?.address ?? layout.address(l);
    this.#addHistory(layout.historyEntryAt(address, e.seq), bytes, bound ? e.hash : null);
    const p = e.payload;

    if (verb === "created") {
      const parent = (p.parent as Ref | undefined) ?? null;
      // Never changed in place below (every change makes new objects), so the event's own are kept.
      const permissions = p.permissions ?? {};
      const envelope: Envelope = {
        id: ids.at(-1)!,
        type,
        data: p.data ?? {},
        meta: { createdAt: p.origin?.createdAt ?? e.at, createdBy: p.origin?.createdBy ?? e.actor, updatedAt: e.at, version: 1 },
      };
      this.#live.set(key, { l, key, address, envelope, access: this.#access(permissions, parent) });
      if (parent) this.#parentLink = parent;
      return;
    }
    if (verb === INDEX_VERBS.added || verb === INDEX_VERBS.removed || verb === INDEX_VERBS.swept) {
      const childType = p.childType as string;
      const childId = p.id as string;
      const entry = layout.flatChild(l, childType, childId);
      const k = latin1(encode(entry));
      const had = this.#flat.has(k);
      if (verb === INDEX_VERBS.added) this.#flat.set(k, { key: entry, value: Buffer.from(JSON.stringify({ createdAt: e.at })) });
      else this.#flat.delete(k);
      if (l.type.countedChildren.includes(childType) && had !== this.#flat.has(k)) {
        const countKey = layout.childCount(l, childType);
        const ck = latin1(encode(countKey));
        this.#counts.set(ck, { key: countKey, n: (this.#counts.get(ck)?.n ?? 0) + (had ? -1 : 1) });
      }
      return;
    }
    const r = this.#live.get(key);
    if (!r) throw new ReplayError(`event ${e.seq} (${e.type}) changes ${type} ${ids.join("/")}, which does not exist`);
    if (verb === "deleted") {
      this.#deleteSubtree(l);
      return;
    }
    const data = { ...r.envelope.data };
    for (const [k, v] of Object.entries(p.data ?? {})) {
      if (v === null) delete data[k];
      else data[k] = v;
    }
    r.envelope = { ...r.envelope, data, meta: { ...r.envelope.meta, updatedAt: e.at, version: r.envelope.meta.version + 1 } };
    let permissions: Permissions | null = null;
    if ((verb === "permission_granted" || verb === "permission_revoked") && typeof p.intent === "string" && typeof p.identity === "string") {
      const holders = new Set(r.access.permissions[p.intent] ?? []);
      if (verb === "permission_granted") holders.add(p.identity);
      else holders.delete(p.identity);
      permissions = { ...r.access.permissions, [p.intent]: [...holders] };
    } else if (p.permissions) {
      permissions = p.permissions;
    }
    if (permissions) r.access = this.#access(permissions, r.access.parent);
    if (verb === "ordering_set" && typeof p.childType === "string") {
      const ordering = layout.ordering(l, p.childType);
      this.#orderings.set(latin1(encode(ordering)), { key: ordering, value: Buffer.from(JSON.stringify(p.ordering ?? [])) });
    }
  }

  /**
   * Keeps a history entry's key and what stands for its event's bytes (in one growing buffer: no object
   * per event): `hash`, the event's hash found over them, or else their digest.
   */
  #addHistory(key: string, bytes: Buffer, hash: string | null): void {
    const at = this.#history.length * HISTORY_VALUE;
    if (at + HISTORY_VALUE > this.#digests.length) {
      const grown = Buffer.allocUnsafe(this.#digests.length * 2);
      this.#digests.copy(grown, 0, 0, at);
      this.#digests = grown;
    }
    if (hash !== null && this.#digests.write(hash, at + 1, "hex") === 32) this.#digests[at] = HASH_OF;
    else {
      this.#digests[at] = DIGEST_OF;
      eventDigest(bytes).copy(this.#digests, at + 1);
    }
    this.#history.push(key);
  }

  /**
   * The access record {permissions, parent} (core.ts), shared with every resource holding the same. Most
   * events carry the permissions the one before carried (a creator's defaults): those reuse the last
   * record without serializing it (the profile of a full verify found the JSON and its lookup ~5%).
   */
  #access(permissions: Permissions, parent: Ref | null): Access {
    const last = this.#lastAccess;
    if (
      last &&
      sameJson(last.permissions, permissions) &&
      (last.parent === parent || (last.parent !== null && parent !== null && JSON.stringify(last.parent) === JSON.stringify(parent)))
    )
      return last;
    const json = accessJson({ permissions, parent });
    let a = this.#accesses.get(json);
    if (!a) this.#accesses.set(json, (a = { permissions, parent, bytes: Buffer.from(json, "utf8"), holders: new Map() }));
    this.#lastAccess = a;
    return a;
  }

  /** As lifecycle's delete: the resource, its nested subtree, and the orderings at and below it. */
  #deleteSubtree(l: Located): void {
    const under = (pairs: readonly string[]): boolean => l.pairs.every((p, i) => pairs[i] === p);
    for (const [k, r] of this.#live) if (r.l.depth >= l.depth && under(r.l.pairs)) this.#live.delete(k);
    for (const [k, o] of this.#orderings) {
      const depth = o.key[1] as number;
      if (depth >= l.depth && under(o.key.slice(2) as string[])) this.#orderings.delete(k);
    }
  }

  /** The order index of every live collection of ordered children (ordering.ts): from its ordering and its live children. */
  #orderIndex(add: (key: Key | string, value: Buffer) => void): void {
    // Keyed by the parent's `Live.key` (type and ids): a nested child names its parent's (`parentKey`), so a
    // parent's collection holds only its own children, whatever other types share its ids.
    const collections = new Map<string, { parent: Live; childType: string; children: { id: string; createdAtMs: number }[] }>();
    for (const r of this.#live.values()) {
      const childType = r.l.type.decl.orderedChildren;
      if (childType) collections.set(r.key, { parent: r, childType, children: [] });
    }
    for (const r of this.#live.values()) {
      if (r.l.depth === 0) continue;
      const c = collections.get(parentKey(r));
      if (c && c.childType === r.l.type.name) c.children.push({ id: r.envelope.id, createdAtMs: Date.parse(r.envelope.meta.createdAt) });
    }
    for (const { parent, childType, children } of collections.values()) {
      const stored = this.#orderings.get(latin1(encode(layout.ordering(parent.l, childType))));
      const ordering = stored ? (JSON.parse(stored.value.toString("utf8")) as string[]) : [];
      for (const { listedAt, child } of orderIndexOf(ordering, children)) {
        const key = listedAt === null ? layout.orderIndexRestEntryAt(parent.address, childType, restSortKey(child)) : layout.orderIndexListedEntry(parent.l, childType, listedAt);
        add(key, Buffer.from(child.id, "utf8"));
      }
    }
  }

  /** Each parent's sums (sums.ts) over its live children whose type declares them. */
  #sums(add: (key: Key, value: Buffer) => void): void {
    const parents = new Map<string, { depth: number; pairs: readonly string[]; buckets: ReturnType<typeof group> }>();
    for (const r of this.#live.values()) {
      const sums = r.l.type.decl.sums;
      if (!sums || r.l.depth === 0) continue;
      const pairs = r.l.pairs.slice(0, -2);
      const k = pairs.join("\u0000");
      let p = parents.get(k);
      if (!p) parents.set(k, (p = { depth: r.l.depth - 1, pairs, buckets: new Map() }));
      group(sums(r.envelope), 1, p.buckets);
    }
    for (const p of parents.values()) {
      for (const b of p.buckets.values()) if (b.n > 0) add(layout.sumEntry(p.depth, p.pairs, b.bucket), encodeSum(b.sum, b.n));
    }
  }

  /** The partition owner as the log leaves it (its state and permissions), or null when deleted or absent. */
  owner(): { type: string; envelope: Envelope; permissions: Permissions } | null {
    for (const r of this.#live.values()) if (r.l.depth === 0) return { type: r.l.type.name, envelope: r.envelope, permissions: r.access.permissions };
    return null;
  }

  /** The assignments index entries the live resources give (assignments.ts): identity and key, each with an empty value. */
  assignments(): { identity: string; key: Key }[] {
    const out: { identity: string; key: Key }[] = [];
    for (const r of this.#live.values()) {
      const identity = assigneeOf(r.l.type, r.envelope.data);
      if (identity !== null) out.push({ identity, key: layout.assignedEntry(r.l.type.name, r.l.ref.ids) });
    }
    return out;
  }

  /** Every key the writer stores for the replayed events (log and chain head aside), in key order. */
  entries(): ReplayedEntry[] {
    const out: ReplayedEntry[] = [];
    this.#each((key, value) => void out.push(entryOf(key, value)));
    return out.sort((a, b) => Buffer.compare(a.keyBytes, b.keyBytes));
  }

  /** The same keys by their encoded bytes (latin1), unsorted: what verify names the first divergence from. */
  byKey(): Map<string, ReplayedEntry> {
    const out = new Map<string, ReplayedEntry>();
    this.#each((key, value) => {
      const entry = entryOf(key, value);
      out.set(entry.keyBytes.toString("latin1"), entry);
    });
    return out;
  }

  /**
   * The same keys by their encoded bytes (latin1), each value made only when asked for (`ReplayedValue`):
   * what verify's pass over the stored keys checks them against, making each value once, as it reads it.
   */
  expected(): KeyTable<ReplayedValue> {
    const out = new KeyTable<ReplayedValue>();
    this.#each((key, value) => out.set(typeof key === "string" ? key : encodeLatin1(key), value));
    return out;
  }

  /** Gives each key (a tuple, or already encoded: a latin1 string) with its value. */
  #each(add: (key: Key | string, value: ReplayedValue) => void): void {
    for (const r of this.#live.values()) {
      add(layout.stateAt(r.address), () => {
        const { type } = r.l;
        const { permissions, holders } = r.access;
        let h = holders.get(type);
        if (!h) holders.set(type, (h = recordHolders(type, permissions)));
        return encodeResource(type, r.envelope, permissions, h);
      });
      add(layout.accessAt(r.address), r.access.bytes);
    }
    for (const o of this.#orderings.values()) add(o.key, o.value);
    this.#orderIndex(add);
    for (const f of this.#flat.values()) add(f.key, f.value);
    for (const c of this.#counts.values()) if (c.n > 0) add(c.key, Buffer.from(JSON.stringify(c.n)));
    this.#sums(add);
    const digests = this.#digests;
    for (let i = 0; i < this.#history.length; i++) add(this.#history[i]!, digests.subarray(i * HISTORY_VALUE, (i + 1) * HISTORY_VALUE));
    if (this.#parentLink) add(layout.parentLink, Buffer.from(JSON.stringify(this.#parentLink)));
  }
}
