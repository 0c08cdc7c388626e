/** The store a command works on: `--store <url>` (openKv), by default the LMDB store in `--data`. */
import type { KvStore } from "../kv/contract.js";
import { openKv } from "../kv/open.js";

export function openStore(url: string): Promise<KvStore> {
  return openKv(url);
}

/** The default store URL for a data directory: the LMDB store in it (beside the token secret). */
export function defaultStoreUrl(dataDir: string): string {
  return `lmdb:${dataDir}`;
}

/** Whether the store outlives the process (a memory store does not). */
export function isPersistent(url: string): boolean {
  return !url.startsWith("memory");
}
