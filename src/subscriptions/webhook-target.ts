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
 * within `timeoutMs` (waiting for a place included) is refused as not resolving in time: a user cannot
 * hold the pool that file reads, scrypt and gzip need with names whose nameserver never answers.
 */
import { lookup as resolveHost } from "node:dns/promises";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { BlockList, isIP, type LookupFunction } from "node:net";
import { ConfigurationError, ValidationError } from "../errors.js";

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
  /** A name not resolved within this is refused (default 2 s). */
  readonly timeoutMs?: number;
  /** Lookups running at once at most (default 2, of libuv's 4 threads). */
  readonly concurrent?: number;
  /** Told of each refusal with the address (for the operator's log; the refusal's text names only its kind). */
  readonly onRefused?: (host: string, address: string, why: string) => void;
}

export const RESOLVE_DEFAULTS = { timeoutMs: 2000, concurrent: 2 } as const;

/** A name that did not resolve within the guard's timeout. */
export class SlowLookup extends Error {}

/** At most `concurrent` lookups at once; each answered, refused or timed out within `timeoutMs`. */
class BoundedLookup {
  #running = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(
    private readonly lookup: HostLookup,
    private readonly timeoutMs: number,
    private readonly concurrent: number,
  ) {}

  resolve(host: string): Promise<{ address: string; family: number }[]> {
    return new Promise((resolve, reject) => {
      let done = false;
      const settle = (answer: () => void) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        answer();
      };
      const start = () => {
        if (done) return this.#next(); // timed out while waiting: its place goes to the next
        this.#running++;
        this.lookup(host)
          .finally(() => {
            this.#running--;
            this.#next();
          })
          .then(
            (all) => settle(() => resolve(all)),
            (e: unknown) => settle(() => reject(e)),
          );
      };
      const timer = setTimeout(() => settle(() => reject(new SlowLookup(`${host} did not resolve in time`))), this.timeoutMs);
      if (this.#running < this.concurrent) start();
      else this.#waiting.push(start);
    });
  }

  #next(): void {
    if (this.#running < this.concurrent) this.#waiting.shift()?.();
  }
}

/** The operator's exceptions: host names (as the URL spells them) and addresses or CIDRs. */
export class WebhookGuard {
  readonly #hosts = new Set<string>();
  readonly #addresses = new BlockList();
  readonly #lookup: BoundedLookup;
  readonly #onRefused: NonNullable<ResolveOptions["onRefused"]>;
  readonly entries: readonly string[];

  /** `entries`: host names, addresses and CIDRs (`10.0.0.0/8`, `fd00::/8`); one it cannot read is a ConfigurationError naming `variable`. */
  constructor(entries: readonly string[] = [], variable = "FLOWSTORE_WEBHOOK_ALLOW", resolve: ResolveOptions = {}) {
    this.#lookup = new BoundedLookup(resolve.lookup ?? systemLookup, resolve.timeoutMs ?? RESOLVE_DEFAULTS.timeoutMs, resolve.concurrent ?? RESOLVE_DEFAULTS.concurrent);
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

  /** Every address of `host` (an address itself, or a name resolved now), each checked; throws naming the first refused. */
  async resolve(host: string): Promise<{ address: string; family: number }[]> {
    const h = bare(host);
    const addresses = isIP(h) ? [{ address: h, family: isIP(h) }] : await this.#lookup.resolve(h);
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
   * The URL a subscription may be created with; else a ValidationError naming `field`: not http(s),
   * not resolvable, or resolving to a refused address.
   */
  async check(url: string, field: string): Promise<URL> {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new ValidationError(`${field} is not a URL`, field);
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new ValidationError(`${field} must be http or https`, field);
    if (parsed.username || parsed.password) throw new ValidationError(`${field} may not carry credentials (the body is signed instead)`, field);
    try {
      await this.resolve(parsed.hostname);
    } catch (e) {
      if (e instanceof RefusedTarget) throw new ValidationError(`${field}: ${e.message}`, field);
      if (e instanceof SlowLookup) throw new ValidationError(`${field}: its host ${e.message}`, field);
      throw new ValidationError(`${field}: its host ${bare(parsed.hostname)} does not resolve (${e instanceof Error ? e.message : String(e)})`, field);
    }
    return parsed;
  }

  /**
   * POSTs `body` to `url` after checking the address its host resolves to now, connecting to that very
   * address; answers the status (a redirect is answered, not followed). Throws when the address is refused,
   * on a network error, and after `timeoutMs`.
   */
  async post(url: string, headers: Record<string, string>, body: string, timeoutMs: number): Promise<number> {
    const target = new URL(url);
    // An address spelled in the URL is checked here (no lookup happens); a name is checked in `lookup`.
    if (isIP(bare(target.hostname))) await this.resolve(target.hostname);
    const lookup: LookupFunction = (hostname, options, callback) => {
      this.resolve(hostname).then(
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
