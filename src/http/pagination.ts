/** The one shape of list requests and answers: `?cursor=&limit=` → `{items, nextCursor}`. */
import { Type, type Static, type TSchema } from "@sinclair/typebox";
import type { FastifyReply } from "fastify";
import { pageJson } from "../resources/page-json.js";

export const PageQuery = Type.Object(
  {
    cursor: Type.Optional(Type.String({ maxLength: 2048, description: "nextCursor of the previous page" })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
  },
  { additionalProperties: false },
);
export type PageQuery = Static<typeof PageQuery>;

export const PageOf = <T extends TSchema>(item: T) =>
  Type.Object({ items: Type.Array(item), nextCursor: Type.Union([Type.String(), Type.Null()]) });

/**
 * Sends a page whose items are already JSON bytes (as stored), joined without parsing them: the fast
 * path for lists. The route's response schema still documents the shape.
 */
export function sendJsonPage(reply: FastifyReply, items: readonly Uint8Array[], nextCursor: string | null): FastifyReply {
  return reply.type("application/json; charset=utf-8").send(pageJson(items, nextCursor));
}
