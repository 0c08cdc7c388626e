/**
 * One durable commit per write (issue 25): where the backend commits across partitions (`commitAcross`:
 * memory, LMDB) the partition writer puts a group's partition ops, ledger entry, feed entry and derived
 * index entries (assignments, visibility) in ONE commit; elsewhere it keeps the protocol of one commit per
 * partition. The same commands through both paths leave the same stored state, byte for byte (keys and
 * values of every partition, and the partition index); concurrent writes through the one-commit path keep
 * the ledger at the head, the feed gapless and in order, and the audit verifying.
 */
import { afterEach, expect, it } from "vitest";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { carriedKey, type KvStore, type Op, type Partition } from "../../src/kv/contract.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { MemoryKv } from "../../src/kv/memory.js";
import { encode } from "../../src/kv/tuple.js";
import { layout } from "../../src/resources/model/layout.js";
import { ResourceStore } from "../../src/resources/store.js";
import { projectRef, Workflow, workflowitemRef } from "../../src/workflow/commands.js";
import { workflowSchema } from "../../src/workflow/schema.js";
import { forEachBackend, httpBackends, type BackendHandle } from "../conformance/backends.js";

/** The backend without `commitAcross` (and so on the per-partition protocol): every other call forwarded. */
function perPartition(inner: KvStore): KvStore {
  return {
    backend: inner.backend,
    get: (p, k) => inner.get(p, k),
    ...(inner.getSync ? { getSync: (p: Partition, k: Parameters<NonNullable<KvStore["getSync"]>>[1]) => inner.getSync!(p, k) } : {}),
    getMany: (p, ks) => inner.getMany(p, ks),
    scan: (p, o) => inner.scan(p, o),
    commit: (p, ops) => inner.commit(p, ops),
    ...(inner.commitVisible ? { commitVisible: (p: Partition, ops: Parameters<KvStore["commit"]>[1]) => inner.commitVisible!(p, ops) } : {}),
    listPartitions: (kind, o) => inner.listPartitions(kind, o),
    dropPartition: (p) => inner.dropPartition(p),
    close: () => inner.close(),
  };
}

/** Every stored key and value (hex), and the partition index, without versions: the state to compare. */
function dump(kv: KvStore): string[] {
  if (kv instanceof MemoryKv) {
    const out: string[] = [];
    for (const [id, part] of kv.data.partitions) for (const [k, rec] of part.records) out.push(`${Buffer.from(id + k, "latin1").toString("hex")}=${rec.value.toString("hex")}`);
    for (const [kind, idx] of kv.data.index) for (const id of idx.keys()) out.push(`index ${kind} ${Buffer.from(id, "latin1").toString("hex")}`);
    return out.sort();
  }
  if (kv instanceof LmdbKv) {
    const out: string[] = [];
    // 0x05…: the data; 0x02…: the partition index (0x01…, the commit sequences, left out: versions)
    for (const { key, value } of kv.raw.getRange({})) if (key[0] !== 0x01) out.push(`${Buffer.from(key).toString("hex")}=${Buffer.from(value).toString("hex")}`);
    return out.sort();
  }
  throw new Error(`no dump for ${kv.backend}`);
}

const mary = userActor("mary", ["finance"]);
const handles: BackendHandle[] = [];
afterEach(async () => {
  while (handles.length) await handles.pop()!.destroy();
});

forEachBackend((backend) => {
  /** A workflow over a fresh store, on one path or the other, with a clock that runs alike on both. */
  async function open(oneCommit: boolean, wrap: (kv: KvStore) => KvStore = (kv) => kv): Promise<{ wf: Workflow; kv: KvStore }> {
    const h = await backend.create();
    handles.push(h);
    expect(h.kv.commitAcross).toBeTypeOf("function");
    let t = Date.parse("2026-03-01T00:00:00Z");
    const kv = wrap(oneCommit ? h.kv : perPartition(h.kv));
    return { wf: new Workflow(new ResourceStore(kv, workflowSchema, { clock: () => (t += 1000) })), kv: h.kv };
  }

  /** Creates, updates, assignments, grants and revokes (the derived indexes), closes: one command at a time. */
  async function script(wf: Workflow): Promise<void> {
    await wf.store.global.grant(SYSTEM, "global.createProject", "mary");
    await wf.createProject(mary, { id: "p", displayName: "School", projectedBudgets: [], tags: ["edu"] });
    await wf.createProject(mary, { id: "q", displayName: "Road", projectedBudgets: [] });
    await wf.createSubproject(mary, "p", { id: "s", displayName: "Building", currency: "EUR" });
    for (let i = 0; i < 6; i++) await wf.createWorkflowitem(mary, "p", "s", { id: `w${i}`, displayName: `step ${i}`, amountType: "N/A", assignee: i % 2 ? "jane" : "mary" });
    await wf.update(mary, workflowitemRef("p", "s", "w1"), { description: "changed" });
    await wf.assign(mary, workflowitemRef("p", "s", "w2"), "val");
    await wf.grant(mary, projectRef("p"), "project.list", "val");
    await wf.grant(mary, projectRef("q"), "project.viewDetails", "jane");
    await wf.revoke(mary, projectRef("p"), "project.list", "val");
    await wf.closeWorkflowitem(mary, "p", "s", "w0");
  }

  it("the same commands leave the same stored state on the one-commit path and on the per-partition path", async () => {
    const one = await open(true);
    const per = await open(false);
    await script(one.wf);
    await script(per.wf);
    const a = dump(one.kv);
    expect(a.length).toBeGreaterThan(50);
    // the store-wide partitions the one commit now writes are there: ledger, feed, assignments, visibility
    for (const kind of ["ledger", "feed", "assigned", "visible"]) expect((await one.kv.listPartitions(kind)).partitions.length, kind).toBeGreaterThan(0);
    expect(a).toEqual(dump(per.kv));
  });

  it("the writer's ops carry their keys' encoding (the commit takes it instead of encoding again), on both paths", async () => {
    for (const oneCommit of [true, false]) {
      let carried = 0;
      const wrong: string[] = [];
      const seen = (ops: readonly Op[]) => {
        for (const op of ops) {
          const keyBytes = carriedKey(op);
          if (keyBytes === undefined || !("key" in op)) continue;
          carried++;
          if (!keyBytes.equals(encode(op.key))) wrong.push(`${JSON.stringify(op.key)}: ${keyBytes.toString("hex")}`);
        }
      };
      // every commit of the store the workflow sees, whichever of the three calls makes it
      const watched = (kv: KvStore): KvStore =>
        new Proxy(kv, {
          get(target, prop) {
            const v = Reflect.get(target, prop, target) as unknown;
            if (typeof v !== "function") return v;
            if (prop === "commit" || prop === "commitVisible") return (p: Partition, ops: readonly Op[]) => (seen(ops), (v as KvStore["commit"]).call(target, p, ops));
            if (prop === "commitAcross")
              return (build: Parameters<NonNullable<KvStore["commitAcross"]>>[0]) =>
                target.commitAcross!((tx) => {
                  const batches = build(tx);
                  for (const b of batches) seen(b.ops);
                  return batches;
                });
            return (v as (...a: unknown[]) => unknown).bind(target);
          },
        });
      const { wf } = await open(oneCommit, watched);
      await script(wf);
      await Promise.all(Array.from({ length: 20 }, (_, i) => wf.createWorkflowitem(mary, "p", "s", { id: `c${i}`, displayName: `c ${i}`, amountType: "N/A" })));
      await wf.store.writes.setOrdering(mary, { type: "subproject", ids: ["p", "s"] }, ["c3", "w2"]);
      expect(wrong).toEqual([]);
      expect(carried).toBeGreaterThan(100);
    }
  });

  it("concurrent writes on the one-commit path: the ledger at every head, the feed gapless and in commit order, the audit verifying", async () => {
    const { wf, kv } = await open(true);
    await script(wf);
    await Promise.all([
      ...Array.from({ length: 30 }, (_, i) => wf.createWorkflowitem(mary, "p", "s", { id: `c${i}`, displayName: `c ${i}`, amountType: "N/A", assignee: "jane" })),
      ...Array.from({ length: 10 }, (_, i) => wf.createSubproject(mary, "q", { id: `qs${i}`, displayName: `qs ${i}`, currency: "EUR" })),
    ]);
    const entries = await wf.store.writer.feed.read(0, 10_000);
    expect(entries.map((e) => e.position)).toEqual(entries.map((_, i) => i + 1));
    for (const p of [
      ["project", "p"],
      ["project", "q"],
    ] as Partition[]) {
      const head = await wf.store.writer.readHead(p);
      expect(await wf.store.writer.readLedger(p)).toEqual({ seq: head.seq, hash: head.hash });
      const ranges = entries.filter((e) => JSON.stringify(e.partition) === JSON.stringify(p));
      expect(ranges[0]!.from).toBe(1);
      for (let i = 1; i < ranges.length; i++) expect(ranges[i]!.from).toBe(ranges[i - 1]!.to + 1);
      expect(ranges.at(-1)!.to).toBe(head.seq);
    }
    expect((await kv.scan(layout.assigned("jane"), { limit: 10_000 })).entries.length).toBeGreaterThanOrEqual(33);
    for (const p of [
      ["project", "p"],
      ["project", "q"],
    ] as Partition[])
      expect(await wf.store.audit.verify(p)).toMatchObject({ ok: true });
  });
}, httpBackends);
