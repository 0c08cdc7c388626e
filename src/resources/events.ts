/**
 * The log: every change to a partition is an event appended in the same atomic commit as the state it
 * changes. Events form a hash chain per partition: `hash = sha256(canonical(event without hash))`, and
 * the canonical form includes `prev`, the hash of the event before.
 */
import { createHash } from "node:crypto";
import type { Permissions } from "./actor.js";

export interface PathItem {
  type: string;
  id: string;
}

/** What an event did, in a shape a generic fold can replay (see `fold`). */
export interface EventPayload {
  /** On create: the full data. On other changes: a patch (a field set to null is removed). */
  data?: Record<string, unknown>;
  /** On create: the initial permissions. */
  permissions?: Permissions;
  /** Permission changes. */
  intent?: string;
  identity?: string;
  /** Ordering changes. */
  childType?: string;
  ordering?: string[];
  /** Anything else a domain command records (reasons, ids of swept children, ...). */
  [extra: string]: unknown;
}

export interface ResourceEvent {
  seq: number;
  at: string;
  actor: string;
  /** `<resourceType>.<verb>`: created, updated, deleted, permission_granted, permission_revoked, ordering_set, or a domain verb. */
  type: string;
  /** From the partition owner down to the resource. */
  path: PathItem[];
  payload: EventPayload;
  prev: string | null;
  hash: string;
}

/** JSON with object keys sorted at every level and no whitespace. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(",")}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).filter((k) => obj[k] !== undefined).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(",")}}`;
}

export function hashEvent(e: Omit<ResourceEvent, "hash">): string {
  const { seq, at, actor, type, path, payload, prev } = e;
  return createHash("sha256").update(canonicalJson({ seq, at, actor, type, path, payload, prev })).digest("hex");
}

export function sealEvent(e: Omit<ResourceEvent, "hash">): ResourceEvent {
  return { ...e, hash: hashEvent(e) };
}

export interface VerifyResult {
  ok: boolean;
  checked: number;
  firstBad?: { seq: number; reason: string };
}

/** Checks one link of the chain: the event's own hash, its seq and its prev. */
export function checkLink(e: ResourceEvent, expectedSeq: number, prevHash: string | null): string | null {
  if (e.seq !== expectedSeq) return `expected seq ${expectedSeq}, found ${e.seq}`;
  if (e.prev !== prevHash) return `prev does not match the hash of event ${expectedSeq - 1}`;
  if (hashEvent(e) !== e.hash) return "hash does not match the event's content";
  return null;
}

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
  for (const e of events) {
    const verb = e.type.slice(e.type.indexOf(".") + 1);
    if (verb === "created") {
      s = {
        data: { ...(e.payload.data ?? {}) },
        permissions: structuredClone(e.payload.permissions ?? {}),
        createdAt: e.at,
        createdBy: e.actor,
        updatedAt: e.at,
        version: 1,
        deleted: false,
      };
      continue;
    }
    if (!s) continue;
    s.updatedAt = e.at;
    if (verb === "deleted") {
      s.deleted = true;
      continue;
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
  }
  return s;
}
