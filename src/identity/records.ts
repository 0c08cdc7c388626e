/**
 * Where identities live. Everything is in one partition, `["identity"]`, so that a membership change
 * updates the group and the user in one atomic commit. Keys:
 *
 *   ["user", id]      the user's public record (JSON bytes, served as stored): {id, displayName, enabled, groups, createdAt}
 *   ["password", id]  the user's scrypt hash (kept apart so a user record never carries a secret)
 *   ["group", id]     {id, displayName, members, createdAt}
 *
 * `groups` on the user record is the per-user membership index: building an Actor is one read.
 */
import { ConflictError } from "../errors.js";
import type { Entry, KvStore, Op } from "../kv/contract.js";

export const PARTITION = ["identity"] as const;
export const userKey = (id: string) => ["user", id] as const;
export const passwordKey = (id: string) => ["password", id] as const;
export const groupKey = (id: string) => ["group", id] as const;

export interface UserRecord {
  readonly id: string;
  readonly displayName: string;
  readonly enabled: boolean;
  /** The groups the user belongs to, in the order they were joined. */
  readonly groups: readonly string[];
  readonly createdAt: string;
}

export interface GroupRecord {
  readonly id: string;
  readonly displayName: string;
  readonly members: readonly string[];
  readonly createdAt: string;
}

export interface Page<T> {
  readonly items: T[];
  readonly nextCursor: string | null;
}

export const encodeRecord = (record: UserRecord | GroupRecord): Buffer => Buffer.from(JSON.stringify(record));

export function decodeRecord<T>(entry: Entry): T {
  return JSON.parse(entry.value.toString("utf8")) as T;
}

/** Put the record, provided the key is still at `version` (null: still absent). */
export function replace(key: readonly [string, string], version: number | null, record: UserRecord | GroupRecord): Op[] {
  return [
    { type: "check", key, version },
    { type: "put", key, value: encodeRecord(record) },
  ];
}

/**
 * Runs a read-compute-commit step until its preconditions hold (another writer got in between) or it
 * fails for another reason. Conflicts the step itself reports (a duplicate id) must not be retried, so
 * the step signals a lost race by letting the store's ConflictError through and everything else by
 * its own errors.
 */
export async function withRetry<T>(step: () => Promise<T>, attempts = 32): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await step();
    } catch (e) {
      if (!(e instanceof RaceLost) || i + 1 >= attempts) throw e instanceof RaceLost ? e.cause : e;
    }
  }
}

/** A store conflict during a read-compute-commit step: try again. */
export class RaceLost extends Error {
  constructor(override readonly cause: ConflictError) {
    super(cause.message);
  }
}

export async function commitOrRace(kv: KvStore, ops: Op[]): Promise<void> {
  try {
    await kv.commit(PARTITION, ops);
  } catch (e) {
    if (e instanceof ConflictError) throw new RaceLost(e);
    throw e;
  }
}
