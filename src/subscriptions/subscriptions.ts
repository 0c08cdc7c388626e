/**
 * Durable subscriptions (issue 26, part 3): a named filter over the store-wide change feed
 * (resources/log/feed.ts) whose position is kept in the store, so it survives restarts and a switch to
 * another server of a fleet (the servers share the store). Delivered to a pull consumer
 * (`pull`: read, then `ack`) or to a webhook (`deliverPending`, run by the background runner).
 *
 * Guarantees (docs/subscriptions.md):
 * - at least once: a delivery is acknowledged only after it was answered (a pull's `ack`, a webhook's
 *   2xx), and an acknowledgment is a guarded write (the cursor's version; for a webhook, the lease's
 *   too), so nothing is skipped by a race; an event can be delivered again after a crash or a lost lease;
 * - in order per partition: events are read in feed order, and the events a crash left without a feed
 *   entry (feed.ts) are read before the next entry of their partition, as the change feed does; the
 *   last seq acknowledged of each partition is stored for that;
 * - as the owner may read it now: every event is re-checked at delivery against the owner's current
 *   view (its history intent, a permission change's `listPermissions`, permission maps left out for
 *   those who may not list them: `audit.eventFor`), and against the filter's intent;
 * - one deliverer: a webhook is delivered by the server holding its lease (a record in the
 *   subscription's partition, taken when free or expired, renewed each pass).
 *
 * Who may: a subscription is its creator's (the owner): only the owner reads, pulls or acknowledges it.
 * The owner or a holder of `global.manageSubscriptions` (an operator) may read it, delete it, and read
 * and replay its dead letters; anyone else gets a 404, as for a subscription that does not exist.
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { isTop, type Actor } from "../access/actor.js";
import type { GlobalPermissions } from "../access/global.js";
import { ConflictError, NotFoundError, UnavailableError, ValidationError } from "../errors.js";
import type { Identity } from "../identity/index.js";
import { allPartitions, type Entry, type KvStore, type Op, type Partition } from "../kv/contract.js";
import { assertRecordedKey, recordedKeyOf, recordKeyId } from "../kv/recorded-key.js";
import type { Feed, FeedEntry } from "../resources/log/feed.js";
import type { ResourceEvent } from "../resources/model/events.js";
import type { Ref } from "../resources/model/ref.js";
import type { Subjects } from "../resources/personal/subjects.js";
import type { Assignees } from "../workflow/assignees.js";
import { subscriptionLayout as L } from "./layout.js";
import { SecretSeal, WEBHOOK_KEY_RECORD, type WebhookKeyOptions } from "./secrets.js";
import { SIGNATURE_HEADER, sign } from "./signature.js";
import { LookupBusy, type ResolveOptions, WebhookGuard } from "./webhook-target.js";
import type { CreateSubscription, CreatedSubscription, DeadLetter, Delivered, Digest, Replayed, Subscription, SubscriptionEvents, SubscriptionFilter } from "./wire.js";

/** The global intent of operators over every subscription: read, delete, read and replay dead letters. */
export const SUBSCRIPTION_INTENTS = ["global.manageSubscriptions"] as const;
const MANAGE = SUBSCRIPTION_INTENTS[0];

declare module "../access/intents.js" {
  interface DeclaredIntents {
    subscriptions: (typeof SUBSCRIPTION_INTENTS)[number];
  }
}

export interface SubscriptionsOptions {
  readonly clock?: () => number;
  /** How long a server's webhook lease lasts unless renewed (default 10 s): the longest a fleet waits for a dead deliverer. */
  readonly leaseMs?: number;
  /** The first retry's delay; each retry doubles it (default 1 s). */
  readonly retryBaseMs?: number;
  /** Attempts of one delivery before it goes to the dead letters (default 8). */
  readonly maxAttempts?: number;
  /** A receiver that does not answer within this is a failed attempt (default 10 s). */
  readonly timeoutMs?: number;
  /** Events in one webhook delivery at most (default 100). */
  readonly batch?: number;
  /** Webhook hosts, addresses and CIDRs allowed although internal (FLOWSTORE_WEBHOOK_ALLOW; webhook-target.ts). */
  readonly allow?: readonly string[];
  /** The key webhook secrets are sealed with at rest (FLOWSTORE_WEBHOOK_KEY, or a key file; secrets.ts). */
  readonly secretKey?: WebhookKeyOptions;
  /** How webhook hosts are resolved: bounded in time and in lookups at once (webhook-target.ts). */
  readonly resolve?: ResolveOptions;
  /**
   * Told once per delivery pass of each owner whose deliveries were deferred (their name lookups found no
   * place: no attempt counted, tried again at the next pass), with how many and the last refusal (the
   * operator's log); `deferredDeliveries` counts them all (/metrics).
   */
  readonly onDeferred?: (owner: string, deliveries: number, reason: string) => void;
}

export const SUBSCRIPTION_DEFAULTS = { leaseMs: 10_000, retryBaseMs: 1000, maxAttempts: 8, timeoutMs: 10_000, batch: 100 } as const;

/** The events one pull answers at most, and the feed entries one read scans. */
export const PULL_LIMIT = { default: 100, max: 1000 } as const;
const ENTRIES_PER_READ = 500;
/** The feed entries one read of a subscription scans at most (the rest is `more`). */
const ENTRIES_PER_PAGE = 10_000;
const ATTEMPTS = 20;
/** Webhook subscriptions one server delivers at once. */
const CONCURRENT_DELIVERIES = 8;

interface Stored {
  id: string;
  name: string;
  owner: string;
  filter: SubscriptionFilter;
  webhook?: { url: string; digest?: boolean };
  /** The webhook's HMAC secret, sealed (secrets.ts). */
  sealedSecret?: string;
  /** As stores written before secrets were sealed hold it: read, and sealed at open (`requireKey`). */
  secret?: string;
  createdAt: string;
}

/** Acknowledged: the feed entries before `position`, and of entry `position` the events up to `seq`. */
interface Cursor {
  position: number;
  seq: number;
}

interface Lease {
  holder: string;
  until: number;
}

/** One pass's deferred deliveries, by owner: how many, and the last refusal. */
type Deferrals = Map<string, { deliveries: number; reason: string }>;

interface Retry {
  attempts: number;
  nextAt: number;
  error: string;
}

const json = (v: unknown): Buffer => Buffer.from(JSON.stringify(v));
const parse = <T>(e: Entry): T => JSON.parse(e.value.toString("utf8")) as T;
const spell = (c: Cursor): string => `${c.position}-${c.seq}`;
const before = (a: Cursor, b: Cursor): boolean => a.position < b.position || (a.position === b.position && a.seq < b.seq);

/** `<position>-<seq>` → a cursor; ValidationError naming `field` when malformed. */
function cursorOf(text: string, field: string): Cursor {
  const m = /^(\d{1,15})-(\d{1,15})$/.exec(text);
  if (!m) throw new ValidationError(`${field} must be a position this subscription delivered (<feed position>-<seq>)`, field);
  return { position: Number(m[1]), seq: Number(m[2]) };
}

/** True when `event` passes the filter's path and types (the intent is checked with the owner's view). */
export function matches(filter: SubscriptionFilter, event: ResourceEvent): boolean {
  const { path, types } = filter;
  if (path && (event.path.length < path.length || path.some((p, i) => event.path[i]!.type !== p.type || event.path[i]!.id !== p.id))) return false;
  if (types && !types.some((t) => t === event.type || (t.endsWith(".*") && event.type.startsWith(t.slice(0, -1))))) return false;
  return true;
}

/** What subscriptions need of a schema's store: its types' intents, who may read an event, an intent check. */
export interface EventReader {
  readonly schema: { readonly types: ReadonlyMap<string, { readonly intents: { readonly all: readonly string[] } }> };
  readonly audit: { eventFor(actor: Actor, event: ResourceEvent, options?: { sealed?: boolean }): Promise<ResourceEvent | null> };
  readonly reads: { assertIntent(actor: Actor, ref: Ref, intent: string): Promise<void> };
}

export interface SubscriptionsParts {
  readonly kv: KvStore;
  readonly feed: Feed;
  /** The stores whose events the feed carries (each schema's), asked in turn who may read an event. */
  readonly stores: readonly EventReader[];
  readonly identity: Identity;
  readonly global: GlobalPermissions;
  readonly assignees: Assignees;
  /**
   * Opens the personal data sealed in what is delivered (resources/personal/subjects.ts): plain text
   * while the subject's key exists, erased after. Pages are read sealed and opened only as they leave,
   * so a dead letter keeps the ciphertext and an erasure reaches it too.
   */
  readonly personal: Pick<Subjects, "openEvents" | "masked">;
}

/** What one page of a subscription's events holds, and the cursor and per-partition marks that acknowledge it. */
interface Page {
  items: Delivered[];
  ack: Cursor;
  more: boolean;
}

export class Subscriptions {
  /** This process, as a lease holder. */
  readonly holder = randomUUID();
  readonly #clock: () => number;
  readonly #o: Required<Omit<SubscriptionsOptions, "clock" | "allow" | "secretKey" | "resolve" | "onDeferred">>;
  readonly #onDeferred: NonNullable<SubscriptionsOptions["onDeferred"]>;
  /** Webhook deliveries deferred since start because their name lookup found no place (not attempted). */
  #deferred = 0;
  readonly #guard: WebhookGuard;
  readonly #secretKey: WebhookKeyOptions;
  #seal: Promise<SecretSeal> | undefined;
  #keyRecorded = false;

  constructor(
    private readonly parts: SubscriptionsParts,
    options: SubscriptionsOptions = {},
  ) {
    this.#clock = options.clock ?? Date.now;
    const { clock: _, allow, secretKey, resolve, onDeferred, ...rest } = options;
    this.#onDeferred = onDeferred ?? (() => {});
    this.#o = { ...SUBSCRIPTION_DEFAULTS, ...Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined)) };
    this.#guard = new WebhookGuard(allow, undefined, resolve);
    this.#secretKey = secretKey ?? {};
  }

  /** The seal of webhook secrets, its key loaded when first needed. */
  #secrets(): Promise<SecretSeal> {
    this.#seal ??= SecretSeal.load(this.#secretKey);
    return this.#seal;
  }

  /**
   * At open, for a server whose webhook key is its own (configured, or a key file; not a throwaway key):
   * refuses a key other than the one the store's secrets were sealed with (a ConfigurationError naming
   * FLOWSTORE_WEBHOOK_KEY), then seals the secrets a store written before sealing holds in clear, each in
   * a commit checked on its record's version (a record changed meanwhile is left to the next open).
   */
  async requireKey(): Promise<void> {
    const { kv } = this.parts;
    // A key given (FLOWSTORE_WEBHOOK_KEY) is checked now, so a malformed one refuses the start instead of the
    // first subscription; a key file is made on first use, so it is loaded only for a store that holds secrets.
    const given = this.#secretKey.key;
    if (given !== undefined && given !== "") await this.#secrets();
    if ((await recordedKeyOf(kv, WEBHOOK_KEY_RECORD)) !== null) await assertRecordedKey(kv, WEBHOOK_KEY_RECORD, (await this.#secrets()).keyId);
    for await (const p of allPartitions(kv, L.kind.kind)) {
      const r = await kv.get(p, L.record);
      if (!r) continue;
      const { secret, ...rest } = parse<Stored>(r);
      if (secret === undefined) continue;
      await this.#recordKey();
      try {
        await kv.commit(p, [
          { type: "check", key: L.record, version: r.version },
          { type: "put", key: L.record, value: json({ ...rest, sealedSecret: (await this.#secrets()).seal(secret, rest.id) } satisfies Stored) },
        ]);
      } catch (e) {
        if (!(e instanceof ConflictError)) throw e;
      }
    }
  }

  /**
   * Forgets that this process recorded its key: a restore replaced the store's content, the record of
   * the webhook key included (the backup's, or none), so the next secret sealed records and checks it again.
   */
  forgetRecordedKey(): void {
    this.#keyRecorded = false;
  }

  /** Records this server's key as the store's webhook key before the first secret it seals (refused when the store names another). */
  async #recordKey(): Promise<void> {
    if (this.#keyRecorded) return;
    await recordKeyId(this.parts.kv, WEBHOOK_KEY_RECORD, (await this.#secrets()).keyId);
    this.#keyRecorded = true;
  }

  async #secretOf(s: Stored): Promise<string> {
    if (s.sealedSecret !== undefined) return (await this.#secrets()).open(s.sealedSecret, s.id);
    if (s.secret !== undefined) return s.secret;
    throw new NotFoundError(`subscription ${s.id} has no webhook`);
  }

  // ------------------------------------------------------------------ the subscriptions

  async create(actor: Actor, body: CreateSubscription): Promise<CreatedSubscription> {
    const filter = body.filter ?? {};
    if (filter.intent !== undefined) this.#checkIntent(filter.intent);
    // Not to the server's own networks (server-side request forgery): checked again at every delivery.
    if (body.webhook) await this.#guard.check(body.webhook.url, "webhook.url", actor.id);
    const id = randomBytes(12).toString("base64url");
    const secret = body.webhook ? randomBytes(32).toString("base64url") : undefined;
    if (secret !== undefined) await this.#recordKey();
    const sealedSecret = secret === undefined ? undefined : (await this.#secrets()).seal(secret, id);
    const stored: Stored = {
      id,
      name: body.name,
      owner: actor.id,
      filter,
      ...(body.webhook ? { webhook: { url: body.webhook.url, ...(body.webhook.digest ? { digest: true } : {}) }, sealedSecret } : {}),
      createdAt: new Date(this.#clock()).toISOString(),
    };
    // It starts at the feed's head: a subscription delivers what is committed from now on.
    const cursor = await this.#headCursor();
    await this.parts.kv.commit(L.partition(id), [
      { type: "check", key: L.record, version: null },
      { type: "put", key: L.record, value: json(stored) },
      { type: "put", key: L.cursor, value: json(cursor) },
    ]);
    return { subscription: this.#wire(stored, cursor, cursor.position), ...(secret ? { secret } : {}) };
  }

  async get(actor: Actor, id: string): Promise<Subscription> {
    const s = await this.#managed(actor, id);
    return this.#wire(s, await this.#cursor(id).then((c) => c.value), await this.parts.feed.head());
  }

  /** The caller's own subscriptions. */
  async list(actor: Actor): Promise<Subscription[]> {
    const out: Subscription[] = [];
    const head = await this.parts.feed.head();
    for await (const p of allPartitions(this.parts.kv, L.kind.kind)) {
      const [r, c] = await this.parts.kv.getMany(p, [L.record, L.cursor]);
      if (!r || !c) continue;
      const s = parse<Stored>(r);
      if (s.owner === actor.id) out.push(this.#wire(s, parse<Cursor>(c), head));
    }
    return out;
  }

  async delete(actor: Actor, id: string): Promise<void> {
    await this.#managed(actor, id);
    await this.parts.kv.dropPartition(L.partition(id));
  }

  // ------------------------------------------------------------------ the pull consumer

  /**
   * Acknowledges `ack` (when given: a guarded write of the cursor), then reads the events past the
   * cursor that pass the filter, as the owner may read them now. Owner only.
   */
  async pull(actor: Actor, id: string, options: { ack?: string; limit?: number } = {}): Promise<SubscriptionEvents> {
    const s = await this.#owned(actor, id);
    if (options.ack !== undefined) await this.#ack(id, cursorOf(options.ack, "ack"), null);
    // The owner as it is now (its groups as stored, not as its token was issued).
    const owner = await this.parts.identity.actorFor(s.owner);
    const page = await this.#read(s, owner, (await this.#cursor(id)).value, options.limit ?? PULL_LIMIT.default);
    const events = await this.parts.personal.openEvents(page.items.map((i) => i.event));
    return { items: page.items.map((i, n) => ({ ...i, event: events[n]! })), ack: spell(page.ack), more: page.more };
  }

  // ------------------------------------------------------------------ dead letters

  /**
   * The dead letters, their bodies as the caller may read them: to the owner, each event it may still
   * read (the feed's visibility, `#visible`) with its personal data opened; to an operator, which passed
   * no view of these events, with every sealed value masked (neither plain text nor ciphertext).
   */
  async deadLetters(actor: Actor, id: string): Promise<DeadLetter[]> {
    const s = await this.#managed(actor, id);
    const page = await this.parts.kv.scan(L.partition(id), { prefix: L.dead.prefix, limit: 1000 });
    const owner = s.owner === actor.id ? await this.parts.identity.actorFor(s.owner) : null;
    const bodyFor = async (body: string): Promise<string> => {
      const parsed = JSON.parse(body) as { events?: Delivered[] };
      if (owner === null || !Array.isArray(parsed.events)) return JSON.stringify(this.parts.personal.masked(parsed));
      const visible: Delivered[] = [];
      for (const d of parsed.events) {
        const event = await this.#visible(owner, s.filter, d.event);
        if (event) visible.push({ ...d, event: event as Delivered["event"] });
      }
      const opened = await this.parts.personal.openEvents(visible.map((d) => d.event));
      return JSON.stringify({ ...parsed, events: visible.map((d, n) => ({ ...d, event: opened[n]! })) });
    };
    return Promise.all(page.entries.map((e) => parse<DeadLetter>(e)).map(async (l) => ({ ...l, body: await bodyFor(l.body) })));
  }

  /** POSTs a dead letter again, signed now: delivered, it is removed; not, it is kept. */
  async replay(actor: Actor, id: string, n: number): Promise<Replayed> {
    const s = await this.#managed(actor, id);
    const key = L.dead.pack([n]);
    const e = await this.parts.kv.get(L.partition(id), key);
    if (!e || !s.webhook) throw new NotFoundError(`subscription ${id} has no dead letter ${n}`);
    const letter = parse<DeadLetter>(e);
    const result = await this.#post(s, await this.#opened(letter.body));
    if (result.ok)
      await this.parts.kv
        .commit(L.partition(id), [
          { type: "check", key, version: e.version },
          { type: "delete", key },
        ])
        .catch(() => undefined);
    return { delivered: result.ok, ...(result.status !== undefined ? { status: result.status } : {}), ...(result.ok ? {} : { error: result.error }) };
  }

  // ------------------------------------------------------------------ the digest

  /** The caller's open assignments (TruBudget #1904's daily digest), as JSON and as plain text. */
  async digest(actor: Actor): Promise<Digest> {
    const assigned = await this.parts.assignees.assignmentsOf(actor, actor.id);
    const items = assigned
      .filter((a) => a.status !== "closed")
      .map((a) => ({ type: a.type, ids: [...a.ids], ...(a.displayName !== undefined ? { displayName: a.displayName } : {}), status: a.status }));
    const day = new Date(this.#clock()).toISOString().slice(0, 10);
    const lines = items.map((i) => `- ${i.type} ${i.ids.join("/")}${i.displayName ? `: ${i.displayName}` : ""}`);
    const text = [`Open assignments of ${actor.id} on ${day}: ${items.length}`, ...lines].join("\n") + "\n";
    return { user: actor.id, day, open: items.length, items, text };
  }

  // ------------------------------------------------------------------ webhook delivery (background)

  /**
   * One pass over every webhook subscription: where this process holds (or takes) the lease and no
   * retry is waiting, deliver what is pending, batch by batch, until caught up or an attempt fails.
   * Failures of one subscription go to `onError` and do not stop the others.
   */
  async deliverPending(onError: (e: unknown, id: string) => void = () => {}): Promise<void> {
    // A sliding window of a few at once: the next starts as soon as one ends, so one slow receiver or
    // name holds one place of the window, not a batch of the others.
    const running = new Set<Promise<void>>();
    const deferred: Deferrals = new Map();
    for await (const p of allPartitions(this.parts.kv, L.kind.kind)) {
      const id = String(p[1]);
      const one: Promise<void> = this.#deliverOne(id, deferred)
        .catch((e: unknown) => onError(e, id))
        .finally(() => running.delete(one));
      running.add(one);
      if (running.size >= CONCURRENT_DELIVERIES) await Promise.race(running);
    }
    await Promise.all(running);
    for (const [owner, { deliveries, reason }] of deferred) this.#onDeferred(owner, deliveries, reason);
  }

  /** Webhook deliveries deferred since start because their name lookup found no place (not attempted; /metrics). */
  get deferredDeliveries(): number {
    return this.#deferred;
  }

  /** A delivery not attempted (its lookup found no place): counted, and told once per pass per owner. */
  #defer(s: Stored, reason: string, deferred: Deferrals): void {
    this.#deferred++;
    deferred.set(s.owner, { deliveries: (deferred.get(s.owner)?.deliveries ?? 0) + 1, reason });
  }

  async #deliverOne(id: string, deferred: Deferrals): Promise<void> {
    const { kv } = this.parts;
    const partition = L.partition(id);
    const r = await kv.get(partition, L.record);
    const s = r ? parse<Stored>(r) : undefined;
    if (!s?.webhook) return;
    const lease = await this.#takeLease(partition);
    if (lease === null) return;
    try {
      await this.#secretOf(s);
    } catch (e) {
      // Sealed under another key than this server's: released for a server that can open it, skipped this pass.
      if (e instanceof UnavailableError) await this.#releaseLease(partition, lease);
      throw e;
    }
    let actor: Actor;
    try {
      actor = await this.parts.identity.actorFor(s.owner);
    } catch {
      return; // the owner is disabled or gone: nothing is delivered meanwhile
    }
    try {
      if (s.webhook.digest) await this.#deliverDigest(s, actor, lease, deferred);
      await this.#deliverEvents(s, actor, lease, deferred);
    } catch (e) {
      // A lost lease (or a delete) in the middle: another server, or nobody, delivers from the cursor.
      if (!(e instanceof ConflictError || e instanceof NotFoundError)) throw e;
    }
  }

  async #deliverEvents(s: Stored, actor: Actor, taken: number, deferred: Deferrals): Promise<void> {
    const { kv } = this.parts;
    const id = s.id;
    const partition = L.partition(id);
    let lease = taken;
    for (let round = 0; round < 100; round++) {
      if (round > 0) {
        // Renewed each round, so a long pass keeps it; lost, another server delivers from the cursor.
        const renewed = await this.#takeLease(partition);
        if (renewed === null) return;
        lease = renewed;
      }
      const retry = await kv.get(partition, L.retry);
      if (retry && parse<Retry>(retry).nextAt > this.#clock()) return;
      const cursor = (await this.#cursor(id)).value;
      const page = await this.#read(s, actor, cursor, this.#o.batch);
      if (page.items.length === 0) {
        if (before(cursor, page.ack)) await this.#ack(id, page.ack, lease);
        if (!page.more) return;
        continue;
      }
      const body = JSON.stringify({ subscription: id, ack: spell(page.ack), events: page.items });
      const result = await this.#post(s, await this.#opened(body));
      // Not attempted (the owner's own lookup place held, or none free in time): tried again at the next pass, no attempt counted.
      if (!result.attempted) return this.#defer(s, result.error, deferred);
      if (result.ok) {
        await this.#ack(id, page.ack, lease, [{ type: "delete", key: L.retry }]);
        if (!page.more) return;
        continue;
      }
      const attempts = (retry ? parse<Retry>(retry).attempts : 0) + 1;
      if (attempts >= this.#o.maxAttempts) {
        // Given up: the batch goes to the dead letters and the subscription moves past it, in one commit.
        const next = await kv.get(partition, L.deadNext);
        const n = next ? parse<number>(next) : 1;
        const letter: DeadLetter = { n, at: new Date(this.#clock()).toISOString(), attempts, error: result.error, body };
        await this.#ack(id, page.ack, lease, [
          { type: "check", key: L.deadNext, version: next?.version ?? null },
          { type: "put", key: L.dead.pack([n]), value: json(letter) },
          { type: "put", key: L.deadNext, value: json(n + 1) },
          { type: "delete", key: L.retry },
        ]);
        continue;
      }
      const wait = this.#o.retryBaseMs * 2 ** (attempts - 1);
      await kv.commit(partition, [
        { type: "check", key: L.lease, version: lease },
        { type: "put", key: L.retry, value: json({ attempts, nextAt: this.#clock() + wait, error: result.error } satisfies Retry) },
      ]);
      return;
    }
  }

  /** Once per UTC day, the owner's digest to the webhook (retried on the next pass when it fails). */
  async #deliverDigest(s: Stored, actor: Actor, lease: number, deferred: Deferrals): Promise<void> {
    const partition = L.partition(s.id);
    const last = await this.parts.kv.get(partition, L.digestDay);
    if (last && parse<string>(last) === new Date(this.#clock()).toISOString().slice(0, 10)) return;
    const digest = await this.digest(actor);
    const result = await this.#post(s, JSON.stringify({ subscription: s.id, digest }));
    if (!result.attempted) return this.#defer(s, result.error, deferred);
    if (!result.ok) return;
    await this.parts.kv.commit(partition, [
      { type: "check", key: L.lease, version: lease },
      { type: "check", key: L.digestDay, version: last?.version ?? null },
      { type: "put", key: L.digestDay, value: json(digest.day) },
    ]);
  }

  /**
   * Takes or renews the lease (renewed once half of it is spent); answers its version, or null when
   * another live server holds it or the subscription is gone.
   */
  async #takeLease(partition: Partition): Promise<number | null> {
    const [record, e] = await this.parts.kv.getMany(partition, [L.record, L.lease]);
    if (!record) return null;
    const now = this.#clock();
    if (e) {
      const l = parse<Lease>(e);
      if (l.holder !== this.holder && l.until > now) return null;
      if (l.holder === this.holder && l.until - now > this.#o.leaseMs / 2) return e.version;
    }
    try {
      const { version } = await this.parts.kv.commit(partition, [
        { type: "check", key: L.record, version: record.version },
        { type: "check", key: L.lease, version: e?.version ?? null },
        { type: "put", key: L.lease, value: json({ holder: this.holder, until: now + this.#o.leaseMs } satisfies Lease) },
      ]);
      return version;
    } catch (err) {
      if (err instanceof ConflictError) return null; // another server took it first
      throw err;
    }
  }

  /** Gives the lease up (a delete checked on its version: a lease another server took meanwhile stays). */
  async #releaseLease(partition: Partition, lease: number): Promise<void> {
    try {
      await this.parts.kv.commit(partition, [
        { type: "check", key: L.lease, version: lease },
        { type: "delete", key: L.lease },
      ]);
    } catch (e) {
      if (!(e instanceof ConflictError)) throw e;
    }
  }

  /** A body as it leaves: its sealed personal data opened (a body holding none is answered as it is). */
  async #opened(body: string): Promise<string> {
    const parsed = JSON.parse(body) as { events?: Delivered[] };
    if (!Array.isArray(parsed.events)) return body;
    const events = await this.parts.personal.openEvents(parsed.events.map((d) => d.event));
    return JSON.stringify({ ...parsed, events: parsed.events.map((d, n) => ({ ...d, event: events[n]! })) });
  }

  /**
   * One attempt: signed now, to the address the URL's host resolves to now if the guard allows it
   * (webhook-target.ts: checked at each delivery, connected to as checked, redirects not followed).
   * A secret that does not open (another server's key) throws: nothing is POSTed, nothing is acknowledged.
   */
  async #post(s: Stored, body: string): Promise<{ ok: boolean; attempted: boolean; status?: number; error: string }> {
    const secret = await this.#secretOf(s);
    try {
      const headers = {
        "content-type": "application/json",
        [SIGNATURE_HEADER]: sign(secret, body, Math.floor(this.#clock() / 1000)),
        "flowstore-subscription": s.id,
        "flowstore-delivery": createHash("sha256").update(body).digest("base64url").slice(0, 22),
      };
      const status = await this.#guard.post(s.webhook!.url, headers, body, this.#o.timeoutMs, s.owner);
      return { ok: status >= 200 && status < 300, attempted: true, status, error: `the receiver answered ${status}` };
    } catch (e) {
      return { ok: false, attempted: !(e instanceof LookupBusy), error: e instanceof Error ? e.message : String(e) };
    }
  }

  // ------------------------------------------------------------------ reading and acknowledging

  /**
   * The events past `cursor` that pass the filter and that the owner may read now, at most `limit`;
   * `ack` acknowledges everything read (filtered out or not).
   */
  async #read(s: Stored, actor: Actor, cursor: Cursor, limit: number): Promise<Page> {
    const { feed, kv } = this.parts;
    const partition = L.partition(s.id);
    const marks = new Map<string, number | undefined>();
    const markOf = async (p: Partition): Promise<number | undefined> => {
      const key = JSON.stringify(p);
      if (!marks.has(key)) {
        const e = await kv.get(partition, L.marks.pack(p));
        marks.set(key, e ? parse<number>(e) : undefined);
      }
      return marks.get(key);
    };
    const items: Delivered[] = [];
    let ack = cursor;
    // The entry at the cursor may be partly acknowledged: read from it.
    let after = Math.max(0, cursor.position - 1);
    for (let scanned = 0; ; scanned += ENTRIES_PER_READ) {
      const entries = await feed.read(after, ENTRIES_PER_READ);
      if (entries.length === 0) return { items, ack, more: false };
      if (scanned >= ENTRIES_PER_PAGE) return { items, ack, more: true };
      for (const entry of entries) {
        after = entry.position;
        if (entry.position < cursor.position) continue;
        const skipTo = entry.position === cursor.position ? cursor.seq : 0;
        const mark = await markOf(entry.partition);
        const events = mark !== undefined && entry.to <= mark ? [] : await this.#eventsOf(entry, mark);
        for (const e of events) {
          if (e.seq <= skipTo) continue;
          const visible = matches(s.filter, e) ? await this.#visible(actor, s.filter, e) : null;
          ack = { position: entry.position, seq: e.seq };
          if (visible) {
            items.push({ position: spell(ack), event: visible as Delivered["event"] });
            if (items.length >= limit) return { items, ack, more: true };
          }
        }
        if (before(ack, { position: entry.position, seq: entry.to })) ack = { position: entry.position, seq: entry.to };
        marks.set(JSON.stringify(entry.partition), Math.max(mark ?? 0, entry.to));
      }
    }
  }

  /** An entry's events, and before them those a crash left without an entry since the partition's mark. */
  #eventsOf(entry: FeedEntry, mark: number | undefined): Promise<ResourceEvent[]> {
    const from = mark !== undefined && mark < entry.from ? mark + 1 : entry.from;
    return this.parts.feed.events(entry.partition, from, entry.to);
  }

  /** The event as the owner may read it now (null when it may not), the filter's intent included. */
  async #visible(actor: Actor, filter: SubscriptionFilter, event: ResourceEvent): Promise<ResourceEvent | null> {
    for (const store of this.parts.stores) {
      const visible = await store.audit.eventFor(actor, event, { sealed: true });
      if (!visible) continue;
      if (filter.intent === undefined) return visible;
      const last = event.path.at(-1)!;
      try {
        await store.reads.assertIntent(actor, { type: last.type, ids: event.path.map((p) => p.id) }, filter.intent);
        return visible;
      } catch {
        return null;
      }
    }
    return null;
  }

  /**
   * Moves the cursor to `to` (never back) and the per-partition marks with it, in one commit guarded by
   * the cursor's version (and the lease's, for a webhook). `extra` ops ride along. A position past what
   * the feed holds is a ValidationError naming `ack`.
   */
  async #ack(id: string, to: Cursor, lease: number | null, extra: Op[] = []): Promise<void> {
    const { kv, feed } = this.parts;
    const partition = L.partition(id);
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const c = await this.#cursor(id);
      if (!before(c.value, to) && extra.length === 0) return; // acknowledged already
      const record = await kv.get(partition, L.record);
      if (!record) throw new NotFoundError(`no subscription ${id}`);
      const head = await feed.head();
      if (to.position > head) throw new ValidationError(`ack ${spell(to)} is past this store's feed (its head is ${head})`, "ack");
      const marks = new Map<string, { p: Partition; seq: number }>();
      for (let after = Math.max(0, c.value.position - 1); after < to.position; ) {
        const entries = await feed.read(after, ENTRIES_PER_READ);
        if (entries.length === 0) break;
        for (const entry of entries) {
          after = entry.position;
          if (entry.position > to.position) break;
          if (entry.position === to.position && to.seq > entry.to)
            throw new ValidationError(`ack ${spell(to)} is not a position of this feed (entry ${to.position} ends at seq ${entry.to})`, "ack");
          const seq = entry.position === to.position ? to.seq : entry.to;
          const key = JSON.stringify(entry.partition);
          marks.set(key, { p: entry.partition, seq: Math.max(marks.get(key)?.seq ?? 0, seq) });
        }
      }
      const stored = await kv.getMany(
        partition,
        [...marks.values()].map((m) => L.marks.pack(m.p)),
      );
      const moves = before(c.value, to);
      const ops: Op[] = [
        { type: "check", key: L.record, version: record.version },
        { type: "check", key: L.cursor, version: c.version },
        ...(lease === null ? [] : [{ type: "check" as const, key: L.lease, version: lease }]),
        ...(moves
          ? [
              { type: "put" as const, key: L.cursor, value: json(to) },
              ...[...marks.values()].map((m, i) => ({ type: "put" as const, key: L.marks.pack(m.p), value: json(Math.max(m.seq, stored[i] ? parse<number>(stored[i]!) : 0)) })),
            ]
          : []),
        ...extra,
      ];
      try {
        await kv.commit(partition, ops);
        return;
      } catch (e) {
        if (!(e instanceof ConflictError) || lease !== null) throw e; // a webhook that lost its lease delivers again later
      }
    }
    throw new ConflictError(`too much contention on subscription ${id}`, "ack");
  }

  async #cursor(id: string): Promise<{ value: Cursor; version: number }> {
    const e = await this.parts.kv.get(L.partition(id), L.cursor);
    if (!e) throw new NotFoundError(`no subscription ${id}`);
    return { value: parse<Cursor>(e), version: e.version };
  }

  async #headCursor(): Promise<Cursor> {
    const head = await this.parts.feed.head();
    if (head === 0) return { position: 0, seq: 0 };
    const [entry] = await this.parts.feed.read(head - 1, 1);
    return { position: head, seq: entry?.to ?? 0 };
  }

  // ------------------------------------------------------------------ access

  async #record(id: string): Promise<Stored | undefined> {
    const e = await this.parts.kv.get(L.partition(id), L.record);
    return e ? parse<Stored>(e) : undefined;
  }

  /** The owner's alone (a pull reads and acknowledges as the owner). */
  async #owned(actor: Actor, id: string): Promise<Stored> {
    const s = await this.#record(id);
    if (!s || s.owner !== actor.id) throw new NotFoundError(`no subscription ${id}`);
    return s;
  }

  /** The owner's, or an operator's (`global.manageSubscriptions`; root always, as a store's root may predate the intent). */
  async #managed(actor: Actor, id: string): Promise<Stored> {
    const s = await this.#record(id);
    if (s && (s.owner === actor.id || isTop(actor) || (await this.parts.global.has(actor, MANAGE)))) return s;
    throw new NotFoundError(`no subscription ${id}`);
  }

  #checkIntent(intent: string): void {
    for (const store of this.parts.stores) for (const t of store.schema.types.values()) if (t.intents.all.includes(intent)) return;
    throw new ValidationError(`${intent} is not an intent of any resource type`, "filter.intent");
  }

  /** Its wire shape; `head` is the feed's, from which its lag is told (an entry at the cursor partly acknowledged is not counted). */
  #wire(s: Stored, cursor: Cursor, head: number): Subscription {
    const behind = Math.max(0, head - cursor.position);
    return { id: s.id, name: s.name, owner: s.owner, filter: s.filter, ...(s.webhook ? { webhook: s.webhook } : {}), createdAt: s.createdAt, position: spell(cursor), behind };
  }
}
