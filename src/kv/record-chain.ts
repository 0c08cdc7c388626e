/**
 * Record chains (issue 29, "verify covers identity and global permissions"): a hash-chained log of the
 * records a partition keeps, for the partitions that hold no resource log of their own (the identity
 * partition's users and groups, the global permissions). Each commit that puts or deletes a covered
 * record appends, in the same commit, one event naming every covered key it changed and the SHA-256 of
 * the new value (null: deleted), each event hashing the one before; the head holds the last seq and
 * hash, and every such commit is guarded by the head's version, so two writers never fork the chain (the
 * loser's commit is retried on the new head, its own checks unchanged). The state records are thus
 * derived from the log: `verifyRecordChain` recomputes the chain and replays it, and a covered record
 * whose bytes differ from the replay, one the replay lacks, or one the replay holds that is gone fails.
 *
 * A partition written before its chain (no head) is adopted by its first chained commit (or by
 * `adoptRecords`): the event lists every covered record present then, beside its own changes.
 *
 * Each event names its actor (`actor`: the id of the Actor the writing domain ran the change as, through
 * `asActor`; "system" for a commit outside any actor's scope: adoption, bootstrap, migrations, the
 * operators' CLI), covered by its hash.
 *
 * Anchoring (issue 29): given an anchor (`RecordAnchor`, the resources' ledger and feed, handed in by the
 * composition root), each chained commit also puts the partition's head in the store-wide ledger and the
 * new events' range in the change feed, in the same atomic commit where the backend commits across
 * partitions (memory, LMDB), else right after it (Redis, PostgreSQL: a crash in between leaves the ledger
 * behind, and the next chained commit's feed range starts past the ledger's seq, so it covers the gap;
 * `anchorRecords` closes it at open). The transparency log then takes the events in as leaves (their
 * hash is the leaf's), so a checkpoint cosigned by witnesses pins them: a rewrite of the records with a
 * recomputed chain, which the chain alone cannot see, changes the log's root.
 *
 * Layout, inside the partition: `["chain", "log", seq]` the events, `["chain", "head"]` {seq, hash}.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { createHash } from "node:crypto";
import { ConflictError } from "../errors.js";
import { canonicalJson } from "./canonical.js";
import type { Entry, Key, KvStore, Op, Partition, PartitionOps, TxReader } from "./contract.js";
import { scanAll } from "./contract.js";
import { Subspace } from "./subspace.js";
import { decode, encode } from "./tuple.js";

/** The chain's keys, in every partition that carries one. */
export const CHAIN = new Subspace(["chain"]);
const LOG = CHAIN.sub("log");
const HEAD: Key = CHAIN.pack(["head"]);

/** Which partitions carry a record chain, and which of their keys it covers (each layout declares its own). */
export interface RecordChainSpec {
  /** True for a partition that carries the chain. */
  holds(partition: Partition): boolean;
  /** True for a key whose record the chain covers (never one of CHAIN's). */
  covers(key: Key): boolean;
}

export interface RecordEvent {
  readonly seq: number;
  readonly at: string;
  /** Who made the change (an Actor's id; "system" outside any actor's scope). Absent in events written before issue 29's actors. */
  readonly actor?: string;
  /** Each covered key changed (base64 of its tuple encoding) and the SHA-256 (hex) of its new value, null when deleted. */
  readonly changes: readonly (readonly [string, string | null])[];
  /** Records present before the chain began, adopted by this event (listed first in `changes`). */
  readonly adopted?: number;
  readonly prev: string | null;
  readonly hash: string;
}

interface Head {
  readonly seq: number;
  readonly hash: string | null;
}

/** A chain's head as anchored outside its partition: the last event's seq and hash. */
export interface AnchoredHead {
  readonly seq: number;
  readonly hash: string;
}

/**
 * Where a record chain's events are anchored outside their partition (the resources' ledger and change
 * feed, writer.ts): each names the range from just past the head the ledger holds to `head`.
 */
export interface RecordAnchor {
  /** The ops on other partitions, inside a commit across partitions (read through `tx`). */
  staged(tx: TxReader, partition: Partition, head: AnchoredHead): readonly PartitionOps[];
  /** The same as later commits (a backend with no commit across partitions); never rejects. */
  after(partition: Partition, head: AnchoredHead): Promise<void>;
  /** The head the ledger holds for the partition, or null. */
  anchored(partition: Partition): Promise<AnchoredHead | null>;
}

/** What a chained store is given besides its specs. */
export interface RecordChainOptions {
  readonly clock?: () => number;
  /** The anchor, once the composition root has one (read at each commit). */
  readonly anchor?: () => RecordAnchor | undefined;
}

const ACTOR = new AsyncLocalStorage<string>();
/** The actor of a commit outside any actor's scope. */
export const SYSTEM_ACTOR = "system";

/** How many `asActor` scopes are running (their `fn` not yet settled). */
let scopes = 0;

/**
 * Runs `fn` as `actor`: every record-chain event its commits append names it.
 *
 * The store is turned off again once no scope runs: while an AsyncLocalStorage is on, Node (20) runs a
 * hook at every promise and async resource the process makes, on every request (a CPU profile of a GET
 * put the hooks at a few per cent of the server's work), though only these scopes' commits read it. An
 * actor is read while its `fn` runs (the scope counts until its promise settles), so no commit of a
 * scope loses it. What a scope leaves running after it settled commits as the system actor on Node 20
 * and 22 (the store is off), as the scope's actor on Node 24 (its AsyncLocalStorage keeps the context a
 * timer or promise was made in, whatever `disable` did since); never as another actor. No caller leaves
 * work behind: each returns the promise of its work.
 */
export function asActor<T>(actor: { readonly id: string }, fn: () => T): T {
  scopes++;
  let result: T;
  try {
    result = ACTOR.run(actor.id, fn);
  } catch (e) {
    leave();
    throw e;
  }
  if (result instanceof Promise) return result.finally(leave) as T;
  leave();
  return result;
}

function leave(): void {
  if (--scopes === 0) ACTOR.disable();
}

/**
 * Runs `fn` outside any actor's scope: what it starts (timers, background passes) commits as the system
 * actor even when the start came from inside `asActor` (an AsyncLocalStorage scope flows into every async
 * resource created in it, so a timer started lazily by an administrator's request would sign as them).
 */
export function outsideActor<T>(fn: () => T): T {
  return ACTOR.exit(fn);
}

export interface RecordChainResult {
  readonly ok: boolean;
  readonly checked: number;
  readonly firstBad?: { readonly seq: number; readonly reason: string; readonly key?: string };
}

const sha256 = (bytes: Uint8Array | string): string => createHash("sha256").update(bytes).digest("hex");
const keyName = (key: Key): string => encode(key).toString("base64");
const hashOf = (e: Omit<RecordEvent, "hash">): string => sha256(canonicalJson(e));
/** How often a chained commit that lost the head to another writer is tried again on the new head. */
const ATTEMPTS = 100;

/** The covered changes of `ops`; a prefix or range delete over covered keys is refused (a chain names each key). */
function changesOf(spec: RecordChainSpec, ops: readonly Op[]): [string, string | null][] {
  const changes: [string, string | null][] = [];
  for (const op of ops) {
    if (op.type === "put" && spec.covers(op.key)) changes.push([keyName(op.key), sha256(op.value)]);
    else if (op.type === "delete" && spec.covers(op.key)) changes.push([keyName(op.key), null]);
    else if ((op.type === "deletePrefix" && spec.covers(op.prefix)) || (op.type === "deleteRange" && spec.covers(op.start))) {
      throw new RangeError("a chained partition's records are deleted one key at a time");
    }
    if ((op.type === "put" || op.type === "delete") && CHAIN.contains(op.key)) throw new RangeError("the chain's keys are its own");
  }
  return changes;
}

/** The ops that append an event for `changes` (adopting the covered records present when the chain is new). */
async function appendOps(
  kv: KvStore,
  partition: Partition,
  spec: RecordChainSpec,
  changes: [string, string | null][],
  at: string,
): Promise<{ ops: Op[]; event: RecordEvent; head: number | null }> {
  const headEntry = await kv.get(partition, HEAD);
  const head: Head = headEntry ? (JSON.parse(Buffer.from(headEntry.value).toString("utf8")) as Head) : { seq: 0, hash: null };
  const adopted: [string, string | null][] = [];
  if (!headEntry) {
    for await (const e of scanAll(kv, partition)) if (spec.covers(e.key)) adopted.push([keyName(e.key), sha256(e.value)]);
  }
  const actor = ACTOR.getStore() ?? SYSTEM_ACTOR;
  const body = { seq: head.seq + 1, at, actor, changes: [...adopted, ...changes], ...(adopted.length > 0 ? { adopted: adopted.length } : {}), prev: head.hash };
  const event: RecordEvent = { ...body, hash: hashOf(body) };
  const ops: Op[] = [
    { type: "check", key: HEAD, version: headEntry?.version ?? null },
    { type: "put", key: HEAD, value: Buffer.from(JSON.stringify({ seq: event.seq, hash: event.hash } satisfies Head)) },
    { type: "put", key: LOG.pack([event.seq]), value: Buffer.from(JSON.stringify(event)) },
  ];
  return { ops, event, head: headEntry?.version ?? null };
}

/**
 * Commits a partition's ops with a chain event's, and anchors the event (see the file header): one commit
 * across partitions where the backend has it, else the partition's commit and then the anchor's.
 */
async function commitAnchored(kv: KvStore, partition: Partition, ops: readonly Op[], event: RecordEvent, anchor: RecordAnchor | undefined): ReturnType<KvStore["commit"]> {
  if (!anchor) return kv.commit(partition, ops);
  const head = { seq: event.seq, hash: event.hash };
  if (kv.commitAcross) {
    const { versions, durable } = await kv.commitAcross((tx) => [{ partition, ops }, ...anchor.staged(tx, partition, head)]);
    await durable;
    return { version: versions[0]! };
  }
  const result = await kv.commit(partition, ops);
  await anchor.after(partition, head);
  return result;
}

/** Commits `ops` and, when they change covered records, the chain's event in the same commit (retried on the head alone). */
async function chainedCommit(kv: KvStore, partition: Partition, spec: RecordChainSpec, ops: readonly Op[], options: RecordChainOptions): ReturnType<KvStore["commit"]> {
  const changes = changesOf(spec, ops);
  if (changes.length === 0) return kv.commit(partition, ops);
  const clock = options.clock ?? Date.now;
  for (let attempt = 1; ; attempt++) {
    const chain = await appendOps(kv, partition, spec, changes, new Date(clock()).toISOString());
    try {
      return await commitAnchored(kv, partition, [...ops, ...chain.ops], chain.event, options.anchor?.());
    } catch (e) {
      if (!(e instanceof ConflictError) || attempt >= ATTEMPTS) throw e;
      // Another writer moved the head: try again on it. Otherwise a check of the caller's failed: theirs to handle.
      const now = await kv.get(partition, HEAD);
      if ((now?.version ?? null) === chain.head) throw e;
    }
  }
}

/** `kv` with every commit to a partition one of `specs` holds chained (its reads, drops and everything else pass through). */
export function withRecordChain(kv: KvStore, specs: readonly RecordChainSpec[], options: RecordChainOptions = {}): KvStore {
  const specOf = (p: Partition): RecordChainSpec | undefined => specs.find((s) => s.holds(p));
  const commit = (p: Partition, ops: readonly Op[]) => {
    const spec = specOf(p);
    return spec ? chainedCommit(kv, p, spec, ops, options) : kv.commit(p, ops);
  };
  const chained: KvStore = {
    backend: kv.backend,
    get: (p, k) => kv.get(p, k),
    getMany: (p, keys) => kv.getMany(p, keys),
    scan: (p, o) => kv.scan(p, o),
    commit,
    listPartitions: (kind, o) => kv.listPartitions(kind, o),
    dropPartition: (p) => kv.dropPartition(p),
    close: () => kv.close(),
  };
  if (kv.getSync) chained.getSync = (p, k) => kv.getSync!(p, k);
  if (kv.partitionVersionSync) chained.partitionVersionSync = (p) => kv.partitionVersionSync!(p);
  if (kv.commitVisible) {
    chained.commitVisible = async (p, ops) => {
      const spec = specOf(p);
      if (!spec || changesOf(spec, ops).length === 0) return kv.commitVisible!(p, ops);
      return { ...(await chainedCommit(kv, p, spec, ops, options)), durable: Promise.resolve() };
    };
  }
  return chained;
}

/**
 * Starts the chain of a partition written before it (no head, covered records present): one event adopting
 * them. Answers whether it wrote. `empty`: start it on an empty partition too (an event adopting nothing),
 * so that a record put there past the store later is not taken for one written before the chain.
 */
export async function adoptRecords(kv: KvStore, partition: Partition, spec: RecordChainSpec, options: RecordChainOptions & { empty?: boolean } = {}): Promise<boolean> {
  const clock = options.clock ?? Date.now;
  for (let attempt = 1; ; attempt++) {
    if (await kv.get(partition, HEAD)) return false;
    // An adoption of nothing (`empty`: the chain started on an empty partition) records no moment: every
    // store starts such a chain with the same bytes, so stores that hold the same records hold the same
    // chain (an import into an empty store reproduces the export's store byte for byte).
    const at = new Date(0).toISOString();
    let { ops, event } = await appendOps(kv, partition, spec, [], at);
    if (!event.adopted && options.empty !== true) return false; // nothing to adopt: an empty partition stays unwritten
    if (event.adopted) ({ ops, event } = await appendOps(kv, partition, spec, [], new Date(clock()).toISOString()));
    try {
      await commitAnchored(kv, partition, ops, event, options.anchor?.());
      return true;
    } catch (e) {
      if (!(e instanceof ConflictError) || attempt >= ATTEMPTS) throw e;
    }
  }
}

/** The chain's head in the partition (its last event's seq and hash), or null when it has none. */
export async function recordHead(kv: KvStore, partition: Partition): Promise<AnchoredHead | null> {
  const head = await kv.get(partition, HEAD);
  if (!head) return null;
  const { seq, hash } = JSON.parse(head.value.toString("utf8")) as Head;
  return hash === null ? null : { seq, hash };
}

/**
 * Anchors a chain whose head is past the ledger's entry (written before the anchors, or a crash between
 * a commit and its anchor on a backend with no commit across partitions). Answers whether it anchored.
 */
export async function anchorRecords(kv: KvStore, partition: Partition, anchor: RecordAnchor): Promise<boolean> {
  const headEntry = await kv.get(partition, HEAD);
  if (!headEntry) return false;
  const head = JSON.parse(headEntry.value.toString("utf8")) as Head;
  if (head.hash === null || ((await anchor.anchored(partition))?.seq ?? 0) >= head.seq) return false;
  await anchor.after(partition, { seq: head.seq, hash: head.hash });
  return true;
}

/**
 * Whether a partition's record chain in `a` and in `b` are one line of history: the shorter is a prefix
 * of the longer (its last event is there, with its hash; the hashes chain, so every event before it is
 * too). An empty chain is on every line.
 */
export async function onOneLine(a: KvStore, b: KvStore, partition: Partition): Promise<boolean> {
  const heads = await Promise.all([a, b].map(async (kv) => (await kv.get(partition, HEAD))?.value));
  const [ha, hb] = heads.map((v) => (v ? (JSON.parse(v.toString("utf8")) as Head) : { seq: 0, hash: null }));
  const shorter = ha!.seq <= hb!.seq ? ha! : hb!;
  if (shorter.seq === 0) return true;
  const longer = shorter === ha ? b : a;
  const [event] = await recordEvents(longer, partition, shorter.seq, shorter.seq);
  return event?.hash === shorter.hash;
}

/** The events `from..to` of a partition's record chain (one range read): what the transparency log takes in as leaves. */
export async function recordEvents(kv: KvStore, partition: Partition, from: number, to: number): Promise<RecordEvent[]> {
  if (to < from) return [];
  const page = await kv.scan(partition, { start: LOG.pack([from]), end: LOG.pack([to + 1]), limit: to - from + 1 });
  return page.entries.map((e) => JSON.parse(e.value.toString("utf8")) as RecordEvent);
}

/**
 * Verifies a partition's record chain: every event's hash, seq and prev, the head, its anchor in the
 * ledger when one is given (`anchored`: the ledger's head for the partition, null when it holds none;
 * its seq must be in the log with its hash), then the covered records against the replay of the log. A
 * partition with neither chain nor covered records has nothing to check (checked 0).
 */
export async function verifyRecordChain(kv: KvStore, partition: Partition, spec: RecordChainSpec, anchored?: AnchoredHead | null): Promise<RecordChainResult> {
  const replay = new Map<string, string | null>();
  const hashes = new Map<number, string>();
  let prev: string | null = null;
  let seq = 0;
  for await (const e of scanAll(kv, partition, { prefix: LOG.prefix })) {
    const event = JSON.parse(e.value.toString("utf8")) as RecordEvent;
    seq++;
    const { hash, ...body } = event;
    if (event.seq !== seq) return bad(seq - 1, `expected seq ${seq}, found ${event.seq}`);
    if (event.prev !== prev) return bad(seq - 1, `prev does not match the hash of event ${seq - 1}`, seq);
    if (hashOf(body) !== hash) return bad(seq - 1, "hash does not match the event's content", seq);
    if (LOG.unpack(e.key)[0] !== seq) return bad(seq - 1, "the event is stored under another seq", seq);
    for (const [key, value] of event.changes) replay.set(key, value);
    prev = hash;
    if (anchored && anchored.seq === seq) hashes.set(seq, hash);
  }
  const headEntry = await kv.get(partition, HEAD);
  const head = headEntry ? (JSON.parse(headEntry.value.toString("utf8")) as Head) : undefined;
  if ((head?.seq ?? 0) !== seq || (head?.hash ?? null) !== prev) return bad(seq, `the head (${head?.seq ?? 0}) is not the log's last event (${seq})`);
  if (anchored && anchored.seq > seq) return bad(seq, `the ledger anchors seq ${anchored.seq}, the chain ends at ${seq}: its tail was cut`);
  if (anchored && hashes.get(anchored.seq) !== anchored.hash)
    return bad(anchored.seq - 1, `event ${anchored.seq} differs from the ledger's anchor: history was rewritten`, anchored.seq);
  const seen = new Set<string>();
  for await (const e of scanAll(kv, partition)) {
    if (!spec.covers(e.key)) continue;
    const name = keyName(e.key);
    seen.add(name);
    const expected = replay.get(name);
    if (expected === undefined || expected === null) return bad(seq, "a record the chain does not hold", 0, e);
    if (sha256(e.value) !== expected) return bad(seq, "a record differs from its chain", 0, e);
  }
  for (const [name, value] of replay) {
    if (value !== null && !seen.has(name)) return bad(seq, "a record the chain holds is missing", 0, undefined, name);
  }
  return { ok: true, checked: seq };
}

function bad(checked: number, reason: string, seq = checked + 1, entry?: Entry, name?: string): RecordChainResult {
  const key = entry ? JSON.stringify(entry.key) : name !== undefined ? JSON.stringify(decode(Buffer.from(name, "base64"))) : undefined;
  return { ok: false, checked, firstBad: { seq, reason, ...(key !== undefined ? { key } : {}) } };
}
