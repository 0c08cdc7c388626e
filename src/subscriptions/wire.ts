/**
 * The wire shapes of subscriptions (TypeBox, declared once: validation, serialization, OpenAPI).
 */
import { Type, type Static } from "@sinclair/typebox";
import { Event, PathItem } from "../resources/model/wire.js";

export const SubscriptionFilter = Type.Object(
  {
    path: Type.Optional(
      Type.Array(PathItem, {
        maxItems: 8,
        description: "a resource subtree: events of this resource and of everything below it (its path from the root, e.g. [{type: project, id: p}])",
      }),
    ),
    types: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 100, pattern: "^[A-Za-z0-9_.*-]+$" }), {
        minItems: 1,
        maxItems: 50,
        description: "event types (`workflowitem.assigned`), or every verb of a type (`workflowitem.*`)",
      }),
    ),
    intent: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description: "a resource intent (`workflowitem.close`): only events of resources on which the owner holds it when the event is delivered",
      }),
    ),
  },
  { $id: "SubscriptionFilter", additionalProperties: false },
);
export type SubscriptionFilter = Static<typeof SubscriptionFilter>;

export const WebhookTarget = Type.Object(
  {
    url: Type.String({ minLength: 8, maxLength: 2000, pattern: "^https?://", description: "where deliveries are POSTed (http or https)" }),
    digest: Type.Optional(Type.Boolean({ description: "also deliver the owner's daily digest of open assignments here (once per UTC day)" })),
  },
  { $id: "WebhookTarget", additionalProperties: false },
);
export type WebhookTarget = Static<typeof WebhookTarget>;

export const CreateSubscription = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    filter: Type.Optional(SubscriptionFilter),
    webhook: Type.Optional(WebhookTarget),
  },
  { $id: "CreateSubscription", additionalProperties: false, description: "without webhook: a pull consumer (GET /subscriptions/{id}/events)" },
);
export type CreateSubscription = Static<typeof CreateSubscription>;

export const Subscription = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    owner: Type.String({ description: "its creator: events are delivered as this user may read them at delivery" }),
    filter: SubscriptionFilter,
    webhook: Type.Optional(WebhookTarget),
    createdAt: Type.String({ format: "date-time" }),
    position: Type.String({ description: "the position acknowledged up to (`<feed position>-<seq>`)" }),
    behind: Type.Integer({ minimum: 0, description: "its lag: the change feed's entries past its position (0: caught up)" }),
  },
  { $id: "Subscription", additionalProperties: false },
);
export type Subscription = Static<typeof Subscription>;

export const CreatedSubscription = Type.Object(
  {
    subscription: Subscription,
    secret: Type.Optional(Type.String({ description: "the webhook's HMAC-SHA256 key: shown once, here" })),
  },
  { $id: "CreatedSubscription", additionalProperties: false },
);
export type CreatedSubscription = Static<typeof CreatedSubscription>;

export const SubscriptionList = Type.Object({ items: Type.Array(Subscription) }, { $id: "SubscriptionList", additionalProperties: false });

export const Delivered = Type.Object(
  {
    position: Type.String({ description: "`<feed position>-<seq>`: ack it (or a later one) to move past this event" }),
    event: Event,
  },
  { $id: "DeliveredEvent", additionalProperties: false },
);
export type Delivered = Static<typeof Delivered>;

export const SubscriptionEvents = Type.Object(
  {
    items: Type.Array(Delivered),
    ack: Type.String({ description: "the position that acknowledges everything this answer read (events filtered out included)" }),
    more: Type.Boolean({ description: "true when the feed holds more past `ack`" }),
  },
  { $id: "SubscriptionEvents", additionalProperties: false },
);
export type SubscriptionEvents = Static<typeof SubscriptionEvents>;

export const DeadLetter = Type.Object(
  {
    n: Type.Integer({ minimum: 1 }),
    at: Type.String({ format: "date-time" }),
    attempts: Type.Integer({ minimum: 1 }),
    error: Type.String({ description: "why the last attempt failed" }),
    body: Type.String({ description: "the body that was POSTed (JSON text), as it is replayed" }),
  },
  { $id: "DeadLetter", additionalProperties: false },
);
export type DeadLetter = Static<typeof DeadLetter>;

export const DeadLetterList = Type.Object({ items: Type.Array(DeadLetter) }, { $id: "DeadLetterList", additionalProperties: false });

export const Replayed = Type.Object(
  {
    delivered: Type.Boolean(),
    status: Type.Optional(Type.Integer({ description: "the receiver's HTTP status" })),
    error: Type.Optional(Type.String()),
  },
  { $id: "Replayed", additionalProperties: false, description: "delivered: the dead letter is removed; not: it is kept" },
);
export type Replayed = Static<typeof Replayed>;

export const DigestItem = Type.Object(
  {
    type: Type.String(),
    ids: Type.Array(Type.String()),
    displayName: Type.Optional(Type.String()),
    status: Type.String(),
  },
  { $id: "DigestItem", additionalProperties: false },
);

export const Digest = Type.Object(
  {
    user: Type.String(),
    day: Type.String({ description: "the UTC day it summarizes (YYYY-MM-DD)" }),
    open: Type.Integer({ minimum: 0, description: "how many open assignments" }),
    items: Type.Array(DigestItem),
    text: Type.String({ description: "the same summary as plain text (a mail body)" }),
  },
  { $id: "Digest", additionalProperties: false },
);
export type Digest = Static<typeof Digest>;
