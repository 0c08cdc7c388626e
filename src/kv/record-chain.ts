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
 * Layout, inside the partition: `["chain", "log", seq]` the events, `["chain", "head"]` {seq, hash}.
 * What it cannot see: a rewrite of the records together with a recomputed chain (whoever can write the
 * store can do it); the store-wide ledger and transparency log are the anchor against that (not yet
 * appended to by these chains).
 */
import { createHash } from "node:crypto";
import { ConflictError } from "../errors.js";
import { canonicalJson } from "./canonical.js";
import type { Entry, Key, KvStore, Op, Partition } from "./contract.js";
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
  const body = { seq: head.seq + 1, at, changes: [...adopted, ...changes], ...(adopted.length > 0 ? { adopted: adopted.length } : {}), prev: head.hash };
  const event: RecordEvent = { ...body, hash: hashOf(body) };
  const ops: Op[] = [
    { type: "check", key: HEAD, version: headEntry?.version ?? null },
    { type: "put", key: HEAD, value: Buffer.from(JSON.stringify({ seq: event.seq, hash: event.hash } satisfies Head)) },
    { type: "put", key: LOG.pack([event.seq]), value: Buffer.from(JSON.stringify(event)) },
  ];
  return { ops, event, head: headEntry?.version ?? null };
}

/** Commits `ops` and, when they change covered records, the chain's event in the same commit (retried on the head alone). */
async function chainedCommit(kv: KvStore, partition: Partition, spec: RecordChainSpec, ops: readonly Op[], clock: () => number): ReturnType<KvStore["commit"]> {
  const changes = changesOf(spec, ops);
  if (changes.length === 0) return kv.commit(partition, ops);
  for (let attempt = 1; ; attempt++) {
    const chain = await appendOps(kv, partition, spec, changes, new Date(clock()).toISOString());
    try {
      return await kv.commit(partition, [...ops, ...chain.ops]);
    } catch (e) {
      if (!(e instanceof ConflictError) || attempt >= ATTEMPTS) throw e;
      // Another writer moved the head: try again on it. Otherwise a check of the caller's failed: theirs to handle.
      const now = await kv.get(partition, HEAD);
      if ((now?.version ?? null) === chain.head) throw e;
    }
  }
}

/** `kv` with every commit to a partition one of `specs` holds chained (its reads, drops and everything else pass through). */
export function withRecordChain(kv: KvStore, specs: readonly RecordChainSpec[], clock: () => number = Date.now): KvStore {
  const specOf = (p: Partition): RecordChainSpec | undefined => specs.find((s) => s.holds(p));
  const commit = (p: Partition, ops: readonly Op[]) => {
    const spec = specOf(p);
    return spec ? chainedCommit(kv, p, spec, ops, clock) : kv.commit(p, ops);
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
  if (kv.commitVisible) {
    chained.commitVisible = async (p, ops) => {
      const spec = specOf(p);
      if (!spec || changesOf(spec, ops).length === 0) return kv.commitVisible!(p, ops);
      return { ...(await chainedCommit(kv, p, spec, ops, clock)), durable: Promise.resolve() };
    };
  }
  return chained;
}

/** Starts the chain of a partition written before it (no head, covered records present): one event adopting them. Answers whether it wrote. */
export async function adoptRecords(kv: KvStore, partition: Partition, spec: RecordChainSpec, clock: () => number = Date.now): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    if (await kv.get(partition, HEAD)) return false;
    const { ops, event } = await appendOps(kv, partition, spec, [], new Date(clock()).toISOString());
    if (!event.adopted) return false; // nothing to adopt: an empty partition stays unwritten
    try {
      await kv.commit(partition, ops);
      return true;
    } catch (e) {
      if (!(e instanceof ConflictError) || attempt >= ATTEMPTS) throw e;
    }
  }
}

/**
 * Verifies a partition's record chain: every event's hash, seq and prev, the head, then the covered
 * records against the replay of the log. A partition with neither chain nor covered records has nothing
 * to check (checked 0).
 */
export async function verifyRecordChain(kv: KvStore, partition: Partition, spec: RecordChainSpec): Promise<RecordChainResult> {
  const replay = new Map<string, string | null>();
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
  }
  const headEntry = await kv.get(partition, HEAD);
  const head = headEntry ? (JSON.parse(headEntry.value.toString("utf8")) as Head) : undefined;
  if ((head?.seq ?? 0) !== seq || (head?.hash ?? null) !== prev) return bad(seq, `the head (${head?.seq ?? 0}) is not the log's last event (${seq})`);
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
