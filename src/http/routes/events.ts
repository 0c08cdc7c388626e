/**
 * The change feed: `GET /api/v1/events` streams every committed event as Server-Sent Events, filtered
 * to the resources the caller may view (checked against the resource's permissions as they are when
 * the event is sent). A comment line every 15 s keeps proxies from closing an idle stream.
 */
import type { FastifyPluginAsync } from "fastify";
import { decodeJwt } from "jose";
import type { ResourceEvent } from "../../resources/events.js";
import type { Ref } from "../../resources/keys.js";
import { problems } from "../problem.js";

const KEEPALIVE_MS = 15_000;

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

export const eventRoutes: FastifyPluginAsync = async (app) => {
  const store = app.flowstore.workflow.store;
  const open = new Set<() => void>();
  // Streams never end by themselves: end them when the server closes, so shutdown is not held up.
  app.addHook("preClose", async () => {
    for (const end of open) end();
  });

  app.get(
    "/events",
    {
      schema: {
        tags: ["events"],
        summary: "Change feed (text/event-stream): one `event: <type>` per committed event the caller may view",
        produces: ["text/event-stream"],
        response: { 200: { description: "an endless text/event-stream", content: { "text/event-stream": { schema: { type: "string" } } } }, ...problems(401) },
      },
    },
    async (request, reply) => {
      const actor = request.actor;
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-store",
        connection: "keep-alive",
        "x-request-id": String(request.id),
      });
      res.write(": connected\n\n");
      // Events are sent in commit order; permission checks are chained so a slow check never reorders.
      let chain = Promise.resolve();
      const send = (event: ResourceEvent): void => {
        const last = event.path[event.path.length - 1];
        if (!last) return;
        const ref: Ref = { type: last.type, ids: event.path.map((p) => p.id) };
        chain = chain.then(async () => {
          if (res.destroyed) return;
          if (!(await store.canView(actor, ref))) return;
          res.write(`id: ${event.path[0]!.type}/${event.path[0]!.id}/${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
        });
      };
      const unsubscribe = store.onChange((_partition, events) => events.forEach(send));
      // The stream ends when the token expires, and at the next keep-alive once the user is disabled.
      const exp = tokenExpiry(request.headers.authorization);
      // (A timer cannot wait longer than about 24.8 days; a longer-lived token's stream ends then.)
      const expiry = exp === null ? undefined : setTimeout(() => end(), Math.min(2 ** 31 - 1, Math.max(0, exp * 1000 - Date.now())));
      const timer = setInterval(() => {
        res.write(": keep-alive\n\n");
        app.flowstore.identity.actorFor(actor.id).catch(() => end());
      }, KEEPALIVE_MS);
      const close = (): void => {
        clearInterval(timer);
        clearTimeout(expiry);
        unsubscribe();
        open.delete(end);
      };
      const end = (): void => {
        close();
        res.end();
      };
      open.add(end);
      request.raw.on("close", close);
      res.on("close", close);
    },
  );
};
