import { beforeEach, describe, expect, it } from "vitest";
import { MemoryKv } from "../../src/kv/memory.js";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import type { ChildRow, MutateContext } from "../../src/resources/read/context.js";
import { ResourceStore } from "../../src/resources/store.js";
import { tenancySchema } from "../../src/tenancy/schema.js";

const gov = userActor("gov");

/** Runs a no-op command on `ref` and hands back what its read context saw. */
async function seen<T>(store: ResourceStore, ref: { type: string; ids: string[] }, read: (ctx: MutateContext) => Promise<T>): Promise<T> {
  let out: T | undefined;
  await store.writes.mutate(gov, ref, {
    intent: `${ref.type}.update`,
    verb: "read",
    change: async (_current, ctx) => {
      out = await read(ctx);
      return {};
    },
  });
  return out!;
}

const ids = (rows: ChildRow[]): string[] => rows.map((r) => r.id).sort();

describe("the read context of a domain command", () => {
  let store: ResourceStore<typeof tenancySchema.decl>;
  beforeEach(async () => {
    store = new ResourceStore(new MemoryKv(), tenancySchema);
    await store.global.grant(SYSTEM, "global.createSpace", "gov");
    await store.writes.create(gov, "space", null, { name: "S" }, { id: "s1" });
    await store.writes.create(gov, "provider", { type: "space", ids: ["s1"] }, { name: "P1" }, { id: "p1" });
    await store.writes.create(gov, "provider", { type: "space", ids: ["s1"] }, { name: "P2" }, { id: "p2" });
    await store.writes.create(gov, "tenant", { type: "space", ids: ["s1"] }, { name: "T" }, { id: "t1" });
  });

  it("reads flat children (rows from the record header) and a flat resource's parent", async () => {
    const rows = await seen(store, { type: "space", ids: ["s1"] }, (ctx) => ctx.children("provider"));
    expect(ids(rows)).toEqual(["p1", "p2"]);
    expect(rows[0]).toMatchObject({ status: "", version: 1 });
    expect(await seen(store, { type: "space", ids: ["s1"] }, (ctx) => ctx.parent())).toBeNull();
    const parent = await seen(store, { type: "provider", ids: ["p1"] }, (ctx) => ctx.parent());
    expect(parent).toMatchObject({ id: "s1", type: "space", data: { name: "S" } });
    expect(ids(await seen(store, { type: "provider", ids: ["p1"] }, (ctx) => ctx.siblings()))).toEqual(["p1", "p2"]);
  });

  it("hands a create's guard the parent and the future siblings", async () => {
    let siblings: string[] = [];
    await store.writes.create(
      gov,
      "provider",
      { type: "space", ids: ["s1"] },
      { name: "P3" },
      {
        id: "p3",
        guard: async (parent, ctx) => {
          expect(parent?.id).toBe("s1");
          expect((await ctx.parent())?.id).toBe("s1");
          expect(await ctx.children("node")).toEqual([]);
          siblings = ids(await ctx.siblings());
        },
      },
    );
    expect(siblings).toEqual(["p1", "p2"]);
  });
});
