/**
 * Our Merkle verifier against proofs made by code nobody here wrote, and our prover against them:
 * the RFC 6962 reference tree (eight leaves, the inputs of Certificate Transparency's reference tests)
 * and the inclusion and consistency proofs of transparency-dev/merkle's published test vectors
 * (testdata/inclusion and testdata/consistency, the "happy path" of each directory, Apache-2.0): their
 * sizes, roots and proof hashes are facts written out below.
 *
 * - Our tree of the reference leaves has their roots, and our proofs are theirs, hash for hash.
 * - Our verifiers accept every one of their proofs and refuse the mutations their vector sets are named
 *   after (swapped or wrong roots, a flipped bit in any proof hash, a hash added before or after, a
 *   truncated or empty proof, a size off by one or doubled or halved), and their edge cases whose answer
 *   RFC 9162 settles (equal sizes, a first size beyond the second, an empty proof between two sizes).
 */
import { describe, expect, it } from "vitest";
import { appendNodes, consistencyRanges, type Hash, inclusionRanges, leafHash, nodeKey, rangeHash, verifyConsistency, verifyInclusion } from "../../src/tlog/merkle.js";

const b = (s: string): Buffer => Buffer.from(s, "base64");

/** The RFC 6962 reference leaves (hex). */
const LEAVES = ["", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"].map((h) => Buffer.from(h, "hex"));

/** Their roots of the reference tree's prefixes, by size. */
const ROOTS: Record<number, string> = {
  1: "bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=",
  2: "+sVCA+fMaWzw38tCySodnbr3CtnmIfS9jZhmLwDjwSU=",
  3: "rra8/idLcKFPsGel5VeCZNsPqbUa9eC6FZFY8yngbnc=",
  5: "Tju7H3tHjc/nH7YxYxUZo7yhLJrvyhYSv85ME6hiZNQ=",
  6: "duZ9rbzfHhDht03cYIq9L5jfsW+851J3tSMqEn8gh+8=",
  7: "3bib5AOAnjJXUNPSY814kpwpQreUKjS3fhIslZSnTIw=",
  8: "XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg=",
};

const INCLUSION = [
  { leafIdx: 0, treeSize: 1, leafHash: "bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=", proof: [] },
  {
    leafIdx: 0,
    treeSize: 8,
    leafHash: "bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=",
    proof: ["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=", "Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=", "a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="],
  },
  {
    leafIdx: 5,
    treeSize: 8,
    leafHash: "QnGia+DYqE8L1UyMMC58s6O10fpngKQLzOKHNHfatlg=",
    proof: ["vBoGQ7EuTS18d5GPROD095qDi2z57FtcKD4fTYhZnms=", "yoVOoSjtBQtBs1/8G4e46yveRh6eO1WW7Oa51ZdaCuA=", "037kGJdt2VdTwcc4Yrk5j6Kiz5tP8P3+izDNlSCWFLc="],
  },
  { leafIdx: 2, treeSize: 3, leafHash: "ApjRIpBtz8EIkstTpzmS/FufST6kybrbJ7eRtBJ6f+c=", proof: ["+sVCA+fMaWzw38tCySodnbr3CtnmIfS9jZhmLwDjwSU="] },
  {
    leafIdx: 1,
    treeSize: 5,
    leafHash: "lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=",
    proof: ["bjQLnP+zepicpUTmu3gKLHiQHT+zNzh2hRGjBhevoB0=", "Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=", "vBoGQ7EuTS18d5GPROD095qDi2z57FtcKD4fTYhZnms="],
  },
];

const CONSISTENCY = [
  { size1: 1, size2: 1, proof: [] },
  { size1: 1, size2: 8, proof: ["lqKW0iTyhcZ77pPDD4owkVfw2qNdxbh+QQt4YwoJz8c=", "Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=", "a0eq8p7jwq+a+Im8H7klTavTEXfxYjLdaqsDXKOb9uQ="] },
  { size1: 6, size2: 8, proof: ["DrxdNDf74tsVi58Sah0RjjCBgQMdCpSfje3t68VY72o=", "yoVOoSjtBQtBs1/8G4e46yveRh6eO1WW7Oa51ZdaCuA=", "037kGJdt2VdTwcc4Yrk5j6Kiz5tP8P3+izDNlSCWFLc="] },
  { size1: 2, size2: 5, proof: ["Xwg/ChozygdqlSeYMlgNs+DvRYS9/x9UyKNg9Q3jAx4=", "vBoGQ7EuTS18d5GPROD095qDi2z57FtcKD4fTYhZnms="] },
  { size1: 6, size2: 7, proof: ["DrxdNDf74tsVi58Sah0RjjCBgQMdCpSfje3t68VY72o=", "sIaT7C5yFZcTBkHoIR5+7cy0wmQTlj7ubB4u0W/7Gl8=", "037kGJdt2VdTwcc4Yrk5j6Kiz5tP8P3+izDNlSCWFLc="] },
];

/** Our tree of the reference leaves: every complete node, built by appends. */
function ourTree(): (s: number, e: number) => Hash {
  const nodes = new Map<string, Hash>();
  LEAVES.forEach((leaf, size) => {
    for (const [key, { hash }] of appendNodes(size, [leafHash(leaf)], (n) => nodes.get(nodeKey(n))!)) nodes.set(key, hash);
  });
  return (s, e) => rangeHash(s, e, (n) => nodes.get(nodeKey(n))!);
}

/** Bit 4 of byte 0 of proof[i] flipped (their "modified-proof[i]-bit-4"). */
const flip = (proof: Buffer[], i: number): Buffer[] =>
  proof.map((h, j) => {
    if (j !== i) return h;
    const c = Buffer.from(h);
    c[0]! ^= 0x10;
    return c;
  });

describe("the RFC 6962 reference tree and transparency-dev/merkle's vectors", () => {
  const range = ourTree();

  it("our roots of the reference leaves are theirs", () => {
    for (const [size, root] of Object.entries(ROOTS)) expect(range(0, Number(size)).toString("base64"), `size ${size}`).toBe(root);
  });

  it("our inclusion proofs are theirs, our verifier accepts theirs and refuses their mutations", () => {
    for (const v of INCLUSION) {
      const root = b(ROOTS[v.treeSize]!);
      const leaf = b(v.leafHash);
      const proof = v.proof.map(b);
      expect(leafHash(LEAVES[v.leafIdx]!).equals(leaf)).toBe(true);
      expect(inclusionRanges(v.leafIdx, v.treeSize).map(([s, e]) => range(s, e).toString("base64"))).toEqual(v.proof);
      expect(verifyInclusion(v.leafIdx, v.treeSize, leaf, proof, root), JSON.stringify(v)).toBe(true);

      const refused = (what: string, index: number, size: number, l: Buffer, p: Buffer[], r: Buffer): void => {
        expect(verifyInclusion(index, size, l, p, r), `${what} of ${v.leafIdx}/${v.treeSize}`).toBe(false);
      };
      refused("wrong leaf", v.leafIdx, v.treeSize, leafHash(Buffer.from("WRONG")), proof, root);
      refused("wrong root", v.leafIdx, v.treeSize, leaf, proof, leafHash(Buffer.from("WRONG")));
      refused("index + 1", v.leafIdx + 1, v.treeSize, leaf, proof, root);
      if (v.leafIdx > 0) refused("index - 1", v.leafIdx - 1, v.treeSize, leaf, proof, root);
      refused("size * 2", v.leafIdx, v.treeSize * 2, leaf, proof, root);
      if (v.treeSize > 1) refused("leaf and root swapped", v.leafIdx, v.treeSize, root, proof, leaf);
      refused("trailing garbage", v.leafIdx, v.treeSize, leaf, [...proof, leafHash(Buffer.from("garbage"))], root);
      refused("preceding garbage", v.leafIdx, v.treeSize, leaf, [leafHash(Buffer.from("garbage")), ...proof], root);
      for (let i = 0; i < proof.length; i++) refused(`modified proof[${i}]`, v.leafIdx, v.treeSize, leaf, flip(proof, i), root);
      if (proof.length > 0) refused("truncated proof", v.leafIdx, v.treeSize, leaf, proof.slice(0, -1), root);
    }
    // Their single-entry and empty-tree cases.
    const one = leafHash(Buffer.from("single"));
    expect(verifyInclusion(0, 1, one, [], one)).toBe(true);
    expect(verifyInclusion(0, 1, Buffer.alloc(0), [], one)).toBe(false);
    expect(verifyInclusion(0, 0, one, [], b("47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="))).toBe(false);
  });

  it("our consistency proofs are theirs, our verifier accepts theirs and refuses their mutations", () => {
    for (const v of CONSISTENCY) {
      const r1 = b(ROOTS[v.size1]!);
      const r2 = b(ROOTS[v.size2]!);
      const proof = v.proof.map(b);
      expect(consistencyRanges(v.size1, v.size2).map(([s, e]) => range(s, e).toString("base64"))).toEqual(v.proof);
      expect(verifyConsistency(v.size1, v.size2, r1, r2, proof), JSON.stringify(v)).toBe(true);
      if (v.size1 === v.size2) continue;

      const refused = (what: string, s1: number, s2: number, a: Buffer, c: Buffer, p: Buffer[]): void => {
        expect(verifyConsistency(s1, s2, a, c, p), `${what} of ${v.size1}→${v.size2}`).toBe(false);
      };
      const garbage = leafHash(Buffer.from("garbage"));
      refused("swapped roots", v.size1, v.size2, r2, r1, proof);
      refused("wrong root1", v.size1, v.size2, garbage, r2, proof);
      refused("wrong root2", v.size1, v.size2, r1, garbage, proof);
      refused("empty proof", v.size1, v.size2, r1, r2, []);
      refused("truncated proof", v.size1, v.size2, r1, r2, proof.slice(0, -1));
      refused("preceding garbage", v.size1, v.size2, r1, r2, [garbage, ...proof]);
      refused("trailing garbage", v.size1, v.size2, r1, r2, [...proof, garbage]);
      refused("preceding root1", v.size1, v.size2, r1, r2, [r1, ...proof]);
      refused("trailing root2", v.size1, v.size2, r1, r2, [...proof, r2]);
      for (let i = 0; i < proof.length; i++) refused(`modified proof[${i}]`, v.size1, v.size2, r1, r2, flip(proof, i));
      refused("size1 + 1", v.size1 + 1, v.size2, r1, r2, proof);
      refused("size1 - 1", v.size1 - 1, v.size2, r1, r2, proof);
      refused("size1 ^ 2", v.size1 ^ 2, v.size2, r1, r2, proof);
      refused("size2 * 2", v.size1, v.size2 * 2, r1, r2, proof);
      refused("size2 / 2", v.size1, Math.floor(v.size2 / 2), r1, r2, proof);
    }
    // Their "additional" edge cases that RFC 9162 settles.
    const x = Buffer.from("don't care 1");
    const y = Buffer.from("don't care 2");
    expect(verifyConsistency(1, 1, y, y, [])).toBe(true);
    expect(verifyConsistency(1, 1, x, y, [])).toBe(false);
    expect(verifyConsistency(2, 1, x, y, [])).toBe(false);
    expect(verifyConsistency(1, 0, x, y, [])).toBe(false);
    expect(verifyConsistency(1, 2, x, y, [])).toBe(false);
    expect(verifyConsistency(1, 1, x, x, [x])).toBe(false);
  });
});
