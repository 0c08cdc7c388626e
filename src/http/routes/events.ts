/**
 * The change feed: `GET /api/v1/events` streams, as Server-Sent Events, every event committed to the
 * store by ANY process over it (this server, other servers on the same LMDB directory, Redis or
 * PostgreSQL, a CLI), read from the store-wide feed (resources/feed.ts) that this server polls.
 *
 * - Positions: each event's `id:` is `<feed position>-<index in that entry>`. A `Last-Event-ID` header
 *   (or the `lastEventId` query parameter, for EventSource reconnects) resumes right after it, replayed
 *   from the logs: no loss, no duplicate. A malformed id, or one past the feed's head (another store),
 *   answers 400 naming the field `Last-Event-ID`. The feed is never trimmed, so no id is too old.
 * - By intent (as over REST, issue "change feed by intent"): each event needs the resource's history
 *   intent, a permission change its `intent.listPermissions`; a `created` event's permission map is left
 *   out for those who may not list permissions (resources/audit.ts `eventFor`).
 * - The stream ends when the token expires, and within one poll (200 ms) once the token is no longer
 *   good: the user disabled or removed, its password changed, a logout or logout-all (issue 29,
 *   finding 5). Every tick, and every delivery before it writes, verifies the stream's token again
 *   (signature, token version, session: one batched read) and takes the user's groups as they are
 *   now, so a user removed from the group that granted a view stops seeing through it at once.
 * - At most MAX_STREAMS_PER_USER streams per user are open at a time; one more answers 429.
 * - Notifications: a notification arriving in the caller's inbox (workflow/notifications.ts) is pushed
 *   as `event: notification` (data: the notification, no id: the inbox is its durable record, read it
 *   with GET /notifications after a reconnect); every tick reads each stream's inbox counter.
 * A comment line every 15 s keeps proxies from closing an idle stream.
 */
import { Type } from "@sinclair/typebox";
import { decodeJwt } from "jose";
import { TooManyRequestsError, ValidationError } from "../../errors.js";
import { bearerToken } from "../auth.js";
import type { ResourceEvent } from "../../resources/model/events.js";
import { FeedWatcher, type FeedEntry } from "../../resources/log/feed.js";
import type { RoutePlugin } from "../context.js";
import { problems } from "../problem.js";

const KEEPALIVE_MS = 15_000;
const POLL_MS = 200;
/** Partitions whose last delivered seq a stream remembers (to read a crash's gap, feed.ts). */
const SEEN_PARTITIONS = 10_000;
/** Change-feed streams one user may hold open at once (issue 29, finding 14). */
export const MAX_STREAMS_PER_USER = 8;

/** The `exp` (seconds) of the bearer token, already verified by the auth hook; null when absent. */
function tokenExpiry(header: string | undefined): number | null {
  const token = header?.replace(/^Bearer +/i, "").trim();
  if (!token) return null;
  try {
    const exp = decodeJwt(token).exp;
    return typeof exp === "number" ? exp : null;
  } catch {
    return null;
  }
}

/** `<position>-<index>` → where to resume; ValidationError when malformed or past the head. */
function resumePoint(id: string, head: number): { position: number; index: number } {
  const m = /^(\d{1,15})-(\d{1,9})$/.exec(id);
  if (!m) throw new ValidationError("Last-Event-ID must be an id this feed sent (<position>-<index>)", "Last-Event-ID");
  const position = Number(m[1]);
  if (position < 1 || position > head) throw new ValidationError(`Last-Event-ID ${id} is not a position of this store's feed (its head is ${head})`, "Last-Event-ID");
  return { position, index: Number(m[2]) };
}

interface Stream {
  readonly userId: string;
  readonly end: () => void;
  /** Verifies the stream's token again and takes the user's current groups; ends the stream (false) when it no longer holds. */
  readonly recheck: () => Promise<boolean>;
  /** Pushes the notifications that arrived in the user's inbox since the last check. */
  readonly checkInbox: () => Promise<void>;
}

export const eventRoutes: RoutePlugin = async (app) => {
  const { resources, identity, notifications, tokens } = app.flowstore;
  const feed = resources.writer.feed;
  const streams = new Set<Stream>();
  const watcher = new FeedWatcher(feed, POLL_MS, async () => {
    if (streams.size === 0) return;
    const live = await Promise.all([...streams].map(async (s) => ((await s.recheck()) ? s : null)));
    await Promise.all(live.map((s) => s?.checkInbox()));
  });
  // Streams never end by themselves: end them when the server closes, so shutdown is not held up, and
  // when the gate shuts (a restore replaces the store: clients reconnect once it is open again).
  const unshut = app.flowstore.gate.onShut(() => {
    for (const s of [...streams]) s.end();
  });
  app.addHook("preClose", async () => {
    unshut();
    for (const s of [...streams]) s.end();
    watcher.stop();
  });

  app.get(
    "/events",
    {
      schema: {
        tags: ["events"],
        summary: "Change feed (text/event-stream): one `event: <type>` per committed event the caller may read, from every process on the store",
        description:
          "Each event carries `id: <position>-<index>`, its place in the store-wide feed. Send it back as `Last-Event-ID` (or `lastEventId`) to resume right after it without loss or duplicates.",
        produces: ["text/event-stream"],
        headers: Type.Object({ "last-event-id": Type.Optional(Type.String({ description: "resume after this event id" })) }),
        querystring: Type.Object({ lastEventId: Type.Optional(Type.String({ description: "as the Last-Event-ID header (for EventSource reconnects)" })) }),
        response: { 200: { description: "an endless text/event-stream", content: { "text/event-stream": { schema: { type: "string" } } } }, ...problems(400, 401, 429) },
      },
    },
    async (request, reply) => {
      let actor = request.actor;
      if ([...streams].filter((s) => s.userId === actor.id).length >= MAX_STREAMS_PER_USER) {
        throw new TooManyRequestsError(`a user holds at most ${MAX_STREAMS_PER_USER} change-feed streams at a time: close one first`, 1);
      }
      const token = request.headers.authorization !== undefined ? bearerToken(request) : undefined;
      const head = await feed.head();
      const lastId = request.headers["last-event-id"] ?? request.query.lastEventId;
      const resume = lastId === undefined ? null : resumePoint(lastId, head);
      // Everything up to `position` is delivered, and the first `skip` events of the entry after it.
      let position = resume ? resume.position - 1 : head;
      let skip = resume ? resume.index + 1 : 0;
      const seen = new Map<string, number>();
      let inboxSeen = await notifications.lastArrival(actor.id);

      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-store",
        connection: "keep-alive",
        "x-request-id": String(request.id),
      });
      res.write(": connected\n\n");

      const send = async (event: ResourceEvent, id: string | null): Promise<void> => {
        const visible = await resources.audit.eventFor(actor, event);
        if (!visible || res.destroyed) return;
        res.write(`${id === null ? "" : `id: ${id}\n`}event: ${visible.type}\ndata: ${JSON.stringify(visible)}\n\n`);
      };
      const deliver = async (entry: FeedEntry): Promise<void> => {
        const key = JSON.stringify(entry.partition);
        const last = seen.get(key);
        // Events committed without a feed entry of their own (a crash in between): read them first.
        if (last !== undefined && entry.from > last + 1) for (const e of await feed.events(entry.partition, last + 1, entry.from - 1)) await send(e, null);
        for (const e of await feed.events(entry.partition, entry.from, entry.to)) {
          const index = e.seq - entry.from;
          if (index < skip) continue;
          await send(e, `${entry.position}-${index}`);
          skip = index + 1; // a read failing further on resumes after this event, not before it
        }
        // (An entry starting at or below the last seq seen is a re-created partition's new chain.)
        seen.delete(key);
        seen.set(key, entry.to);
        if (seen.size > SEEN_PARTITIONS) seen.delete(seen.keys().next().value!);
      };
      // One pump at a time, so events go out in feed order; a wake-up during a pump runs it again.
      let pumping = false;
      let again = false;
      const pump = async (): Promise<void> => {
        if (pumping) {
          again = true;
          return;
        }
        pumping = true;
        try {
          do {
            again = false;
            for (let entries = await feed.read(position); entries.length > 0 && !res.destroyed; entries = await feed.read(position)) {
              if (!(await recheck())) return;
              for (const entry of entries) {
                if (res.destroyed) return;
                await deliver(entry);
                position = entry.position;
                skip = 0;
              }
            }
          } while (again && !res.destroyed);
        } catch (e) {
          request.log.warn({ err: e }, "change feed: read failed, retrying at the next poll");
        } finally {
          pumping = false;
        }
      };

      const unsubscribe = watcher.subscribe(() => void pump());
      void pump();
      const exp = tokenExpiry(request.headers.authorization);
      // (A timer cannot wait longer than about 24.8 days; a longer-lived token's stream ends then.)
      const expiry = exp === null ? undefined : setTimeout(() => end(), Math.min(2 ** 31 - 1, Math.max(0, exp * 1000 - Date.now())));
      const timer = setInterval(() => res.write(": keep-alive\n\n"), KEEPALIVE_MS);
      let checking = false;
      const checkInbox = async (): Promise<void> => {
        if (checking || res.destroyed) return;
        checking = true;
        try {
          const { items, last } = await notifications.since(actor, inboxSeen);
          for (const n of items) if (!res.destroyed) res.write(`event: notification\ndata: ${JSON.stringify(n)}\n\n`);
          inboxSeen = last;
        } catch (e) {
          request.log.warn({ err: e }, "change feed: inbox read failed, retrying at the next poll");
        } finally {
          checking = false;
        }
      };
      const recheck = async (): Promise<boolean> => {
        if (res.destroyed) return false;
        try {
          if (token !== undefined) actor = await tokens.verify(token);
          else if ((await identity.disabledAmong([actor.id])).size > 0) throw new Error("disabled");
          return true;
        } catch {
          end();
          return false;
        }
      };
      const stream: Stream = { userId: actor.id, end: () => end(), checkInbox, recheck };
      const close = (): void => {
        clearInterval(timer);
        clearTimeout(expiry);
        unsubscribe();
        streams.delete(stream);
      };
      const end = (): void => {
        close();
        res.end();
      };
      streams.add(stream);
      request.raw.on("close", close);
      res.on("close", close);
    },
  );
};
