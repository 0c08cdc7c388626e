/**
 * Where a webhook may be POSTed (server-side request forgery, docs/security.md): not to the server's own
 * networks. A webhook URL is http or https, and every address its host resolves to must be outside the
 * loopback, private, shared (CGNAT), link-local, unique-local, multicast, reserved and unspecified
 * ranges, unless the operator's allow-list (`FLOWSTORE_WEBHOOK_ALLOW`: host names, addresses, CIDRs)
 * names the host or the address.
 *
 * Checked twice: when the subscription is created (a 400 naming `webhook.url`), and at every delivery
 * against the address the name resolves to then (a name re-pointed at an internal address after the
 * check, DNS rebinding, is refused). A delivery connects to the very address it checked (the request's
 * `lookup` answers it), on a connection of its own (no pooled socket to an earlier address), and never
 * follows a redirect: a 3xx is a failed attempt like any answer that is not 2xx.
 *
 * A name is resolved with the system's resolver (`dns.lookup`: /etc/hosts, then DNS), which runs on
 * libuv's small thread pool with no timeout of its own. So at most `concurrent` lookups run at once (a
 * lookup holds its place until the system answers, even past its timeout), and a name not answered
 * within `timeoutMs` of its start is refused as not resolving in time: a user cannot hold the pool that
 * file reads, scrypt and gzip need with names whose nameserver never answers.
 *
 * The places are shared fairly between the owners the lookups are made for (a subscription's owner):
 * one owner runs at most `perOwner` lookups at once, and a free place goes to the owners waiting in
 * turn (round robin), so one user's names whose nameserver never answers hold that user's place and
 * delay that user's deliveries only. An owner holds or waits for `perOwner` places at most: a lookup of
 * an owner whose places are all running or claimed already is refused at once as busy (`LookupBusy`),
 * without waiting, so an owner with many subscriptions whose names hang cannot keep the server's
 * deliveries waiting `timeoutMs` each. A lookup that found no place within `timeoutMs` is refused as busy
 * too. A busy lookup was never started, so nothing is known of the name: no delivery attempt is counted
 * for it (the delivery is deferred to the next pass, counted in /metrics), and a creation is answered
 * 503, to be tried again.
 */
import { lookup as resolveHost } from "node:dns/promises";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { BlockList, isIP, type LookupFunction } from "node:net";
import { ConfigurationError, UnavailableError, ValidationError } from "../errors.js";

/** The ranges refused, each with the word a refusal names it by. */
const REFUSED: readonly (readonly [string, number, "ipv4" | "ipv6", string])[] = [
  ["0.0.0.0", 8, "ipv4", "unspecified"],
  ["10.0.0.0", 8, "ipv4", "private"],
  ["100.64.0.0", 10, "ipv4", "shared (carrier-grade NAT)"],
  ["127.0.0.0", 8, "ipv4", "loopback"],
  ["169.254.0.0", 16, "ipv4", "link-local"],
  ["172.16.0.0", 12, "ipv4", "private"],
  ["192.0.0.0", 24, "ipv4", "reserved (IETF protocol assignments)"],
  ["192.168.0.0", 16, "ipv4", "private"],
  ["198.18.0.0", 15, "ipv4", "reserved (benchmarking)"],
  ["224.0.0.0", 4, "ipv4", "multicast"],
  ["240.0.0.0", 4, "ipv4", "reserved (and broadcast)"],
  ["::", 128, "ipv6", "unspecified"],
  ["::1", 128, "ipv6", "loopback"],
  // Ranges that embed an IPv4 address a gateway or the host may reach: IPv4-compatible, NAT64, 6to4.
  ["::", 96, "ipv6", "IPv4-compatible"],
  ["64:ff9b::", 96, "ipv6", "NAT64"],
  ["64:ff9b:1::", 48, "ipv6", "NAT64 (local-use)"],
  ["2002::", 16, "ipv6", "6to4"],
  ["fe80::", 10, "ipv6", "link-local"],
  ["fec0::", 10, "ipv6", "site-local"],
  ["fc00::", 7, "ipv6", "unique-local"],
  ["ff00::", 8, "ipv6", "multicast"],
];
/** One list per kind, so a refusal says which (an IPv4-mapped IPv6 address matches its IPv4 range). */
const REFUSED_LISTS = REFUSED.map(([address, prefix, family, what]) => {
  const list = new BlockList();
  list.addSubnet(address, prefix, family);
  return { list, what };
});

const familyOf = (address: string): "ipv4" | "ipv6" => (isIP(address) === 6 ? "ipv6" : "ipv4");
const bare = (hostname: string): string => hostname.replace(/^\[(.*)\]$/, "$1");
const HOST_NAME = /^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*\.?$/i;

/** Every address of a host name. */
export type HostLookup = (host: string) => Promise<{ address: string; family: number }[]>;
const systemLookup: HostLookup = (host) => resolveHost(host, { all: true, verbatim: true });

export interface ResolveOptions {
  /** How names are resolved (default the system's resolver, dns.lookup). */
  readonly lookup?: HostLookup;
  /** A name not resolved within this of its lookup's start is refused, and a lookup not started within this is refused as busy (default 2 s). */
  readonly timeoutMs?: number;
  /** Lookups running at once at most (default 2, of libuv's 4 threads). */
  readonly concurrent?: number;
  /** Lookups running at once for one owner at most (default 1). */
  readonly perOwner?: number;
  /** Told of each refusal with the address (for the operator's log; the refusal's text names only its kind). */
  readonly onRefused?: (host: string, address: string, why: string) => void;
}

/** The bounds' defaults; the configuration schema (config.ts FLOWSTORE_WEBHOOK_LOOKUPS, FLOWSTORE_WEBHOOK_LOOKUP_TIMEOUT_MS) gives the same literals. */
export const RESOLVE_DEFAULTS = { timeoutMs: 2000, concurrent: 2, perOwner: 1 } as const;

/** A name that did not resolve within the guard's timeout of its lookup's start: the name's fault (a failed attempt). */
export class SlowLookup extends Error {}

/** A lookup never started (the owner's own places held, or no free place in time): nothing known of the name (no attempt is counted). */
export class LookupBusy extends Error {}

/** A lookup waiting for its place. */
interface Waiting {
  readonly start: () => void;
}

/**
 * At most `concurrent` lookups at once, at most `perOwner` of them an owner's (running or waiting); a
 * free place goes to the owners waiting in turn. Each lookup is answered, refused as slow within
 * `timeoutMs` of its start, refused as busy at once when its owner's places are all claimed, or refused
 * as busy when it found no place within `timeoutMs`.
 */
class FairLookup {
  #running = 0;
  readonly #runningOf = new Map<string, number>();
  /** Per owner, its lookups running past their time (answered SlowLookup, still holding a place). */
  readonly #overdueOf = new Map<string, number>();
  /** The owners waiting, in turn (a Map keeps insertion order), each with its lookups in arrival order. */
  readonly #waiting = new Map<string, Waiting[]>();

  constructor(
    private readonly lookup: HostLookup,
    private readonly timeoutMs: number,
    private readonly concurrent: number,
    private readonly perOwner: number,
  ) {}

  resolve(owner: string, host: string): Promise<{ address: string; family: number }[]> {
    return new Promise((resolve, reject) => {
      const run = () => {
        this.#running++;
        this.#runningOf.set(owner, (this.#runningOf.get(owner) ?? 0) + 1);
        let overdue = false;
        const timer = setTimeout(() => {
          overdue = true;
          this.#overdueOf.set(owner, (this.#overdueOf.get(owner) ?? 0) + 1);
          reject(new SlowLookup(`${host} did not resolve in time`));
        }, this.timeoutMs);
        // A lookup that throws at once is a rejection like any other (its place given back).
        new Promise<{ address: string; family: number }[]>((answer) => answer(this.lookup(host)))
          .finally(() => {
            // Its place is given back only now: a lookup past its time still holds a thread of the pool.
            clearTimeout(timer);
            if (overdue) {
              const late = this.#overdueOf.get(owner)! - 1;
              if (late === 0) this.#overdueOf.delete(owner);
              else this.#overdueOf.set(owner, late);
            }
            this.#running--;
            const left = this.#runningOf.get(owner)! - 1;
            if (left === 0) this.#runningOf.delete(owner);
            else this.#runningOf.set(owner, left);
            this.#next();
          })
          .then(resolve, reject);
      };
      // The owner's own places are held and one of them by a lookup past its time (its names are slow):
      // refused at once, so an owner with many subscriptions cannot keep deliveries waiting `timeoutMs`
      // each for a place of its own. An owner whose lookups are merely running (healthy names answer in
      // milliseconds) waits for its place in turn.
      if (this.#claimed(owner) >= this.perOwner && (this.#overdueOf.get(owner) ?? 0) > 0)
        return reject(new LookupBusy(`the lookup of ${host} waits for the owner's own lookups (the owner's names are slow to resolve)`));
      if (this.#mayStart(owner)) return run();
      const waiting: Waiting = {
        start: () => {
          clearTimeout(expiry);
          run();
        },
      };
      const expiry = setTimeout(() => {
        const queue = this.#waiting.get(owner) ?? [];
        queue.splice(queue.indexOf(waiting), 1);
        if (queue.length === 0) this.#waiting.delete(owner);
        reject(new LookupBusy(`the lookup of ${host} found no free place in time (the server's name lookups are busy)`));
      }, this.timeoutMs);
      const queue = this.#waiting.get(owner);
      if (queue) queue.push(waiting);
      else this.#waiting.set(owner, [waiting]);
    });
  }

  /** The owner's lookups running or waiting for a place. */
  #claimed(owner: string): number {
    return (this.#runningOf.get(owner) ?? 0) + (this.#waiting.get(owner)?.length ?? 0);
  }

  #mayStart(owner: string): boolean {
    return this.#running < this.concurrent && (this.#runningOf.get(owner) ?? 0) < this.perOwner && !this.#waiting.has(owner);
  }

  /** Starts waiting lookups while places are free: the first owner in turn that may run one, which then goes last. */
  #next(): void {
    while (this.#running < this.concurrent) {
      const owner = [...this.#waiting.keys()].find((o) => (this.#runningOf.get(o) ?? 0) < this.perOwner);
      if (owner === undefined) return;
      const queue = this.#waiting.get(owner)!;
      const waiting = queue.shift()!;
      this.#waiting.delete(owner);
      if (queue.length > 0) this.#waiting.set(owner, queue);
      waiting.start();
    }
  }
}

/** The operator's exceptions: host names (as the URL spells them) and addresses or CIDRs. */
export class WebhookGuard {
  readonly #hosts = new Set<string>();
  readonly #addresses = new BlockList();
  readonly #lookup: FairLookup;
  readonly #onRefused: NonNullable<ResolveOptions["onRefused"]>;
  readonly entries: readonly string[];

  /** `entries`: host names, addresses and CIDRs (`10.0.0.0/8`, `fd00::/8`); one it cannot read is a ConfigurationError naming `variable`. */
  constructor(entries: readonly string[] = [], variable = "FLOWSTORE_WEBHOOK_ALLOW", resolve: ResolveOptions = {}) {
    this.#lookup = new FairLookup(
      resolve.lookup ?? systemLookup,
      resolve.timeoutMs ?? RESOLVE_DEFAULTS.timeoutMs,
      resolve.concurrent ?? RESOLVE_DEFAULTS.concurrent,
      resolve.perOwner ?? RESOLVE_DEFAULTS.perOwner,
    );
    this.#onRefused = resolve.onRefused ?? (() => {});
    this.entries = entries.map((e) => e.trim()).filter(Boolean);
    for (const entry of this.entries) {
      const [address, prefix, extra] = entry.split("/");
      const ip = bare(address!);
      if (isIP(ip)) {
        const bits = prefix === undefined ? (isIP(ip) === 6 ? 128 : 32) : Number(prefix);
        const max = isIP(ip) === 6 ? 128 : 32;
        if (extra !== undefined || !/^\d{1,3}$/.test(String(bits)) || bits > max)
          throw new ConfigurationError(`${variable}: ${entry} is not an address or CIDR (prefix 0 to ${max})`, variable);
        this.#addresses.addSubnet(ip, bits, familyOf(ip));
      } else if (prefix === undefined && HOST_NAME.test(entry)) this.#hosts.add(entry.toLowerCase().replace(/\.$/, ""));
      else throw new ConfigurationError(`${variable}: ${entry} is neither a host name, an address nor a CIDR`, variable);
    }
  }

  /** From the variable's text: comma- or space-separated entries. */
  static parse(text: string | undefined, variable = "FLOWSTORE_WEBHOOK_ALLOW"): WebhookGuard {
    return new WebhookGuard((text ?? "").split(/[,\s]+/), variable);
  }

  /**
   * Why `address` (what `host` resolved to) may not be connected to, or null when it may: outside every
   * refused range, or allowed by host name or address.
   */
  refusal(host: string, address: string): string | null {
    const family = familyOf(address);
    const hit = REFUSED_LISTS.find((r) => r.list.check(address, family));
    if (!hit) return null;
    if (this.#hosts.has(bare(host).toLowerCase().replace(/\.$/, "")) || this.#addresses.check(address, family)) return null;
    // The kind, never the address a name resolves to: the text reaches the user (a 400, a dead letter).
    return `${bare(host)} ${bare(host) === address ? "is" : "resolves to"} a ${hit.what} address (not in FLOWSTORE_WEBHOOK_ALLOW)`;
  }

  /**
   * Every address of `host` (an address itself, or a name resolved now, in one of `owner`'s lookup
   * places), each checked; throws naming the first refused.
   */
  async resolve(host: string, owner: string): Promise<{ address: string; family: number }[]> {
    const h = bare(host);
    const addresses = isIP(h) ? [{ address: h, family: isIP(h) }] : await this.#lookup.resolve(owner, h);
    if (addresses.length === 0) throw new Error(`${h} resolves to no address`);
    for (const { address } of addresses) {
      const why = this.refusal(h, address);
      if (why) {
        this.#onRefused(h, address, why);
        throw new RefusedTarget(why);
      }
    }
    return addresses;
  }

  /**
   * The URL a subscription of `owner` may be created with; else a ValidationError naming `field`: not
   * http(s), not resolvable, or resolving to a refused address (an UnavailableError when no lookup place
   * was free in time: nothing is known of the name then).
   */
  async check(url: string, field: string, owner: string): Promise<URL> {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new ValidationError(`${field} is not a URL`, field);
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new ValidationError(`${field} must be http or https`, field);
    if (parsed.username || parsed.password) throw new ValidationError(`${field} may not carry credentials (the body is signed instead)`, field);
    try {
      await this.resolve(parsed.hostname, owner);
    } catch (e) {
      if (e instanceof LookupBusy) throw new UnavailableError(`${field}: ${e.message}; try again`, field);
      if (e instanceof RefusedTarget) throw new ValidationError(`${field}: ${e.message}`, field);
      if (e instanceof SlowLookup) throw new ValidationError(`${field}: its host ${e.message}`, field);
      throw new ValidationError(`${field}: its host ${bare(parsed.hostname)} does not resolve (${e instanceof Error ? e.message : String(e)})`, field);
    }
    return parsed;
  }

  /**
   * POSTs `body` to `url` after checking the address its host resolves to now (in one of `owner`'s
   * lookup places), connecting to that very address; answers the status (a redirect is answered, not
   * followed). Throws when the address is refused, on a network error, and after `timeoutMs`; a lookup
   * that found no place in time throws LookupBusy.
   */
  async post(url: string, headers: Record<string, string>, body: string, timeoutMs: number, owner: string): Promise<number> {
    const target = new URL(url);
    // An address spelled in the URL is checked here (no lookup happens); a name is checked in `lookup`.
    if (isIP(bare(target.hostname))) await this.resolve(target.hostname, owner);
    const lookup: LookupFunction = (hostname, options, callback) => {
      this.resolve(hostname, owner).then(
        (all) => {
          const wanted = options.family === 4 || options.family === 6 ? all.filter((a) => a.family === options.family) : all;
          if (wanted.length === 0) return callback(Object.assign(new Error(`${hostname} has no IPv${options.family} address`), { code: "ENOTFOUND" }), "", 0);
          if (options.all) return (callback as unknown as (e: null, a: typeof wanted) => void)(null, wanted);
          callback(null, wanted[0]!.address, wanted[0]!.family);
        },
        (e: Error) => callback(e as NodeJS.ErrnoException, "", 0),
      );
    };
    const send = target.protocol === "https:" ? httpsRequest : httpRequest;
    return new Promise<number>((resolve, reject) => {
      const req = send(
        target,
        {
          method: "POST",
          headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
          lookup,
          agent: false, // a connection of its own: resolved and checked for this delivery
          signal: AbortSignal.timeout(timeoutMs),
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  }
}

/** A webhook target refused by the guard. */
export class RefusedTarget extends Error {}
