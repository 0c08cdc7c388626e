/**
 * A restore of the whole store from an export (transfer.ts's format), in two steps:
 *
 * 1. stage: the export is written to a file in the restore directory and imported into a scratch store
 *    (LMDB in a temporary directory beside it), which is then checked (`check`: the composition root
 *    opens it and verifies it). A bad export is refused here with a ValidationError naming why; the live
 *    store is not touched.
 * 2. apply (the composition root's, over the live store): `replaceStore` from that file, which stays in
 *    the restore directory until the restore is done, so that `flowstore import --resume --in <file>`
 *    can finish a restore a crash cut off.
 */
import { randomBytes } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { FlowstoreError, ValidationError } from "../errors.js";
import type { KvStore } from "../kv/contract.js";
import { openKv } from "../kv/open.js";
import { insufficientStorage } from "../kv/storage-full.js";
import { importStore, type Progress, type TransferCounts } from "./transfer.js";

/** A checked export, ready to replace the store's content. */
export interface StagedRestore {
  /** The export's file in the restore directory (kept until the restore is done or discarded). */
  readonly file: string;
  /** What it holds. */
  readonly counts: TransferCounts;
  /** The SHA-256 of the export as it was read (what the restore's epoch names). */
  readonly sha256: string;
  /**
   * Replaces the store's whole content with it, then refreshes what the process keeps in memory, and
   * removes the file. Nothing else may work on the store meanwhile (the server shuts its gate first).
   * A crash leaves the store marked as an unfinished import of the file (`import --resume` finishes it).
   * `onProgress` is called as the import goes (the old content is dropped by then).
   */
  apply(onProgress?: Progress): Promise<TransferCounts>;
  /** Removes the file without restoring, and opens the store's fence again. */
  discard(): Promise<void>;
}

/** An error of the operating system (an errno code: EIO, EMFILE…), not of the data read. */
const systemError = (e: unknown): boolean => typeof (e as { code?: unknown } | null)?.code === "string" && /^E[A-Z0-9]+$/.test((e as { code: string }).code);

/** The export file and the scratch stores live here; files the owner alone reads (exports hold hashes). */
const FILE_MODE = 0o600;

/**
 * Writes `input` (an export, as NDJSON) to a new file in `dir` and imports it into a scratch store that
 * `check` then judges (it throws to refuse). The file is removed when anything fails.
 */
export async function stageExport(dir: string, input: Readable, check: (scratch: KvStore) => Promise<void>): Promise<{ file: string; counts: TransferCounts }> {
  await mkdir(dir, { recursive: true });
  const file = join(dir, `restore-${new Date().toISOString().replace(/[:.]/g, "-")}-${randomBytes(4).toString("hex")}.ndjson`);
  try {
    await pipeline(input, createWriteStream(file, { mode: FILE_MODE, flags: "wx" })).catch((e: unknown) => {
      throw insufficientStorage(e) ?? e;
    });
    const scratchDir = await mkdtemp(join(dir, ".restore-scratch-"));
    try {
      // Durability buys nothing here: the scratch store is thrown away.
      const scratch = await openKv(`lmdb:${scratchDir}`, { durable: false });
      try {
        try {
          const counts = await importStore(scratch, createReadStream(file));
          await check(scratch);
          return { file, counts };
        } catch (e) {
          // Whatever the export makes fail (undecodable keys, say) is the export's fault; this machine's
          // own failures (a full disk: 507, an I/O error) are not, and are not answered as a bad upload.
          if (e instanceof FlowstoreError) throw e;
          throw insufficientStorage(e) ?? (systemError(e) ? e : new ValidationError(`the export cannot be read: ${e instanceof Error ? e.message : String(e)}`, "input"));
        }
      } finally {
        await scratch.close();
      }
    } finally {
      await rm(scratchDir, { recursive: true, force: true });
    }
  } catch (e) {
    await rm(file, { force: true });
    throw e;
  }
}
