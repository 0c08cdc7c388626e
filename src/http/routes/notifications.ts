/**
 * The caller's notifications (workflow/notifications.ts):
 *
 *   GET  /notifications?limit&cursor   → {items, nextCursor}, newest first
 *   GET  /notifications/count          → {unread, total}
 *   POST /notifications/read           {ids: [...]} | {all: true} → {unread, total}
 *
 * They are also pushed to their addressee on the change feed (`event: notification`, routes/events.ts).
 */
import { Type } from "@sinclair/typebox";
import { ValidationError } from "../../errors.js";
import { Notification, NotificationCount } from "../../workflow/notifications.js";
import type { RoutePlugin } from "../context.js";
import { PageOf, pageQueryOf } from "../pagination.js";
import { problems } from "../problem.js";

export { Notification, NotificationCount };

export const NOTIFICATION_PAGE = { default: 50, max: 500 } as const;
export const NotificationQuery = pageQueryOf(NOTIFICATION_PAGE);
export const NotificationPage = PageOf(Notification, "NotificationPage");
export const MarkReadBody = Type.Object(
  {
    ids: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { minItems: 1, maxItems: 1000 })),
    all: Type.Optional(Type.Literal(true)),
  },
  { additionalProperties: false, $id: "MarkReadBody", description: "either ids or all: true" },
);

export const notificationRoutes: RoutePlugin = async (app) => {
  const { notifications } = app.flowstore;
  const tags = ["notifications"];

  app.get(
    "/notifications",
    { schema: { tags, summary: "The caller's notifications, newest first", querystring: NotificationQuery, response: { 200: NotificationPage, ...problems(400) } } },
    async (request) => notifications.list(request.actor, request.query),
  );

  app.get(
    "/notifications/count",
    { schema: { tags, summary: "How many notifications the caller has, and how many are unread", response: { 200: NotificationCount } } },
    async (request) => notifications.count(request.actor),
  );

  app.post(
    "/notifications/read",
    { schema: { tags, summary: "Mark notifications read: the given ids, or all", body: MarkReadBody, response: { 200: NotificationCount, ...problems(400, 404, 415) } } },
    async (request) => {
      const { ids, all } = request.body;
      if ((ids === undefined) === (all === undefined)) throw new ValidationError("give exactly one of ids and all", ids === undefined ? "ids" : "all");
      return notifications.markRead(request.actor, { ids, all });
    },
  );
};
