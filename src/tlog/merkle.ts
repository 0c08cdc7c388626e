/**
 * RFC 9162 (RFC 6962) Merkle tree hashing and proofs, as pure functions over the hashes of complete
 * subtrees. A leaf hashes as SHA-256(0x00 || leaf), an inner node as SHA-256(0x01 || left || right); the
 * tree of n leaves splits at the largest power of two below n (section 2.1.1).
 *
 * Storage-independent: a tree is read through its *complete* subtrees, the node of level `l` and index
 * `i` covering leaves [i·2^l, (i+1)·2^l) (the C2SP tlog-tiles idea, one node at a time). Appending a
 * leaf creates exactly the nodes it completes (at most log2 n + 1), and every root, inclusion proof and
 * consistency proof needs O(log n) of them: `plan*` names the nodes, the caller reads them in one batch,
 * and `*From` computes the answer. The verifiers follow RFC 9162 sections 2.1.3.2 and 2.1.4.2.
 */
import { createHash } from "node:crypto";

export type Hash = Buffer;

/** A complete subtree: the node covering leaves [index·2^level, (index+1)·2^level). */
export interface NodeId {
  readonly level: number;
  readonly index: number;
}

export const EMPTY_ROOT: Hash = createHash("sha256").digest();

export function leafHash(leaf: Uint8Array): Hash {
  return createHash("sha256")
    .update(Buffer.from([0]))
    .update(leaf)
    .digest();
}

export function nodeHash(left: Uint8Array, right: Uint8Array): Hash {
  return createHash("sha256")
    .update(Buffer.from([1]))
    .update(left)
    .update(right)
    .digest();
}

/** The largest power of two strictly below n (n ≥ 2). */
function split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

const isPow2 = (n: number): boolean => Number.isSafeInteger(n) && n > 0 && 2 ** Math.round(Math.log2(n)) === n;

/** The complete nodes whose combination is MTH(D[start:end]) (RFC order, left first). */
export function rangeNodes(start: number, end: number, out: NodeId[] = []): NodeId[] {
  const n = end - start;
  if (n <= 0) return out;
  if (isPow2(n) && start % n === 0) {
    out.push({ level: Math.log2(n), index: start / n });
    return out;
  }
  const k = split(n);
  rangeNodes(start, start + k, out);
  rangeNodes(start + k, end, out);
  return out;
}

/** A reader of complete nodes, answered from a batch read (the node must be present). */
export type NodeLookup = (node: NodeId) => Hash;

export const nodeKey = (n: NodeId): string => `${n.level}/${n.index}`;

/** MTH(D[start:end]) from its complete nodes. */
export function rangeHash(start: number, end: number, lookup: NodeLookup): Hash {
  const n = end - start;
  if (n <= 0) return EMPTY_ROOT;
  if (isPow2(n) && start % n === 0) return lookup({ level: Math.log2(n), index: start / n });
  const k = split(n);
  return nodeHash(rangeHash(start, start + k, lookup), rangeHash(start + k, end, lookup));
}

type Range = readonly [number, number];

/** RFC 9162 2.1.3.1 PATH(m, D[start:end]): the ranges whose hashes make the inclusion proof, leaf-most first. */
function pathRanges(m: number, start: number, end: number, out: Range[] = []): Range[] {
  const n = end - start;
  if (n <= 1) return out;
  const k = split(n);
  if (m < k) {
    pathRanges(m, start, start + k, out);
    out.push([start + k, end]);
  } else {
    pathRanges(m - k, start + k, end, out);
    out.push([start, start + k]);
  }
  return out;
}

/** RFC 9162 2.1.4.1 SUBPROOF(m, D[start:end], b): the ranges whose hashes make the consistency proof. */
function subproofRanges(m: number, start: number, end: number, b: boolean, out: Range[] = []): Range[] {
  const n = end - start;
  if (m === n) {
    if (!b) out.push([start, end]);
    return out;
  }
  const k = split(n);
  if (m <= k) {
    subproofRanges(m, start, start + k, b, out);
    out.push([start + k, end]);
  } else {
    subproofRanges(m - k, start + k, end, false, out);
    out.push([start, start + k]);
  }
  return out;
}

/** The ranges of the inclusion proof of leaf `index` in the tree of `size` leaves. */
export function inclusionRanges(index: number, size: number): Range[] {
  if (!(index >= 0 && index < size)) throw new RangeError(`leaf ${index} is not in a tree of ${size}`);
  return pathRanges(index, 0, size);
}

/** The ranges of the consistency proof from `from` leaves to `to` leaves (empty when from is 0 or equal to to). */
export function consistencyRanges(from: number, to: number): Range[] {
  if (!(from >= 0 && from <= to)) throw new RangeError(`no consistency proof from ${from} to ${to}`);
  if (from === 0 || from === to) return [];
  return subproofRanges(from, 0, to, true);
}

/** Every complete node the given ranges need, without repeats. */
export function nodesOf(ranges: readonly Range[]): NodeId[] {
  const seen = new Map<string, NodeId>();
  for (const [s, e] of ranges) for (const n of rangeNodes(s, e)) seen.set(nodeKey(n), n);
  return [...seen.values()];
}

// --- Verification (RFC 9162 2.1.3.2 and 2.1.4.2), needing nothing but the proof. ---

/** RFC 9162's step after a node on the path: right-shift fn and sn until fn's lowest bit is set or fn is 0. */
function shiftWhileEven(fn: number, sn: number): [number, number] {
  while (fn % 2 === 0 && fn !== 0) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return [fn, sn];
}

/** The root an inclusion proof implies for `leafHash` at `index` in a tree of `size`, or null when the proof has the wrong length. */
export function rootFromInclusion(index: number, size: number, leaf: Hash, proof: readonly Hash[]): Hash | null {
  if (!(index >= 0 && index < size)) return null;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    if (sn === 0) return null;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      [fn, sn] = shiftWhileEven(fn, sn);
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : null;
}

export function verifyInclusion(index: number, size: number, leaf: Hash, proof: readonly Hash[], root: Hash): boolean {
  const r = rootFromInclusion(index, size, leaf, proof);
  return r?.equals(root) === true;
}

/** True when `proof` shows the tree of `size2` leaves (root2) extends the one of `size1` (root1). */
export function verifyConsistency(size1: number, size2: number, root1: Hash, root2: Hash, proof: readonly Hash[]): boolean {
  if (!(Number.isSafeInteger(size1) && Number.isSafeInteger(size2) && size1 >= 0 && size1 <= size2)) return false;
  if (size1 === size2) return proof.length === 0 && root1.equals(root2);
  if (size1 === 0) return proof.length === 0;
  if (proof.length === 0) return false;
  const path = isPow2(size1) ? [root1, ...proof] : [...proof];
  let fn = size1 - 1;
  let sn = size2 - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr = path[0]!;
  let sr = path[0]!;
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      [fn, sn] = shiftWhileEven(fn, sn);
    } else {
      sr = nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && fr.equals(root1) && sr.equals(root2);
}

/**
 * The nodes an append of leaves at [size, size + count) creates: each leaf's level-0 node, and every
 * node a leaf completes. `lookup` answers the nodes already stored (the left siblings: `frontierOf`).
 */
export function appendNodes(size: number, leafHashes: readonly Hash[], lookup: NodeLookup): Map<string, { node: NodeId; hash: Hash }> {
  const created = new Map<string, { node: NodeId; hash: Hash }>();
  const get = (n: NodeId): Hash => created.get(nodeKey(n))?.hash ?? lookup(n);
  leafHashes.forEach((h, i) => {
    let node: NodeId = { level: 0, index: size + i };
    let hash = h;
    created.set(nodeKey(node), { node, hash });
    while (node.index % 2 === 1) {
      hash = nodeHash(get({ level: node.level, index: node.index - 1 }), hash);
      node = { level: node.level + 1, index: (node.index - 1) / 2 };
      created.set(nodeKey(node), { node, hash });
    }
  });
  return created;
}

/** The stored nodes an append at `size` may need: the complete subtrees of the tree of `size` leaves (its right frontier). */
export function frontierOf(size: number): NodeId[] {
  return rangeNodes(0, size);
}
