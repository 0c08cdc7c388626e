/**
 * Sweep crash (issue 3, item 6): deleting a space sweeps its swept flat children (tenants), each a
 * partition of its own; its counted providers are deleted one by one before (issue 20). A child process deleting a space is killed with SIGKILL mid-sweep; the parent
 * reopens the store, runs `resumeSweeps`, and every partition of that space's children is gone while the
 * other space is intact, and every chain verifies.
 *
 * Reproduce a run with FLOWSTORE_SWEEP_SEED=<seed> (the seed is printed).
 */
import { join } from "node:path";
import fc from "fast-check";
import { expect, it } from "vitest";
import { NotFoundError } from "../../src/errors.js";
import { allPartitions, type KvStore, type Partition } from "../../src/kv/contract.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { ResourceStore } from "../../src/resources/store.js";
import { tenancySchema } from "../../src/tenancy/schema.js";
import { runChild } from "./child.js";
import { makeTempDirSync, removeTempDirSync } from "../support/temp-dir.js";

const SEED = Number(process.env.FLOWSTORE_SWEEP_SEED ?? 20260302);
const SCRIPT = join(import.meta.dirname, "sweep-writer.ts");
const TENANTS = 30;
const PROVIDERS = 4;
/** The children the sweep removes: the tenants (providers are counted and deleted before the space). */
const CHILDREN = TENANTS;
const gov = userActor("gov");
const HASH = "c".repeat(64);

type Store = ResourceStore<typeof tenancySchema.decl>;
const space = (id: string) => ({ type: "space" as const, ids: [id] });
const tenant = (id: string) => ({ type: "tenant" as const, ids: [id] });
const provider = (id: string) => ({ type: "provider" as const, ids: [id] });

/** Two spaces, each with tenants (kms, content objects, versions nested inside) and providers (nodes). */
async function populate(store: Store): Promise<void> {
  await store.global.grant(SYSTEM, "global.createSpace", "gov");
  for (const sp of ["s1", "s2"]) {
    await store.writes.create(gov, "space", null, { name: sp }, { id: sp });
    await Promise.all(
      Array.from({ length: TENANTS }, async (_, i) => {
        const t = `${sp}-t${i}`;
        await store.writes.create(gov, "tenant", space(sp), { name: t }, { id: t });
        await store.writes.create(gov, "kms", tenant(t), { keyRef: `key-${t}` }, { id: "k" });
        await store.writes.create(gov, "contentObject", tenant(t), { name: "doc" }, { id: "c" });
        await store.writes.create(gov, "contentObjectVersion", { type: "contentObject", ids: [t, "c"] }, { hash: HASH, size: i }, { id: "v1" });
      }),
    );
    await Promise.all(
      Array.from({ length: PROVIDERS }, async (_, i) => {
        const p = `${sp}-p${i}`;
        await store.writes.create(gov, "provider", space(sp), { name: p }, { id: p });
        await store.writes.create(gov, "node", provider(p), { endpoint: `https://${p}.example` }, { id: "n" });
      }),
    );
  }
}

const ids = (sp: string) => ({
  tenants: Array.from({ length: TENANTS }, (_, i) => `${sp}-t${i}`),
  providers: Array.from({ length: PROVIDERS }, (_, i) => `${sp}-p${i}`),
});

async function partitionsOf(kv: KvStore, kind: string): Promise<Set<string>> {
  const out = new Set<string>();
  for await (const p of allPartitions(kv, kind)) out.add(p[1] as string);
  return out;
}

const isEmpty = async (kv: KvStore, p: Partition) => (await kv.scan(p, { limit: 1 })).entries.length === 0;

// Kill right when the delete committed (0 swept), and at seeded points part-way through the sweep.
const killPoints = [0, ...fc.sample(fc.integer({ min: 1, max: CHILDREN - 1 }), { seed: SEED, numRuns: 3 })];

it.each(killPoints.map((k, i) => [i, k]))(
  `trial %i: killed after %i of ${CHILDREN} children swept, the sweep resumes to the end (seed ${SEED})`,
  async (_trial, killAfter) => {
    console.log(`sweep test seed: ${SEED} (FLOWSTORE_SWEEP_SEED=${SEED} to reproduce); kill after ${killAfter} swept`);
    const dir = makeTempDirSync("sweep");
    try {
      let kv = LmdbKv.open(dir);
      const before: Store = new ResourceStore(kv, tenancySchema);
      await populate(before);
      for (const p of ids("s1").providers) await before.lifecycle.delete(gov, provider(p));
      await kv.close();

      let swept = 0;
      let deleted = false;
      const result = await runChild(SCRIPT, [dir, "s1"], (line) => {
        if (line.a !== "event") return false;
        if (line.type === "space.deleted") deleted = true;
        if (line.type === "space.child_swept") swept++;
        return deleted && swept >= killAfter;
      });
      expect(result.killed, `the child ended before the kill: ${result.code} ${result.stderr}`).toBe(true);
      expect(result.signal).toBe("SIGKILL");
      const sweptBeforeKill = result.lines.filter((l) => l.type === "space.child_swept").length;

      kv = LmdbKv.open(dir);
      try {
        const store: Store = new ResourceStore(kv, tenancySchema);
        // The delete was committed: the space reads 404 at once, whatever the sweep's progress.
        await expect(store.reads.get(gov, space("s1"))).rejects.toBeInstanceOf(NotFoundError);
        const s1 = ids("s1");
        const leftBefore = (await Promise.all(s1.tenants.map((t) => isEmpty(kv, ["tenant", t])))).filter((e) => !e).length;
        console.log(`  ${sweptBeforeKill} children reported swept when killed, ${leftBefore} of ${CHILDREN} partitions left to sweep`);
        expect(leftBefore).toBeLessThanOrEqual(CHILDREN - sweptBeforeKill);

        expect(await store.lifecycle.resumeSweeps(SYSTEM)).toBe(1);

        // Every child partition of s1 is gone, and out of the partition index.
        for (const t of s1.tenants) {
          expect(await isEmpty(kv, ["tenant", t]), `tenant ${t}`).toBe(true);
          await expect(store.reads.get(gov, tenant(t))).rejects.toBeInstanceOf(NotFoundError);
        }
        for (const p of s1.providers) await expect(store.reads.get(gov, provider(p))).rejects.toBeInstanceOf(NotFoundError);
        const tenantParts = await partitionsOf(kv, "tenant");
        const providerParts = await partitionsOf(kv, "provider");
        expect(s1.tenants.filter((t) => tenantParts.has(t))).toEqual([]);
        expect((await kv.scan(["space", "s1"], { prefix: ["c"] })).entries).toEqual([]);
        expect((await kv.scan(["sweeps"])).entries).toEqual([]);

        // s2 is intact: every tenant with its nested records, every provider with its node.
        const s2 = ids("s2");
        expect([...tenantParts].sort()).toEqual([...s2.tenants].sort());
        // s1's providers were deleted one by one: their tombstones (logs) stay until purged.
        expect([...providerParts].sort()).toEqual([...s1.providers, ...s2.providers].sort());
        const listed = await store.reads.listChildren(gov, space("s2"), "tenant", { limit: 1000 });
        expect(listed.items.map((t) => t.id).sort()).toEqual([...s2.tenants].sort());
        for (const t of s2.tenants) {
          expect((await store.reads.get(gov, { type: "kms", ids: [t, "k"] })).data.keyRef).toBe(`key-${t}`);
          expect((await store.reads.get(gov, { type: "contentObjectVersion", ids: [t, "c", "v1"] })).data.hash).toBe(HASH);
          expect(await store.audit.verify(["tenant", t])).toMatchObject({ ok: true });
        }
        for (const p of s2.providers) {
          expect((await store.reads.get(gov, { type: "node", ids: [p, "n"] })).data.endpoint).toBe(`https://${p}.example`);
          expect(await store.audit.verify(["provider", p])).toMatchObject({ ok: true });
        }
        // Both space logs verify: s1's tombstone holds the delete and one child_swept per child.
        expect(await store.audit.verify(["space", "s2"])).toMatchObject({ ok: true });
        expect(await store.audit.verify(["space", "s1"])).toMatchObject({ ok: true });
        const history = await store.audit.history(SYSTEM, space("s1"), { limit: 1000 });
        const sweptEvents = history.items.filter((e) => e.type === "space.child_swept").map((e) => e.payload.id as string);
        expect(sweptEvents.sort()).toEqual([...s1.tenants].sort());
        expect(await store.lifecycle.resumeSweeps(SYSTEM)).toBe(0);
      } finally {
        await kv.close();
      }
    } finally {
      removeTempDirSync(dir);
    }
  },
  60_000,
);
