/**
 * A restore of the whole store keeps the transparency log (issue 27, with issue 29's restore): the
 * log's partition is neither exported, nor wiped, nor imported (`keptOnRestore`); after the restore the
 * log goes on in a new epoch, the restored events are appended again as new leaves, and the tree of
 * before is a prefix of the tree after (a consistency proof verifies), so witnesses keep cosigning and
 * see the restore as an epoch change, never a truncation.
 */
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { afterEach, beforeEach, expect, it } from "vitest";
import { SYSTEM } from "../../src/access/actor.js";
import { CONTENT_KINDS, KEPT_ON_RESTORE_KINDS } from "../../src/compose/kinds.js";
import { openFlowstore, type Flowstore } from "../../src/compose/index.js";
import { TLOG } from "../../src/tlog/log.js";
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

it("a restore appends a new epoch and keeps the old tree as a prefix", async () => {
  await store.workflow.createProject(SYSTEM, { id: "a", displayName: "Before the backup" });
  const backup = await store.exportStore(SYSTEM);
  const [ndjson] = await Promise.all([text(backup.stream), backup.done]);
  await store.workflow.createProject(SYSTEM, { id: "b", displayName: "After the backup" });
  await store.log.tree.appendPending();
  const before = await store.log.tree.head();
  expect(before.epoch).toBe(0);

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
