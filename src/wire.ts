/**
 * The one shape of list requests and answers, as TypeBox schemas every domain's wire shapes build on:
 * `?cursor=&limit=` → `{items, nextCursor}`. Each domain states its own page limits (its constants);
 * the HTTP layer serves these shapes, the client takes its types from them.
 */
import { Type, type TSchema } from "@sinclair/typebox";

/** The query of a list whose domain serves at most `max` items a page (its own limit constant). */
export const pageQueryOf = (limits: { readonly default: number; readonly max: number }) =>
  Type.Object(
    {
      cursor: Type.Optional(Type.String({ maxLength: 2048, description: "nextCursor of the previous page" })),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: limits.max, default: limits.default })),
    },
    { additionalProperties: false },
  );

/** A page of `item`s; named (a component, see http/components.ts) when `$id` is given. */
export const PageOf = <T extends TSchema>(item: T, $id?: string) =>
  Type.Object({ items: Type.Array(item), nextCursor: Type.Union([Type.String(), Type.Null()]) }, $id ? { $id } : {});
