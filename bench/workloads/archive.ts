/**
 * archive: snapshot files through the archive vs the raw file system, same bytes, same run, rounds
 * interleaved. Writes are durable on both sides (the store's durable commits; fs write + fsync). Rows
 * count one op per MiB, so ops/s reads as MiB/s. Then the storage used by 100 snapshots holding the
 * same 10 MiB file (content-addressed: goal about 10 MiB, not 1 GiB), and a date query over a day of
 * 10,000 snapshots indexed by their `$modified`.
 */
import { SYSTEM } from "../../src/access/actor.js";
import { randomBytes } from "node:crypto";
import { createReadStream, createWriteStream, readdirSync, statSync } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { Archive } from "../../src/archive/index.js";
import { allPartitions, scanAll, type KvStore } from "../../src/kv/contract.js";
import { openKv } from "../../src/kv/open.js";
import type { Workload } from "../harness.js";

const MiB = 1024 * 1024;
const BIG_MiB = 100;
const DEDUP_SNAPSHOTS = 100;
const DEDUP_MiB = 10;
/** Snapshots of one day for the date query. */
const DATE_SNAPSHOTS = 10_000;

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

async function drain(stream: AsyncIterable<Uint8Array>, expected: number): Promise<void> {
  let n = 0;
  for await (const p of stream) n += p.byteLength;
  if (n !== expected) throw new Error(`read ${n} bytes, expected ${expected}`);
}

let stamp = 0;
/** Makes `buf` distinct per write, so that no write deduplicates against an earlier one. */
function fresh(buf: Buffer): Buffer {
  buf.writeUInt32LE(++stamp, 0);
  buf.writeUInt32LE(process.pid, 4);
  return buf;
}

async function fsWrite(path: string, buf: Buffer): Promise<void> {
  await pipeline(piecesOf(buf), createWriteStream(path));
  const fh = await open(path, "r+");
  await fh.sync();
  await fh.close();
}

/** Bytes of every key and value in the archive's partitions. */
async function storedBytes(kv: KvStore): Promise<number> {
  let total = 0;
  for (const kind of ["archive", "archive-date", "archive-file", "archive-chunks", "archive-journal"]) {
    for await (const p of allPartitions(kv, kind)) {
      for await (const e of scanAll(kv, p, { limit: 8 })) total += e.keyBytes.length + e.value.length;
    }
  }
  return total;
}

/** Disk blocks used by the files of a directory. */
function diskBytes(dir: string): number {
  return readdirSync(dir).reduce((sum, f) => sum + statSync(join(dir, f)).blocks * 512, 0);
}

export const archive: Workload = {
  name: "archive",
  description: "archive file write/read throughput vs raw fs (MiB/s), and storage of 100 snapshots of one 10 MiB file",
  async run(ctx) {
    const kv = await ctx.openStore();
    const store = new Archive(kv, { maxSnapshotBytes: (BIG_MiB + 1) * MiB });
    const dir = ctx.tmpDir();
    let files = 0;

    const cases = [
      { label: "1 MiB files", size: MiB, count: Math.max(5, Math.round(20 * ctx.scale)), rounds: 7 },
      { label: `${BIG_MiB} MiB file`, size: BIG_MiB * MiB, count: 1, rounds: 5 },
    ];
    for (const c of cases) {
      const buf = randomBytes(c.size);
      const ops = (c.size * c.count) / MiB;
      await ctx.compare({
        ops,
        rounds: c.rounds,
        reference: {
          name: `write ${c.label}, MiB/s (fs + fsync)`,
          round: async () => {
            for (let i = 0; i < c.count; i++) await fsWrite(join(dir, `w${files++}`), fresh(buf));
          },
        },
        subject: {
          name: `write ${c.label}, MiB/s (archive)`,
          round: async () => {
            for (let i = 0; i < c.count; i++) await store.write(SYSTEM, `w-${c.size}`, { i: [i] }, [{ name: "f", content: piecesOf(fresh(buf)) }]);
          },
        },
      });
      // Reads: the same bytes, already stored on both sides.
      const ids: string[] = [];
      const paths: string[] = [];
      for (let i = 0; i < c.count; i++) {
        ids.push((await store.write(SYSTEM, `r-${c.size}`, { i: [i] }, [{ name: "f", content: piecesOf(fresh(buf)) }])).id);
        paths.push(join(dir, `r${files++}`));
        await fsWrite(paths[i]!, buf);
      }
      await ctx.compare({
        ops,
        rounds: c.rounds,
        reference: {
          name: `read ${c.label}, MiB/s (fs)`,
          round: async () => {
            for (const p of paths) await drain(createReadStream(p, { highWaterMark: MiB }), c.size);
          },
        },
        subject: {
          name: `read ${c.label}, MiB/s (archive, sha-256 checked)`,
          round: async () => {
            for (const id of ids) await drain((await store.openFile(SYSTEM, id, "f")).stream, c.size);
          },
        },
      });
    }

    // The date index by $modified (Imixs-Archive): one day holding DATE_SNAPSHOTS snapshots, imported
    // with their ids; a query reads the day's whole index page by page.
    {
      const day = "2021-06-01";
      const base = Date.parse(`${day}T00:00:00Z`);
      const count = Math.round(DATE_SNAPSHOTS * Math.min(ctx.scale, 1));
      const t0 = performance.now();
      for (let i = 0; i < count; i += 100) {
        await Promise.all(
          Array.from({ length: Math.min(100, count - i) }, (_, j) => {
            const at = base + (i + j) * 8000;
            return store.write(SYSTEM, `dated-${i + j}`, { $modified: [new Date(at).toISOString()] }, [], { modified: at });
          }),
        );
      }
      ctx.note(`wrote ${count.toLocaleString("en-US")} snapshots of ${day} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      await ctx.measure(`date query: every snapshot of a day holding ${count.toLocaleString("en-US")} (pages of 1,000)`, {
        ops: 1,
        rounds: 5,
        note: "?date= over the day's index partition",
        round: async () => {
          let n = 0;
          for (let cursor: string | null = null; ; ) {
            const page = await store.findSnapshotsByDate(SYSTEM, day, { cursor, limit: 1000 });
            n += page.items.length;
            if (page.nextCursor === null) break;
            cursor = page.nextCursor;
          }
          if (n !== count) throw new Error(`found ${n} snapshots, expected ${count}`);
        },
      });
    }

    // Storage: a store of its own, so that its growth on disk is the snapshots' alone.
    const own = ctx.storeUrl === undefined ? ctx.tmpDir() : undefined;
    const dkv = own ? await openKv(`lmdb:${own}`) : kv;
    try {
      const dstore = new Archive(dkv);
      const before = await storedBytes(dkv);
      const diskBefore = own ? diskBytes(own) : undefined;
      const file = randomBytes(DEDUP_MiB * MiB);
      for (let i = 0; i < DEDUP_SNAPSHOTS; i++) {
        await dstore.write(SYSTEM, "dedup", { i: [i] }, [{ name: "same.bin", content: piecesOf(file) }]);
      }
      const stored = (await storedBytes(dkv)) - before;
      const disk = own ? diskBytes(own) - diskBefore! : undefined;
      const text =
        `${DEDUP_SNAPSHOTS} snapshots holding the same ${DEDUP_MiB} MiB file: ${(stored / MiB).toFixed(2)} MiB of keys and values` +
        (disk !== undefined ? `, the LMDB directory grew ${(disk / MiB).toFixed(2)} MiB on disk` : "") +
        ` (${DEDUP_SNAPSHOTS * DEDUP_MiB} MiB without deduplication).`;
      ctx.note(text);
      process.stdout.write(`  ${text}\n`);
    } finally {
      if (own) await dkv.close();
    }
  },
};
