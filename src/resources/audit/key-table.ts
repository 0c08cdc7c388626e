/**
 * The keys a replay expects (encoded, as latin1 strings), each with a value, looked up by a stored key's
 * bytes without making a string of them. A full verify looks up every stored key of a partition once
 * (100,000 of them for 20,000 workflowitems); a Map keyed by strings made a string of each stored key and
 * hashed it, and its sets and gets were ~10% of the verify's profile. Here keys are bucketed by a 32-bit
 * FNV-1a hash of their bytes (seeded per process, so ids cannot be chosen to fill one bucket) and a hit
 * compares the bytes: a lookup is exact, the hash only picks where to look.
 */

interface Slot<V> {
  readonly key: string;
  value: V;
  readonly next: Slot<V> | undefined;
}

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
  readonly #buckets = new Map<number, Slot<V>>();
  #size = 0;

  /** `hashBits` below 32 makes keys share buckets (a test's way to reach the compare on a hit). */
  constructor(private readonly hashBits = 32) {}

  /** How many distinct keys it holds. */
  get size(): number {
    return this.#size;
  }

  /** Puts `value` under `key` (bytes as a latin1 string), replacing the value a key already there had. */
  set(key: string, value: V): void {
    const h = hashString(key) >>> (32 - this.hashBits);
    const first = this.#buckets.get(h);
    for (let s: Slot<V> | undefined = first; s; s = s.next) {
      if (s.key === key) {
        s.value = value;
        return;
      }
    }
    this.#buckets.set(h, { key, value, next: first });
    this.#size++;
  }

  /** The value under the key whose encoding is `bytes`, or undefined. */
  getBytes(bytes: Buffer): V | undefined {
    for (let s: Slot<V> | undefined = this.#buckets.get(hashBytes(bytes) >>> (32 - this.hashBits)); s; s = s.next) if (sameBytes(s.key, bytes)) return s.value;
    return undefined;
  }
}
