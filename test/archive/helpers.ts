import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { allPartitions, scanAll, type KvStore, type Tuple } from "../../src/kv/contract.js";

export const MiB = 1024 * 1024;
export const ARCHIVE_KINDS = ["archive", "archive-date", "archive-file", "archive-chunks", "archive-journal"];

/** Every non-empty archive partition with its key count, as a sorted list of "partition: n". */
export async function dump(kv: KvStore): Promise<string[]> {
  const out: string[] = [];
  for (const kind of ARCHIVE_KINDS) {
    for await (const p of allPartitions(kv, kind)) {
      let n = 0;
      for await (const _ of scanAll(kv, p)) n++;
      if (n > 0) out.push(`${JSON.stringify(p)}: ${n}`);
    }
  }
  return out.sort();
}

export async function countEntries(kv: KvStore, kind: string, filter: (key: Tuple) => boolean = () => true): Promise<number> {
  let n = 0;
  for await (const p of allPartitions(kv, kind)) for await (const e of scanAll(kv, p)) if (filter(e.key)) n++;
  return n;
}

/** Deterministic pseudo-random bytes (xorshift), generated a piece at a time. */
export function pattern(size: number, seed: number, piece = 64 * 1024): Readable {
  let x = (seed * 2 + 1) | 0;
  let left = size;
  return new Readable({
    read() {
      if (left === 0) return this.push(null);
      const n = Math.min(piece, left);
      const b = Buffer.allocUnsafe(n);
      for (let i = 0; i < n; i += 4) {
        x ^= x << 13;
        x ^= x >>> 17;
        x ^= x << 5;
        if (i + 4 <= n) b.writeInt32LE(x | 0, i);
        else for (let j = i; j < n; j++) b[j] = (x >>> (8 * (j - i))) & 0xff;
      }
      left -= n;
      this.push(b);
    },
  });
}

export async function collect(stream: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const p of stream) parts.push(Buffer.from(p));
  return Buffer.concat(parts);
}

export async function sha256Of(stream: AsyncIterable<Uint8Array>): Promise<{ sha256: string; size: number }> {
  const h = createHash("sha256");
  let size = 0;
  for await (const p of stream) {
    h.update(p);
    size += p.byteLength;
  }
  return { sha256: h.digest("hex"), size };
}

/** `size` pseudo-random bytes from `seed` (xorshift): the same bytes for the same seed. */
export function bytes(size: number, seed: number): Buffer {
  const out = Buffer.allocUnsafe(size);
  let x = seed | 1;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

export const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
