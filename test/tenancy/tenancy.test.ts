import { afterEach, beforeEach, expect, it } from "vitest";
import { ConflictError, NotFoundError } from "../../src/errors.js";
import type { KvStore, Partition } from "../../src/kv/contract.js";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { ResourceStore } from "../../src/resources/store.js";
import { tenancySchema } from "../../src/tenancy/schema.js";
import { forEachBackend, type BackendHandle } from "../conformance/backends.js";

const admin = userActor("gov");
const space = (id: string) => ({ type: "space" as const, ids: [id] });
const tenant = (id: string) => ({ type: "tenant" as const, ids: [id] });
const provider = (id: string) => ({ type: "provider" as const, ids: [id] });
const cobj = (t: string, id: string) => ({ type: "contentObject" as const, ids: [t, id] });
const HASH = "a".repeat(64);

/** A kv whose dropPartition "crashes" (throws) after `budget` successful calls. */
function crashing(kv: KvStore, budget: number): KvStore {
  let left = budget;
  return new Proxy(kv, {
    get(target, prop, receiver) {
      if (prop === "dropPartition") {
        return async (p: Partition) => {
          if (left-- <= 0) throw new Error("simulated crash");
          return target.dropPartition(p);
        };
      }
      const v = Reflect.get(target, prop, receiver);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

forEachBackend((backend) => {
  let h: BackendHandle;
  let store: ResourceStore<typeof tenancySchema.decl>;
  beforeEach(async () => {
    h = await backend.create();
    store = new ResourceStore(h.kv, tenancySchema);
    await store.global.grant(SYSTEM, "global.createSpace", "gov");
    await store.writes.create(admin, "space", null, { name: "S1" }, { id: "s1" });
    await store.writes.create(admin, "space", null, { name: "S2" }, { id: "s2" });
  });
  afterEach(async () => h.destroy());

  it("declares seed 001's hierarchy with no per-type code", () => {
    const t = (n: string) => store.schema.type(n);
    expect(t("tenant").owner).toBe("tenant");
    expect(t("kms").chain).toEqual(["tenant", "kms"]);
    expect(t("contentObjectVersion").chain).toEqual(["tenant", "contentObject", "contentObjectVersion"]);
    expect(t("node").chain).toEqual(["provider", "node"]);
    expect(t("space").intents.create).toBe("global.createSpace");
    expect(t("tenant").intents.create).toBe("space.createTenant");
  });

  it("tenant ids are global; content object ids may repeat under two tenants; tenants are listed per space", async () => {
    await store.writes.create(admin, "tenant", space("s1"), { name: "T1" }, { id: "t1" });
    await store.writes.create(admin, "tenant", space("s1"), { name: "T2" }, { id: "t2" });
    await store.writes.create(admin, "tenant", space("s2"), { name: "T3" }, { id: "t3" });
    await expect(store.writes.create(admin, "tenant", space("s2"), { name: "dup" }, { id: "t1" })).rejects.toBeInstanceOf(ConflictError);
    expect((await store.reads.listChildren(admin, space("s2"), "tenant")).items.map((t) => t.id)).toEqual(["t3"]);
    expect((await store.reads.listChildren(admin, space("s1"), "tenant")).items.map((t) => t.id)).toEqual(["t1", "t2"]);
    await store.writes.create(admin, "contentObject", tenant("t1"), { name: "doc" }, { id: "c1" });
    await store.writes.create(admin, "contentObject", tenant("t2"), { name: "doc elsewhere" }, { id: "c1" });
    expect((await store.reads.get(admin, cobj("t1", "c1"))).data.name).toBe("doc");
    expect((await store.reads.get(admin, cobj("t2", "c1"))).data.name).toBe("doc elsewhere");
    // A tenant is addressed by its id alone.
    expect((await store.reads.get(admin, tenant("t2"))).data.name).toBe("T2");
  });

  it("deleting a tenant removes its kms, content objects and versions in one atomic commit", async () => {
    await store.writes.create(admin, "tenant", space("s1"), { name: "T1" }, { id: "t1" });
    await store.writes.create(admin, "kms", tenant("t1"), { keyRef: "k" }, { id: "k1" });
    await store.writes.create(admin, "contentObject", tenant("t1"), { name: "doc" }, { id: "c1" });
    for (let v = 0; v < 5; v++) {
      await store.writes.create(admin, "contentObjectVersion", cobj("t1", "c1"), { hash: HASH, size: v }, { id: `v${v}` });
    }
    let commits = 0;
    const counting = new Proxy(h.kv, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver);
        // A commit is any of these calls (the writer's staged commit, and its one commit across partitions
        // where the backend has one, are commits too).
        if ((prop === "commit" || prop === "commitVisible") && typeof v === "function")
          return (p: Partition, ops: never[]) => (p[0] === "tenant" && commits++, (v as KvStore["commit"]).call(target, p, ops));
        if (prop === "commitAcross" && typeof v === "function")
          return (build: Parameters<NonNullable<KvStore["commitAcross"]>>[0]) =>
            (v as NonNullable<KvStore["commitAcross"]>).call(target, (tx) => {
              const batches = build(tx);
              if (batches.some((b) => b.partition[0] === "tenant")) commits++;
              return batches;
            });
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    const s2 = new ResourceStore(counting, tenancySchema);
    await s2.lifecycle.delete(admin, tenant("t1"));
    expect(commits).toBe(1);
    await expect(store.reads.get(admin, cobj("t1", "c1"))).rejects.toBeInstanceOf(NotFoundError);
    const left = await h.kv.scan(["tenant", "t1"], { prefix: ["s"] });
    expect(left.entries).toHaveLength(0);
    expect((await store.reads.listChildren(admin, space("s1"), "tenant")).items).toHaveLength(0);
  });

  it("deleting a space sweeps its tenants (once its counted providers are gone), and a crashed sweep resumes to the end", async () => {
    for (let i = 0; i < 6; i++) {
      await store.writes.create(admin, "tenant", space("s1"), { name: `T${i}` }, { id: `t${i}` });
      await store.writes.create(admin, "kms", tenant(`t${i}`), { keyRef: "k" }, { id: "k" });
    }
    await store.writes.create(admin, "provider", space("s1"), { name: "P" }, { id: "p1" });
    await store.writes.create(admin, "node", provider("p1"), { endpoint: "e" }, { id: "n1" });
    await store.writes.create(admin, "tenant", space("s2"), { name: "other" }, { id: "keep" });
    // Providers are counted, not swept: while one is left, the space's delete is refused before anything commits.
    await expect(store.lifecycle.delete(admin, space("s1"))).rejects.toThrow("still has 1 provider child");
    expect((await h.kv.scan(["sweeps"])).entries).toHaveLength(0);
    await store.lifecycle.delete(admin, provider("p1"));

    const fragile = new ResourceStore(crashing(h.kv, 3), tenancySchema);
    await expect(fragile.lifecycle.delete(admin, space("s1"))).rejects.toThrow("simulated crash");
    // The space reads as deleted at once, although the sweep did not finish.
    await expect(store.reads.get(admin, space("s1"))).rejects.toBeInstanceOf(NotFoundError);
    const remaining = (await h.kv.scan(["space", "s1"], { prefix: ["c"] })).entries.length;
    expect(remaining).toBeGreaterThan(0);

    const fresh = new ResourceStore(h.kv, tenancySchema);
    expect(await fresh.lifecycle.resumeSweeps(SYSTEM)).toBe(1);
    for (let i = 0; i < 6; i++) {
      await expect(fresh.reads.get(admin, tenant(`t${i}`))).rejects.toBeInstanceOf(NotFoundError);
      expect((await h.kv.scan(["tenant", `t${i}`], {})).entries).toHaveLength(0);
    }
    await expect(fresh.reads.get(admin, { type: "node", ids: ["p1", "n1"] })).rejects.toBeInstanceOf(NotFoundError);
    expect((await h.kv.scan(["space", "s1"], { prefix: ["c"] })).entries).toHaveLength(0);
    expect((await fresh.reads.get(admin, tenant("keep"))).data.name).toBe("other");
    expect(await fresh.lifecycle.resumeSweeps(SYSTEM)).toBe(0);
    expect((await fresh.audit.verify(["space", "s1"])).ok).toBe(true);
  });

  it("refuses to create under a deleted or missing parent", async () => {
    await expect(store.writes.create(admin, "tenant", space("nope"), { name: "x" }, { id: "tx" })).rejects.toBeInstanceOf(NotFoundError);
    expect((await h.kv.scan(["tenant", "tx"], {})).entries).toHaveLength(0);
  });
});
