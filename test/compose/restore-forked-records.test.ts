/**
 * A restore whose backup holds another history of the users, groups or grants (issue 29, adversarial
 * pass): root may restore any backup that verifies, and each restore is an epoch, but a backup whose
 * record chain was rebuilt from scratch (a grant of global.createUser slipped in, the chain recomputed so
 * it verifies alone) is not on the store's line of history: the epoch's record names that chain
 * (`forkedRecords`), in every verify after. An honest older backup (its chains a prefix of the store's)
 * is not named.
 */
import { createReadStream } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { text } from "node:stream/consumers";
import { afterEach, beforeEach, expect, it } from "vitest";
import { GLOBAL, GLOBAL_KEYS } from "../../src/access/global.js";
import { SYSTEM } from "../../src/access/actor.js";
import { openFlowstore, type Flowstore } from "../../src/compose/index.js";
import { importStore } from "../../src/compose/transfer.js";
import { MemoryKv } from "../../src/kv/memory.js";
import { exportTo } from "../support/export-file.js";
import { rechainRecord } from "../support/rechain.js";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";

let dir: string;
let fs: Flowstore;
beforeEach(async () => {
  dir = await makeTempDir("forked-records");
  fs = await openFlowstore(new MemoryKv(), { restoreDir: join(dir, "restore") });
});
afterEach(async () => {
  await fs.close();
  await removeTempDir(dir);
});

it("names the record chains a restored backup holds off the store's line, in the epoch and every verify after", async () => {
  await fs.identity.ensureRoot("root password 1");
  await fs.identity.createUser(SYSTEM, { id: "mallory", displayName: "Mallory", password: "mallory password 1" });
  const root = await fs.identity.actorFor("root");
  const backup = await fs.exportStore(SYSTEM);
  const [ndjson] = await Promise.all([text(backup.stream), backup.done]);
  const honest = join(dir, "honest.ndjson");
  await writeFile(honest, ndjson);
  // Written after the backup: the honest backup's chains are a prefix of the store's.
  await fs.global.grant(SYSTEM, "global.createProject", "mallory");
  await (await fs.stageRestore(root, () => createReadStream(honest))).apply();

  const scratch = new MemoryKv();
  await importStore(scratch, createReadStream(honest));
  await rechainRecord(scratch, GLOBAL.partition(), GLOBAL_KEYS.permissions, (p) => {
    p["global.createUser"] = [...((p["global.createUser"] as string[] | undefined) ?? []), "mallory"];
  });
  const doctored = await exportTo(scratch, join(dir, "doctored.ndjson"));
  await (await fs.stageRestore(await fs.identity.actorFor("root"), () => createReadStream(doctored))).apply();
  expect(await fs.global.has({ id: "mallory", groups: [] }, "global.createUser")).toBe(true);

  const verified = await fs.verifyAll();
  expect(verified.ok).toBe(true); // each history verifies: the discontinuity is the epoch's to show
  expect(verified.epochs.list.map((e) => ({ epoch: e.epoch, by: e.by, forkedRecords: e.forkedRecords }))).toEqual([
    { epoch: 1, by: "root", forkedRecords: undefined },
    { epoch: 2, by: "root", forkedRecords: [GLOBAL.partition()] },
  ]);
}, 120_000);
