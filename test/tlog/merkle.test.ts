/**
 * The Merkle tree math (src/tlog/merkle.ts) against RFC 9162's definitions written out directly over
 * the leaf list (MTH, PATH, PROOF of section 2.1), for every tree size up to 70 and every pair of sizes:
 * the roots, the proofs, our verifiers accepting them and refusing altered ones, and appends that
 * create only the nodes they complete.
 */
import { describe, expect, it } from "vitest";
import {
  appendNodes,
  consistencyRanges,
  EMPTY_ROOT,
  frontierOf,
  type Hash,
  inclusionRanges,
  leafHash,
  nodeHash,
  nodeKey,
  rangeHash,
  rangeNodes,
  verifyConsistency,
  verifyInclusion,
} from "../../src/tlog/merkle.js";

const leaves = Array.from({ length: 70 }, (_, i) => Buffer.from(`leaf ${i}`));

// RFC 9162 2.1.1, 2.1.3.1 and 2.1.4.1, literally.
const k = (n: number): number => 2 ** Math.ceil(Math.log2(n) - 1);
function mth(d: Buffer[]): Hash {
  if (d.length === 0) return EMPTY_ROOT;
  if (d.length === 1) return leafHash(d[0]!);
  const s = k(d.length);
  return nodeHash(mth(d.slice(0, s)), mth(d.slice(s)));
}
function path(m: number, d: Buffer[]): Hash[] {
  if (d.length <= 1) return [];
  const s = k(d.length);
  return m < s ? [...path(m, d.slice(0, s)), mth(d.slice(s))] : [...path(m - s, d.slice(s)), mth(d.slice(0, s))];
}
function subproof(m: number, d: Buffer[], b: boolean): Hash[] {
  if (m === d.length) return b ? [] : [mth(d)];
  const s = k(d.length);
  return m <= s ? [...subproof(m, d.slice(0, s), b), mth(d.slice(s))] : [...subproof(m - s, d.slice(s), false), mth(d.slice(0, s))];
}

/** Every complete node of the tree of all 70 leaves, built by appending one leaf at a time. */
function buildByAppends(): Map<string, Hash> {
  const nodes = new Map<string, Hash>();
  leaves.forEach((l, size) => {
    const created = appendNodes(size, [leafHash(l)], (n) => {
      const h = nodes.get(nodeKey(n));
      if (!h) throw new Error(`append read ${nodeKey(n)}, which is not a stored frontier node`);
      return h;
    });
    const frontier = new Set(frontierOf(size + 1).map(nodeKey));
    for (const [key, { hash }] of created) {
      expect(nodes.has(key)).toBe(false); // never rewritten
      nodes.set(key, hash);
    }
    // The new frontier is among what is stored.
    for (const f of frontier) expect(nodes.has(f)).toBe(true);
    expect(created.size).toBeLessThanOrEqual(Math.floor(Math.log2(size + 1)) + 1);
  });
  return nodes;
}

describe("RFC 9162 Merkle tree", () => {
  const nodes = buildByAppends();
  const lookup = (n: { level: number; index: number }): Hash => nodes.get(nodeKey(n))!;

  it("roots equal MTH for every size", () => {
    for (let n = 0; n <= leaves.length; n++) expect(rangeHash(0, n, lookup).toString("hex"), `size ${n}`).toBe(mth(leaves.slice(0, n)).toString("hex"));
    expect(EMPTY_ROOT.toString("hex")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  });

  it("a root reads at most log2(n)+1 nodes", () => {
    for (let n = 1; n <= leaves.length; n++) expect(rangeNodes(0, n).length).toBeLessThanOrEqual(Math.floor(Math.log2(n)) + 1);
  });

  it("inclusion proofs equal PATH and verify; altered ones do not", () => {
    for (let n = 1; n <= leaves.length; n++) {
      const root = mth(leaves.slice(0, n));
      for (let m = 0; m < n; m++) {
        const proof = inclusionRanges(m, n).map(([s, e]) => rangeHash(s, e, lookup));
        expect(proof.map((h) => h.toString("hex"))).toEqual(path(m, leaves.slice(0, n)).map((h) => h.toString("hex")));
        expect(verifyInclusion(m, n, leafHash(leaves[m]!), proof, root)).toBe(true);
        expect(verifyInclusion(m, n, leafHash(Buffer.from("other")), proof, root)).toBe(false);
        if (proof.length > 0) {
          const bad = proof.map((h, i) => (i === proof.length - 1 ? nodeHash(h, h) : h));
          expect(verifyInclusion(m, n, leafHash(leaves[m]!), bad, root)).toBe(false);
          expect(verifyInclusion(m, n, leafHash(leaves[m]!), proof.slice(1), root)).toBe(false);
        }
      }
    }
  });

  it("consistency proofs equal PROOF and verify; altered ones do not", () => {
    for (let n = 1; n <= leaves.length; n++) {
      const root2 = mth(leaves.slice(0, n));
      for (let m = 1; m <= n; m++) {
        const root1 = mth(leaves.slice(0, m));
        const proof = consistencyRanges(m, n).map(([s, e]) => rangeHash(s, e, lookup));
        expect(proof.map((h) => h.toString("hex"))).toEqual((m === n ? [] : subproof(m, leaves.slice(0, n), true)).map((h) => h.toString("hex")));
        expect(verifyConsistency(m, n, root1, root2, proof), `${m} → ${n}`).toBe(true);
        if (m < n) {
          expect(verifyConsistency(m, n, mth(leaves.slice(1, m + 1)), root2, proof)).toBe(false);
          expect(verifyConsistency(m, n, root1, nodeHash(root2, root2), proof)).toBe(false);
          expect(verifyConsistency(m, n, root1, root2, proof.slice(0, -1))).toBe(false);
          // A tree that rewrote leaf 0 is not an extension of the first.
          const forked = [Buffer.from("forged"), ...leaves.slice(1, n)];
          expect(verifyConsistency(m, n, root1, mth(forked), proof)).toBe(false);
        }
      }
    }
  });
});
