/**
 * Recognizes a write that failed for lack of space, whatever layer reports it: the OS (ENOSPC no space
 * left, EDQUOT quota exceeded, EFBIG a file size limit such as `ulimit -f`), by code or errno, and
 * LMDB's MDB_MAP_FULL (the map size is reached). A backend turns such a failure into an
 * InsufficientStorageError (HTTP 507).
 */
import { rmSync, statfsSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { InsufficientStorageError } from "../errors.js";

/** errno values on Linux, as lmdb-js reports them in `code`; and LMDB's own MDB_MAP_FULL. */
const ERRNOS = new Map<number, string>([
  [28, "ENOSPC"],
  [122, "EDQUOT"],
  [27, "EFBIG"],
  [-30792, "MDB_MAP_FULL"],
]);
const CODES = new Set(["ENOSPC", "EDQUOT", "EFBIG", "MDB_MAP_FULL"]);
const MESSAGES = /no space left on device|disk quota exceeded|file too large|MDB_MAP_FULL/i;

/** The name of the lack of space `error` reports (ENOSPC, EDQUOT, EFBIG, MDB_MAP_FULL), or null. */
export function lackOfSpace(error: unknown): string | null {
  if (error === null || typeof error !== "object") return null;
  const { code, errno, message } = error as { code?: unknown; errno?: unknown; message?: unknown };
  if (typeof code === "string" && CODES.has(code)) return code;
  // lmdb-js reports errno positive (27), Node's fs negative (-28): either sign names the same error.
  for (const n of [code, errno]) {
    const name = typeof n === "number" ? (ERRNOS.get(n) ?? ERRNOS.get(-n)) : undefined;
    if (name) return name;
  }
  if (typeof message === "string") {
    const m = MESSAGES.exec(message);
    if (m) return /space/i.test(m[0]) ? "ENOSPC" : /quota/i.test(m[0]) ? "EDQUOT" : /large/i.test(m[0]) ? "EFBIG" : "MDB_MAP_FULL";
  }
  return null;
}

/** The InsufficientStorageError for a commit that failed with `cause` (null when it is not a lack of space). */
export function insufficientStorage(cause: unknown): InsufficientStorageError | null {
  const what = lackOfSpace(cause);
  return what ? new InsufficientStorageError(`the store has no space left for this write (${what}); nothing of it was applied`) : null;
}

/**
 * What LMDB reports as EIO may be a lack of space: it turns a short write (the file reached the size
 * limit, or the disk filled, in the middle of a page run) into EIO. Called on such a failure, this
 * looks at the directory: the space its file system has left, and whether a file may grow past the
 * data file's size (a sparse probe, removed at once). Returns what it finds (ENOSPC, EFBIG) or null.
 */
export function probeLackOfSpace(dir: string, dataFile: string): string | null {
  try {
    const fs = statfsSync(dir);
    if (fs.bavail * fs.bsize < LOW_SPACE_BYTES) return "ENOSPC";
  } catch {
    // no statfs here: go on with the probe
  }
  const probe = join(dir, `.space-probe-${process.pid}`);
  try {
    const size = statSync(dataFile).size + PROBE_BEYOND_BYTES;
    writeFileSync(probe, "");
    truncateSync(probe, size);
    return null;
  } catch (e) {
    return lackOfSpace(e);
  } finally {
    rmSync(probe, { force: true });
  }
}

/** Below this much free space, a failed write is taken for a full disk. */
const LOW_SPACE_BYTES = 4 * 1024 * 1024;
/** The probe grows a sparse file this far past the data file: what the next commits would need. */
const PROBE_BEYOND_BYTES = 1024 * 1024;
