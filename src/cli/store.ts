/**
 * Opens the store named by a URL. Until `openKv` (src/kv/open.ts) lands, only `memory:` is served
 * here; every other URL is refused with a clear message.
 */
import { ValidationError } from "../errors.js";
import type { KvStore } from "../kv/contract.js";
import { MemoryKv } from "../kv/memory.js";

export async function openStore(url: string): Promise<KvStore> {
  if (url === "memory:" || url === "memory") return new MemoryKv();
  throw new ValidationError(`unsupported store URL ${JSON.stringify(url)} (this build supports memory:)`, "store");
}

/** The default store URL for a data directory. */
export function defaultStoreUrl(_dataDir: string): string {
  return "memory:";
}

/** Whether the store keeps its data in the data directory (else a memory store: nothing persists). */
export function isPersistent(url: string): boolean {
  return !url.startsWith("memory");
}
