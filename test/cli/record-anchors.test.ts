/**
 * The record chains of the users, groups and global grants anchored outside their partitions (issue 29;
 * kv/record-chain.ts): through a real server, a user created and a grant given over HTTP each append a
 * record-chain event naming its actor (root; "system" for the operators' CLI, which acts as the system
 * actor), put in the ledger and the change feed in the same commit, and the transparency log takes it
 * in as a leaf whose hash is the event's. A store whose global grants were rewritten with their chain
 * rebuilt from scratch (a grant of global.createUser slipped in, chain, head and ledger recomputed)
 * verifies on its own, and the real `flowstore audit` refuses its export against the checkpoint two
 * witnesses cosigned before (another root), as it refuses a rewritten project.
 */
import { createPublicKey } from "node:crypto";
import { createReadStream } from "node:fs";
import { join } from "node:path";
import { writeFile } from "node:fs/promises";
import { afterAll, beforeAll, expect, it } from "vitest";
import { SYSTEM } from "../../src/access/actor.js";
import { GLOBAL, GLOBAL_KEYS } from "../../src/access/global.js";
import { EXIT } from "../../src/cli/exit.js";
import { openFlowstore } from "../../src/compose/index.js";
import { importStore } from "../../src/compose/transfer.js";
import { PARTITION, userKey } from "../../src/identity/records.js";
import type { Partition } from "../../src/kv/contract.js";
import { MemoryKv } from "../../src/kv/memory.js";
import { CHAIN, recordEvents } from "../../src/kv/record-chain.js";
import { encode } from "../../src/kv/tuple.js";
import { newKeyPem, parseVkey, privateKeyFromPem, rawPublicKey, SIG_COSIGNATURE_V1, vkey } from "../../src/tlog/note.js";
import { Witness } from "../../src/tlog/witness.js";
import { startLmdbServer, type Running } from "../http/harness.js";
import { exportTo } from "../support/export-file.js";
import { rechainRecord } from "../support/rechain.js";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";
import { run } from "./spawn.js";

function signer(name: string) {
  const privateKey = privateKeyFromPem(newKeyPem());
  return { name, privateKey, vkey: vkey(name, SIG_COSIGNATURE_V1, rawPublicKey(createPublicKey(privateKey))) };
}
const w1 = signer("witness.example/one");
const w2 = signer("witness.example/two");

let s: Running;
let dir: string;

beforeAll(async () => {
  dir = await makeTempDir("record-anchors");
  s = await startLmdbServer("record-anchors", { logWitnesses: [w1.vkey, w2.vkey] });
});

afterAll(async () => {
  await s?.close();
  await removeTempDir(dir);
});

/** The last event of a partition's record chain. */
async function lastEvent(partition: Partition) {
  const head = JSON.parse((await s.app.flowstore.kv.get(partition, CHAIN.pack(["head"])))!.value.toString("utf8")) as { seq: number };
  const [event] = await recordEvents(s.app.flowstore.kv, partition, head.seq, head.seq);
  return event!;
}

it("anchors a user change and a grant in the ledger and the transparency log, each naming its actor", async () => {
  const fs = s.app.flowstore;
  await s.root.users.create({ id: "dora", displayName: "Dora", password: "dora password 1" });
  const created = await lastEvent(PARTITION);
  expect(created.actor).toBe("root");
  expect(created.changes.map(([k]) => k)).toContain(encode(userKey("dora")).toString("base64"));
  await s.root.globalPermissions.grant("global.createProject", "dora");
  const granted = await lastEvent(GLOBAL.partition());
  expect(granted.actor).toBe("root");
  // The operators' CLI acts as the system actor: its changes name it.
  await fs.identity.createUser(SYSTEM, { id: "eve", displayName: "Eve", password: "eve password 1" });
  const bySystem = await lastEvent(PARTITION);
  expect(bySystem).toMatchObject({ seq: created.seq + 1, actor: "system" });

  // In the ledger, with the head's hash (the same commit), and in the log as leaves with the events' hashes.
  expect(await fs.resources.writer.readLedger(PARTITION)).toEqual({ seq: bySystem.seq, hash: bySystem.hash });
  expect(await fs.resources.writer.readLedger(GLOBAL.partition())).toEqual({ seq: granted.seq, hash: granted.hash });
  await fs.log.tree.appendPending();
  for (const [partition, event] of [
    [PARTITION, created],
    [GLOBAL.partition(), granted],
    [PARTITION, bySystem],
  ] as const) {
    const index = await fs.log.tree.indexOf(partition, event.seq);
    expect(index, `${JSON.stringify(partition)} seq ${event.seq}`).not.toBeNull();
    expect(await fs.log.tree.leaf(index!)).toMatchObject({ partition, seq: event.seq, hash: event.hash });
  }
  // Every earlier event of the chains too (the root's bootstrap, adopted at open before any anchor).
  for (let seq = 1; seq <= bySystem.seq; seq++) expect(await fs.log.tree.indexOf(PARTITION, seq)).not.toBeNull();
  expect((await fs.verifyAll()).ok).toBe(true);
}, 120_000);

it("a grant slipped in with the global chain rebuilt from scratch verifies alone, and fails the audit against a checkpoint cosigned before", async () => {
  const fs = s.app.flowstore;
  await fs.log.tree.appendPending();
  const logKey = (await s.root.log.info()).vkey;
  const witnesses = [w1, w2].map((w) => new Witness({ log: s.base, logKey: parseVkey(logKey), signer: w, state: new MemoryKv() }));
  for (const witness of witnesses) expect(await witness.step()).toMatchObject({ outcome: "cosigned", posted: true });
  const note = join(dir, "cp.note");
  await writeFile(note, await s.client().log.cosignedCheckpoint());
  const clean = await exportTo(fs.kv, join(dir, "export.ndjson"));

  const kv = new MemoryKv();
  await importStore(kv, createReadStream(clean));
  await rechainRecord(kv, GLOBAL.partition(), GLOBAL_KEYS.permissions, (p) => {
    p["global.createUser"] = [...((p["global.createUser"] as string[] | undefined) ?? []), "dora"];
  });
  // The chain, the records and the ledger agree: verify alone cannot tell.
  const doctoredStore = await openFlowstore(kv);
  const verified = await doctoredStore.verifyAll();
  expect(verified).toMatchObject({ ok: true, records: { ok: true } });
  expect(await doctoredStore.global.has({ id: "dora", groups: [] }, "global.createUser")).toBe(true);
  const doctored = await exportTo(kv, join(dir, "doctored.ndjson"));
  await doctoredStore.close();

  const audit = async (file: string) => {
    const r = run(["audit", "--in", file, "--checkpoint", note, "--witness", w1.vkey, "--witness", w2.vkey, "--log-key", logKey]);
    const { code } = await r.exit;
    const line = r.out().trim();
    return { code, out: line ? (JSON.parse(line) as { ok: boolean; reasons: string[] }) : null, err: r.err() };
  };
  const [ok, bad] = await Promise.all([audit(clean), audit(doctored)]);
  expect(ok.code, ok.err).toBe(EXIT.ok);
  expect(bad.code, bad.err).toBe(EXIT.verificationFailed);
  expect(bad.out!.reasons.join("\n")).toMatch(/another root/);
}, 600_000);
