/**
 * TruBudget's notification routes (its notification_list.ts, notification_count.ts,
 * notification_mark_read.ts) over the caller's inbox (workflow/notifications.ts):
 *
 *   GET  /notification.list?offset&limit   → {userId, notifications} oldest first; offset may be negative
 *   GET  /notification.count               → {userId, unread, total}
 *   POST /notification.markRead {notifications: [id]} → {}
 */
import { Type } from "@sinclair/typebox";
import type { Notification } from "../../workflow/notifications.js";
import { MarkReadBody, NOTIFICATION_PAGE } from "../routes/notifications.js";
import type { RoutePlugin } from "../context.js";
import { Envelope, ok } from "./envelope.js";
import { exposeNotification } from "./expose.js";
import { fieldsAt, OffsetLimit, sliceOf } from "./workflow-common.js";

const ListQuery = Type.Object(OffsetLimit, { additionalProperties: false });
const MarkRead = Envelope(
  Type.Object({ notifications: Type.Array(MarkReadBody.properties.ids.items, { maxItems: MarkReadBody.properties.ids.maxItems }) }, { additionalProperties: false }),
);

export const notificationRoutes: RoutePlugin = async (app) => {
  const { notifications, workflow } = app.flowstore;

  app.get("/notification.list", { schema: { querystring: ListQuery } }, async (request) => {
    const { offset = 0, limit } = request.query;
    const newestFirst: Notification[] = [];
    let cursor: string | null = null;
    do {
      const page: { items: Notification[]; nextCursor: string | null } = await notifications.list(request.actor, { cursor, limit: NOTIFICATION_PAGE.max });
      newestFirst.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor !== null);
    const slice = sliceOf(newestFirst.reverse(), offset, limit);
    // Whether the caller may view each resource named (a notification outlives a revoked permission).
    const seen = new Map<string, Promise<boolean>>();
    const visible = (path: Notification["path"]) =>
      Promise.all(
        path.map((_, i) => {
          const upTo = path.slice(0, i + 1);
          const key = JSON.stringify(upTo);
          if (!seen.has(key)) seen.set(key, workflow.canView(request.actor, { type: upTo.at(-1)!.type, ids: upTo.map((s) => s.id) }));
          return seen.get(key)!;
        }),
      );
    const exposed = await Promise.all(slice.map(async (n) => exposeNotification(n, await visible(n.path))));
    return ok({ userId: request.actor.id, notifications: exposed });
  });

  app.get("/notification.count", async (request) => {
    const { unread, total } = await notifications.count(request.actor);
    return ok({ userId: request.actor.id, unread, total });
  });

  app.post("/notification.markRead", { schema: { body: MarkRead } }, async (request) => {
    const ids = request.body.data.notifications;
    if (ids.length > 0)
      await fieldsAt(
        (f) => (f === "ids" ? "data.notifications" : f),
        () => notifications.markRead(request.actor, { ids }),
      );
    return ok({});
  });
};
