/**
 * Durable subscriptions to the change feed (src/subscriptions, docs/subscriptions.md):
 *
 *   POST   /subscriptions                          {name, filter?, webhook?} → 201 {subscription, secret?} (the secret once)
 *   GET    /subscriptions                          → the caller's
 *   GET    /subscriptions/digest[?format=text]     → the caller's open assignments: JSON (with its plain text), or
 *                                                   text/plain (`Accept: text/plain` or `format=text`)
 *   GET    /subscriptions/{id}                     → one (its owner, or global.manageSubscriptions)
 *   DELETE /subscriptions/{id}                     → 204 (its owner, or global.manageSubscriptions)
 *   GET    /subscriptions/{id}/events?ack&limit    → acknowledge `ack`, then the events past the cursor (its owner)
 *   GET    /subscriptions/{id}/dead-letters        → the webhook deliveries given up (owner or global.manageSubscriptions)
 *   POST   /subscriptions/{id}/dead-letters/{deadLetter}/replay → POSTs it again: delivered, it is removed
 */
import { Type } from "@sinclair/typebox";
import { PULL_LIMIT } from "../../subscriptions/subscriptions.js";
import { CreatedSubscription, CreateSubscription, DeadLetterList, Digest, Replayed, Subscription, SubscriptionEvents, SubscriptionList } from "../../subscriptions/wire.js";
import type { RoutePlugin } from "../context.js";
import { problems } from "../problem.js";

const SubscriptionParams = Type.Object({ subscriptionId: Type.String({ pattern: "^[A-Za-z0-9_-]{1,64}$" }) }, { additionalProperties: false });
const DeadLetterParams = Type.Object(
  { subscriptionId: Type.String({ pattern: "^[A-Za-z0-9_-]{1,64}$" }), deadLetter: Type.String({ pattern: "^[1-9][0-9]{0,8}$", description: "the dead letter's number" }) },
  { additionalProperties: false },
);
const EventsQuery = Type.Object(
  {
    ack: Type.Optional(
      Type.String({ maxLength: 40, description: "acknowledge everything up to this position (an `ack` or `position` this subscription answered) before reading" }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: PULL_LIMIT.max, default: PULL_LIMIT.default })),
  },
  { additionalProperties: false },
);

const DigestQuery = Type.Object(
  { format: Type.Optional(Type.Union([Type.Literal("json"), Type.Literal("text")], { description: "instead of the Accept header" })) },
  { additionalProperties: false },
);

/** The plain text when `format=text`, or when the Accept header names text/plain and not JSON (nor anything). */
function wantsText(accept: string | undefined, format: string | undefined): boolean {
  if (format !== undefined) return format === "text";
  const a = accept ?? "";
  return a.includes("text/plain") && !/application\/json|\*\/\*/.test(a);
}

export const subscriptionRoutes: RoutePlugin = async (app) => {
  const { subscriptions } = app.flowstore;
  const tags = ["subscriptions"];

  app.post(
    "/subscriptions",
    {
      schema: {
        operationId: "createSubscription",
        tags,
        summary: "Subscribe to the change feed: a pull consumer, or a webhook (its HMAC-SHA256 secret is answered here, once)",
        body: CreateSubscription,
        response: { 201: CreatedSubscription, ...problems(400, 413, 415) },
      },
    },
    async (request, reply) => reply.code(201).send(await subscriptions.create(request.actor, request.body)),
  );

  app.get(
    "/subscriptions",
    { schema: { operationId: "listSubscriptions", tags, summary: "The caller's subscriptions", response: { 200: SubscriptionList } } },
    async (request) => ({
      items: await subscriptions.list(request.actor),
    }),
  );

  app.get(
    "/subscriptions/digest",
    {
      schema: {
        operationId: "getSubscriptionDigest",
        tags,
        summary: "The caller's daily digest of open assignments: JSON (with its plain text in `text`), or the plain text alone with `Accept: text/plain` or `format=text`",
        querystring: DigestQuery,
        response: {
          200: {
            description: "the digest (JSON), or its plain text (a mail body)",
            content: { "application/json": { schema: Digest }, "text/plain": { schema: Type.String() } },
          },
          ...problems(400),
        },
      },
    },
    async (request, reply) => {
      const digest = await subscriptions.digest(request.actor);
      reply.header("vary", "accept");
      if (wantsText(request.headers.accept, request.query.format)) return reply.type("text/plain; charset=utf-8").send(digest.text);
      return reply.type("application/json").send(digest);
    },
  );

  app.get(
    "/subscriptions/:subscriptionId",
    {
      schema: { tags, summary: "One subscription (its owner, or global.manageSubscriptions)", params: SubscriptionParams, response: { 200: Subscription, ...problems(400, 404) } },
    },
    async (request) => subscriptions.get(request.actor, request.params.subscriptionId),
  );

  app.delete(
    "/subscriptions/:subscriptionId",
    {
      schema: {
        tags,
        summary: "Delete a subscription, its position and its dead letters (its owner, or global.manageSubscriptions)",
        params: SubscriptionParams,
        response: { 204: Type.Null(), ...problems(400, 404) },
      },
    },
    async (request, reply) => {
      await subscriptions.delete(request.actor, request.params.subscriptionId);
      return reply.code(204).send();
    },
  );

  app.get(
    "/subscriptions/:subscriptionId/events",
    {
      schema: {
        tags,
        summary: "Pull: acknowledge `ack`, then read the events past the subscription's position, as its owner may read them now (at least once, in order per partition)",
        params: SubscriptionParams,
        querystring: EventsQuery,
        response: { 200: SubscriptionEvents, ...problems(400, 404, 409) },
      },
    },
    async (request) => subscriptions.pull(request.actor, request.params.subscriptionId, request.query),
  );

  app.get(
    "/subscriptions/:subscriptionId/dead-letters",
    {
      schema: {
        tags,
        summary: "A webhook's deliveries given up after their last retry (its owner, or global.manageSubscriptions)",
        params: SubscriptionParams,
        response: { 200: DeadLetterList, ...problems(400, 404) },
      },
    },
    async (request) => ({ items: await subscriptions.deadLetters(request.actor, request.params.subscriptionId) }),
  );

  app.post(
    "/subscriptions/:subscriptionId/dead-letters/:deadLetter/replay",
    {
      schema: {
        operationId: "replaySubscriptionDeadLetter",
        tags,
        summary: "POST a dead letter to the webhook again, signed now: delivered, it is removed (its owner, or global.manageSubscriptions)",
        params: DeadLetterParams,
        response: { 200: Replayed, ...problems(400, 404) },
      },
    },
    async (request) => subscriptions.replay(request.actor, request.params.subscriptionId, Number(request.params.deadLetter)),
  );
};
