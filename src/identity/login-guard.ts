/**
 * The login guard (issue 29, finding 10): counts failed log-ins and backs off, in the identity domain so
 * that every way in (the native API, TruBudget's, a library user) shares one set of counters.
 *
 * What it counts, each with an exponential backoff once its free failures are spent (1 s, 2 s, 4 s, …,
 * up to `maxSeconds`), reset by a success (the per-address count is not: it only lapses):
 * - per user and address: the guesses one client makes at one account;
 * - per address: the guesses one client makes at any account (password spraying);
 * - per user, over every address: an account under attack from many addresses. Its backoff holds for
 *   every address but those the user logged in from before (the last KNOWN_ADDRESSES), so the user's
 *   correct password from a known address goes through: nobody locks another user (root included) out
 *   of its usual address by failing on purpose, and an attacker rotating addresses gets no more guesses
 *   than the backoff allows.
 *
 * A refused attempt is not checked (no hashing work) and does not count.
 *
 * The counters and the known addresses live in the store (records.ts, the partition ["login-guard"]),
 * so every server of a fleet and every restart share them: read on each attempt (one `getMany`),
 * written only on a failure, and on a success that forgives something or adds an address. Each write
 * reads the entries it changes and commits guarded by their versions, retried on a conflict: two
 * servers failing at once both count (no lost increment). The partition is kept on restore
 * (compose/kinds.ts): a restore neither rolls the counters back nor carries them in a backup. A counter
 * whose last failure is older than `forgetSeconds` (and whose backoff is over) counts from zero again,
 * and each failure deletes a few such stale entries, so the partition holds about the failures of the
 * last `forgetSeconds`.
 */
import { ConflictError, TooManyRequestsError } from "../errors.js";
import type { Entry, Key, KvStore, Op } from "../kv/contract.js";
import { GUARD_PARTITION, guardFamilies } from "./records.js";

export interface LoginGuardLimits {
  /** Failures of one user from one address before its backoff starts (default 5). */
  readonly perUserAndAddress: number;
  /** Failures from one address, any user, before its backoff starts (default 50). */
  readonly perAddress: number;
  /** Failures of one user, any address, before the user's backoff starts for the failing addresses (default 20). */
  readonly perUser: number;
  /** The longest backoff, in seconds (default 900). */
  readonly maxSeconds: number;
  /** A counter whose last failure is this old, its backoff over, starts from zero again (default 86,400: a day). */
  readonly forgetSeconds?: number;
}

export const DEFAULT_LOGIN_GUARD: LoginGuardLimits = { perUserAndAddress: 5, perAddress: 50, perUser: 20, maxSeconds: 900, forgetSeconds: 86_400 };

/** A stored counter. */
export interface GuardCounter {
  readonly failures: number;
  /** Milliseconds since the epoch until which attempts are refused (0: none). */
  readonly until: number;
  /** Milliseconds since the epoch of the last failure counted. */
  readonly last: number;
}

/** Addresses remembered per user as ones it logged in from. */
export const KNOWN_ADDRESSES = 16;
/** Stale entries a failure looks at (and deletes) after counting. */
const PRUNE_BATCH = 16;
/** A write that loses a race reads again and retries; this many times at most. */
const ATTEMPTS = 1000;

const pairKey = (u: string, a: string): Key => guardFamilies.pair.pack([u, a]);
const addressKey = (a: string): Key => guardFamilies.address.pack([a]);
const userKey = (u: string): Key => guardFamilies.user.pack([u]);
const knownKey = (u: string): Key => guardFamilies.known.pack([u]);

const decode = <T>(e: Entry | undefined): T | undefined => (e ? (JSON.parse(Buffer.from(e.value).toString("utf8")) as T) : undefined);
const encode = (v: unknown): Buffer => Buffer.from(JSON.stringify(v));

export class LoginGuard {
  /** Where the next prune starts (per process; every process prunes its own stretch). */
  #pruneAfter: string | null = null;

  constructor(
    private readonly kv: KvStore,
    readonly limits: LoginGuardLimits = DEFAULT_LOGIN_GUARD,
    private readonly now: () => number = Date.now,
  ) {}

  get #forgetMs(): number {
    return (this.limits.forgetSeconds ?? DEFAULT_LOGIN_GUARD.forgetSeconds!) * 1000;
  }

  /** The counter as it counts now: undefined when there is none or it is forgotten. */
  #live(e: Entry | undefined, now: number): GuardCounter | undefined {
    const c = decode<GuardCounter>(e);
    return c && !this.#stale(c, now) ? c : undefined;
  }

  #stale(c: GuardCounter, now: number): boolean {
    return c.until <= now && c.last + this.#forgetMs <= now;
  }

  /** Refuses (TooManyRequestsError) an attempt that falls in a backoff; call before checking the password. */
  async check(user: string, address: string | undefined): Promise<void> {
    const now = this.now();
    const u = user.toLowerCase();
    const a = address ?? "";
    const [pair, addr, usr, known] = await this.kv.getMany(GUARD_PARTITION, [pairKey(u, a), addressKey(a), userKey(u), knownKey(u)]);
    const waits = [this.#live(pair, now)?.until ?? 0, this.#live(addr, now)?.until ?? 0];
    const underAttack = this.#live(usr, now);
    if (underAttack && !decode<{ addresses: string[] }>(known)?.addresses.includes(a)) waits.push(underAttack.until);
    const until = Math.max(...waits);
    if (until > now) throw new TooManyRequestsError(`too many failed log-ins: retry in ${Math.ceil((until - now) / 1000)} s`, Math.max(1, Math.ceil((until - now) / 1000)));
  }

  /** Counts a failed attempt: the three counters in one commit, guarded by their versions (retried on a race). */
  async failed(user: string, address: string | undefined): Promise<void> {
    const u = user.toLowerCase();
    const a = address ?? "";
    const keys: [Key, number][] = [
      [pairKey(u, a), this.limits.perUserAndAddress],
      [addressKey(a), this.limits.perAddress],
      [userKey(u), this.limits.perUser],
    ];
    await this.#retry(async () => {
      const now = this.now();
      const entries = await this.kv.getMany(
        GUARD_PARTITION,
        keys.map(([k]) => k),
      );
      const ops: Op[] = keys.flatMap(([key, free], i): Op[] => {
        const failures = (this.#live(entries[i], now)?.failures ?? 0) + 1;
        const until = failures > free ? now + Math.min(this.limits.maxSeconds, 2 ** (failures - free - 1)) * 1000 : 0;
        return [
          { type: "check", key, version: entries[i]?.version ?? null },
          { type: "put", key, value: encode({ failures, until, last: now } satisfies GuardCounter) },
        ];
      });
      await this.kv.commit(GUARD_PARTITION, ops);
    });
    await this.prune(PRUNE_BATCH);
  }

  /**
   * A correct password: this user's failures at this address are forgiven, and the address is known to
   * the user. The address's own count is not: it only lapses (`forgetSeconds` without a failure), or
   * anyone holding an account could spray guesses at other accounts from one address without limit,
   * logging in to its own now and then.
   */
  async succeeded(user: string, address: string | undefined): Promise<void> {
    const u = user.toLowerCase();
    const a = address ?? "";
    const keys = [pairKey(u, a), knownKey(u)];
    await this.#retry(async () => {
      const [pair, knownEntry] = await this.kv.getMany(GUARD_PARTITION, keys);
      const known = decode<{ addresses: string[] }>(knownEntry)?.addresses ?? [];
      // Written only when it changes something: a usual log in from a usual address costs no write.
      if (!pair && known.includes(a)) return;
      const addresses = known.includes(a) ? known : [...known, a].slice(-KNOWN_ADDRESSES);
      await this.kv.commit(GUARD_PARTITION, [
        { type: "check", key: keys[0]!, version: pair?.version ?? null },
        { type: "check", key: keys[1]!, version: knownEntry?.version ?? null },
        ...(pair ? [{ type: "delete" as const, key: keys[0]! }] : []),
        { type: "put", key: keys[1]!, value: encode({ addresses }) },
      ]);
    });
  }

  /** A counter as stored (pair: user and address; address; user), for operators and tests; undefined when none counts. */
  async counter(of: { user: string; address?: string } | { address: string }): Promise<GuardCounter | undefined> {
    const key = "user" in of ? (of.address === undefined ? userKey(of.user.toLowerCase()) : pairKey(of.user.toLowerCase(), of.address)) : addressKey(of.address);
    return this.#live(await this.kv.get(GUARD_PARTITION, key), this.now());
  }

  /**
   * Deletes up to `limit` stale counters (forgotten, their backoff over), looking from where the last
   * prune of this process stopped; answers how many it deleted. A counter counted meanwhile is kept
   * (each delete is guarded by the version read).
   */
  async prune(limit: number): Promise<number> {
    const now = this.now();
    const page = await this.kv.scan(GUARD_PARTITION, { limit, after: this.#pruneAfter });
    this.#pruneAfter = page.cursor;
    const ops: Op[] = [];
    for (const e of page.entries) {
      if (guardFamilies.known.contains(e.key)) continue;
      const c = decode<GuardCounter>(e)!;
      if (this.#stale(c, now)) ops.push({ type: "check", key: e.key, version: e.version }, { type: "delete", key: e.key });
    }
    if (ops.length === 0) return 0;
    try {
      await this.kv.commit(GUARD_PARTITION, ops);
    } catch (e) {
      if (e instanceof ConflictError) return 0; // counted meanwhile: a later prune sees it again
      throw e;
    }
    return ops.length / 2;
  }

  async #retry(step: () => Promise<void>): Promise<void> {
    for (let i = 1; ; i++) {
      try {
        return await step();
      } catch (e) {
        if (!(e instanceof ConflictError) || i >= ATTEMPTS) throw e;
      }
    }
  }
}
