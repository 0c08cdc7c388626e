/**
 * `flowstore audit` (the real process), offline: an export checked against a checkpoint two witnesses
 * cosigned, with no server and no store. It accepts the export (and one taken later, whose log extends
 * the checkpoint); it refuses a doctored export (an event rewritten and its partition re-chained by hand,
 * so the chains alone verify), a quorum the cosignatures do not reach, and a log key that did not sign;
 * a bad witness key is a usage error.
 *
 * Across a restore: the store is restored from a backup (a new epoch of the log), written to again, and
 * the same two witnesses cosign on (the tree only grew). An export taken then spans the restore: its
 * header says where the current epoch begins, and the audit accepts it against the checkpoint cosigned
 * after the restore (the earlier epoch's leaves counted, not checked); it refuses it against the
 * checkpoint cosigned before the restore (its tree ends before the export's epoch begins), and refuses a
 * header whose tree before the epoch was altered, and a doctored event of the current epoch.
 */
import { createPublicKey } from "node:crypto";
import { createReadStream } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { afterAll, beforeAll, expect, it } from "vitest";
import { SYSTEM } from "../../src/access/actor.js";
import { EXIT } from "../../src/cli/exit.js";
import { importStore } from "../../src/compose/transfer.js";
import { MemoryKv } from "../../src/kv/memory.js";
import { newKeyPem, parseVkey, privateKeyFromPem, rawPublicKey, SIG_COSIGNATURE_V1, SIG_ED25519, vkey } from "../../src/tlog/note.js";
import { Witness } from "../../src/tlog/witness.js";
import { startLmdbServer, type Running } from "../http/harness.js";
import { exportTo } from "../support/export-file.js";
import { rewriteFrom } from "../support/rechain.js";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";
import { run } from "./spawn.js";

function signer(name: string, type = SIG_COSIGNATURE_V1) {
  const privateKey = privateKeyFromPem(newKeyPem());
  return { name, privateKey, vkey: vkey(name, type, rawPublicKey(createPublicKey(privateKey))) };
}
const w1 = signer("witness.example/one");
const w2 = signer("witness.example/two");
const w3 = signer("witness.example/three");

let s: Running;
let dir: string;
let note: string;
let logKey: string;
/** The two witnesses, with their state kept from one checkpoint to the next. */
let witnesses: Witness[];

async function audit(args: string[]): Promise<{ code: number | null; out: Record<string, unknown> | null; err: string }> {
  const r = run(["audit", ...args]);
  const { code } = await r.exit;
  const line = r.out().trim();
  return { code, out: line ? (JSON.parse(line) as Record<string, unknown>) : null, err: r.err() };
}

beforeAll(async () => {
  dir = await makeTempDir("audit");
  s = await startLmdbServer("audit-server", { logWitnesses: [w1.vkey, w2.vkey] });
  await s.root.projects.create({ id: "p1", displayName: "Schools" });
  await s.root.project("p1").subprojects.create({ id: "s1", displayName: "Roofs", currency: "EUR" });
  await s.root.projects.create({ id: "p2", displayName: "Roads" });
  await s.app.flowstore.log.tree.appendPending();
  logKey = (await s.root.log.info()).vkey;
  witnesses = [w1, w2].map((w) => new Witness({ log: s.base, logKey: parseVkey(logKey), signer: w, state: new MemoryKv() }));
  for (const witness of witnesses) expect(await witness.step()).toMatchObject({ outcome: "cosigned", posted: true });
  note = await s.client().log.cosignedCheckpoint();
  await writeFile(join(dir, "cp.note"), note);
  await exportTo(s.app.flowstore.kv, join(dir, "export.ndjson"));
  // Later writes: an export taken now still covers the checkpoint.
  await s.root.project("p2").update({ description: "later" });
  await s.app.flowstore.log.tree.appendPending();
  await exportTo(s.app.flowstore.kv, join(dir, "later.ndjson"));
  // A doctored export: p1's creation says another name, the partition re-chained by hand.
  const kv = new MemoryKv();
  await importStore(kv, createReadStream(join(dir, "export.ndjson")));
  await rewriteFrom(kv, ["project", "p1"], 1, (e) => {
    (e as unknown as { at: string }).at = "2020-01-01T00:00:00.000Z";
  });
  await exportTo(kv, join(dir, "doctored.ndjson"));
});

afterAll(async () => {
  await s?.close();
  await removeTempDir(dir);
});

it("accepts an export the cosigned checkpoint covers, and refuses a doctored one, a short quorum and the wrong log key", async () => {
  const cp = join(dir, "cp.note");
  const both = ["--witness", w1.vkey, "--witness", w2.vkey];
  const wrongLog = signer(parseVkey(logKey).name, SIG_ED25519);
  // (The runs go side by side: each is a process start of its own.)
  const [ok, later, doctored, short, wrongKey, usage] = await Promise.all([
    audit(["--in", join(dir, "export.ndjson"), "--checkpoint", cp, ...both, "--log-key", logKey]),
    audit(["--in", join(dir, "later.ndjson"), "--checkpoint", cp, ...both]),
    audit(["--in", join(dir, "doctored.ndjson"), "--checkpoint", cp, ...both]),
    audit(["--in", join(dir, "export.ndjson"), "--checkpoint", cp, ...both, "--witness", w3.vkey, "--quorum", "3"]),
    audit(["--in", join(dir, "export.ndjson"), "--checkpoint", cp, ...both, "--log-key", wrongLog.vkey]),
    audit(["--in", join(dir, "export.ndjson"), "--checkpoint", cp, "--witness", "not-a-key"]),
  ]);
  expect(ok.code, ok.err).toBe(EXIT.ok);
  expect(ok.out).toMatchObject({ ok: true, reasons: [], checkpoint: { cosigners: [expect.stringContaining(w1.name), expect.stringContaining(w2.name)], logSignature: "checked" } });
  expect((ok.out!.covered as number) > 0).toBe(true);

  expect(later.code, later.err).toBe(EXIT.ok);

  expect(doctored.code, doctored.err).toBe(EXIT.verificationFailed);
  expect((doctored.out!.reasons as string[]).join("\n")).toMatch(/another root/);

  expect(short.code).toBe(EXIT.verificationFailed);
  expect((short.out!.reasons as string[]).join("\n")).toMatch(/2 valid cosignature\(s\).*3 required/);

  expect(wrongKey.code).toBe(EXIT.verificationFailed);
  expect((wrongKey.out!.reasons as string[]).join("\n")).toMatch(/not signed by the log's key/);

  expect(usage.code).toBe(EXIT.usage);
  expect(usage.err).toMatch(/--witness/);
}, 600_000);

it("audits an export that spans a restore epoch against a checkpoint cosigned since the restore", async () => {
  const fs = s.app.flowstore;
  const cosign = async (): Promise<string> => {
    await fs.log.tree.appendPending();
    for (const witness of witnesses) expect(await witness.step()).toMatchObject({ outcome: "cosigned", posted: true });
    return s.client().log.cosignedCheckpoint();
  };
  const backup = await fs.exportStore(SYSTEM);
  const [ndjson] = await Promise.all([text(backup.stream), backup.done]);
  // Written after the backup: the restore replaces it (it stays in the log, in epoch 0).
  await fs.workflow.createProject(SYSTEM, { id: "p3", displayName: "Bridges" });
  const before = await cosign();
  await (await fs.stageRestore(SYSTEM, Readable.from([ndjson]))).apply();
  // (The restore ended every session: the writes after it go through the store.)
  await fs.workflow.createProject(SYSTEM, { id: "p4", displayName: "Parks" });
  await fs.workflow.update(SYSTEM, { type: "project", ids: ["p1"] }, { description: "after the restore" });
  const after = await cosign();
  expect((await fs.log.tree.head()).epoch).toBe(1);
  await writeFile(join(dir, "before.note"), before);
  await writeFile(join(dir, "after.note"), after);
  const restored = await exportTo(fs.kv, join(dir, "restored.ndjson"));
  const [header, ...rest] = (await readFile(restored, "utf8")).split("\n");
  const log = (JSON.parse(header!) as { log: { epoch: number; start: number; frontier: string[] } }).log;
  expect(log).toMatchObject({ epoch: 1 });
  expect(log.start).toBeGreaterThan(0);
  // The header's tree before the epoch altered (one subtree hash), and an event of the current epoch doctored.
  const altered = { ...log, frontier: log.frontier.map((h, i) => (i === 0 ? Buffer.alloc(32, 9).toString("base64") : h)) };
  await writeFile(join(dir, "altered.ndjson"), [JSON.stringify({ ...JSON.parse(header!), log: altered }), ...rest].join("\n"));
  const kv = new MemoryKv();
  await importStore(kv, createReadStream(restored));
  await rewriteFrom(kv, ["project", "p4"], 1, (e) => {
    (e as unknown as { at: string }).at = "2020-01-01T00:00:00.000Z";
  });
  const doctored = await exportTo(kv, join(dir, "restored-doctored.ndjson"));
  // (The doctored export is of a store with no log: its header is put back.)
  const doctoredLines = (await readFile(doctored, "utf8")).split("\n");
  await writeFile(doctored, [header, ...doctoredLines.slice(1)].join("\n"));

  const both = ["--witness", w1.vkey, "--witness", w2.vkey, "--log-key", logKey];
  const [ok, old, alteredRun, doctoredRun] = await Promise.all([
    audit(["--in", restored, "--checkpoint", join(dir, "after.note"), ...both]),
    audit(["--in", restored, "--checkpoint", join(dir, "before.note"), ...both]),
    audit(["--in", join(dir, "altered.ndjson"), "--checkpoint", join(dir, "after.note"), ...both]),
    audit(["--in", doctored, "--checkpoint", join(dir, "after.note"), ...both]),
  ]);
  expect(ok.code, ok.err).toBe(EXIT.ok);
  expect(ok.out).toMatchObject({ ok: true, reasons: [], export: { epoch: 1, epochStart: log.start }, earlier: log.start });
  expect((ok.out!.covered as number) > 0).toBe(true);

  expect(old.code, old.err).toBe(EXIT.verificationFailed);
  expect((old.out!.reasons as string[]).join("\n")).toMatch(/ends before epoch 1 begins/);

  expect(alteredRun.code, alteredRun.err).toBe(EXIT.verificationFailed);
  expect((alteredRun.out!.reasons as string[]).join("\n")).toMatch(/tree before it|another root/);

  expect(doctoredRun.code, doctoredRun.err).toBe(EXIT.verificationFailed);
  expect((doctoredRun.out!.reasons as string[]).join("\n")).toMatch(/another root/);
}, 600_000);
