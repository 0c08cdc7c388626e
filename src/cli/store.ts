/** The store a command works on: `--store <url>` (openKv), by default the LMDB store in `--data`. */
import type { KvStore } from "../kv/contract.js";
import { openKv } from "../kv/open.js";
import type { StoreOptions } from "./options.js";

/** The default store URL for a data directory: the LMDB store in it (beside the token secret). */
export function defaultStoreUrl(dataDir: string): string {
  return `lmdb:${dataDir}`;
}

/** Whether the store outlives the process (a memory store does not). */
export function isPersistent(url: string): boolean {
  return !url.startsWith("memory");
}

/** Opens the command's store, runs `run` on it and closes it; warns when nothing will persist. */
export async function withStore<T>(options: StoreOptions, run: (kv: KvStore) => Promise<T>): Promise<T> {
  const url = options.store || defaultStoreUrl(options.data);
  if (!isPersistent(url)) process.stderr.write(`warning: ${url} keeps nothing after this command exits\n`);
  const kv = await openKv(url);
  try {
    return await run(kv);
  } finally {
    await kv.close();
  }
}

/** A command's answer: one JSON line on stdout. */
export function print(value: unknown): void {
  process.stdout.write(JSON.stringify(value) + "\n");
}
