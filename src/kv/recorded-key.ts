/**
 * Which key sealed what a store holds: the id of that key (never the key) kept in the store under one
 * entry, written with the first secret sealed. A process opening the store with another key is refused
 * at open (a configuration mistake: a store moved without its key, servers of a fleet configured with
 * different keys) instead of failing later, secret by secret. Used by process data's access tokens
 * (process-data/sealing-key.ts) and webhook secrets (subscriptions/secrets.ts).
 */
import { ConflictError, type ConfigurationError } from "../errors.js";
import type { Key, KvStore, Partition } from "./contract.js";

export interface KeyRecord {
  readonly partition: Partition;
  readonly key: Key;
  /** The error of a process whose key (`configured`) is not the store's (`stored`). */
  refusal(stored: string, configured: string): ConfigurationError;
}

/** The id of the key recorded at `at`, or null when none was recorded. */
export async function recordedKeyOf(kv: KvStore, at: KeyRecord): Promise<string | null> {
  const e = await kv.get(at.partition, at.key);
  return e ? e.value.toString("utf8") : null;
}

/** Refuses a key that is not the one recorded. */
export async function assertRecordedKey(kv: KvStore, at: KeyRecord, keyId: string): Promise<void> {
  const stored = await recordedKeyOf(kv, at);
  if (stored !== null && stored !== keyId) throw at.refusal(stored, keyId);
}

/** Records `keyId` where none is recorded; refuses when another one is. */
export async function recordKeyId(kv: KvStore, at: KeyRecord, keyId: string): Promise<void> {
  try {
    await kv.commit(at.partition, [
      { type: "check", key: at.key, version: null },
      { type: "put", key: at.key, value: Buffer.from(keyId, "utf8") },
    ]);
  } catch (e) {
    if (!(e instanceof ConflictError)) throw e;
    await assertRecordedKey(kv, at, keyId);
  }
}
