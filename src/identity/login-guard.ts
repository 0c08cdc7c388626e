/**
 * The login guard (issue 29, finding 10): counts failed log-ins and backs off, in the identity domain so
 * that every way in (the native API, TruBudget's, a library user) shares one set of counters.
 *
 * What it counts, each with an exponential backoff once its free failures are spent (1 s, 2 s, 4 s, …,
 * up to `maxSeconds`), reset by a success:
 * - per user and address: the guesses one client makes at one account;
 * - per address: the guesses one client makes at any account (password spraying);
 * - per user, over every address: an account under attack from many addresses. Its backoff holds for
 *   every address but those the user logged in from before (the last KNOWN_ADDRESSES, since this
 *   process started), so the user's correct password from a known address goes through: nobody locks
 *   another user (root included) out of its usual address by failing on purpose, and an attacker
 *   rotating addresses gets no more guesses than the backoff allows.
 *
 * A refused attempt is not checked (no hashing work) and does not count. The counters live in the
 * process (bounded: the oldest entries are dropped past `maxEntries`); a fleet's servers each count
 * their own.
 */
import { TooManyRequestsError } from "../errors.js";

export interface LoginGuardLimits {
  /** Failures of one user from one address before its backoff starts (default 5). */
  readonly perUserAndAddress: number;
  /** Failures from one address, any user, before its backoff starts (default 50). */
  readonly perAddress: number;
  /** Failures of one user, any address, before the user's backoff starts for the failing addresses (default 20). */
  readonly perUser: number;
  /** The longest backoff, in seconds (default 900). */
  readonly maxSeconds: number;
}

export const DEFAULT_LOGIN_GUARD: LoginGuardLimits = { perUserAndAddress: 5, perAddress: 50, perUser: 20, maxSeconds: 900 };

interface Counter {
  failures: number;
  /** Milliseconds since the epoch until which attempts are refused. */
  until: number;
}

const MAX_ENTRIES = 100_000;
/** Addresses remembered per user as ones it logged in from. */
const KNOWN_ADDRESSES = 16;

export class LoginGuard {
  readonly #pairs = new Map<string, Counter>();
  readonly #addresses = new Map<string, Counter>();
  readonly #users = new Map<string, Counter>();
  /** Per user, the addresses it last logged in from (oldest first). */
  readonly #known = new Map<string, Set<string>>();

  constructor(
    readonly limits: LoginGuardLimits = DEFAULT_LOGIN_GUARD,
    private readonly now: () => number = Date.now,
  ) {}

  /** Refuses (TooManyRequestsError) an attempt that falls in a backoff; call before checking the password. */
  check(user: string, address: string | undefined): void {
    const now = this.now();
    const u = user.toLowerCase();
    const a = address ?? "";
    const waits = [this.#pairs.get(`${u}\n${a}`)?.until ?? 0, this.#addresses.get(a)?.until ?? 0];
    const underAttack = this.#users.get(u);
    if (underAttack && !this.#known.get(u)?.has(a)) waits.push(underAttack.until);
    const until = Math.max(...waits);
    if (until > now) throw new TooManyRequestsError(`too many failed log-ins: retry in ${Math.ceil((until - now) / 1000)} s`, Math.max(1, Math.ceil((until - now) / 1000)));
  }

  /** Counts a failed attempt. */
  failed(user: string, address: string | undefined): void {
    const u = user.toLowerCase();
    const a = address ?? "";
    this.#bump(this.#pairs, `${u}\n${a}`, this.limits.perUserAndAddress, () => ({ failures: 0, until: 0 }));
    this.#bump(this.#addresses, a, this.limits.perAddress, () => ({ failures: 0, until: 0 }));
    this.#bump(this.#users, u, this.limits.perUser, () => ({ failures: 0, until: 0 }));
  }

  /** A correct password: this user's and this address's failures are forgiven. */
  succeeded(user: string, address: string | undefined): void {
    const u = user.toLowerCase();
    const a = address ?? "";
    this.#pairs.delete(`${u}\n${a}`);
    this.#addresses.delete(a);
    const known = this.#known.get(u) ?? new Set<string>();
    this.#known.delete(u);
    known.delete(a);
    known.add(a);
    if (known.size > KNOWN_ADDRESSES) known.delete(known.values().next().value!);
    this.#known.set(u, known);
    if (this.#known.size > MAX_ENTRIES) this.#known.delete(this.#known.keys().next().value!);
  }

  #bump<C extends Counter>(map: Map<string, C>, key: string, free: number, fresh: () => C): C {
    const c = map.get(key) ?? fresh();
    map.delete(key); // re-inserted: the map's order is the order of last failure, oldest first
    c.failures++;
    if (c.failures > free) c.until = this.now() + Math.min(this.limits.maxSeconds, 2 ** (c.failures - free - 1)) * 1000;
    map.set(key, c);
    if (map.size > MAX_ENTRIES) map.delete(map.keys().next().value!);
    return c;
  }
}
