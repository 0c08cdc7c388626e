/** The one shape of list requests and answers: `?cursor=&limit=` → `{items, nextCursor}`. */
import { Type, type Static, type TSchema } from "@sinclair/typebox";
import type { FastifyReply } from "fastify";
import { DEFAULT_PAGE, MAX_PAGE } from "../identity/index.js";
import { pageJson } from "../resources/model/page-json.js";

/** The query of a list whose domain serves at most `max` items a page (its own limit constant). */
export const pageQueryOf = (limits: { readonly default: number; readonly max: number }) =>
  Type.Object(
    {
      cursor: Type.Optional(Type.String({ maxLength: 2048, description: "nextCursor of the previous page" })),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: limits.max, default: limits.default })),
    },
    { additionalProperties: false },
  );

/** Users and groups (identity's page limits); process data and snapshots use the same. */
export const PageQuery = pageQueryOf({ default: DEFAULT_PAGE, max: MAX_PAGE });
export type PageQuery = Static<typeof PageQuery>;

/** A page of `item`s; named (a component, see components.ts) when `$id` is given. */
export const PageOf = <T extends TSchema>(item: T, $id?: string) =>
  Type.Object({ items: Type.Array(item), nextCursor: Type.Union([Type.String(), Type.Null()]) }, $id ? { $id } : {});

/**
 * Sends a page whose items are already JSON bytes (as stored), joined without parsing them: the fast
 * path for lists. The route's response schema still documents the shape.
 */
export function sendJsonPage(reply: FastifyReply, items: readonly Uint8Array[], nextCursor: string | null): FastifyReply {
  return reply.type("application/json; charset=utf-8").send(pageJson(items, nextCursor));
}
