/**
 * The store's background work, with one lifecycle: `start()` (at open), `pause()` / `resume()` (around
 * a restore, which must not have anything write into a store being replaced) and `stop()` (at close).
 * The composition root builds it from the parts it assembled; nothing else runs on a timer.
 *
 * What runs:
 * - the recovery sweep: the archive's half-done uploads and deletes a killed process left (after
 *   Imixs-Archive's recovery of interrupted writes), documents' unsettled holds, and (with `feedRepair`)
 *   the commits a killed process left out of the feed (`PartitionWriter.repairAnchor`), never over an
 *   unfinished import (its feed and ledger are still arriving). The archive's and documents' recovery
 *   run once within `start()`, the feed repair begins there; then all three periodically, one run at a
 *   time;
 * - the notification follower (with `follow`): projects the feed into the inboxes whenever its head
 *   moves, one pass at a time, again at once when the head moved during a pass;
 * - the transparency log's appender (with `appender`, src/tlog): appends the feed's new entries to the
 *   store-wide Merkle tree whenever the feed's head moves (the watcher polls it every `pollMs`) and at
 *   least every `intervalMs`, one pass at a time, never over an unfinished import. Its merge delay is
 *   bounded by the poll interval plus one pass; `lag()` tells how far it trails (in /metrics).
 *
 * - the webhook deliverer (with `webhooks`, src/subscriptions): a pass over the webhook subscriptions
 *   whenever the feed's head moves and at least every `intervalMs` (due retries, a lease another server
 *   let expire), one pass at a time, again at once when asked during a pass; never over an unfinished
 *   import. Which server delivers a subscription is decided by its lease in the store, not here.
 *
 * Rules:
 * - a failure of background work goes to `onError` with the task's name; it never stops the work;
 * - `pause()` resolves once no run is in progress; while paused nothing starts. A restore that failed
 *   midway leaves it paused (the store is not whole until `import --resume` finishes it);
 * - `stop()` clears the timer, unsubscribes from the feed and waits for work in progress; it is final.
 */
import { allPartitions, type KvStore, type Partition } from "../kv/contract.js";
import { outsideActor } from "../kv/record-chain.js";
import type { Archive } from "../archive/index.js";
import type { Feed, FeedWatcher } from "../resources/log/feed.js";
import type { Documents } from "../workflow/documents.js";
import type { TransparencyLog } from "../tlog/log.js";
import type { Notifications } from "../workflow/notifications.js";
import type { Subscriptions } from "../subscriptions/subscriptions.js";
import { IMPORT_KIND } from "./kinds.js";

/** The recovery sweep runs at most this often. */
const MIN_RECOVERY_INTERVAL_MS = 60_000;

/** A chained partition kind and what repairs its partitions' anchors (the writer of its schema's store). */
export interface RepairableKind {
  readonly kind: string;
  readonly store: { readonly writer: { repairAnchor(partition: Partition, settleMs: number): Promise<unknown> } };
}

export interface BackgroundParts {
  readonly kv: KvStore;
  readonly archive: Archive;
  readonly documents: Documents;
  /** Half-done archive operations and document holds older than this are finished or undone. */
  readonly recoverOlderThanMs: number;
  /** The chained kinds whose partitions the feed repair walks. */
  readonly chained: readonly RepairableKind[];
  /** The feed repair's settle time, or null when this process does not repair the feed. */
  readonly feedRepair: { readonly settleMs: number } | null;
  /** The notification follower, or null when this process does not project notifications. */
  readonly follower: { readonly notifications: Notifications; readonly feed: Feed; readonly watcher: FeedWatcher } | null;
  /** The transparency log's appender, or null when this process does not append. */
  readonly appender: { readonly log: TransparencyLog; readonly watcher: FeedWatcher; readonly intervalMs: number } | null;
  /** The webhook deliverer, or null when this process does not deliver webhooks. */
  readonly webhooks: { readonly subscriptions: Subscriptions; readonly watcher: FeedWatcher; readonly intervalMs: number } | null;
  readonly onError: (error: unknown, task: string) => void;
}

export class Background {
  #running: Promise<unknown> | null = null;
  #following: Promise<void> | null = null;
  #followAgain = false;
  #paused = false;
  #timer: NodeJS.Timeout | null = null;
  #unfollow: () => void = () => {};
  #appending: Promise<void> | null = null;
  #appendAgain = false;
  #unappend: () => void = () => {};
  #appendTimer: NodeJS.Timeout | null = null;
  #delivering: Promise<void> | null = null;
  #deliverAgain = false;
  #undeliver: () => void = () => {};
  #deliverTimer: NodeJS.Timeout | null = null;
  #stopped: Promise<void> | null = null;

  constructor(private readonly parts: BackgroundParts) {}

  /** The first recovery (awaited: the archive's and documents'; the feed repair goes on), the timer, the follower. */
  /** Starts the background work outside any actor's scope (kv/record-chain.ts `outsideActor`): its commits are the system's. */
  start(): Promise<void> {
    return outsideActor(() => this.#start());
  }

  async #start(): Promise<void> {
    const { archive, documents, recoverOlderThanMs, follower, onError } = this.parts;
    await archive.recover({ olderThanMs: recoverOlderThanMs });
    await documents.recover(recoverOlderThanMs);
    this.#running = this.#repairFeed()
      .catch((err: unknown) => onError(err, "feed repair"))
      .finally(() => (this.#running = null));
    this.#timer = setInterval(() => this.#sweep(), Math.max(recoverOlderThanMs, MIN_RECOVERY_INTERVAL_MS));
    this.#timer.unref();
    if (follower) this.#unfollow = follower.watcher.subscribe(() => this.#pump());
    const { appender } = this.parts;
    if (appender) {
      this.#unappend = appender.watcher.subscribe(() => this.#append());
      this.#appendTimer = setInterval(() => this.#append(), appender.intervalMs);
      this.#appendTimer.unref();
      this.#append();
    }
    const { webhooks } = this.parts;
    if (webhooks) {
      this.#undeliver = webhooks.watcher.subscribe(() => this.#deliver());
      this.#deliverTimer = setInterval(() => this.#deliver(), webhooks.intervalMs);
      this.#deliverTimer.unref();
      this.#deliver();
    }
  }

  /** Resolves once the log's appender has no pass in progress (tests and the metrics ask for a settled log). */
  async appended(): Promise<void> {
    while (this.#appending) await this.#appending;
  }

  /**
   * Starts a pass of the follower, the appender and the deliverer now (after the one in progress, if
   * any) and resolves once none is in progress: the feed as it stood at the call is then taken in,
   * unless paused. For a reader of what the background makes, or of what it costs.
   */
  async settle(): Promise<void> {
    outsideActor(() => this.kick());
    while (this.#following || this.#appending || this.#delivering) await Promise.all([this.#following, this.#appending, this.#delivering]);
  }

  /** Stops starting work and resolves once none is in progress. */
  async pause(): Promise<void> {
    this.#paused = true;
    await this.#running;
    await this.#following;
    await this.#appending;
    await this.#delivering;
  }

  /** Lets work start again (`kick()` catches the follower up). */
  resume(): void {
    this.#paused = false;
  }

  /** Catches the follower up at once unless paused (a restore that failed midway leaves it paused). */
  kick(): void {
    this.#pump();
    this.#append();
    this.#deliver();
  }

  /** Clears the timer, leaves the feed, and waits for work in progress. */
  stop(): Promise<void> {
    this.#stopped ??= (async () => {
      if (this.#timer) clearInterval(this.#timer);
      this.#unfollow();
      this.parts.follower?.watcher.stop();
      if (this.#appendTimer) clearInterval(this.#appendTimer);
      this.#unappend();
      this.parts.appender?.watcher.stop();
      if (this.#deliverTimer) clearInterval(this.#deliverTimer);
      this.#undeliver();
      this.parts.webhooks?.watcher.stop();
      await this.#running;
      await this.#following;
      await this.#appending;
      await this.#delivering;
    })();
    return this.#stopped;
  }

  #sweep(): void {
    if (this.#running || this.#paused) return;
    const { archive, documents, recoverOlderThanMs, onError } = this.parts;
    this.#running = (async () => {
      await archive.recover({ olderThanMs: recoverOlderThanMs }).catch((err: unknown) => onError(err, "archive recovery"));
      await documents.recover(recoverOlderThanMs).catch((err: unknown) => onError(err, "document recovery"));
      await this.#repairFeed().catch((err: unknown) => onError(err, "feed repair"));
    })().finally(() => (this.#running = null));
  }

  async #repairFeed(): Promise<void> {
    const { kv, chained, feedRepair } = this.parts;
    // Not over an unfinished import (its feed and ledger are still arriving).
    if (!feedRepair || (await kv.listPartitions(IMPORT_KIND, { limit: 1 })).partitions.length > 0) return;
    for (const { kind, store } of chained) for await (const p of allPartitions(kv, kind)) await store.writer.repairAnchor(p, feedRepair.settleMs);
  }

  #pump(): void {
    const follower = this.parts.follower;
    // Stopped too (a closed store): the appender and the deliverer check it; a settle() after close must not start a pass.
    if (!follower || this.#paused || this.#stopped) return;
    if (this.#following) {
      this.#followAgain = true;
      return;
    }
    this.#following = (async () => {
      do {
        this.#followAgain = false;
        await follower.notifications.followAll(follower.feed).catch((err: unknown) => this.parts.onError(err, "notifications"));
      } while (this.#followAgain && !this.#paused);
    })().finally(() => (this.#following = null));
  }

  #deliver(): void {
    const webhooks = this.parts.webhooks;
    if (!webhooks || this.#paused || this.#stopped) return;
    if (this.#delivering) {
      this.#deliverAgain = true;
      return;
    }
    const { kv, onError } = this.parts;
    this.#delivering = (async () => {
      do {
        this.#deliverAgain = false;
        // Not over an unfinished import (the feed and the subscriptions are still arriving).
        if ((await kv.listPartitions(IMPORT_KIND, { limit: 1 })).partitions.length > 0) return;
        await webhooks.subscriptions.deliverPending((err, id) => onError(err, `webhook delivery of subscription ${id}`));
      } while (this.#deliverAgain && !this.#paused && !this.#stopped);
    })()
      .catch((err: unknown) => onError(err, "webhook delivery"))
      .finally(() => (this.#delivering = null));
  }

  #append(): void {
    const appender = this.parts.appender;
    if (!appender || this.#paused || this.#stopped) return;
    if (this.#appending) {
      this.#appendAgain = true;
      return;
    }
    const { kv } = this.parts;
    const blocked = async (): Promise<boolean> => this.#paused || (await kv.listPartitions(IMPORT_KIND, { limit: 1 })).partitions.length > 0;
    this.#appending = (async () => {
      do {
        this.#appendAgain = false;
        await appender.log.appendPending({ blocked }).catch((err: unknown) => this.parts.onError(err, "transparency log"));
      } while (this.#appendAgain && !this.#paused);
    })().finally(() => (this.#appending = null));
  }
}
