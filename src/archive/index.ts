export { Archive } from "./archive.js";
export type { ArchiveOptions } from "./config.js";
export type { ArchiveDocument, JsonValue } from "./document.js";
export { CHUNK_SIZE, type FileContent, type OpenedFile } from "./files.js";
export { dayOf, parseSnapshotId, snapshotIdOf, MAX_UNIQUE_ID_LENGTH } from "./ids.js";
export { DEFAULT_MAX_SNAPSHOT_BYTES } from "./limits.js";
export type { RecoveryReport } from "./recovery.js";
export type { ArchivedFile, Page, PageOptions, Snapshot, SnapshotSummary } from "./snapshots.js";
export type { FileInput, WriteOptions } from "./write.js";
export {
  archiveProject,
  restoreProject,
  projectUniqueId,
  ARCHIVE_PROJECT_INTENT,
  PROJECT_ARCHIVE_FILE,
  PROJECT_ARCHIVE_KIND,
  type ArchivedProject,
  type ProjectArchiveDeps,
  type RestoredProject,
} from "./project.js";
