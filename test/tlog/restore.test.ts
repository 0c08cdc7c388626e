/**
 * A restore of the whole store keeps the transparency log (issue 27, with issue 29's restore): the
 * log's partition is neither exported, nor wiped, nor imported (`keptOnRestore`); after the restore the
 * log goes on in a new epoch, the restored events are appended again as new leaves, and the tree of
 * before is a prefix of the tree after (a consistency proof verifies), so witnesses keep cosigning and
 * see the restore as an epoch change, never a truncation. Where the current epoch begins (`epochStart`,
 * which an export's header carries) is enough to rebuild the log from an export alone (`seed`, then the
 * export's feed): the same tree, the same root; a start whose hashes or last leaf do not hold is refused.
 */
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { afterEach, beforeEach, expect, it } from "vitest";
import { SYSTEM } from "../../src/access/actor.js";
import { CONTENT_KINDS, KEPT_ON_RESTORE_KINDS } from "../../src/compose/kinds.js";
import { openFlowstore, type Flowstore } from "../../src/compose/index.js";
import { importStore } from "../../src/compose/transfer.js";
import { type EpochStart, TLOG, type TreeHead } from "../../src/tlog/log.js";
import { verifyConsistency } from "../../src/tlog/merkle.js";
import { tempDir } from "../support/temp-dir.js";

const dir = tempDir("tlog-restore");
let store: Flowstore;
beforeEach(async () => {
  store = await openFlowstore("memory:", { restoreDir: dir() });
  await store.identity.ensureRoot("a long enough password");
});
afterEach(() => store.close());

it("the log's kind is kept on restore, not content", () => {
  expect(KEPT_ON_RESTORE_KINDS).toContain(TLOG.kind);
  expect(CONTENT_KINDS).not.toContain(TLOG.kind);
});

/** The store's export as text. */
async function exported(): Promise<string> {
  const e = await store.exportStore(SYSTEM);
  const [ndjson] = await Promise.all([text(e.stream), e.done]);
  return ndjson;
}

/** Project a, a backup, then project b and the log appended: the backup, and the tree's head before any restore. */
async function backupThenMore(): Promise<{ ndjson: string; before: TreeHead }> {
  await store.workflow.createProject(SYSTEM, { id: "a", displayName: "Before the backup" });
  const ndjson = await exported();
  await store.workflow.createProject(SYSTEM, { id: "b", displayName: "After the backup" });
  await store.log.tree.appendPending();
  const before = await store.log.tree.head();
  expect(before.epoch).toBe(0);
  return { ndjson, before };
}

it("a restore appends a new epoch and keeps the old tree as a prefix", async () => {
  const { ndjson, before } = await backupThenMore();

  const staged = await store.stageRestore(SYSTEM, Readable.from([ndjson]));
  await staged.apply();
  await store.log.tree.appendPending();
  const after = await store.log.tree.head();
  expect(after.epoch).toBe(1);
  expect(after.size).toBeGreaterThan(before.size);
  const { proof } = await store.log.tree.consistency(before.size, after.size);
  expect(verifyConsistency(before.size, after.size, before.root, after.root, proof)).toBe(true);
  // The replaced history stays in the log (project b's events, epoch 0); the restored ones are new leaves of epoch 1.
  const leaves = await Promise.all(Array.from({ length: after.size }, (_, i) => store.log.tree.leaf(i)));
  expect(leaves.some((l) => l.epoch === 0 && l.partition[1] === "b")).toBe(true);
  expect(leaves.filter((l) => l.epoch === 1).every((l) => l.partition[1] !== "b")).toBe(true);
  expect(leaves.some((l) => l.epoch === 1 && l.partition[1] === "a")).toBe(true);
});

it("the current epoch's start rebuilds the log from an export alone: seeded with it, the export's leaves give the same tree", async () => {
  const { ndjson, before } = await backupThenMore();
  expect(await store.log.tree.epochStart()).toEqual({ epoch: 0, start: 0, frontier: [], last: null });
  await (await store.stageRestore(SYSTEM, Readable.from([ndjson]))).apply();
  await store.workflow.createProject(SYSTEM, { id: "c", displayName: "After the restore" });
  await store.log.tree.appendPending();
  const after = await store.log.tree.head();
  const start = await store.log.tree.epochStart();
  expect(start).toMatchObject({ epoch: 1, start: before.size });

  // An export of the store now: its header carries the epoch's start; the auditor's store rebuilds on it.
  const now = await exported();
  expect(JSON.parse(now.slice(0, now.indexOf("\n"))).log).toEqual(start);
  const auditor = await openFlowstore("memory:");
  try {
    await importStore(auditor.kv, Readable.from([now]));
    await auditor.log.tree.seed(start);
    await auditor.log.tree.appendPending();
    const rebuilt = await auditor.log.tree.head();
    expect(rebuilt).toMatchObject({ size: after.size, epoch: 1, start: before.size });
    expect(rebuilt.root.equals(after.root)).toBe(true);
    const audit = await auditor.log.tree.audit(after.size);
    expect(audit).toMatchObject({ checked: after.size - before.size, earlierEpochs: 0, mismatches: [] });
    expect(audit.root.equals(after.root)).toBe(true);
    // A seeded log holds nothing before its start; and it is seeded once.
    await expect(auditor.log.tree.audit(before.size - 1)).rejects.toMatchObject({ field: "size" });
    await expect(auditor.log.tree.seed(start)).rejects.toMatchObject({ field: "log" });
  } finally {
    await auditor.close();
  }

  // What seed refuses: a subtree hash altered (the leaf before the start is not proven), epoch 0 past leaf 0, too few hashes.
  const fresh = async (s: EpochStart) => {
    const other = await openFlowstore("memory:");
    try {
      return await other.log.tree.seed(s).then(
        () => null,
        (e: { field?: string }) => e.field,
      );
    } finally {
      await other.close();
    }
  };
  expect(await fresh({ ...start, frontier: start.frontier.map((h, i) => (i === 0 ? Buffer.alloc(32, 3).toString("base64") : h)) })).toBe("log.last");
  expect(await fresh({ ...start, epoch: 0 })).toBe("log");
  expect(await fresh({ ...start, frontier: start.frontier.slice(1) })).toBe("log.frontier");
});
