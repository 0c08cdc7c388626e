/**
 * Backup and restore of the whole store as the store's own operations (compose/backup.ts), as a library
 * user calls them: each checks the acting Actor's declared intent itself (`global.createBackup`,
 * `global.restoreBackup`), before a byte is read or written. Root may always (TruBudget's backups are
 * root's), the system actor (the operators' CLI) too, anyone else only once granted the intent.
 */
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { openFlowstore, type Flowstore } from "../../src/compose/index.js";
import { ForbiddenError } from "../../src/errors.js";
import { tempDir } from "../support/temp-dir.js";

const ann = userActor("ann");
const root = userActor("root");
const dir = tempDir("backup");

/** Resolves to the error a promise rejects with (fails when it resolves). */
async function refusal(p: Promise<unknown>): Promise<Error> {
  return p.then(
    () => {
      throw new Error("expected a refusal");
    },
    (e: Error) => e,
  );
}

describe("backup and restore check the actor's intent themselves", () => {
  let store: Flowstore;
  beforeEach(async () => {
    store = await openFlowstore("memory:", { restoreDir: dir() });
    await store.identity.ensureRoot("a long enough password");
    await store.identity.createUser(SYSTEM, { id: "ann", displayName: "Ann", password: "a long enough password" });
    await store.workflow.createProject(root, { displayName: "School" });
  });
  afterEach(async () => {
    await store.close();
  });

  it("refuses an export to a user without global.createBackup, and serves it once granted", async () => {
    const refused = await refusal(store.exportStore(ann));
    expect(refused).toBeInstanceOf(ForbiddenError);
    expect(refused.message).toMatch(/root/);

    await store.global.grant(root, "global.createBackup", "ann");
    const backup = await store.exportStore(ann);
    const [ndjson, counts] = await Promise.all([text(backup.stream), backup.done]);
    expect(ndjson.split("\n")[0]).toContain('"flowstore":"export"');
    expect(counts.partitions).toBeGreaterThan(0);
  });

  it("serves an export to root and to the system actor (the CLI) without a grant", async () => {
    await store.global.revoke(root, "global.createBackup", "root");
    for (const actor of [root, SYSTEM]) {
      const backup = await store.exportStore(actor);
      const [, counts] = await Promise.all([text(backup.stream), backup.done]);
      expect(counts.entries).toBeGreaterThan(0);
    }
  });

  it("refuses a restore to a user without global.restoreBackup before reading the export", async () => {
    let opened = false;
    const refused = await refusal(
      store.stageRestore(ann, () => {
        opened = true;
        return Readable.from([]);
      }),
    );
    expect(refused).toBeInstanceOf(ForbiddenError);
    expect(refused.message).toMatch(/root/);
    expect(opened).toBe(false);
    // Holding the backup intent is not holding the restore intent.
    await store.global.grant(root, "global.createBackup", "ann");
    expect(await refusal(store.stageRestore(ann, Readable.from([])))).toBeInstanceOf(ForbiddenError);
  });

  it("restores for a user granted global.restoreBackup", async () => {
    const backup = await store.exportStore(SYSTEM);
    const [ndjson] = await Promise.all([text(backup.stream), backup.done]);
    await store.workflow.createProject(root, { displayName: "Written after the backup" });
    await store.global.grant(root, "global.restoreBackup", "ann");

    const staged = await store.stageRestore(ann, Readable.from([ndjson]));
    await staged.apply();
    const projects = await store.workflow.listProjects(root);
    expect(projects.items.map((p) => (JSON.parse(p.toString("utf8")) as { data: { displayName: string } }).data.displayName)).toEqual(["School"]);
  });
});
