/**
 * The store-wide transparency log (src/tlog/log.ts) over every backend (test/conformance/backends.ts:
 * memory, LMDB, Redis, Redis Cluster, PostgreSQL): every event of
 * every partition becomes exactly one leaf, in the feed's order; roots, inclusion and consistency proofs
 * from the stored nodes verify; two appenders at once (two handles on one store, as a fleet) never fork
 * or duplicate; a new epoch (a restore) appends the events again and keeps the old tree as a prefix; the
 * background appender of an open store catches up by itself and its lag falls to 0.
 */
import { setImmediate } from "node:timers";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SYSTEM } from "../../src/access/actor.js";
import { openFlowstore, type Flowstore } from "../../src/compose/open.js";
import { allPartitions, type KvStore, type Partition } from "../../src/kv/contract.js";
import { layout } from "../../src/resources/model/layout.js";
import { Feed } from "../../src/resources/log/feed.js";
import { leafBytes, parseLeaf, TransparencyLog } from "../../src/tlog/log.js";
import { leafHash, verifyConsistency, verifyInclusion } from "../../src/tlog/merkle.js";
import { backends, type BackendHandle } from "../conformance/backends.js";
import { eventually } from "../support/index.js";

/** Every event the store's chained project partitions hold: partition → head seq. */
async function heads(kv: KvStore): Promise<Map<string, { partition: Partition; seq: number }>> {
  const out = new Map<string, { partition: Partition; seq: number }>();
  for await (const p of allPartitions(kv, "project")) {
    const e = await kv.get(p, layout.head);
    if (e) out.set(JSON.stringify(p), { partition: p, seq: (JSON.parse(e.value.toString("utf8")) as { seq: number }).seq });
  }
  return out;
}

const total = (h: Map<string, { seq: number }>): number => [...h.values()].reduce((n, v) => n + v.seq, 0);

async function writeSome(fs: Flowstore, prefix: string, projects: number): Promise<void> {
  for (let i = 0; i < projects; i++) {
    const p = `${prefix}${i}`;
    await fs.workflow.createProject(SYSTEM, { id: p, displayName: `Project ${p}` });
    await fs.workflow.createSubproject(SYSTEM, p, { id: "s", displayName: "Sub", currency: "EUR" });
    if (i % 2 === 0) await fs.workflow.update(SYSTEM, { type: "project", ids: [p] }, { description: "changed" });
  }
}

/** Checks every leaf of the tree of `size`: one per event, each event once, the leaf naming its event's hash, its inclusion proof verifying. */
async function checkTree(fs: Flowstore, size: number, epoch: number): Promise<void> {
  const tree = fs.log.tree;
  const root = await tree.root(size);
  const seen = new Set<string>();
  const feed = new Feed(fs.kv);
  for (let i = 0; i < size; i++) {
    const { leaf, proof } = await tree.inclusion(i, size);
    expect(verifyInclusion(i, size, leafHash(leaf), proof, root), `leaf ${i}`).toBe(true);
    const l = parseLeaf(leaf);
    if (l.epoch !== epoch) continue;
    const key = `${JSON.stringify(l.partition)}#${l.seq}`;
    expect(seen.has(key), `${key} twice`).toBe(false);
    seen.add(key);
    const [event] = await feed.events(l.partition, l.seq, l.seq);
    expect(event?.hash).toBe(l.hash);
    expect(leafBytes(l).equals(leaf)).toBe(true);
  }
  const h = await heads(fs.kv);
  expect(seen.size).toBe(total(h));
}

for (const backend of backends) {
  describe(`transparency log on ${backend.name}`, () => {
    let h: BackendHandle;
    let fs: Flowstore;
    beforeEach(async () => {
      h = await backend.create();
      fs = await openFlowstore(h.kv);
    });
    afterEach(async () => {
      await fs.close();
      await h.destroy();
    });

    it("holds every event once, in feed order, with proofs that verify", async () => {
      await writeSome(fs, "a", 4);
      const tree = fs.log.tree;
      await tree.appendPending();
      const first = await tree.head();
      expect(first.size).toBe(total(await heads(fs.kv)));
      expect(first.cursor).toBe(await new Feed(fs.kv).head());
      expect(await tree.lag()).toBe(0);
      await checkTree(fs, first.size, 0);

      // Leaves follow the feed: the positions of the entries naming them never go back.
      const feed = new Feed(fs.kv);
      const positionOf = new Map<string, number>();
      for (const e of await feed.read(0, 1000)) for (let s = e.from; s <= e.to; s++) positionOf.set(`${JSON.stringify(e.partition)}#${s}`, e.position);
      let last = 0;
      for (let i = 0; i < first.size; i++) {
        const l = await tree.leaf(i);
        const pos = positionOf.get(`${JSON.stringify(l.partition)}#${l.seq}`)!;
        expect(pos).toBeGreaterThanOrEqual(last);
        last = pos;
      }

      await writeSome(fs, "b", 3);
      await tree.appendPending();
      const second = await tree.head();
      expect(second.size).toBe(total(await heads(fs.kv)));
      await checkTree(fs, second.size, 0);
      // The second tree extends the first, for every pair of sizes.
      for (const m of [1, 2, 3, first.size - 1, first.size]) {
        const { proof } = await tree.consistency(m, second.size);
        expect(verifyConsistency(m, second.size, await tree.root(m), second.root, proof), `${m} → ${second.size}`).toBe(true);
      }
      // An event's leaf is found by (partition, seq); the per-partition checkpoint names the log checkpoint covering it.
      const index = await tree.indexOf(["project", "b1"], 1);
      expect(index).not.toBeNull();
      const cp = await fs.checkpoints.take(["project", "b1"]);
      expect(cp.log).toMatchObject({ origin: fs.log.checkpoints.origin, size: second.size, root: second.root.toString("base64") });
      const leafOfHead = await tree.leaf(cp.log!.index);
      expect(leafOfHead).toMatchObject({ partition: ["project", "b1"], seq: cp.seq, hash: cp.hash });
      // Sizes beyond the tree are a 400 naming the field.
      await expect(tree.consistency(1, second.size + 1)).rejects.toMatchObject({ field: "to" });
      await expect(tree.inclusion(second.size)).rejects.toMatchObject({ field: "index" });
    });

    it("two appenders on one store at once never fork or duplicate (a fleet)", async () => {
      const kv2 = await h.reopen();
      const other = new TransparencyLog(kv2, new Feed(kv2));
      const writes = writeSome(fs, "c", 6);
      const appendWhileWriting = async (log: TransparencyLog): Promise<void> => {
        let done = false;
        void writes.finally(() => (done = true));
        // (Yielding to the event loop between passes: a caught-up pass may settle without any I/O wait.)
        while (!done) {
          await log.appendPending({ entries: 2 });
          await new Promise((r) => setImmediate(r));
        }
        await log.appendPending({ entries: 3 });
      };
      await Promise.all([writes, appendWhileWriting(fs.log.tree), appendWhileWriting(other)]);
      const head = await fs.log.tree.head();
      expect(head.size).toBe(total(await heads(fs.kv)));
      // The second handle reads the same tree: its own read snapshot may trail the last commit for a moment
      // (a second LMDB handle renews its snapshot lazily), so it is awaited; a fork would never agree.
      await eventually(
        async () => {
          const seen = await other.head();
          return seen.size === head.size && seen.root.equals(head.root);
        },
        { what: `the second handle to read the tree of ${head.size} leaves with the same root` },
      );
      await checkTree(fs, head.size, 0);
    });

    it("a new epoch (a restore) appends the events again and keeps the old tree as its prefix", async () => {
      await writeSome(fs, "d", 2);
      const tree = fs.log.tree;
      await tree.appendPending();
      const before = await tree.head();
      expect(await tree.newEpoch()).toBe(1);
      await tree.appendPending();
      const after = await tree.head();
      expect(after.epoch).toBe(1);
      expect(after.size).toBe(2 * before.size);
      const { proof } = await tree.consistency(before.size, after.size);
      expect(verifyConsistency(before.size, after.size, before.root, after.root, proof)).toBe(true);
      expect((await tree.leaf(before.size)).epoch).toBe(1);
      // Found in the newest epoch.
      expect(await tree.indexOf(["project", "d0"], 1)).toBeGreaterThanOrEqual(before.size);
    });

    it("the background appender catches up by itself", async () => {
      const appending = await openFlowstore(await h.reopen(), { log: { append: true, pollMs: 20, intervalMs: 50 } });
      try {
        await writeSome(appending, "e", 3);
        await eventually(async () => expect(await appending.log.tree.lag()).toBe(0));
        await appending.log.appended();
        await eventually(async () => expect((await appending.log.tree.head()).size).toBe(total(await heads(appending.kv))));
      } finally {
        await appending.close();
      }
    });
  });
}
