/**
 * Witnesses (src/tlog/witness.ts) against a real server over HTTP, on every backend
 * (test/conformance/backends.ts): a witness cosigns the log's checkpoints while each extends the last
 * (the test appends the log by hand; the server keeps its cosignature and serves the cosigned note); a
 * log truncated (its tree dropped) and a log rebuilt over a rewritten event are each refused, with both
 * checkpoints kept as evidence and nothing cosigned; a checkpoint not signed by the pinned log key is
 * refused outright. Two witnesses cosign the same checkpoint and the cosigned note carries both.
 */
import { createPublicKey } from "node:crypto";
import { afterEach, beforeEach, expect, it } from "vitest";
import { MemoryKv } from "../../src/kv/memory.js";
import { layout } from "../../src/resources/model/layout.js";
import type { ResourceEvent } from "../../src/resources/model/events.js";
import { TLOG } from "../../src/tlog/log.js";
import { checkSignatures, newKeyPem, parseNote, parseVkey, privateKeyFromPem, rawPublicKey, SIG_COSIGNATURE_V1, vkey } from "../../src/tlog/note.js";
import { verifyCosigned } from "../../src/tlog/verify.js";
import { Witness } from "../../src/tlog/witness.js";
import { forEachBackend, type BackendHandle } from "../conformance/backends.js";
import { startServer, type Running } from "../http/harness.js";

function signer(name: string) {
  const privateKey = privateKeyFromPem(newKeyPem());
  return { name, privateKey, vkey: vkey(name, SIG_COSIGNATURE_V1, rawPublicKey(createPublicKey(privateKey))) };
}

forEachBackend((backend) => {
  const w1 = signer("witness.example/one");
  const w2 = signer("witness.example/two");
  let h: BackendHandle;
  let s: Running;
  beforeEach(async () => {
    h = await backend.create();
    // The log is appended by hand here (appendPending), so a test decides what the server's tree holds.
    s = await startServer(h.kv, { logWitnesses: [w1.vkey, w2.vkey] });
  });
  afterEach(async () => {
    await s.close();
    await h.destroy();
  });

  const settled = async (): Promise<void> => {
    await s.app.flowstore.log.tree.appendPending();
    expect((await s.root.log.info()).lag).toBe(0);
  };
  const witnessOf = async (w: ReturnType<typeof signer>) => new Witness({ log: s.base, logKey: parseVkey((await s.root.log.info()).vkey), signer: w, state: new MemoryKv() });

  it("cosigns a log that extends, and refuses a truncated one, keeping the evidence", async () => {
    const one = await witnessOf(w1);
    const two = await witnessOf(w2);
    await s.root.projects.create({ id: "p1", displayName: "Schools" });
    await settled();
    expect(await one.step()).toMatchObject({ outcome: "cosigned", posted: true });
    expect(await two.step()).toMatchObject({ outcome: "cosigned", posted: true });
    expect(await one.step()).toMatchObject({ outcome: "unchanged" });
    const cosigned = parseNote(await s.client().log.cosignedCheckpoint());
    expect(checkSignatures(cosigned, parseVkey(w1.vkey)).good).toHaveLength(1);
    expect(checkSignatures(cosigned, parseVkey(w2.vkey)).good).toHaveLength(1);

    await s.root.project("p1").update({ description: "more" });
    await settled();
    const next = await one.step();
    expect(next).toMatchObject({ outcome: "cosigned" });

    // Truncated: the tree is dropped (an operator wiping it), and served from nothing.
    await s.app.flowstore.kv.dropPartition(TLOG.partition());
    const refused = await one.step();
    expect(refused).toMatchObject({ outcome: "inconsistent" });
    expect((refused as { reason: string }).reason).toMatch(/went back|changed|not an extension/);
    const evidence = await one.evidence();
    expect(evidence).toHaveLength(1);
    expect(evidence[0]!.cosigned.size).toBe((next as { size: number }).size);
    expect(parseNote(evidence[0]!.offered).text).not.toBe(parseNote(evidence[0]!.cosigned.note).text);
    // Nothing new was cosigned: its state is still the last good checkpoint.
    expect((await one.state())!.size).toBe((next as { size: number }).size);
  });

  it("refuses a log rebuilt over a rewritten event", async () => {
    const one = await witnessOf(w1);
    await s.root.projects.create({ id: "p1", displayName: "Schools" });
    await s.root.project("p1").update({ description: "first" });
    await settled();
    expect(await one.step()).toMatchObject({ outcome: "cosigned" });
    const { kv, log } = s.app.flowstore;
    // Rewrite event 1's hash in the partition's log (as if re-chained), then rebuild the tree from the feed.
    const P = ["project", "p1"];
    const e = JSON.parse((await kv.get(P, layout.log(1)))!.value.toString("utf8")) as ResourceEvent;
    await kv.commit(P, [{ type: "put", key: layout.log(1), value: Buffer.from(JSON.stringify({ ...e, hash: "0".repeat(64) })) }]);
    await kv.dropPartition(TLOG.partition());
    await log.tree.appendPending();
    await s.root.project("p1").update({ description: "second" });
    await settled();
    const step = await one.step();
    expect(step).toMatchObject({ outcome: "inconsistent" });
    expect((await one.evidence())[0]!.proof).not.toBeNull();
  });

  it("refuses a checkpoint not signed by the pinned log key", async () => {
    const other = signer("flowstore.invalid/other-log");
    const w = new Witness({ log: s.base, logKey: parseVkey(vkey(other.name, 0x01, rawPublicKey(createPublicKey(other.privateKey)))), signer: w1, state: new MemoryKv() });
    await expect(w.step()).rejects.toMatchObject({ field: "checkpoint" });
  });

  it("verify --witness --quorum: a store checks against the cosigned checkpoint, and fails once its history is rewritten", async () => {
    const one = await witnessOf(w1);
    const two = await witnessOf(w2);
    const three = signer("witness.example/three");
    await s.root.projects.create({ id: "p1", displayName: "Schools" });
    await s.root.project("p1").update({ description: "first" });
    await settled();
    await one.step();
    await two.step();
    const note = await s.client().log.cosignedCheckpoint();
    const { log, kv } = s.app.flowstore;
    const logKey = parseVkey(log.checkpoints.vkey);
    const keys = [w1, w2, three].map((w) => parseVkey(w.vkey));
    expect(await verifyCosigned(log.tree, note, { logKey, witnesses: keys, quorum: 2 })).toMatchObject({ ok: true, reasons: [] });
    expect(await verifyCosigned(log.tree, note, { logKey, witnesses: keys, quorum: 3 })).toMatchObject({ ok: false });
    // Checked against another key of the same name: the log's signature is not found.
    const otherKey = parseVkey(vkey(logKey.name, 0x01, rawPublicKey(createPublicKey(three.privateKey))));
    expect((await verifyCosigned(log.tree, note, { logKey: otherKey, witnesses: keys, quorum: 1 })).ok).toBe(false);
    // History rewritten under the log (event 1's hash replaced): the leaf no longer matches its event.
    const P = ["project", "p1"];
    const e = JSON.parse((await kv.get(P, layout.log(1)))!.value.toString("utf8")) as ResourceEvent;
    await kv.commit(P, [{ type: "put", key: layout.log(1), value: Buffer.from(JSON.stringify({ ...e, hash: "0".repeat(64) })) }]);
    const r = await verifyCosigned(log.tree, note, { logKey, witnesses: keys, quorum: 2 });
    expect(r.ok).toBe(false);
    expect(r.reasons.join("\n")).toMatch(/history rewritten/);
    // The log rebuilt over it: another root than the cosigned one.
    await kv.dropPartition(TLOG.partition());
    await log.tree.appendPending();
    expect((await verifyCosigned(log.tree, note, { logKey, witnesses: keys, quorum: 2 })).reasons.join("\n")).toMatch(/another root/);
  });
});
