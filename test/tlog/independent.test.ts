/**
 * flowstore's proofs and notes checked by code nobody here wrote (issue 27, "independent verification"):
 * - Sigstore's verifier (@sigstore/verify, Apache-2.0: its Rekor inclusion-proof check
 *   `verifyMerkleInclusion` and its signed-note checkpoint check `verifyCheckpoint`) accepts our
 *   inclusion proofs for every leaf of trees of many sizes, and our checkpoint notes signed with the
 *   log's key, and refuses altered ones;
 * - the published C2SP signed-note example (c2sp.org/signed-note, "Example": its vkey and note) verifies
 *   with our parser and verifier, and our key ID of its key is the one the vkey states.
 * Sigstore's package has no consistency-proof verifier; consistency proofs are checked by Go's x/mod
 * (x-mod.test.ts) and against RFC 9162's definitions in merkle.test.ts.
 */
import { createRequire } from "node:module";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SYSTEM } from "../../src/access/actor.js";
import { openFlowstore, type Flowstore } from "../../src/compose/open.js";
import { MemoryKv } from "../../src/kv/memory.js";
import { checkSignatures, ed25519PublicFromRaw, keyId, parseNote, parseVkey, SIG_ED25519 } from "../../src/tlog/note.js";

const require = createRequire(import.meta.url);
type Entry = { inclusionProof: { logIndex: string; treeSize: string; rootHash: Buffer; hashes: Buffer[]; checkpoint: { envelope: string } }; canonicalizedBody: Buffer };
const { verifyMerkleInclusion } = require("@sigstore/verify/dist/tlog/merkle.js") as {
  verifyMerkleInclusion(entry: Entry, checkpoint: { logSize: bigint; logHash: Buffer }): void;
};
const { verifyCheckpoint } = require("@sigstore/verify/dist/tlog/checkpoint.js") as {
  verifyCheckpoint(entry: Entry, tlogs: { logID: Buffer; baseURL: string; publicKey: unknown }[]): { origin: string; logSize: bigint; logHash: Buffer };
};

describe("Sigstore's verifier accepts flowstore's log", () => {
  let fs: Flowstore;
  const sizes: number[] = [];
  beforeAll(async () => {
    fs = await openFlowstore(new MemoryKv());
    // Trees of many sizes: append after each write and keep each size reached.
    for (let i = 0; i < 12; i++) {
      await fs.workflow.createProject(SYSTEM, { id: `p${i}`, displayName: `P ${i}` });
      if (i % 3 === 0) await fs.workflow.createSubproject(SYSTEM, `p${i}`, { id: "s", displayName: "S", currency: "EUR" });
      await fs.log.tree.appendPending();
      sizes.push((await fs.log.tree.head()).size);
    }
  });
  afterAll(() => fs.close());

  async function entryOf(index: number, size: number): Promise<Entry> {
    const p = await fs.log.tree.inclusion(index, size);
    const cp = await fs.log.checkpoints.at(size);
    return {
      inclusionProof: { logIndex: String(index), treeSize: String(size), rootHash: cp.root, hashes: p.proof, checkpoint: { envelope: cp.note } },
      canonicalizedBody: p.leaf,
    };
  }

  const tlogOf = (vkeyText: string) => {
    const v = parseVkey(vkeyText);
    return { logID: Buffer.concat([v.keyId, Buffer.alloc(28)]), baseURL: `https://${v.name}`, publicKey: v.publicKey };
  };

  it("every inclusion proof, against the checkpoint note it verifies", async () => {
    const tlogs = [tlogOf(fs.log.checkpoints.vkey)];
    let checked = 0;
    for (const size of sizes) {
      for (let index = 0; index < size; index++) {
        const entry = await entryOf(index, size);
        const checkpoint = verifyCheckpoint(entry, tlogs);
        expect(checkpoint.logSize).toBe(BigInt(size));
        expect(checkpoint.origin).toBe(fs.log.checkpoints.origin);
        verifyMerkleInclusion(entry, checkpoint); // throws when it does not verify
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(100);
  });

  it("refuses an altered leaf, proof or note", async () => {
    const tlogs = [tlogOf(fs.log.checkpoints.vkey)];
    const size = sizes.at(-1)!;
    const entry = await entryOf(3, size);
    const checkpoint = verifyCheckpoint(entry, tlogs);
    expect(() => verifyMerkleInclusion({ ...entry, canonicalizedBody: Buffer.from("another leaf") }, checkpoint)).toThrow();
    const hashes = entry.inclusionProof.hashes.map((h, i) => (i === 0 ? Buffer.alloc(32) : h));
    expect(() => verifyMerkleInclusion({ ...entry, inclusionProof: { ...entry.inclusionProof, hashes } }, checkpoint)).toThrow();
    // The same note text with a root swapped: the log's signature no longer verifies.
    const forged = entry.inclusionProof.checkpoint.envelope.replace(/\n([A-Za-z0-9+/=]{44})\n/, `\n${Buffer.alloc(32, 1).toString("base64")}\n`);
    expect(forged).not.toBe(entry.inclusionProof.checkpoint.envelope);
    expect(() => verifyCheckpoint({ ...entry, inclusionProof: { ...entry.inclusionProof, checkpoint: { envelope: forged } } }, tlogs)).toThrow();
  });
});

describe("the C2SP signed-note example", () => {
  // c2sp.org/signed-note, section "Example".
  const VKEY = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k";
  const NOTE = "This is an example message.\n\n\u2014 example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n";

  it("verifies with our parser and verifier, and its key ID is ours", () => {
    const v = parseVkey(VKEY);
    expect(keyId("example.com/foo", SIG_ED25519, v.raw).toString("hex")).toBe("530d903a");
    expect(ed25519PublicFromRaw(v.raw).asymmetricKeyType).toBe("ed25519");
    const note = parseNote(NOTE);
    expect(note.text).toBe("This is an example message.\n");
    expect(checkSignatures(note, v)).toEqual({ good: [note.signatures[0]], bad: 0 });
    // One changed byte of the text: the signature fails.
    expect(checkSignatures(parseNote(NOTE.replace("example message", "example massage")), v)).toMatchObject({ good: [], bad: 1 });
  });
});
