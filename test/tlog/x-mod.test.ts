/**
 * flowstore's transparency log checked by Go's checksum-database code (issue 27, "independent
 * verification"): golang.org/x/mod/sumdb/tlog and sumdb/note, as Debian ships them
 * (golang-golang-x-mod-dev), through a small Go program of ours (test/tlog/go/tlogcheck) built here in
 * GOPATH mode with Debian's Go. Go's tlog hashes as RFC 6962 does (0x00 leaves, 0x01 nodes, the split at
 * the largest power of two below n) and its record and tree proofs are RFC 6962's PATH and PROOF, so
 * its checkers apply to our proofs as they are.
 *
 * What the Go program is given is what a real server on 127.0.0.1 served, as bytes (fetched here with
 * no flowstore code in the way): the checkpoint notes at several sizes, the cosigned notes, the
 * consistency proofs between every two of those sizes, and the inclusion proof of every event at every
 * size that holds it.
 * - note.Open verifies every checkpoint note with the log's verifier key (x/mod's own vkey parser);
 * - tlog.CheckTree accepts every consistency proof, tlog.CheckRecord every inclusion proof;
 * - the cosignature/v1 lines (C2SP tlog-cosignature, which x/mod 0.7 does not know) verify through
 *   note.Open with a verifier of the Go program: Go's crypto/ed25519 over the C2SP-specified message;
 * - x/mod builds the tree from the served leaves: its roots are the signed roots, its proofs are ours
 *   hash for hash, and our verifiers accept its proofs;
 * - Go refuses what was altered: a note's root, another key of the log's name, a flipped proof bit, a
 *   wrong index or leaf, swapped sizes, a cosignature's timestamp.
 * Without Go and x/mod the suite is skipped, except under CI=true, where it fails (.ci/run installs them).
 */
import { execFile, spawnSync } from "node:child_process";
import { createPublicKey } from "node:crypto";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryKv } from "../../src/kv/memory.js";
import { leafHash, verifyConsistency, verifyInclusion } from "../../src/tlog/merkle.js";
import { newKeyPem, parseVkey, privateKeyFromPem, rawPublicKey, SIG_COSIGNATURE_V1, signLine, vkey } from "../../src/tlog/note.js";
import { Witness } from "../../src/tlog/witness.js";
import { startServer, type Running } from "../http/harness.js";
import { makeTempDirSync, removeTempDirSync } from "../support/temp-dir.js";

const exec = promisify(execFile);
const repo = resolve(import.meta.dirname, "../..");
/** Debian's Go sources (golang-golang-x-mod-dev): GOPATH mode builds against them, nothing is downloaded. */
const GOPATH = "/usr/share/gocode";
const hasGo = spawnSync("go", ["version"]).status === 0 && existsSync(join(GOPATH, "src/golang.org/x/mod/sumdb/tlog"));
if (!hasGo && process.env.CI === "true") throw new Error("go or x/mod is missing: this suite needs Debian's golang-go and golang-golang-x-mod-dev (.ci/run installs them)");

interface Check {
  type: "note" | "inclusion" | "consistency" | "cosigned" | "prove";
  note?: string;
  old?: string;
  index?: number;
  leaf?: string;
  proof?: string[];
  leaves?: string[];
  sizes?: number[];
  pairs?: [number, number][];
  records?: [number, number][];
}
interface GoResult {
  ok: boolean;
  error?: string;
  origin?: string;
  size?: number;
  root?: string;
  cosigners?: string[];
  roots?: Record<string, string>;
  consistency?: Record<string, string[]>;
  inclusion?: Record<string, string[]>;
}

function signer(name: string) {
  const privateKey = privateKeyFromPem(newKeyPem());
  return { name, privateKey, vkey: vkey(name, SIG_COSIGNATURE_V1, rawPublicKey(createPublicKey(privateKey))) };
}

const b64 = (s: string): Buffer => Buffer.from(s, "base64");
/** Bit 4 of byte 0 of a base64 hash flipped. */
const flipped = (h: string): string => {
  const c = b64(h);
  c[0]! ^= 0x10;
  return c.toString("base64");
};

describe.skipIf(!hasGo)("Go's sumdb/tlog and sumdb/note check flowstore's log", () => {
  let dir: string;
  let tlogcheck: string;
  let s: Running;
  const w1 = signer("witness.example/one");
  const w2 = signer("witness.example/two");
  let logKey: string;
  /** The checkpoint notes served at each size the test reached, smallest first. */
  const notes: { size: number; note: string }[] = [];
  const cosignedNotes: string[] = [];

  const get = async (path: string, token?: string): Promise<Response> => {
    const res = await fetch(`${s.base}/api/v1${path}`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
    expect(res.status, path).toBe(200);
    return res;
  };

  const goCheck = async (checks: Check[], witnesses = [w1.vkey, w2.vkey]): Promise<GoResult[]> => {
    const child = execFile(tlogcheck, [], { maxBuffer: 64 << 20 });
    const out = new Promise<string>((ok, fail) => {
      let text = "";
      child.stdout!.on("data", (d: Buffer) => (text += d.toString("utf8")));
      child.on("error", fail);
      child.on("close", (code) => (code === 0 ? ok(text) : fail(new Error(`tlogcheck exited ${code}`))));
    });
    child.stdin!.end(JSON.stringify({ logKey, witnesses, checks }));
    const results = JSON.parse(await out) as GoResult[];
    expect(results).toHaveLength(checks.length);
    return results;
  };

  beforeAll(async () => {
    dir = makeTempDirSync("tlogcheck");
    tlogcheck = join(dir, "tlogcheck");
    await exec("go", ["build", "-o", tlogcheck, "./test/tlog/go/tlogcheck"], {
      cwd: repo,
      env: { ...process.env, GO111MODULE: "off", GOPATH, GOFLAGS: "", GOCACHE: join(dir, "cache"), GOPROXY: "off", GOTOOLCHAIN: "local" },
    });
    s = await startServer(new MemoryKv(), { logWitnesses: [w1.vkey, w2.vkey] });
    logKey = (await s.root.log.info()).vkey;
    const witness = (w: ReturnType<typeof signer>) => new Witness({ log: s.base, logKey: parseVkey(logKey), signer: w, state: new MemoryKv() });
    const one = witness(w1);
    const two = witness(w2);
    for (let i = 0; i < 6; i++) {
      await s.root.projects.create({ id: `p${i}`, displayName: `Project ${i}` });
      for (let u = 0; u < i % 3; u++) await s.root.project(`p${i}`).update({ description: `change ${u}` });
      await s.app.flowstore.log.tree.appendPending();
      const note = await (await get("/log/checkpoint")).text();
      notes.push({ size: Number(note.split("\n")[1]), note });
      expect(await one.step()).toMatchObject({ outcome: "cosigned", posted: true });
      if (i % 2 === 1) expect(await two.step()).toMatchObject({ outcome: "cosigned", posted: true });
      cosignedNotes.push(await (await get("/log/checkpoint/cosigned")).text());
    }
  }, 600_000);

  afterAll(async () => {
    await s?.close();
    if (dir) removeTempDirSync(dir);
  });

  /** The inclusion proof the server serves of leaf `index` in the tree of `size`, as served. */
  type Served = { index: number; size: number; leaf: string; proof: string[]; checkpoint: string };
  const inclusionOf = async (index: number, size: number): Promise<Served> => {
    const { tree, checkpoints } = s.app.flowstore.log;
    const leaf = await tree.leaf(index);
    const [kind, id] = leaf.partition as [string, string | undefined];
    if (id === undefined) {
      // A record chain's event (["identity"], ["global"], ["rates"]: anchored since issue 29) has no route
      // serving its proof (no caller's view rule covers it): its proof is the tree's own, as the route builds it.
      const p = await tree.inclusion(index, size);
      return { index, size, leaf: p.leaf.toString("base64"), proof: p.proof.map((h) => h.toString("base64")), checkpoint: (await checkpoints.at(size)).note };
    }
    return (await (await get(`/log/proof/inclusion?kind=${kind}&id=${encodeURIComponent(id)}&seq=${leaf.seq}&size=${size}`, s.root.token)).json()) as Served;
  };
  const consistencyOf = async (from: number, to: number): Promise<string[]> =>
    ((await (await get(`/log/proof/consistency?from=${from}&to=${to}`)).json()) as { proof: string[] }).proof;

  it("note.Open verifies every checkpoint, CheckTree every consistency proof, CheckRecord every inclusion proof", async () => {
    expect(new Set(notes.map((n) => n.size)).size).toBe(notes.length);
    const checks: Check[] = notes.map((n) => ({ type: "note", note: n.note }));
    for (const [a, old] of notes.entries())
      for (const next of notes.slice(a)) checks.push({ type: "consistency", old: old.note, note: next.note, proof: await consistencyOf(old.size, next.size) });
    for (const { size } of notes) {
      for (let index = 0; index < size; index++) {
        const p = await inclusionOf(index, size);
        checks.push({ type: "inclusion", note: p.checkpoint, index: p.index, leaf: p.leaf, proof: p.proof });
      }
    }
    const results = await goCheck(checks);
    for (const [i, r] of results.entries()) expect(r, `${checks[i]!.type} check ${i}`).toMatchObject({ ok: true });
    // The notes' checkpoints as Go read them: the origin is the log key's name, the sizes are the ones reached.
    expect(results.slice(0, notes.length).map((r) => [r.origin, r.size])).toEqual(notes.map((n) => [parseVkey(logKey).name, n.size]));
    expect(results.filter((r, i) => r.ok && checks[i]!.type === "inclusion").length).toBe(notes.reduce((sum, n) => sum + n.size, 0));
  });

  it("the cosignature/v1 lines verify with Go's Ed25519 over the C2SP message, through note.Open", async () => {
    const results = await goCheck(cosignedNotes.map((note) => ({ type: "cosigned", note })));
    expect(results.map((r) => r.ok)).toEqual(cosignedNotes.map(() => true));
    // w1 cosigned every checkpoint; w2 every other one, so the last cosigned note carries both.
    expect([...results.at(-1)!.cosigners!].sort()).toEqual([w1.name, w2.name]);
    expect(results.at(-1)!.size).toBe(notes.at(-1)!.size);
    expect(results[0]!.cosigners).toEqual([w1.name]);
    // A witness the checker is not given is not counted (its line stays an unverified signature).
    const [onlyOne] = await goCheck([{ type: "cosigned", note: cosignedNotes.at(-1)! }], [w1.vkey]);
    expect(onlyOne!.cosigners).toEqual([w1.name]);
  });

  it("x/mod's tree of the served leaves has the signed roots, and its proofs are ours, which our verifiers accept", async () => {
    const last = notes.at(-1)!.size;
    const leaves: string[] = [];
    for (let index = 0; index < last; index++) leaves.push((await inclusionOf(index, last)).leaf);
    const sizes = notes.map((n) => n.size);
    const pairs: [number, number][] = [];
    for (const [a, m] of sizes.entries()) for (const n of sizes.slice(a)) pairs.push([m, n]);
    const records: [number, number][] = [];
    for (const n of sizes) for (let i = 0; i < n; i++) records.push([i, n]);
    const [noteResults, [proved]] = await Promise.all([goCheck(notes.map((n) => ({ type: "note", note: n.note }))), goCheck([{ type: "prove", leaves, sizes, pairs, records }])]);
    expect(proved).toMatchObject({ ok: true });
    const roots = proved!.roots!;
    for (const [i, n] of notes.entries()) expect(roots[String(n.size)], `root of ${n.size}`).toBe(noteResults[i]!.root);
    for (const [m, n] of pairs) {
      const theirs = proved!.consistency![`${m}-${n}`]!;
      expect(theirs, `consistency ${m}→${n}`).toEqual(await consistencyOf(m, n));
      expect(verifyConsistency(m, n, b64(roots[String(m)]!), b64(roots[String(n)]!), theirs.map(b64))).toBe(true);
    }
    for (const [i, n] of records) {
      const theirs = proved!.inclusion![`${i}-${n}`]!;
      expect(theirs, `inclusion of ${i} in ${n}`).toEqual((await inclusionOf(i, n)).proof);
      expect(verifyInclusion(i, n, leafHash(b64(leaves[i]!)), theirs.map(b64), b64(roots[String(n)]!))).toBe(true);
    }
  });

  it("Go refuses altered notes, proofs, leaves and cosignatures", async () => {
    const [small, big] = [notes[1]!, notes.at(-1)!];
    const proof = await consistencyOf(small.size, big.size);
    const inc = await inclusionOf(2, big.size);
    const lines = big.note.split("\n");
    // The root swapped in the text: the log's signature no longer verifies.
    const reRooted = [...lines.slice(0, 2), Buffer.alloc(32, 7).toString("base64"), ...lines.slice(3)].join("\n");
    // The same text signed by another key under the log's name: not the log's signature.
    const text = big.note.slice(0, big.note.indexOf("\n\n") + 1);
    const otherKey = `${text}\n${signLine(text, { name: parseVkey(logKey).name, privateKey: privateKeyFromPem(newKeyPem()) })}`;
    // A cosignature's timestamp moved by one second: its Ed25519 signature no longer verifies.
    const cosigned = cosignedNotes.at(-1)!;
    const cosigLine = cosigned.split("\n").find((l) => l.startsWith(`\u2014 ${w2.name} `))!;
    const sig = b64(cosigLine.split(" ")[2]!);
    sig[11]! ^= 1;
    const retimed = cosigned.replace(cosigLine, `\u2014 ${w2.name} ${sig.toString("base64")}`);
    const refused: [string, Check][] = [
      ["a note's root changed", { type: "note", note: reRooted }],
      ["a note signed by another key of the log's name", { type: "note", note: otherKey }],
      ["a flipped consistency-proof bit", { type: "consistency", old: small.note, note: big.note, proof: proof.map((h, i) => (i === 0 ? flipped(h) : h)) }],
      ["a truncated consistency proof", { type: "consistency", old: small.note, note: big.note, proof: proof.slice(0, -1) }],
      ["the sizes swapped", { type: "consistency", old: big.note, note: small.note, proof }],
      ["a flipped inclusion-proof bit", { type: "inclusion", note: inc.checkpoint, index: inc.index, leaf: inc.leaf, proof: inc.proof.map((h, i) => (i === 0 ? flipped(h) : h)) }],
      ["another index", { type: "inclusion", note: inc.checkpoint, index: inc.index + 1, leaf: inc.leaf, proof: inc.proof }],
      ["another leaf", { type: "inclusion", note: inc.checkpoint, index: inc.index, leaf: Buffer.from("another leaf").toString("base64"), proof: inc.proof }],
      ["a cosignature's timestamp changed", { type: "cosigned", note: retimed }],
    ];
    const results = await goCheck(refused.map(([, c]) => c));
    for (const [i, r] of results.entries()) expect(r, refused[i]![0]).toMatchObject({ ok: false });
    // The untouched ones pass the same checker.
    const control = await goCheck([
      { type: "note", note: big.note },
      { type: "consistency", old: small.note, note: big.note, proof },
      { type: "inclusion", note: inc.checkpoint, index: inc.index, leaf: inc.leaf, proof: inc.proof },
      { type: "cosigned", note: cosigned },
    ]);
    expect(control.map((r) => r.ok)).toEqual([true, true, true, true]);
  });
});
