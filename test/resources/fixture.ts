import { Type } from "@sinclair/typebox";
import { ValidationError } from "../../src/errors.js";
import type { KvStore } from "../../src/kv/contract.js";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { defineSchema } from "../../src/resources/model/schema.js";
import { ResourceStore } from "../../src/resources/store.js";

/** A small generic hierarchy for the resources suite: folder → list (ordered items) → item. */
export const testSchema = defineSchema({
  folder: {
    parent: null,
    idStyle: "flat",
    fields: Type.Object({ title: Type.String({ minLength: 1 }) }, { additionalProperties: false }),
  },
  list: {
    parent: "folder",
    idStyle: "nested",
    orderedChildren: "item",
    fields: Type.Object({ title: Type.String({ minLength: 1 }) }, { additionalProperties: false }),
  },
  item: {
    parent: "list",
    idStyle: "nested",
    statusField: "status",
    extraIntents: ["item.close"],
    fields: Type.Object(
      {
        title: Type.String({ minLength: 1 }),
        status: Type.Union([Type.Literal("open"), Type.Literal("closed")]),
        amount: Type.Optional(Type.String({ pattern: "^-?\\d+(\\.\\d+)?$" })),
        note: Type.Optional(Type.String()),
      },
      { additionalProperties: false },
    ),
    rules: (d) => {
      if (d.status === "closed" && d.note === "forbidden") throw new ValidationError("note may not be forbidden when closed", "data.note");
    },
  },
  guarded: {
    parent: "folder",
    idStyle: "nested",
    onDelete: "refuse",
    fields: Type.Object({}, { additionalProperties: false }),
  },
  leaf: {
    parent: "guarded",
    idStyle: "nested",
    fields: Type.Object({}, { additionalProperties: false }),
  },
});

export const alice = userActor("alice", ["team"]);
export const bob = userActor("bob");
export const carol = userActor("carol", ["team"]);
export { SYSTEM };

export function clock(start = Date.parse("2026-01-01T00:00:00.000Z")): { now: () => number; tick: (ms?: number) => void } {
  let t = start;
  return { now: () => t, tick: (ms = 1) => void (t += ms) };
}

export async function storeWithRoot(kv: KvStore, options: { now?: () => number } = {}) {
  const store = new ResourceStore(kv, testSchema, { clock: options.now });
  const folder = await store.writes.create(SYSTEM, "folder", null, { title: "root" }, { id: "f1" });
  await store.writes.grant(SYSTEM, { type: "folder", ids: ["f1"] }, "folder.viewDetails", "alice");
  await store.writes.grant(SYSTEM, { type: "folder", ids: ["f1"] }, "folder.createList", "alice");
  await store.writes.grant(SYSTEM, { type: "folder", ids: ["f1"] }, "folder.createGuarded", "alice");
  return { store, folder };
}
