/**
 * The archive workload's measurements, independent of the runner: write and read throughput of files
 * through the archive vs raw file-system writes (fsync'd) and reads of the same bytes in the same run,
 * and the storage used by many snapshots holding the same file.
 */
import { randomBytes } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { Archive } from "../../src/archive/index.js";
import { allPartitions, scanAll, type KvStore } from "../../src/kv/contract.js";

export const MiB = 1024 * 1024;

export interface ArchiveBenchOptions {
  /** Measured rounds per case (the median is reported), after one warm-up round. */
  readonly rounds: number;
  /** Files per round of the 1 MiB case. */
  readonly smallFiles: number;
  /** Size of the big file in MiB. */
  readonly bigMiB: number;
  /** Snapshots holding the same file, and that file's size in MiB. */
  readonly dedupSnapshots: number;
  readonly dedupMiB: number;
  /** On-disk size of the store, when the backend has one (bytes). */
  readonly diskBytes?: () => Promise<number | undefined>;
  readonly log?: (line: string) => void;
}

export interface ThroughputRow {
  readonly case: string;
  readonly archiveMiBps: number;
  readonly rawMiBps: number;
  /** archive / raw. */
  readonly ratio: number;
}

export interface ArchiveBenchResult {
  readonly throughput: ThroughputRow[];
  readonly dedup: {
    readonly snapshots: number;
    readonly fileMiB: number;
    /** Bytes of every key and value of the archive's partitions. */
    readonly storedBytes: number;
    /** Growth of the store's files on disk, when known. */
    readonly diskBytes?: number;
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** A readable over `buf` in 64 KiB pieces (what a socket or a file stream hands over). */
function piecesOf(buf: Buffer): Readable {
  let off = 0;
  return new Readable({
    read() {
      if (off >= buf.length) return this.push(null);
      this.push(buf.subarray(off, (off += 64 * 1024)));
    },
  });
}

async function drain(stream: AsyncIterable<Uint8Array>): Promise<number> {
  let n = 0;
  for await (const p of stream) n += p.byteLength;
  return n;
}

/** Makes `buf` distinct per use so that no write deduplicates against an earlier one. */
function stamp(buf: Buffer, n: number): Buffer {
  buf.writeUInt32LE(n >>> 0, 0);
  buf.writeUInt32LE(Math.floor(Math.random() * 2 ** 32), 4);
  return buf;
}

async function timeIt(fn: () => Promise<void>): Promise<number> {
  const t = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t) / 1e9;
}

export async function storedBytes(kv: KvStore): Promise<number> {
  let total = 0;
  for (const kind of ["archive", "archive-date", "archive-file", "archive-chunks", "archive-journal"]) {
    for await (const p of allPartitions(kv, kind)) {
      for await (const e of scanAll(kv, p, { limit: 8 })) total += e.keyBytes.length + e.value.length;
    }
  }
  return total;
}

export async function runArchiveBench(kv: KvStore, o: ArchiveBenchOptions): Promise<ArchiveBenchResult> {
  const log = o.log ?? (() => {});
  const scratch = await mkdtemp(join(tmpdir(), "flowstore-archive-bench-"));
  const archive = new Archive(kv, { maxSnapshotBytes: (o.bigMiB + 16) * MiB });
  let counter = 0;
  const throughput: ThroughputRow[] = [];
  try {
    const cases = [
      { name: "1 MiB files", size: MiB, files: o.smallFiles },
      { name: `${o.bigMiB} MiB file`, size: o.bigMiB * MiB, files: 1 },
    ];
    for (const c of cases) {
      const buf = randomBytes(c.size);
      const bytes = c.size * c.files;
      const rows = { aw: [] as number[], ar: [] as number[], fw: [] as number[], fr: [] as number[] };
      for (let round = 0; round <= o.rounds; round++) {
        const ids: string[] = [];
        const aw = await timeIt(async () => {
          for (let i = 0; i < c.files; i++) {
            const s = await archive.write(`bench-${c.size}`, { round: [round] }, [{ name: "f", content: piecesOf(stamp(buf, counter++)) }]);
            ids.push(s.id);
          }
        });
        const ar = await timeIt(async () => {
          for (const id of ids) {
            const n = await drain((await archive.openFile(id, "f")).stream);
            if (n !== c.size) throw new Error(`read ${n} bytes, expected ${c.size}`);
          }
        });
        const paths = Array.from({ length: c.files }, (_, i) => join(scratch, `f${round}-${i}`));
        const fw = await timeIt(async () => {
          for (const p of paths) {
            await pipeline(piecesOf(stamp(buf, counter++)), createWriteStream(p));
            const fh = await open(p, "r+");
            await fh.sync();
            await fh.close();
          }
        });
        const fr = await timeIt(async () => {
          for (const p of paths) await drain(createReadStream(p, { highWaterMark: MiB }));
        });
        for (const id of ids) await archive.delete(id);
        for (const p of paths) await rm(p);
        if (round === 0) continue; // warm-up
        rows.aw.push(bytes / MiB / aw);
        rows.ar.push(bytes / MiB / ar);
        rows.fw.push(bytes / MiB / fw);
        rows.fr.push(bytes / MiB / fr);
      }
      for (const [op, a, f] of [["write", rows.aw, rows.fw], ["read", rows.ar, rows.fr]] as const) {
        const row = { case: `${op} ${c.name}`, archiveMiBps: median(a), rawMiBps: median(f), ratio: median(a) / median(f) };
        log(`${row.case}: archive ${row.archiveMiBps.toFixed(1)} MiB/s, raw fs ${row.rawMiBps.toFixed(1)} MiB/s, ratio ${row.ratio.toFixed(2)}`);
        throughput.push(row);
      }
    }

    const before = await storedBytes(kv);
    const diskBefore = await o.diskBytes?.();
    const file = randomBytes(o.dedupMiB * MiB);
    const ids: string[] = [];
    for (let i = 0; i < o.dedupSnapshots; i++) {
      ids.push((await archive.write("bench-dedup", { i: [i] }, [{ name: "same.bin", content: piecesOf(file) }])).id);
    }
    const stored = (await storedBytes(kv)) - before;
    const diskAfter = await o.diskBytes?.();
    const dedup = {
      snapshots: o.dedupSnapshots,
      fileMiB: o.dedupMiB,
      storedBytes: stored,
      ...(diskBefore !== undefined && diskAfter !== undefined ? { diskBytes: diskAfter - diskBefore } : {}),
    };
    log(`${o.dedupSnapshots} snapshots of one ${o.dedupMiB} MiB file: ${(stored / MiB).toFixed(2)} MiB stored` +
      (dedup.diskBytes !== undefined ? `, store files grew ${(dedup.diskBytes / MiB).toFixed(2)} MiB` : ""));
    for (const id of ids) await archive.delete(id);
    return { throughput, dedup };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
