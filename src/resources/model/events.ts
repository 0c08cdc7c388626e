/**
 * The log: every change to a partition is an event appended in the same atomic commit as the state it
 * changes. Events form a hash chain per partition, seq 1, 2, … with `prev` the hash of the event before
 * (null for seq 1). The hash of an event written now (`sealEventBytes`) is the SHA-256 (hex) of its JSON
 * as stored up to the hash: `JSON.stringify({seq, at, actor, type, path, payload, prev})`, members in that
 * order and the payload's as written; the stored event is that JSON with `,"hash":"<hash>"` put before its
 * closing brace. Events of older stores hash their canonical JSON instead (`hashEvent`: canonicalJson of
 * the same seven members). Verify (`checkLink`, called by audit.ts) accepts an event whose stored bytes
 * match its hash the first way, or else whose canonical JSON does, and checks seq and prev either way.
 */
import * as crypto from "node:crypto";
import { createHash } from "node:crypto";
import type { Static } from "@sinclair/typebox";
import type { Permissions } from "../../access/actor.js";
import type { Event, FieldChange as FieldChangeSchema, PathItem as PathItemSchema, VerifyResult as VerifyResultSchema } from "./wire.js";
import { canonicalJson } from "../../kv/canonical.js";

/** The shapes are declared once, as TypeBox schemas, in wire.ts. */
export type PathItem = Static<typeof PathItemSchema>;
/** One field an update changed (diff.ts computes them). */
export type FieldChange = Static<typeof FieldChangeSchema>;

/** What an event did, in a shape a generic fold can replay (see `fold`). */
export interface EventPayload {
  /** On create: the full data. On other changes: a patch (a field set to null is removed). */
  data?: Record<string, unknown>;
  /** On create: the initial permissions. */
  permissions?: Permissions;
  /** On create by a migration: the resource's original creation (its meta carries it; the event keeps its own time and actor). */
  origin?: { createdAt: string; createdBy: string };
  /** Permission changes. */
  intent?: string;
  identity?: string;
  /** Ordering changes. */
  childType?: string;
  ordering?: string[];
  /** On a change of the data (an update, a domain command's patch): what changed, field by field (diff.ts). */
  changes?: FieldChange[];
  /** The reason the actor gave for the write (`Actor.reason`), on each event of it. */
  reason?: string;
  /** Anything else a domain command records (reasons, ids of swept children, ...). */
  [extra: string]: unknown;
}

/**
 * Verbs a resource's history records that leave its record as it was: its index of flat children (they
 * live in partitions of their own). Every other verb — the generic ones and each domain command's,
 * written through `mutate` — changes the record and its version; a replay (`fold`) follows this.
 */
export const INDEX_VERBS = { added: "child_added", removed: "child_removed", swept: "child_swept" } as const;
const indexVerbs: ReadonlySet<string> = new Set(Object.values(INDEX_VERBS));

/** True when an event's verb changed the resource's record (and so its version and updatedAt). */
const changesRecord = (verb: string): boolean => !indexVerbs.has(verb);

/**
 * An event (wire.ts's `Event`) with its payload typed. `type` is `<resourceType>.<verb>`: created,
 * updated, deleted, permission_granted, permission_revoked, ordering_set, or a domain verb; `path` runs
 * from the partition owner down to the resource.
 */
export type ResourceEvent = Omit<Event, "payload"> & { payload: EventPayload };

/** `crypto.hash` (Node ≥ 20.12): a one-shot digest, several times cheaper than a Hash object for an event's size. */
const oneShot = (crypto as { hash?: (algorithm: string, data: string | Uint8Array, encoding: "hex") => string }).hash;

const canonicalOf = (e: Omit<ResourceEvent, "hash">): string => {
  const { seq, at, actor, type, path, payload, prev } = e;
  return canonicalJson({ seq, at, actor, type, path, payload, prev });
};

export function hashEvent(e: Omit<ResourceEvent, "hash">): string {
  const json = canonicalOf(e);
  return oneShot ? oneShot("sha256", json, "hex") : createHash("sha256").update(json).digest("hex");
}

export function sealEvent(e: Omit<ResourceEvent, "hash">): ResourceEvent {
  return { ...e, hash: hashEvent(e) };
}

/**
 * Seals a new event and gives its stored bytes: the event's JSON without its hash (members in the order
 * seq, at, actor, type, path, payload, prev), with the hash appended as its last member
 * (`…,"hash":"<64 hex>"}`). The hash is the SHA-256 of that JSON, the stored bytes up to the hash member,
 * so verify hashes the bytes as they lie (`storedHashMatches`) instead of re-serializing every event.
 * Events written before hash their canonical JSON (`hashEvent`); verify accepts either, and both bind
 * the event's content (see docs/security.md).
 */
export function sealEventBytes(e: Omit<ResourceEvent, "hash">): { event: ResourceEvent; bytes: Buffer } {
  const { seq, at, actor, type, path, payload, prev } = e;
  const json = JSON.stringify({ seq, at, actor, type, path, payload, prev });
  const hash = oneShot ? oneShot("sha256", json, "hex") : createHash("sha256").update(json).digest("hex");
  return { event: { seq, at, actor, type, path, payload, prev, hash }, bytes: Buffer.from(`${json.slice(0, -1)}${HASH_MEMBER}${hash}"}`, "utf8") };
}

const HASH_MEMBER = ',"hash":"';
const HASH_MEMBER_BYTES = Buffer.from(HASH_MEMBER, "latin1");
/** `,"hash":"` + 64 hex digits + `"}`: the tail of a stored event. */
export const HASH_TAIL = HASH_MEMBER.length + 64 + 2;
/** The 64 hex digits a stored event's tail (`HASH_TAIL`) holds as its hash, read without a parse: what storedHashMatches checks. */
export const tailHash = (raw: Buffer): string => raw.toString("latin1", raw.length - HASH_TAIL + HASH_MEMBER.length, raw.length - 2);
const CLOSE = Buffer.from("}", "latin1");

/**
 * True when `raw` (an event as stored, see sealEventBytes) ends with its hash member holding `hash`, and
 * `hash` is the SHA-256 of the bytes before that member, closed with `}`. The stored bytes are then bound
 * to the hash: they are the hashed bytes followed by `hash`. False for an event hashed otherwise (written
 * before, over its canonical JSON): `checkLink` then hashes its canonical JSON.
 */
export function storedHashMatches(raw: Buffer, hash: string): boolean {
  const n = raw.length - HASH_TAIL;
  if (n < 1 || raw[raw.length - 1] !== 0x7d || raw[raw.length - 2] !== 0x22) return false;
  if (raw.compare(HASH_MEMBER_BYTES, 0, HASH_MEMBER_BYTES.length, n, n + HASH_MEMBER_BYTES.length) !== 0) return false;
  const start = n + HASH_MEMBER_BYTES.length;
  if (raw.toString("latin1", start, start + 64) !== hash) return false;
  return sha256Closed(raw, n) === hash;
}

/** Where the bytes a stored event's hash covers are put together for a one-shot digest (verify is synchronous per event). */
let scratch = Buffer.allocUnsafe(4096);

/** The SHA-256 (hex) of `raw`'s first `n` bytes followed by `}`: what a stored event's hash covers. */
function sha256Closed(raw: Buffer, n: number): string {
  if (!oneShot) return createHash("sha256").update(raw.subarray(0, n)).update(CLOSE).digest("hex");
  if (scratch.length < n + 1) scratch = Buffer.allocUnsafe(Math.max(n + 1, scratch.length * 2));
  raw.copy(scratch, 0, 0, n);
  scratch[n] = 0x7d;
  const digest = oneShot("sha256", scratch.subarray(0, n + 1), "hex");
  if (scratch.length > 1 << 20) scratch = Buffer.allocUnsafe(4096); // do not keep a huge event's scratch alive
  return digest;
}

export type VerifyResult = Static<typeof VerifyResultSchema>;

/**
 * Checks one link of the chain: the event's own hash, its seq and its prev. `raw`, the event as stored,
 * lets the hash be checked on the stored bytes (storedHashMatches); otherwise, or when they are stored
 * in another form, the canonical JSON of the parsed event is hashed.
 */
export function checkLink(e: ResourceEvent, expectedSeq: number, prevHash: string | null, raw?: Buffer): string | null {
  return linkOf(e, expectedSeq, prevHash, raw).reason;
}

/**
 * `checkLink`'s answer (`reason`, null when the link holds), with `bound`: true when the hash was checked
 * on `raw`, the stored bytes (storedHashMatches), so the hash binds those bytes themselves: other bytes
 * are the same as `raw` when `storedHashMatches` holds them to the same hash (a history entry, replay.ts),
 * with no digest of `raw` of their own.
 */
export function linkOf(e: ResourceEvent, expectedSeq: number, prevHash: string | null, raw?: Buffer): { reason: string | null; bound: boolean } {
  if (e.seq !== expectedSeq) return { reason: `expected seq ${expectedSeq}, found ${e.seq}`, bound: false };
  if (e.prev !== prevHash) return { reason: `prev does not match the hash of event ${expectedSeq - 1}`, bound: false };
  if (typeof e.hash === "string" && raw !== undefined && storedHashMatches(raw, e.hash)) return BOUND;
  if (hashEvent(e) !== e.hash) return { reason: "hash does not match the event's content", bound: false };
  return UNBOUND;
}
const BOUND = { reason: null, bound: true } as const;
const UNBOUND = { reason: null, bound: false } as const;

export interface Folded {
  data: Record<string, unknown>;
  permissions: Permissions;
  createdAt: string;
  createdBy: string;
  updatedAt: string;
  version: number;
  deleted: boolean;
}

/** Replays one resource's events (oldest first) into its state. */
export function fold(events: readonly ResourceEvent[]): Folded | null {
  let s: Folded | null = null;
  for (const e of events) s = foldStep(s, e);
  return s;
}

/** One step of `fold`: the state after `e`, given the state before it (changed in place, except on create). */
export function foldStep(s: Folded | null, e: ResourceEvent): Folded | null {
  const verb = e.type.slice(e.type.indexOf(".") + 1);
  if (verb === "created") {
    return {
      data: { ...(e.payload.data ?? {}) },
      permissions: structuredClone(e.payload.permissions ?? {}),
      createdAt: e.payload.origin?.createdAt ?? e.at,
      createdBy: e.payload.origin?.createdBy ?? e.actor,
      updatedAt: e.at,
      version: 1,
      deleted: false,
    };
  }
  if (!s || !changesRecord(verb)) return s;
  s.updatedAt = e.at;
  if (verb === "deleted") {
    s.deleted = true;
    return s;
  }
  if (e.payload.data) {
    for (const [k, v] of Object.entries(e.payload.data)) {
      if (v === null) delete s.data[k];
      else s.data[k] = v;
    }
  }
  if (verb === "permission_granted" && e.payload.intent && e.payload.identity) {
    const list = (s.permissions[e.payload.intent] ??= []);
    if (!list.includes(e.payload.identity)) list.push(e.payload.identity);
  } else if (verb === "permission_revoked" && e.payload.intent && e.payload.identity) {
    s.permissions[e.payload.intent] = (s.permissions[e.payload.intent] ?? []).filter((i) => i !== e.payload.identity);
  }
  s.version++;
  return s;
}
