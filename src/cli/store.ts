/** The store a command works on: `--store <url>` (openFlowstore), by default the LMDB store in `--data`. */
import { readEnv } from "../config.js";
import { openFlowstore, type Flowstore, type FlowstoreOptions } from "../compose/index.js";
import type { StoreOptions } from "./options.js";

/** The default store URL for a data directory: the LMDB store in it (beside the token secret). */
export function defaultStoreUrl(dataDir: string): string {
  return `lmdb:${dataDir}`;
}

/** Whether the store outlives the process (a memory store does not). */
export function isPersistent(url: string): boolean {
  return !url.startsWith("memory");
}

/**
 * Opens the command's store, runs `run` on it and closes it; warns when nothing will persist. An LMDB
 * store must exist unless `create` (the commands that fill a store: import, demo): `verify --data /typo`
 * is refused, not answered for a new empty store. (These commands never read process data through its
 * API, so its token key is not loaded from `--data`: a throwaway key is used, and nothing is created
 * beside a remote store.)
 */
export async function withStore<T>(options: StoreOptions, run: (store: Flowstore) => Promise<T>, how: { create?: boolean; open?: FlowstoreOptions } = {}): Promise<T> {
  const url = options.store || defaultStoreUrl(options.data);
  if (!isPersistent(url)) process.stderr.write(`warning: ${url} keeps nothing after this command exits\n`);
  const store = await openFlowstore(url, { archiveSeal: archiveSealOf(options), ...how.open, create: how.create === true });
  try {
    return await run(store);
  } finally {
    await store.close();
  }
}

/** The archive seal's key: FLOWSTORE_ARCHIVE_KEY (base64, 32 bytes or more), else a key file in `--data`. */
export function archiveSealOf(options: StoreOptions): { key?: string; dataDir: string } {
  return { key: readEnv("FLOWSTORE_ARCHIVE_KEY"), dataDir: options.data };
}

/** A command's answer: one JSON line on stdout. */
export function print(value: unknown): void {
  process.stdout.write(JSON.stringify(value) + "\n");
}
