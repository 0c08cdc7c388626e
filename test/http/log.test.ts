/**
 * The transparency log over real HTTP (routes/log.ts), on memory and LMDB: the checkpoint is a C2SP
 * signed note verified with the log's vkey, served with an ETag (304 on If-None-Match); consistency
 * proofs are public and verify between checkpoints; an inclusion proof is served to the event's
 * history viewers only (404 to others, as for the history itself) and verifies against the checkpoint
 * it carries; bad sizes are 400s naming the field; /metrics reports the log's size and lag (in feed
 * entries, and in seconds: the age of the oldest event not in it yet, by the store's clock); a witness's
 * cosignature is kept only when its key is configured and it verifies, and the cosigned checkpoint
 * carries it.
 */
import { createPublicKey } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ProblemError } from "../../src/client/index.js";
import { MemoryKv } from "../../src/kv/memory.js";
import { leafHash, verifyConsistency, verifyInclusion } from "../../src/tlog/merkle.js";
import {
  checkSignatures,
  cosignLine,
  formatNote,
  newKeyPem,
  parseCheckpoint,
  parseNote,
  parseVkey,
  privateKeyFromPem,
  rawPublicKey,
  SIG_COSIGNATURE_V1,
  vkey,
} from "../../src/tlog/note.js";
import { parseLeaf } from "../../src/tlog/log.js";
import { forEachBackend, httpBackends, type BackendHandle } from "../conformance/backends.js";
import { eventually } from "../support/index.js";
import { SCRAPE, startServer, type Running } from "./harness.js";

const b64 = (s: string): Buffer => Buffer.from(s, "base64");

function witness(name: string) {
  const privateKey = privateKeyFromPem(newKeyPem());
  return { name, privateKey, vkey: vkey(name, SIG_COSIGNATURE_V1, rawPublicKey(createPublicKey(privateKey))) };
}

forEachBackend((backend) => {
  describe("the transparency log over HTTP", () => {
    let h: BackendHandle;
    let s: Running;
    const w1 = witness("witness.example/w1");
    const stranger = witness("witness.example/stranger");
    beforeEach(async () => {
      h = await backend.create();
      s = await startServer(h.kv, { log: { append: true, pollMs: 20, intervalMs: 50 }, logWitnesses: [w1.vkey] });
    });
    afterEach(async () => {
      await s.close();
      await h.destroy();
    });

    async function settled(): Promise<{ note: string; etag: string | null; size: number; root: Buffer }> {
      await eventually(async () => expect((await s.root.log.info()).lag).toBe(0));
      const info = await s.root.log.info();
      const { note, etag } = await s.root.log.checkpoint();
      const cp = parseCheckpoint(parseNote(note).text);
      expect(cp.size).toBe(info.size);
      return { note, etag, size: cp.size, root: cp.root };
    }

    it("serves signed checkpoints, consistency and inclusion proofs that verify", async () => {
      await s.root.projects.create({ id: "p1", displayName: "Schools" });
      await s.root.project("p1").subprojects.create({ id: "s1", displayName: "Roofs", currency: "EUR" });
      const first = await settled();
      const info = await s.root.log.info();
      // The note verifies with the log's vkey and names the origin.
      const note = parseNote(first.note);
      expect(checkSignatures(note, parseVkey(info.vkey)).good).toHaveLength(1);
      expect(parseCheckpoint(note.text).origin).toBe(info.origin);
      // ETag: unchanged tree, 304.
      const again = await fetch(`${s.base}/api/v1/log/checkpoint`, { headers: { "if-none-match": first.etag! } });
      expect(again.status).toBe(304);
      const plain = await fetch(`${s.base}/api/v1/log/checkpoint`);
      expect(plain.headers.get("content-type")).toMatch(/^text\/plain/);

      await s.root.project("p1").update({ description: "more" });
      const second = await settled();
      expect(second.size).toBeGreaterThan(first.size);
      expect(second.etag).not.toBe(first.etag);
      // Public: no token.
      const anonymous = s.client();
      const c = await anonymous.log.consistency(first.size, second.size);
      expect(verifyConsistency(first.size, second.size, first.root, second.root, c.proof.map(b64))).toBe(true);

      // The project's events: each has a proof against the checkpoint it carries.
      const history = await s.root.project("p1").history();
      for (const e of history.items) {
        const p = await s.root.log.inclusion({ kind: "project", id: "p1", seq: e.seq });
        const cp = parseCheckpoint(parseNote(p.checkpoint).text);
        expect(checkSignatures(parseNote(p.checkpoint), parseVkey(info.vkey)).good).toHaveLength(1);
        expect(verifyInclusion(p.index, p.size, leafHash(b64(p.leaf)), p.proof.map(b64), cp.root)).toBe(true);
        expect(parseLeaf(b64(p.leaf))).toMatchObject({ partition: ["project", "p1"], seq: e.seq, hash: e.hash });
      }

      // Bad sizes name their field.
      await expect(anonymous.log.consistency(second.size + 1)).rejects.toMatchObject({ status: 400 });
      const bad = await fetch(`${s.base}/api/v1/log/proof/consistency?from=2&to=${second.size + 5}`);
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { field?: string; detail: string }).detail).toMatch(/to/);

      // /metrics: the log's size and lag.
      const metrics = await (await fetch(`${s.base}/metrics`, { headers: { authorization: `Bearer ${s.root.token}` } })).text();
      expect(metrics).toMatch(new RegExp(`^flowstore_tlog_size ${second.size}$`, "m"));
      expect(metrics).toMatch(/^flowstore_tlog_lag_entries 0$/m);
    });

    it("serves an inclusion proof to the event's viewers only", async () => {
      await s.root.projects.create({ id: "p1", displayName: "Schools" });
      const eve = await s.userClient("eve");
      const viewer = await s.userClient("vic");
      await s.root.project("p1").grant("project.viewHistory", "vic");
      await s.root.project("p1").grant("project.viewDetails", "vic");
      await settled();
      const ask = (c: typeof eve, id = "p1", seq = 1) =>
        c.log.inclusion({ kind: "project", id, seq }).then(
          () => 200,
          (e: unknown) => (e instanceof ProblemError ? e.status : 0),
        );
      expect(await ask(viewer)).toBe(200);
      expect(await ask(eve)).toBe(404);
      expect(await ask(eve, "nope")).toBe(404);
      expect(await ask(s.root, "p1", 999)).toBe(404);
      expect(await ask(s.client())).toBe(401);
    });

    it("keeps a configured witness's valid cosignature and serves the cosigned checkpoint", async () => {
      await s.root.projects.create({ id: "p1", displayName: "Schools" });
      const { note } = await settled();
      const text = parseNote(note).text;
      const log = await s.root.log.info();
      const now = Math.floor(Date.now() / 1000);
      const cosigned = note + cosignLine(text, w1, now).slice(0);
      await expect(s.client().log.cosignedCheckpoint()).rejects.toMatchObject({ status: 404 });
      expect(await s.client().log.cosign(cosigned)).toEqual({ size: parseCheckpoint(text).size, witness: w1.name });
      const served = parseNote(await s.client().log.cosignedCheckpoint());
      expect(served.text).toBe(text);
      expect(checkSignatures(served, parseVkey(w1.vkey)).good).toHaveLength(1);
      expect(checkSignatures(served, parseVkey(log.vkey)).good).toHaveLength(1);
      // An unknown witness, a forged cosignature, another root: refused, nothing kept.
      await expect(s.client().log.cosign(note + cosignLine(text, stranger, now))).rejects.toMatchObject({ status: 400 });
      const forged = formatNote(text.replace(/\n[^\n]+\n$/, `\n${Buffer.alloc(32, 7).toString("base64")}\n`), [cosignLine(text, w1, now)]);
      await expect(s.client().log.cosign(forged)).rejects.toMatchObject({ status: 400 });
      const wrongTime =
        note +
        cosignLine(text, w1, now).replace(/ (\S+)\n$/, (_m, sig: string) => {
          const bytes = Buffer.from(sig, "base64");
          bytes.writeBigUInt64BE(BigInt(now + 1), 4);
          return ` ${bytes.toString("base64")}\n`;
        });
      await expect(s.client().log.cosign(wrongTime)).rejects.toMatchObject({ status: 400 });
    });
  });
}, httpBackends);

describe("the log's merge lag in /metrics", () => {
  it("is the age of the oldest acknowledged event not in the log yet, in seconds, and 0 once the log holds it", async () => {
    // The store's clock is the test's; the server does not append by itself (the test appends).
    let now = Date.parse("2026-03-01T12:00:00.000Z");
    const s = await startServer(new MemoryKv(), { clock: () => now });
    try {
      const tree = s.app.flowstore.log.tree;
      const scrape = async (): Promise<{ seconds: number; entries: number }> => {
        const text = await (await fetch(`${s.base}/metrics`, SCRAPE)).text();
        const value = (name: string): number => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1]);
        return { seconds: value("flowstore_tlog_lag_seconds"), entries: value("flowstore_tlog_lag_entries") };
      };
      await tree.appendPending();
      expect(await scrape()).toEqual({ seconds: 0, entries: 0 });
      await s.root.projects.create({ id: "p1", displayName: "Schools" });
      now += 30_000;
      await s.root.projects.create({ id: "p2", displayName: "Roads" });
      now += 12_500;
      expect(await scrape()).toEqual({ seconds: 42.5, entries: 2 });
      // One feed entry appended (p1's): the oldest event missing is p2's.
      let batches = 0;
      await tree.appendPending({ entries: 1, blocked: async () => batches++ >= 1 });
      expect(await scrape()).toEqual({ seconds: 12.5, entries: 1 });
      await tree.appendPending();
      expect(await scrape()).toEqual({ seconds: 0, entries: 0 });
    } finally {
      await s.close();
    }
  });
});
