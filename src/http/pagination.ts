/**
 * Lists over HTTP: the page shapes (src/wire.ts, re-exported for the routes) and the fast path that
 * answers a page of stored JSON bytes.
 */
import type { FastifyReply } from "fastify";
import { pageJson } from "../resources/model/page-json.js";

export { PageOf, pageQueryOf } from "../wire.js";

/**
 * Sends a page whose items are already JSON bytes (as stored), joined without parsing them: the fast
 * path for lists. The route's response schema still documents the shape.
 */
export function sendJsonPage(reply: FastifyReply, items: readonly Uint8Array[], nextCursor: string | null): FastifyReply {
  return reply.type("application/json; charset=utf-8").send(pageJson(items, nextCursor));
}
