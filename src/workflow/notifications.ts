/**
 * Notifications (TruBudget's): when a project, subproject or workflowitem is created, assigned, updated
 * or closed (a document added or deleted counts as an update), its assignee hears of it: a user, or
 * every member of an assigned group, never the actor who caused it.
 *
 * Durability: notifications are PROJECTED from the partitions' own committed logs by a resumable
 * follower of the store-wide feed, not written beside the command (a user's inbox is not in the
 * project's partition, so no commit could hold both). The follower's cursor (a feed position) and, per
 * partition, the last seq it projected are stored; it reads each feed entry's events from the log, and
 * the events between a partition's last projected seq and an entry's first (a crash left them without
 * an entry of their own) too. A commit whose process died before its feed entry reaches the feed by
 * the writer's repair (`repairAnchor`, run at open). Every notification's id is derived from its event
 * (partition, seq) and its recipient, so projecting an event twice (two servers, a retry after a crash)
 * stores it once. Whatever was committed yields its notifications.
 *
 * Layout (this file's own, as the archive and identity keep theirs):
 *   ["inbox", userId]          ["m"] {next, unread, total}    the inbox's counters
 *                              ["n", k] notification          k = 1, 2, 3… in arrival order (newest last)
 *                              ["i", id] k                    the index by id (dedupe, mark read)
 *   ["notification-follower"]  ["cursor"] {position}          the feed position projected up to
 *                              ["seq", ...partition] seq      the last seq projected of each partition
 * Retention: an inbox keeps its newest `keepNewest` notifications; an arrival past it drops the oldest
 * in the same commit.
 *
 * Verified (issue 29): each inbox carries a record chain (kv/record-chain.ts, keys under ["chain"]): every
 * commit to it (an arrival, a retention drop, a mark read) appends, in the same commit, an event naming
 * the keys it changed, the SHA-256 of their new bytes and the actor (the follower: "system"; a mark
 * read: the user), and `verify` replays each inbox's chain against its records (`verify`), so a
 * notification inserted or edited by hand fails naming the inbox and the key. Not re-projection from
 * the feed: what a projection yields depends on state at its time (the assignee's group members then,
 * the display name then, the follower's first position, retention), which the feed does not hold. An
 * inbox's chain is not anchored in the ledger (an arrival is no rare event): a rewrite of an inbox with
 * its chain recomputed verifies.
 */
import { Type, type Static } from "@sinclair/typebox";
import { createHash } from "node:crypto";
import type { Actor } from "../access/actor.js";
import { SYSTEM } from "../access/actor.js";
import { ConflictError, NotFoundError, ValidationError } from "../errors.js";
import type { Identity } from "../identity/index.js";
import type { Key, KvStore, Op, Partition } from "../kv/contract.js";
import { allPartitions, scanAll } from "../kv/contract.js";
import { adoptRecords, asActor, CHAIN, verifyRecordChain, withRecordChain, type RecordChainResult, type RecordChainSpec } from "../kv/record-chain.js";
import { PartitionKind, Subspace } from "../kv/subspace.js";
import type { ResourceEvent } from "../resources/model/events.js";
import type { Feed } from "../resources/log/feed.js";
import type { Ref } from "../resources/model/ref.js";
import type { ResourceStore } from "../resources/store.js";
import { PathItem } from "../resources/model/wire.js";
import type { WorkflowSchema } from "./schema.js";

export const DEFAULT_KEEP_NOTIFICATIONS = 1000;
/** The layout of the inboxes and of the follower's marks (see above), through kv's Subspace. */
const kinds = { inbox: new PartitionKind("inbox"), follower: new PartitionKind("notification-follower") } as const;
const FOLLOWER: Partition = kinds.follower.partition();
const inboxOf = (user: string): Partition => kinds.inbox.partition(user);
const META: Key = new Subspace(["m"]).pack();
const CURSOR: Key = new Subspace(["cursor"]).pack();
/** An inbox's notifications by arrival number, and its index by notification id. */
const NOTES = new Subspace(["n"]);
const BY_ID = new Subspace(["i"]);
/** The last seq projected of each partition. */
const SEQ = new Subspace(["seq"]);
const ATTEMPTS = 50;
/** The feed entries one pass projects at most. */
const BATCH = 100;

/** Each inbox's record chain: every record of it (its counters, notifications and index by id). */
const INBOX_CHAIN: RecordChainSpec = { holds: (p) => kinds.inbox.holds(p), covers: (key) => !CHAIN.contains(key) };

/** The partition kinds this file writes (for export, import and the registry of kinds). */
export const NOTIFICATION_KINDS: readonly string[] = [kinds.inbox.kind, kinds.follower.kind];

export const Notification = Type.Object(
  {
    id: Type.String(),
    eventType: Type.String({ description: "the event that caused it, e.g. workflowitem.assigned" }),
    path: Type.Array(PathItem, { description: "the resource: from its project down to it" }),
    displayName: Type.String({ description: "the resource's display name when the notification was made" }),
    actor: Type.String({ description: "who caused it" }),
    createdAt: Type.String({ format: "date-time" }),
    read: Type.Boolean(),
  },
  { $id: "Notification", additionalProperties: false },
);
export type Notification = Static<typeof Notification>;

export const NotificationCount = Type.Object({ unread: Type.Integer({ minimum: 0 }), total: Type.Integer({ minimum: 0 }) }, { $id: "NotificationCount" });
export type NotificationCount = Static<typeof NotificationCount>;

interface Meta {
  next: number;
  unread: number;
  total: number;
}

const json = (v: unknown): Buffer => Buffer.from(JSON.stringify(v));
const parse = <T>(b: Buffer): T => JSON.parse(b.toString("utf8")) as T;

/** The verbs that notify (of the three workflow types). */
const NOTIFYING = new Set(["created", "assigned", "updated", "closed", "document_uploaded", "document_deleted"]);
const TYPES = new Set(["project", "subproject", "workflowitem"]);

export interface NotificationsOptions {
  /** Keep the newest N notifications per user (default 1000). */
  readonly keepNewest?: number;
}

export class Notifications {
  readonly keepNewest: number;
  /** The store, with every commit to an inbox appended to the inbox's record chain. */
  private readonly kv: KvStore;
  /** The store without the chains: what adopting writes through. */
  readonly #base: KvStore;

  constructor(
    kv: KvStore,
    private readonly store: ResourceStore<WorkflowSchema>,
    private readonly identity: Identity,
    options: NotificationsOptions = {},
  ) {
    const keep = options.keepNewest ?? DEFAULT_KEEP_NOTIFICATIONS;
    if (!Number.isSafeInteger(keep) || keep < 1) throw new ValidationError("keepNewest is a positive integer", "keepNewest");
    this.keepNewest = keep;
    this.#base = kv;
    this.kv = withRecordChain(kv, [INBOX_CHAIN]);
  }

  // ------------------------------------------------------------------ verification

  /** Verifies every inbox's record chain against its notifications (over `kv`: default this store). */
  async verify(kv: KvStore = this.#base): Promise<{ partition: Partition; result: RecordChainResult }[]> {
    const out: { partition: Partition; result: RecordChainResult }[] = [];
    for await (const partition of allPartitions(kv, kinds.inbox.kind)) out.push({ partition, result: await verifyRecordChain(kv, partition, INBOX_CHAIN) });
    return out;
  }

  /** Starts the chains of inboxes written before them (one event adopting their records each). */
  async adopt(): Promise<void> {
    for await (const partition of allPartitions(this.#base, kinds.inbox.kind)) await adoptRecords(this.#base, partition, INBOX_CHAIN);
  }

  // ------------------------------------------------------------------ the inbox

  /** The caller's notifications, newest first. */
  async list(actor: Actor, options: { limit?: number; cursor?: string | null } = {}): Promise<{ items: Notification[]; nextCursor: string | null }> {
    const limit = options.limit ?? 50;
    const page = await this.kv.scan(inboxOf(actor.id), { prefix: NOTES.prefix, reverse: true, limit, after: options.cursor ?? null }).catch((e: unknown) => {
      if (options.cursor) throw new ValidationError("cursor is not a cursor of this list", "cursor");
      throw e;
    });
    return {
      items: await this.#shownTo(
        actor,
        page.entries.map((e) => parse<Notification>(e.value)),
      ),
      nextCursor: page.cursor,
    };
  }

  /**
   * Notifications as their recipient may read them now: the display name of a resource it may no
   * longer view is left out (an empty string), as a list redacts it (issue 29, finding 12).
   */
  async #shownTo(actor: Actor, items: Notification[]): Promise<Notification[]> {
    const seen = new Map<string, Promise<boolean>>();
    const mayView = (n: Notification): Promise<boolean> => {
      const ref = { type: n.path.at(-1)?.type ?? "", ids: n.path.map((p) => p.id) };
      const key = JSON.stringify(ref);
      if (!seen.has(key)) seen.set(key, this.store.reads.canView(actor, ref));
      return seen.get(key)!;
    };
    return Promise.all(items.map(async (n) => (n.displayName === "" || (await mayView(n)) ? n : { ...n, displayName: "" })));
  }

  async count(actor: Actor): Promise<NotificationCount> {
    const m = await this.#meta(actor.id);
    return { unread: m.value.unread, total: m.value.total };
  }

  /** Notifications that arrived after arrival number `after` (oldest first), and the newest arrival number. */
  async since(actor: Actor, after: number): Promise<{ items: Notification[]; last: number }> {
    const userId = actor.id;
    const m = await this.#meta(userId);
    if (m.value.next - 1 <= after) return { items: [], last: m.value.next - 1 };
    const page = await this.kv.scan(inboxOf(userId), { start: NOTES.pack([after + 1]), end: NOTES.pack([m.value.next]), limit: 100 });
    return {
      items: await this.#shownTo(
        actor,
        page.entries.map((e) => parse<Notification>(e.value)),
      ),
      last: page.cursor ? (page.entries.at(-1)!.key[1] as number) : m.value.next - 1,
    };
  }

  /** The newest arrival number of an inbox (0 when empty). */
  async lastArrival(userId: string): Promise<number> {
    return (await this.#meta(userId)).value.next - 1;
  }

  /** Marks the given notifications (or all) read; unknown ids are a NotFoundError naming them. Returns the counts. */
  async markRead(actor: Actor, which: { ids?: readonly string[]; all?: boolean }): Promise<NotificationCount> {
    return asActor(actor, () => this.#markRead(actor, which));
  }

  async #markRead(actor: Actor, which: { ids?: readonly string[]; all?: boolean }): Promise<NotificationCount> {
    const partition = inboxOf(actor.id);
    if (which.all !== true && (!Array.isArray(which.ids) || which.ids.length === 0)) throw new ValidationError("give ids (a non-empty list) or all: true", "ids");
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const meta = await this.#meta(actor.id);
      const targets: { key: Key; value: Notification }[] = [];
      if (which.all === true) {
        for await (const e of scanAll(this.kv, partition, { prefix: NOTES.prefix, limit: 1000 })) {
          const n = parse<Notification>(e.value);
          if (!n.read) targets.push({ key: e.key, value: n });
        }
      } else {
        const ids = [...new Set(which.ids)];
        const index = await this.kv.getMany(
          partition,
          ids.map((id) => BY_ID.pack([id])),
        );
        const missing = ids.filter((_, i) => !index[i]);
        if (missing.length > 0) throw new NotFoundError(`no notification ${missing.join(", ")}`);
        const keys = index.map((e) => NOTES.pack([parse<number>(e!.value)]));
        const found = await this.kv.getMany(partition, keys);
        found.forEach((e, i) => {
          const n = e && parse<Notification>(e.value);
          if (n && !n.read) targets.push({ key: keys[i]!, value: n });
        });
      }
      if (targets.length === 0) return { unread: meta.value.unread, total: meta.value.total };
      const next: Meta = { ...meta.value, unread: Math.max(0, meta.value.unread - targets.length) };
      try {
        await this.kv.commit(partition, [
          { type: "check", key: META, version: meta.version },
          ...targets.map((t) => ({ type: "put" as const, key: t.key, value: json({ ...t.value, read: true }) })),
          { type: "put", key: META, value: json(next) },
        ]);
        return { unread: next.unread, total: next.total };
      } catch (e) {
        if (!(e instanceof ConflictError)) throw e;
      }
    }
    throw new ConflictError("too much contention on the inbox", "ids");
  }

  async #meta(userId: string): Promise<{ value: Meta; version: number | null }> {
    const e = await this.kv.get(inboxOf(userId), META);
    return e ? { value: parse<Meta>(e.value), version: e.version } : { value: { next: 1, unread: 0, total: 0 }, version: null };
  }

  /** Stores new notifications in one inbox (those already there skipped), dropping the oldest past retention. */
  async #deliver(userId: string, notes: Notification[]): Promise<void> {
    const partition = inboxOf(userId);
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const meta = await this.#meta(userId);
      const known = await this.kv.getMany(
        partition,
        notes.map((n) => BY_ID.pack([n.id])),
      );
      const fresh = notes.filter((_, i) => !known[i]);
      if (fresh.length === 0) return;
      const m = { ...meta.value };
      const ops: Op[] = [{ type: "check", key: META, version: meta.version }];
      for (const n of fresh) {
        const k = m.next++;
        ops.push({ type: "put", key: NOTES.pack([k]), value: json(n) }, { type: "put", key: BY_ID.pack([n.id]), value: json(k) });
        m.total++;
        m.unread++;
      }
      const excess = m.total - this.keepNewest;
      if (excess > 0) {
        // The oldest stored ones first; a fresh one past retention is dropped as it arrives (it is older).
        const oldest = await this.kv.scan(partition, { prefix: NOTES.prefix, limit: excess });
        let dropped = 0;
        for (const e of oldest.entries) {
          const n = parse<Notification>(e.value);
          ops.push({ type: "delete", key: e.key }, { type: "delete", key: BY_ID.pack([n.id]) });
          if (!n.read) m.unread--;
          dropped++;
        }
        // Fresh ones beyond what stored entries could make room for (a burst bigger than keepNewest).
        const stillOver = excess - dropped;
        if (stillOver > 0) {
          const k0 = m.next - fresh.length;
          for (let i = 0; i < stillOver; i++) ops.push({ type: "delete", key: NOTES.pack([k0 + i]) }, { type: "delete", key: BY_ID.pack([fresh[i]!.id]) });
          m.unread -= stillOver;
        }
        m.total = this.keepNewest;
      }
      ops.push({ type: "put", key: META, value: json(m) });
      try {
        await this.kv.commit(partition, ops);
        return;
      } catch (e) {
        if (!(e instanceof ConflictError)) throw e;
      }
    }
    throw new ConflictError(`too much contention on the inbox of ${userId}`);
  }

  // ------------------------------------------------------------------ the follower

  /**
   * Projects what the feed holds past the follower's cursor into the inboxes, and advances the cursor.
   * Returns how many feed entries it projected. Safe to run in several processes at once.
   */
  async follow(feed: Feed): Promise<number> {
    let cursor = await this.kv.get(FOLLOWER, CURSOR);
    if (!cursor) {
      // First run on this store: start at the feed's head (notifications are of what happens from now).
      await this.kv
        .commit(FOLLOWER, [
          { type: "check", key: CURSOR, version: null },
          { type: "put", key: CURSOR, value: json({ position: await feed.head() }) },
        ])
        .catch((e: unknown) => {
          if (!(e instanceof ConflictError)) throw e;
        });
      cursor = (await this.kv.get(FOLLOWER, CURSOR))!;
    }
    const position = parse<{ position: number }>(cursor.value).position;
    const entries = await feed.read(position, BATCH);
    if (entries.length === 0) return 0;
    const seqKey = (p: Partition): Key => SEQ.pack(p);
    const projected = entries.filter((e) => e.partition[0] === "project");
    const partitions = [...new Map(projected.map((e) => [JSON.stringify(e.partition), e.partition])).values()];
    const marks = new Map<string, number>();
    (await this.kv.getMany(FOLLOWER, partitions.map(seqKey))).forEach((e, i) => {
      if (e) marks.set(JSON.stringify(partitions[i]), parse<number>(e.value));
    });
    const byUser = new Map<string, Notification[]>();
    for (const entry of projected) {
      const key = JSON.stringify(entry.partition);
      const mark = marks.get(key);
      if (mark !== undefined && entry.to <= mark) continue; // projected already (a repeated range)
      const from = mark !== undefined && mark < entry.from ? mark + 1 : entry.from;
      for (const event of await feed.events(entry.partition, from, entry.to)) {
        for (const [user, n] of await this.#notificationsOf(entry.partition, event)) {
          let list = byUser.get(user);
          if (!list) byUser.set(user, (list = []));
          list.push(n);
        }
      }
      marks.set(key, entry.to);
    }
    // The follower's arrivals are the system's, whatever context started this pass.
    for (const [user, notes] of byUser) await asActor(SYSTEM, () => this.#deliver(user, notes));
    const last = entries.at(-1)!.position;
    await this.kv
      .commit(FOLLOWER, [
        { type: "check", key: CURSOR, version: cursor.version },
        { type: "put", key: CURSOR, value: json({ position: last }) },
        ...partitions.map((p) => ({ type: "put" as const, key: seqKey(p), value: json(marks.get(JSON.stringify(p)) ?? 0) })),
      ])
      .catch((e: unknown) => {
        if (!(e instanceof ConflictError)) throw e; // another process advanced it: its projection is the same
      });
    return entries.length;
  }

  /** Follows until the feed's end (for a pump after a wake-up). */
  async followAll(feed: Feed): Promise<void> {
    while ((await this.follow(feed)) > 0);
  }

  /** Who hears of `event`, and what: the resource's assignee (a group's members), never the actor. */
  async #notificationsOf(partition: Partition, event: ResourceEvent): Promise<[string, Notification][]> {
    const dot = event.type.indexOf(".");
    const type = event.type.slice(0, dot);
    if (!TYPES.has(type) || !NOTIFYING.has(event.type.slice(dot + 1))) return [];
    const ref: Ref = { type, ids: event.path.map((p) => p.id) };
    // The record as it is now (its display name, and whether it was deleted since), or null.
    const read = async (): Promise<Record<string, unknown> | null> => {
      try {
        return (await this.store.reads.get(SYSTEM, ref as Ref & { type: "project" })).data as Record<string, unknown>;
      } catch (e) {
        if (e instanceof NotFoundError) return null; // deleted since
        throw e;
      }
    };
    // The assignee when the event happened (the follower may run behind later assignments): a create or
    // an assign names the one it sets, so the record is read only when someone is to be told.
    const named = event.payload.data?.assignee;
    let data: Record<string, unknown> | null = null;
    if (typeof named !== "string" && (data = await read()) === null) return [];
    const assignee = typeof named === "string" ? named : await this.#assigneeAt(ref, event, data!.assignee);
    if (!assignee) return [];
    const recipients = (await this.#expand(assignee)).filter((user) => user !== event.actor);
    if (recipients.length === 0 || (data ??= await read()) === null) return [];
    const out: [string, Notification][] = [];
    for (const user of recipients) {
      const id = createHash("sha256")
        .update(JSON.stringify([partition, event.seq, user]))
        .digest("base64url")
        .slice(0, 22);
      out.push([user, { id, eventType: event.type, path: event.path, displayName: String(data.displayName ?? ""), actor: event.actor, createdAt: event.at, read: false }]);
    }
    return out;
  }

  /**
   * The assignee as of `event`: the last create or assign of the resource at or before its seq (its
   * history, newest first). `current` is the assignee of its record, read before this: when the newest
   * event of its history (`newestSeq`) is `event` itself, nothing was written to it since, so that is the one (a
   * record without one leaves it to the history, which an assignee set and later removed would name).
   * Most events are the newest of their resource when the follower takes them in: so they are answered
   * without reading the history before them. (A create or an assign names its assignee: not asked here.)
   */
  async #assigneeAt(ref: Ref, event: ResourceEvent, current: unknown): Promise<string | undefined> {
    if (typeof current === "string" && (await this.store.audit.newestSeq(ref)) === event.seq) return current;
    let cursor: string | null = null;
    do {
      const page = await this.store.audit.history(SYSTEM, ref, { reverse: true, limit: 100, cursor });
      for (const e of page.items) {
        if (e.seq > event.seq) continue;
        const assignee = (e.payload as { data?: Record<string, unknown> }).data?.assignee;
        if (typeof assignee === "string") return assignee;
      }
      cursor = page.nextCursor;
    } while (cursor !== null);
    return undefined;
  }

  /** The members of a group, or the user `identity` (no group by that id: the common case, so no error thrown and caught). */
  async #expand(identity: string): Promise<string[]> {
    try {
      const group = await this.identity.findGroup(identity);
      return group ? [...new Set(group.members)] : [identity];
    } catch (e) {
      if (e instanceof ValidationError) return [identity];
      throw e;
    }
  }
}
