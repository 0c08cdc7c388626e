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
  /**
   * The document item the date index uses (default `$modified`, as Imixs-Archive): a snapshot whose
   * document has it is found under its day; one without, under the snapshot time's.
   */
  readonly dateItem?: string;
  /**
   * The document item that sets retention for its own unique id (default `$snapshot.history`, as
   * Imixs-Archive): keep the newest N, beside (and in place of) the global `keepNewest`.
   */
  readonly retentionItem?: string;
}

export const DEFAULT_DATE_ITEM = "$modified";
export const DEFAULT_RETENTION_ITEM = "$snapshot.history";

export interface ArchiveContext {
  readonly kv: KvStore;
  readonly maxSnapshotBytes: number;
  readonly keepNewest: number | undefined;
  readonly now: () => number;
  readonly dateItem: string;
  readonly retentionItem: string;
  /** Tokens (upload ids, delete and free tokens) of operations this process is running. */
  readonly active: Set<string>;
}

export function createContext(kv: KvStore, options: ArchiveOptions = {}): ArchiveContext {
  const maxSnapshotBytes = options.maxSnapshotBytes === undefined ? DEFAULT_MAX_SNAPSHOT_BYTES : validateLimit(options.maxSnapshotBytes, "maxSnapshotBytes");
  const keepNewest = options.keepNewest;
  if (keepNewest !== undefined && (!Number.isSafeInteger(keepNewest) || keepNewest < 1)) {
    throw new ValidationError("keepNewest is a positive integer", "keepNewest");
  }
  const item = (name: string | undefined, dflt: string, field: string): string => {
    if (name === undefined) return dflt;
    if (typeof name !== "string" || name === "") throw new ValidationError(`${field} is an item name`, field);
    return name;
  };
  return {
    kv,
    maxSnapshotBytes,
    keepNewest,
    now: options.now ?? Date.now,
    dateItem: item(options.dateItem, DEFAULT_DATE_ITEM, "dateItem"),
    retentionItem: item(options.retentionItem, DEFAULT_RETENTION_ITEM, "retentionItem"),
    active: new Set(),
  };
}
