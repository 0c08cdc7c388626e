/**
 * The keys a replay expects (encoded, as latin1 strings), each with a value, looked up by a stored key's
 * bytes without making a string of them. A full verify looks up every stored key of a partition once
 * (100,000 of them for 20,000 workflowitems); a Map keyed by strings made a string of each stored key and
 * hashed it, and its sets and gets were ~10% of the verify's profile. Here keys are placed by a 32-bit
 * FNV-1a hash of their bytes and a hit compares the bytes: a lookup is exact, the hash only picks where to
 * look. The hash is seeded at random per process, so which keys collide is unpredictable to whoever picks
 * ids (it is no keyed hash: collisions are not made impossible, and one costs probes, never a wrong answer).
 */

const FNV_PRIME = 0x01000193;
const BASIS = (0x811c9dc5 ^ Math.floor(Math.random() * 0x1_0000_0000)) >>> 0;

function hashString(s: string): number {
  let h = BASIS;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), FNV_PRIME);
  return h;
}

function hashBytes(b: Buffer): number {
  let h = BASIS;
  for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b[i]!, FNV_PRIME);
  return h;
}

/** Whether the latin1 string `s` encodes exactly `b`. */
function sameBytes(s: string, b: Buffer): boolean {
  if (s.length !== b.length) return false;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) !== b[i]) return false;
  return true;
}

export class KeyTable<V> {
  /**
   * Open addressing with linear probing: slot i holds entry `#slots[i] - 1` (0: empty), whose hash is
   * `#hashes[i]`. The keys and values are two arrays by entry: no object per key, and no Map to grow (a
   * Map of buckets was ~17% of building the table of a 20,000-item partition, with the GC it caused).
   */
  #slots = new Int32Array(1024);
  #hashes = new Int32Array(1024);
  #mask = 1023;
  readonly #keys: string[] = [];
  readonly #values: V[] = [];

  /** `hashBits` below 32 makes keys share hashes (a test's way to reach the compare on a hit). */
  constructor(private readonly hashBits = 32) {}

  /** How many distinct keys it holds. */
  get size(): number {
    return this.#keys.length;
  }

  #hash(h: number): number {
    return this.hashBits === 32 ? h | 0 : (h >>> (32 - this.hashBits)) | 0;
  }

  /** Puts `value` under `key` (bytes as a latin1 string), replacing the value a key already there had. */
  set(key: string, value: V): void {
    const h = this.#hash(hashString(key));
    const slots = this.#slots;
    const mask = this.#mask;
    let i = h & mask;
    for (let e = slots[i]!; e !== 0; e = slots[(i = (i + 1) & mask)]!) {
      if (this.#hashes[i] === h && this.#keys[e - 1] === key) {
        this.#values[e - 1] = value;
        return;
      }
    }
    this.#keys.push(key);
    this.#values.push(value);
    slots[i] = this.#keys.length;
    this.#hashes[i] = h;
    if (this.#keys.length * 2 > mask) this.#grow();
  }

  /** The value under the key whose encoding is `bytes`, or undefined. */
  getBytes(bytes: Buffer): V | undefined {
    const h = this.#hash(hashBytes(bytes));
    const slots = this.#slots;
    const mask = this.#mask;
    let i = h & mask;
    for (let e = slots[i]!; e !== 0; e = slots[(i = (i + 1) & mask)]!) {
      if (this.#hashes[i] === h && sameBytes(this.#keys[e - 1]!, bytes)) return this.#values[e - 1];
    }
    return undefined;
  }

  /** Twice the slots, every entry placed again by its hash. */
  #grow(): void {
    const old = this.#slots;
    const oldHashes = this.#hashes;
    const size = old.length * 2;
    const slots = new Int32Array(size);
    const hashes = new Int32Array(size);
    const mask = size - 1;
    for (let j = 0; j < old.length; j++) {
      const e = old[j]!;
      if (e === 0) continue;
      const h = oldHashes[j]!;
      let i = h & mask;
      while (slots[i] !== 0) i = (i + 1) & mask;
      slots[i] = e;
      hashes[i] = h;
    }
    this.#slots = slots;
    this.#hashes = hashes;
    this.#mask = mask;
  }
}
