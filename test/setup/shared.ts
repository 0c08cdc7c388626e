/**
 * Servers the global setups start once for the whole run. vitest runs each project's global setup (the
 * `fast` and `slow` projects of vitest.config.ts both name redis.ts and postgres.ts), in the one main
 * process: the first project to ask starts the servers, the others share them, and the last teardown stops
 * them. `FLOWSTORE_TEST_FAST=1` (`npm run test:fast`) asks the setups to start nothing.
 */
interface Entry {
  readonly started: Promise<{ value: unknown; stop: () => Promise<void> }>;
  users: number;
}

const KEY = Symbol.for("flowstore.test.sharedServers");
const registry = ((globalThis as Record<symbol, Map<string, Entry> | undefined>)[KEY] ??= new Map<string, Entry>());

/** True when the run asked for the fast set without servers (`npm run test:fast`). */
export const serversSkipped = (): boolean => process.env.FLOWSTORE_TEST_FAST === "1";

/** The value of `start` under `name`, started by the first caller; `release` stops it after the last caller's. */
export async function sharedServers<T>(name: string, start: () => Promise<{ value: T; stop: () => Promise<void> }>): Promise<{ value: T; release: () => Promise<void> }> {
  let entry = registry.get(name);
  if (!entry) {
    entry = { started: start(), users: 0 };
    registry.set(name, entry);
  }
  entry.users++;
  const own = entry;
  const { value, stop } = await own.started.catch((err: unknown) => {
    registry.delete(name);
    throw err;
  });
  return {
    value: value as T,
    release: async () => {
      if (--own.users > 0) return;
      registry.delete(name);
      await stop();
    },
  };
}
