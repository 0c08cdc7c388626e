/**
 * Where identities live. Everything is in one partition, `["identity"]`, so that a membership change
 * updates the group and the user in one atomic commit. Keys:
 *
 *   ["user", id]      the user's public record (JSON bytes): {id, displayName, organization?, email?, enabled, groups,
 *                     createdAt}, its display name and e-mail address sealed under the user's subject key
 *                     (src/personal; identity.ts opens them for every read that serves a user)
 *   ["password", id]  the user's scrypt hash (kept apart so a user record never carries a secret)
 *   ["group", id]     {id, displayName, members, createdAt}
 *   ["tokens", id]    {version}: the user's token version (absent: 0). Every token names the version it
 *                     was issued under; a password change, a disable or a logout-all bumps it, and with it
 *                     deletes the user's sessions, so every token issued before stops working at once.
 *   ["reset", id]     {by, at}: the last time another account (an administrator) set the user's password,
 *                     kept until the user sets its own, and answered with each login meanwhile so that the
 *                     user learns of it (issue 29, finding 1).
 *   ["session", id, sid]  one login session: {version, refresh, previous?, expiresAt, createdAt}, where
 *                     `refresh` is the SHA-256 of the session's current refresh secret and `previous` the
 *                     one it replaced (a rotated refresh token shown again revokes the session: reuse
 *                     detection after the OAuth 2.0 Security BCP, RFC 9700 §4.14.2).
 *
 * `groups` on the user record is the per-user membership index: building an Actor is one read.
 */
import { ConflictError } from "../errors.js";
import type { Entry, Key, KvStore, Op } from "../kv/contract.js";
import { keyFamilies, PartitionKind } from "../kv/subspace.js";
import type { RecordChainSpec } from "../kv/record-chain.js";

/** The one identity partition's kind. */
export const IDENTITY = new PartitionKind("identity");
export const PARTITION = IDENTITY.partition();
/**
 * The key families of the identity partition, one subspace each; `pendingMember`: the groups that list a
 * member before it exists as a user (TruBudget's unchecked members), joined when the user is created;
 * `userPermissions`: the permissions on a user account once changed (user-permissions.ts).
 */
export const families = keyFamilies(["user", "password", "group", "tokens", "session", "reset", "system", "pendingMember", "userPermissions"]);
/**
 * The record chain of the partition (kv/record-chain.ts): users, groups, awaited members, permissions on
 * accounts and the provisioning state, so `verify` covers who could do what. Not the credentials and
 * sessions (passwords, token versions, sessions, reset records): a backup for an HTTP caller leaves some
 * out and a restore keeps the current ones (credentials.ts), and they change on every log-in.
 */
const CHAINED_FAMILIES = [families.user, families.group, families.pendingMember, families.userPermissions, families.system];
export const IDENTITY_CHAIN: RecordChainSpec = { holds: (p) => IDENTITY.holds(p), covers: (key) => CHAINED_FAMILIES.some((f) => f.contains(key)) };
export const userKey = (id: string): Key => families.user.pack([id]);
export const passwordKey = (id: string): Key => families.password.pack([id]);
export const groupKey = (id: string): Key => families.group.pack([id]);
export const tokenStateKey = (id: string): Key => families.tokens.pack([id]);
export const resetKey = (id: string): Key => families.reset.pack([id]);
export const sessionKey = (id: string, sid: string): Key => families.session.pack([id, sid]);
/** The node's provisioning state (TruBudget's provisioning.start/end): one key beside the identities, so a backup carries it. */
export const pendingMemberKey = (id: string): Key => families.pendingMember.pack([id]);
export const provisioningKey: Key = families.system.pack(["provisioning"]);
export const sessionPrefix = (id: string): Key => families.session.pack([id]);

/**
 * The login guard's partition (login-guard.ts), apart from the identities: its counters are not content
 * (a backup does not carry them) and a restore does not roll them back (compose/kinds.ts keeps the kind
 * on restore: the wipe does not drop it, the fence does not hold its writes). Keys:
 *
 *   ["pair", user, address]  {failures, until, last}: one client's failures at one account
 *   ["address", address]     the same, one client's at any account
 *   ["user", user]           the same, one account's from every address
 *   ["known", user]          {addresses}: the addresses the user last logged in from, oldest first
 *
 * `user` is the name as tried, lower-cased; `address` the client's ("" when unknown).
 */
export const LOGIN_GUARD = new PartitionKind("login-guard");
export const GUARD_PARTITION = LOGIN_GUARD.partition();
export const guardFamilies = keyFamilies(["pair", "address", "user", "known"]);

export interface UserRecord {
  readonly id: string;
  readonly displayName: string;
  /** The organization the user belongs to (TruBudget's user field), when given. */
  readonly organization?: string;
  /** The user's e-mail address, when given; stored sealed as the display name is (identity.ts). */
  readonly email?: string;
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

/** Who set a user's password other than the user itself, and when. */
export interface PasswordReset {
  readonly by: string;
  readonly at: string;
  /** The administrator requires the user to choose a new password before any session opens (native API). */
  readonly mustChange?: true;
}

export interface TokenState {
  readonly version: number;
}

export interface SessionRecord {
  /** The token version the session was opened under. */
  readonly version: number;
  /** base64url SHA-256 of the current refresh secret, and of the one it replaced. */
  readonly refresh: string;
  readonly previous?: string;
  /** When the current refresh token expires (seconds since the epoch). */
  readonly expiresAt: number;
  readonly createdAt: string;
  /** The store's token epoch it was opened in (absent: 0); a restore moves the epoch on and ends it. */
  readonly epoch?: number;
}

/** The token version stored under `entry` (0 when there is none). */
export const tokenVersion = (entry: Entry | undefined): number => (entry ? decodeRecord<TokenState>(entry).version : 0);

/**
 * Ops that revoke every token of a user: bump its token version (read as `current`) and delete its sessions.
 * Part of the commit of a password change, a disable and a logout-all.
 */
export function revocationOps(id: string, current: Entry | undefined): Op[] {
  const next: TokenState = { version: tokenVersion(current) + 1 };
  return [
    { type: "check", key: tokenStateKey(id), version: current?.version ?? null },
    { type: "put", key: tokenStateKey(id), value: Buffer.from(JSON.stringify(next)) },
    { type: "deletePrefix", prefix: sessionPrefix(id) },
  ];
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
export function replace(key: Key, version: number | null, record: UserRecord | GroupRecord): Op[] {
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
