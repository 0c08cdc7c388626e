/** asOf on a parent with flat children: the index entries of its children never change its record. */
import { afterEach, beforeEach, expect, it } from "vitest";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { ResourceStore } from "../../src/resources/store.js";
import { tenancySchema } from "../../src/tenancy/schema.js";
import { forEachBackend, type BackendHandle } from "../conformance/backends.js";

const gov = userActor("gov");
const space = { type: "space" as const, ids: ["s1"] };

forEachBackend((backend) => {
  let h: BackendHandle;
  let store: ResourceStore<typeof tenancySchema.decl>;
  let t = Date.parse("2026-05-01T00:00:00Z");
  beforeEach(async () => {
    h = await backend.create();
    store = new ResourceStore(h.kv, tenancySchema, { clock: () => (t += 1000) });
    await store.global.grant(SYSTEM, "global.createSpace", "gov");
  });
  afterEach(async () => h.destroy());

  it("as of now, a space with providers equals its get (version and updatedAt)", async () => {
    await store.writes.create(gov, "space", null, { name: "S" }, { id: "s1" });
    await store.writes.update(gov, space, { description: "d" });
    await store.writes.create(gov, "provider", space, { name: "P1" }, { id: "p1" });
    await store.writes.create(gov, "provider", space, { name: "P2" }, { id: "p2" });
    await store.lifecycle.delete(gov, { type: "provider", ids: ["p1"] });
    const now = await store.reads.get(gov, space);
    const then = await store.audit.asOf(gov, space, new Date(t + 1000));
    expect(then).toEqual(now);
    expect(then?.meta).toMatchObject({ version: 2, updatedAt: now.meta.updatedAt });
  });
});
