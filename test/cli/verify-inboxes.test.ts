/**
 * `flowstore verify` covers the inboxes and the replaced histories' record chains (issue 29): the real
 * process over an LMDB directory. Notifications projected by the follower and marked read by their user
 * verify (each inbox carries a record chain, workflow/notifications.ts); one edited or inserted by hand
 * in the LMDB files fails verify with exit 1 naming the inbox and the key. After a restore (a new epoch,
 * the replaced history kept), a user record of the replaced history edited by hand fails verify too,
 * in that epoch's replaced history (compose/epochs.ts), as its resources' chains already did.
 */
import { join } from "node:path";
import { text } from "node:stream/consumers";
import { Readable } from "node:stream";
import { afterEach, beforeEach, expect, it } from "vitest";
import { SYSTEM } from "../../src/access/actor.js";
import { EXIT } from "../../src/cli/exit.js";
import { openFlowstore } from "../../src/compose/index.js";
import { recordEvents } from "../../src/kv/record-chain.js";
import { PARTITION, userKey } from "../../src/identity/records.js";
import type { Key, Partition } from "../../src/kv/contract.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { Subspace } from "../../src/kv/subspace.js";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";
import { run } from "./spawn.js";

let dir: string;
beforeEach(async () => {
  dir = await makeTempDir("verify-inboxes");
});
afterEach(async () => removeTempDir(dir));

async function verify(data: string): Promise<{ code: number | null; out: string; err: string; last: Record<string, unknown> }> {
  const r = run(["verify", "--data", data]);
  const { code } = await r.exit;
  const out = r.out();
  return { code, out, err: r.err(), last: JSON.parse(out.trim().split("\n").at(-1)!) as Record<string, unknown> };
}

/** Writes one record into the LMDB files directly (no chain event), as whoever holds the files could. */
async function handWrite(data: string, partition: Partition, key: Key, value: (old: Buffer | undefined) => unknown): Promise<void> {
  const kv = LmdbKv.open(data);
  try {
    const old = (await kv.get(partition, key))?.value;
    await kv.commit(partition, [{ type: "put", key, value: Buffer.from(JSON.stringify(value(old))) }]);
  } finally {
    await kv.close();
  }
}

const inbox: Partition = ["inbox", "mary"];
const note = (k: number): Key => new Subspace(["n"]).pack([k]);

/** A store whose inbox of mary holds two notifications, the first marked read by mary. */
async function storeWithNotifications(data: string): Promise<void> {
  const fs = await openFlowstore(`lmdb:${data}`, { processData: { dataDir: data } });
  try {
    await fs.identity.ensureRoot("root password 1");
    await fs.identity.createUser(SYSTEM, { id: "mary", displayName: "Mary", password: "mary password 1" });
    const feed = fs.resources.writer.feed;
    await fs.notifications.follow(feed); // the follower starts at the feed's head
    await fs.workflow.createProject(SYSTEM, { id: "p1", displayName: "Schools", assignee: "mary" });
    await fs.workflow.createProject(SYSTEM, { id: "p2", displayName: "Roads", assignee: "mary" });
    await fs.notifications.followAll(feed);
    const mary = await fs.identity.actorFor("mary");
    const { items } = await fs.notifications.list(mary);
    expect(items).toHaveLength(2);
    await fs.notifications.markRead(mary, { ids: [items.at(-1)!.id] });
    // The inbox's chain names who changed it: the follower (the system, both in one commit) and mary marking read.
    expect((await recordEvents(fs.kv, inbox, 1, 10)).map((e) => e.actor)).toEqual(["system", "mary"]);
  } finally {
    await fs.close();
  }
}

it("verifies the inboxes, and names a notification edited or inserted by hand (exit 1)", async () => {
  const data = join(dir, "data");
  await storeWithNotifications(data);
  const clean = await verify(data);
  expect(clean.code, clean.err).toBe(EXIT.ok);
  expect(clean.last).toMatchObject({ ok: true, records: { ok: true } });
  expect((clean.last.records as { partitions: number }).partitions).toBeGreaterThanOrEqual(3); // identity, global, mary's inbox

  // An edited notification: another actor made it.
  await handWrite(data, inbox, note(1), (old) => ({ ...JSON.parse(old!.toString("utf8")), actor: "tom" }));
  const edited = await verify(data);
  expect(edited.code).toBe(EXIT.verificationFailed);
  expect(edited.out).toContain('"partition":["inbox","mary"]');
  expect(edited.out).toContain("a record differs from its chain");
  expect(edited.last).toMatchObject({ ok: false, records: { ok: false } });
}, 300_000);

it("names a notification inserted by hand (exit 1)", async () => {
  const data = join(dir, "data");
  await storeWithNotifications(data);
  await handWrite(data, inbox, note(3), () => ({
    id: "forged",
    eventType: "project.assigned",
    path: [{ type: "project", id: "p1" }],
    displayName: "Pay the invoice now",
    actor: "root",
    createdAt: new Date().toISOString(),
    read: false,
  }));
  const inserted = await verify(data);
  expect(inserted.code).toBe(EXIT.verificationFailed);
  expect(inserted.out).toContain('"partition":["inbox","mary"]');
  expect(inserted.out).toContain("a record the chain does not hold");
  expect(inserted.out).toContain(JSON.stringify(JSON.stringify(note(3))).slice(1, -1));
}, 300_000);

it("verifies the record chains of a replaced history: a user record edited there fails (exit 1)", async () => {
  const data = join(dir, "data");
  const fs = await openFlowstore(`lmdb:${data}`, { processData: { dataDir: data } });
  try {
    await fs.identity.ensureRoot("root password 1");
    await fs.identity.createUser(SYSTEM, { id: "mary", displayName: "Mary", password: "mary password 1" });
    const backup = await fs.exportStore(SYSTEM);
    const [ndjson] = await Promise.all([text(backup.stream), backup.done]);
    await fs.identity.createUser(SYSTEM, { id: "tom", displayName: "Tom", password: "tom password 1" });
    await (await fs.stageRestore(SYSTEM, Readable.from([ndjson]))).apply();
  } finally {
    await fs.close();
  }
  const clean = await verify(data);
  expect(clean.code, clean.err).toBe(EXIT.ok);
  const epochs = clean.last.epochs as { list: { replaced: { records: { ok: boolean; partitions: number } } }[] };
  expect(epochs.list).toHaveLength(1);
  expect(epochs.list[0]!.replaced.records).toMatchObject({ ok: true, partitions: 2 });

  // tom, who the restore replaced, made someone else in the kept history.
  await handWrite(data, ["replaced", 1, ...PARTITION], userKey("tom"), (old) => ({ ...JSON.parse(old!.toString("utf8")), displayName: "Not Tom" }));
  const edited = await verify(data);
  expect(edited.code).toBe(EXIT.verificationFailed);
  expect(edited.last).toMatchObject({ ok: false, records: { ok: true }, epochs: { ok: false, list: [{ replaced: { ok: false, records: { ok: false, bad: 1 } } }] } });
}, 300_000);
