/** The partition kinds the archive writes (see snapshots.ts, files.ts and journal.ts for their layout). */
import { chunkPartition, filePartition, md5Partition } from "./files.js";
import { JOURNAL } from "./journal.js";
import { datePartition, snapshotPartition } from "./snapshots.js";

export const ARCHIVE_KINDS: readonly string[] = [
  snapshotPartition("x")[0],
  datePartition("2000-01-01")[0],
  filePartition("0".repeat(64))[0],
  chunkPartition(["x", 0])[0],
  md5Partition("0".repeat(32))[0],
  JOURNAL[0],
].map(String);
