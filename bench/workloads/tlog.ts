/**
 * tlog (issue 27): the transparency log's costs, on the bench's store.
 *
 * - Append cost per event against a create's CPU: workflowitems created one after another (each create
 *   is one event), then the log appends them (`appendPending`); both as process CPU time (user +
 *   system) per event, in the same process, round after round. The create's CPU here is the store's
 *   alone (no HTTP), a smaller denominator than a create's server CPU, so the goal (≤ 10%) is stricter.
 * - Proof generation at 1,000,000 leaves: the log's own append code builds a tree of 1,000,000 leaves in
 *   the store from a generated feed (a million events would take the store's writer an hour here; the
 *   tree's shape, not its leaves' content, sets a proof's cost), then inclusion proofs of random leaves
 *   and consistency proofs between random sizes are read from the stored nodes. Goal: < 5 ms each.
 * - Witness catch-up: a witness that last cosigned size 1 catches up with the 1,000,000-leaf tree in one
 *   step (a consistency proof read and verified, the checkpoint cosigned): leaves covered per second.
 * - Merge delay under a mixed workload: writers create projects, subprojects and workflowitems and
 *   update items while the background appender (the server's: feed watcher 200 ms, pass every second)
 *   follows; for each acknowledged write, the time until the log's cursor covers its feed entry. p50/p99.
 */
import { SYSTEM } from "../../src/access/actor.js";
import { openFlowstore } from "../../src/compose/index.js";
import type { KvStore, Partition } from "../../src/kv/contract.js";
import { Feed, type FeedEntry } from "../../src/resources/log/feed.js";
import type { ResourceEvent } from "../../src/resources/model/events.js";
import { LogCheckpoints } from "../../src/tlog/checkpoint.js";
import { TransparencyLog } from "../../src/tlog/log.js";
import { verifyConsistency, verifyInclusion, leafHash } from "../../src/tlog/merkle.js";
import { cosignLine, newKeyPem, privateKeyFromPem } from "../../src/tlog/note.js";
import { msBelow, type Workload } from "../harness.js";
import { itemData } from "../tree.js";

/** An item of the bench tree, assigned to nobody (the bench store has no users but the system). */
const item = (i: number) => {
  const { assignee: _nobody, ...data } = itemData(i, "EUR");
  return data;
};

const LEAVES = 1_000_000;
/** Issue 27: proof generation at 1,000,000 leaves. */
const PROOF_MS = 5;
/** Issue 27: the log's append cost per event, as a share of a create's. */
const APPEND_SHARE = 0.1;

/** A feed of `n` generated events, 1,000 a partition: what the log's appender reads, without a store's writer. */
function generatedFeed(n: number): Feed {
  const PER = 1000;
  const entries = Math.ceil(n / PER);
  const hash = (p: number, s: number): string => `${p.toString(16).padStart(32, "0")}${s.toString(16).padStart(32, "0")}`;
  return {
    head: async () => entries,
    read: async (position: number, limit = 100): Promise<FeedEntry[]> =>
      Array.from({ length: Math.max(0, Math.min(limit, entries - position)) }, (_, i) => ({
        position: position + i + 1,
        partition: ["project", `g${position + i}`],
        from: 1,
        to: Math.min(PER, n - (position + i) * PER),
      })),
    events: async (partition: Partition, from: number, to: number): Promise<ResourceEvent[]> => {
      const p = Number((partition[1] as string).slice(1));
      return Array.from({ length: to - from + 1 }, (_, i) => ({ seq: from + i, hash: hash(p, from + i) }) as unknown as ResourceEvent);
    },
  } as unknown as Feed;
}

const cpu = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};
const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const percentile = (xs: readonly number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
};

export const tlog: Workload = {
  name: "tlog",
  description: "the transparency log: append CPU per event vs a create's, proofs at 1,000,000 leaves, witness catch-up, merge delay p99 under mixed writes",
  async run(ctx) {
    // 1. Append cost per event against a create's.
    const kv: KvStore = await ctx.openStore();
    const store = await openFlowstore(kv);
    const items = Math.max(200, Math.round(2_000 * ctx.scale));
    const shares: number[] = [];
    const creates: number[] = [];
    const appends: number[] = [];
    await store.workflow.createProject(SYSTEM, { id: "a", displayName: "Append" });
    await store.log.tree.appendPending();
    for (let round = 0; round < 5; round++) {
      await store.workflow.createSubproject(SYSTEM, "a", { id: `s${round}`, displayName: "Items", currency: "EUR" });
      await store.log.tree.appendPending();
      const before = (await store.log.tree.head()).size;
      const c0 = cpu();
      for (let i = 0; i < items; i++) await store.workflow.createWorkflowitem(SYSTEM, "a", `s${round}`, item(i));
      const c1 = cpu();
      const appended = await store.log.tree.appendPending();
      const c2 = cpu();
      if (appended !== (await store.log.tree.head()).size - before || appended < items) throw new Error(`appended ${appended} leaves for ${items} creates`);
      creates.push((c1 - c0) / appended);
      appends.push((c2 - c1) / appended);
      shares.push((c2 - c1) / (c1 - c0));
    }
    const share = median(shares);
    ctx.record({
      name: "create a workflowitem (events per CPU-second)",
      opsPerSec: 1 / median(creates),
      rounds: creates.map((c) => 1 / c),
      note: `${items} creates a round, one event each; process CPU time`,
    });
    ctx.record({
      name: "log append (events per CPU-second)",
      opsPerSec: 1 / median(appends),
      rounds: appends.map((c) => 1 / c),
      reference: "create a workflowitem (events per CPU-second)",
      costRatio: share,
      note: "appendPending over the round's events; cost ratio = append CPU / create CPU per event",
      goals: [{ text: `≤ ${APPEND_SHARE * 100}% of a create's CPU (${(share * 100).toFixed(1)}%)`, met: share <= APPEND_SHARE }],
    });
    await store.close();

    // 2. Proofs at 1,000,000 leaves, from the log's own nodes in the store.
    const kv2 = await ctx.openStore();
    const big = new TransparencyLog(kv2, generatedFeed(LEAVES));
    const t0 = Date.now();
    await big.appendPending({ entries: 100 });
    const head = await big.head();
    if (head.size !== LEAVES) throw new Error(`the tree has ${head.size} leaves`);
    ctx.note(`built the 1,000,000-leaf tree with the log's append in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const PROOFS = 500;
    const random = (n: number): number => Math.floor(Math.random() * n);
    const inclusion = await ctx.measure(`inclusion proof at ${LEAVES.toLocaleString("en")} leaves (proofs/s)`, {
      ops: PROOFS,
      rounds: 5,
      round: async () => {
        for (let i = 0; i < PROOFS; i++) {
          const p = await big.inclusion(random(LEAVES), LEAVES);
          if (!verifyInclusion(p.index, p.size, leafHash(p.leaf), p.proof, head.root)) throw new Error("bad proof");
        }
      },
      goals: (rate) => [msBelow("per proof", Number((1000 / rate).toFixed(3)), PROOF_MS)],
    });
    await ctx.measure(`consistency proof at ${LEAVES.toLocaleString("en")} leaves (proofs/s)`, {
      ops: PROOFS,
      rounds: 5,
      reference: inclusion.name,
      round: async () => {
        for (let i = 0; i < PROOFS; i++) {
          const from = 1 + random(LEAVES - 1);
          const p = await big.consistency(from, LEAVES);
          if (p.proof.length === 0) throw new Error("empty proof");
        }
      },
      goals: (rate) => [msBelow("per proof", Number((1000 / rate).toFixed(3)), PROOF_MS)],
    });

    // 3. Witness catch-up: from size 1 to 1,000,000 in one step.
    const checkpoints = new LogCheckpoints(big, privateKeyFromPem(newKeyPem()));
    const witness = { name: "witness.example/bench", privateKey: privateKeyFromPem(newKeyPem()) };
    const root1 = await big.root(1);
    const STEPS = 50;
    const catchUp = await ctx.measure("witness catch-up: one step from size 1 to 1,000,000 (steps/s)", {
      ops: STEPS,
      rounds: 5,
      round: async () => {
        for (let i = 0; i < STEPS; i++) {
          const cp = await checkpoints.latest();
          const { proof } = await big.consistency(1, cp.size);
          if (!verifyConsistency(1, cp.size, root1, cp.root, proof)) throw new Error("inconsistent");
          cosignLine(await checkpoints.text(cp.size), witness, Math.floor(Date.now() / 1000));
        }
      },
    });
    ctx.note(
      `witness catch-up: ${Math.round(catchUp.opsPerSec * (LEAVES - 1)).toLocaleString("en")} leaves covered per second (a step's cost does not grow with the leaves it covers)`,
    );

    // 4. Merge delay under a mixed workload, with the server's background appender.
    const kv3 = await ctx.openStore();
    const live = await openFlowstore(kv3, { log: { append: true } });
    const feed = new Feed(kv3);
    const delays: number[] = [];
    const waiting: { position: number; at: number }[] = [];
    let writing = true;
    const sampler = (async () => {
      while (writing || waiting.length > 0) {
        const { cursor } = await live.log.tree.head();
        const now = Date.now();
        for (let i = waiting.length - 1; i >= 0; i--) {
          if (waiting[i]!.position <= cursor) {
            delays.push(now - waiting[i]!.at);
            waiting.splice(i, 1);
          }
        }
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const WRITERS = 4;
    const PER_WRITER = Math.max(50, Math.round(300 * ctx.scale));
    await Promise.all(
      Array.from({ length: WRITERS }, async (_, w) => {
        await live.workflow.createProject(SYSTEM, { id: `m${w}`, displayName: `Mixed ${w}` });
        await live.workflow.createSubproject(SYSTEM, `m${w}`, { id: "s", displayName: "S", currency: "EUR" });
        for (let i = 0; i < PER_WRITER; i++) {
          if (i % 3 === 2) await live.workflow.update(SYSTEM, { type: "project", ids: [`m${w}`] }, { description: `update ${i}` });
          else await live.workflow.createWorkflowitem(SYSTEM, `m${w}`, "s", item(i));
          // The acknowledged write is in the feed at or before its head now.
          waiting.push({ position: await feed.head(), at: Date.now() });
        }
      }),
    );
    writing = false;
    await sampler;
    await live.close();
    ctx.record({
      name: "merge delay, acknowledged write → in the log (p99, ms)",
      opsPerSec: percentile(delays, 0.99),
      rounds: [percentile(delays, 0.5), percentile(delays, 0.9), percentile(delays, 0.99), Math.max(...delays)],
      note: `${delays.length} writes by ${WRITERS} writers (creates and updates); rounds: p50, p90, p99, max in ms; the figure is a latency, not a rate`,
    });
  },
};
