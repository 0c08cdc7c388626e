/** The archive's configuration and the context every operation receives (the store is injected). */
import { ValidationError } from "../errors.js";
import type { KvStore } from "../kv/contract.js";
import { DEFAULT_MAX_SNAPSHOT_BYTES, validateLimit } from "./limits.js";

export interface ArchiveOptions {
  /** Maximum bytes of one snapshot, document plus files (default 100 MiB). */
  readonly maxSnapshotBytes?: number;
  /** Retention: keep only the newest N snapshots per unique id (default: keep all). */
  readonly keepNewest?: number;
  /** The clock (epoch millis); tests may inject one. */
  readonly now?: () => number;
}

export interface ArchiveContext {
  readonly kv: KvStore;
  readonly maxSnapshotBytes: number;
  readonly keepNewest: number | undefined;
  readonly now: () => number;
  /** Tokens (upload ids, delete and free tokens) of operations this process is running. */
  readonly active: Set<string>;
}

export function createContext(kv: KvStore, options: ArchiveOptions = {}): ArchiveContext {
  const maxSnapshotBytes =
    options.maxSnapshotBytes === undefined ? DEFAULT_MAX_SNAPSHOT_BYTES : validateLimit(options.maxSnapshotBytes, "maxSnapshotBytes");
  const keepNewest = options.keepNewest;
  if (keepNewest !== undefined && (!Number.isSafeInteger(keepNewest) || keepNewest < 1)) {
    throw new ValidationError("keepNewest is a positive integer", "keepNewest");
  }
  return { kv, maxSnapshotBytes, keepNewest, now: options.now ?? Date.now, active: new Set() };
}
