/**
 * The split of the administrators' intents (issue 28) migrated on open, over a real LMDB store: a store
 * written while `global.enableUser`, `global.disableUser` and `global.listAssignments` were part of
 * `global.createUser` (and `global.grantAllPermissions` of `global.grantPermission`) gives their holders
 * the split intents once, records what it granted beside the permissions, and leaves a later revoke alone.
 */
import { expect, it } from "vitest";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { GLOBAL, GLOBAL_KEYS, type SplitMigration } from "../../src/access/global.js";
import { INTENT_SPLITS_MIGRATION, openFlowstore } from "../../src/compose/index.js";
import { ForbiddenError } from "../../src/errors.js";
import { makeTempDirSync, removeTempDirSync } from "../support/temp-dir.js";

const SPLIT = ["global.enableUser", "global.disableUser", "global.listAssignments"];

it("a store holding the merged grants gives their holders the split intents once, recorded, and a later revoke stays", async () => {
  const dir = makeTempDirSync("intent-splits");
  try {
    // The store as it was before the split: ann administers users, the group admins grants, bob holds nothing.
    let fs = await openFlowstore(`lmdb:${dir}`);
    for (const id of ["ann", "bob"]) await fs.identity.createUser(SYSTEM, { id, displayName: id, password: "a long password" });
    await fs.identity.createGroup(SYSTEM, { id: "admins", displayName: "Admins", members: [] });
    const before = { "global.createUser": ["root", "ann"], "global.grantPermission": ["root", "admins"], "global.createProject": ["root"] };
    await fs.kv.commit(GLOBAL.partition(), [
      { type: "put", key: GLOBAL_KEYS.permissions, value: Buffer.from(JSON.stringify(before)) },
      { type: "delete", key: GLOBAL_KEYS.migration(INTENT_SPLITS_MIGRATION) },
      // a store of before the split carries no mark of holding the current intents from its start
      { type: "delete", key: GLOBAL_KEYS.currentFromStart },
    ]);
    await fs.close();

    fs = await openFlowstore(`lmdb:${dir}`);
    const permissions = await fs.global.list(SYSTEM);
    for (const i of SPLIT) expect(permissions[i]).toEqual(["root", "ann"]);
    expect(permissions["global.grantAllPermissions"]).toEqual(["root", "admins"]);
    expect(permissions["global.createProject"]).toEqual(["root"]);
    const record = JSON.parse((await fs.kv.get(GLOBAL.partition(), GLOBAL_KEYS.migration(INTENT_SPLITS_MIGRATION)))!.value.toString("utf8")) as SplitMigration;
    expect(record).toMatchObject({
      name: INTENT_SPLITS_MIGRATION,
      granted: { ...Object.fromEntries(SPLIT.map((i) => [i, ["root", "ann"]])), "global.grantAllPermissions": ["root", "admins"] },
    });
    expect(Date.parse(record.at)).not.toBeNaN();
    // ann keeps what she could do, each now an intent of its own: disabling bob, and listing his assignments
    const ann = userActor("ann");
    expect(await fs.assignmentsOf(ann, "bob")).toEqual([]);
    expect((await fs.disableUser(ann, "bob")).enabled).toBe(false);
    // root takes one of them from ann: a later open does not give it back (the migration ran once)
    await fs.global.revoke(SYSTEM, "global.disableUser", "ann");
    await fs.close();

    fs = await openFlowstore(`lmdb:${dir}`);
    const again = await fs.global.list(SYSTEM);
    expect(again["global.disableUser"]).toEqual(["root"]);
    expect(again["global.enableUser"]).toEqual(["root", "ann"]);
    await expect(fs.disableUser(ann, "root")).rejects.toBeInstanceOf(ForbiddenError);
    expect((await fs.global.migrateSplits(INTENT_SPLITS_MIGRATION, [{ from: "global.createUser", to: SPLIT }])).ran).toBe(false);
    await fs.close();
  } finally {
    removeTempDirSync(dir);
  }
});

it("a new store needs no migration: opening it writes nothing, its first grant marks it current from the start, and a reopen grants nothing", async () => {
  const dir = makeTempDirSync("intent-splits-new");
  try {
    let fs = await openFlowstore(`lmdb:${dir}`);
    expect(await fs.kv.get(GLOBAL.partition(), GLOBAL_KEYS.permissions)).toBeUndefined();
    await fs.identity.ensureRoot("a long password");
    expect(await fs.kv.get(GLOBAL.partition(), GLOBAL_KEYS.currentFromStart)).toBeDefined();
    const permissions = await fs.global.list(SYSTEM);
    for (const i of [...SPLIT, "global.grantAllPermissions"]) expect(permissions[i]).toEqual(["root"]);
    // An administrator holding only global.createUser, granted after the split, gains nothing on the next open.
    await fs.identity.createUser(SYSTEM, { id: "admin", displayName: "admin", password: "a long password" });
    await fs.global.grant(SYSTEM, "global.createUser", "admin");
    await fs.close();
    fs = await openFlowstore(`lmdb:${dir}`);
    expect(await fs.kv.get(GLOBAL.partition(), GLOBAL_KEYS.migration(INTENT_SPLITS_MIGRATION))).toBeUndefined();
    const after = await fs.global.list(SYSTEM);
    for (const i of SPLIT) expect(after[i]).toEqual(["root"]);
    await fs.close();
  } finally {
    removeTempDirSync(dir);
  }
});
