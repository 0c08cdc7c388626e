/**
 * Which key sealed a store's access tokens: the id of that key (TokenCipher.keyId, not the key) kept in
 * the store, in partition `["pd-key"]` under `["sealed-with"]`, written with the first token sealed and
 * moved by a rotation. A process opening the store with another key is refused at open (a configuration
 * mistake: a store moved without its key, two servers configured with different keys) instead of
 * answering 503 at the first read of a token. An export carries the entry, so an imported store asks for
 * its key too.
 */
import { ConfigurationError, ConflictError } from "../errors.js";
import type { KvStore, Partition } from "../kv/contract.js";
import { layout } from "./layout.js";

const PARTITION: Partition = layout.sealingKey;
const KEY = layout.sealedWith;

/** The id of the key the store's tokens are sealed with, or null when none was recorded. */
export async function sealingKeyOf(kv: KvStore): Promise<string | null> {
  const e = await kv.get(PARTITION, KEY);
  return e ? e.value.toString("utf8") : null;
}

function refusal(stored: string, configured: string): ConfigurationError {
  return new ConfigurationError(
    `this store's process-data access tokens are sealed with key ${stored}, but the configured key is ${configured}: ` +
      "open it with the key it was written with (the process-data.key of its data directory, or the same FLOWSTORE_PROCESS_DATA_KEY)",
    "processData.encryptionKey",
  );
}

/** Refuses a key that is not the one the store's tokens were sealed with. */
export async function assertSealingKey(kv: KvStore, keyId: string): Promise<void> {
  const stored = await sealingKeyOf(kv);
  if (stored !== null && stored !== keyId) throw refusal(stored, keyId);
}

/** Records `keyId` as the sealing key where none is recorded; refuses when another one is. */
export async function recordSealingKey(kv: KvStore, keyId: string): Promise<void> {
  const value = Buffer.from(keyId, "utf8");
  try {
    await kv.commit(PARTITION, [
      { type: "check", key: KEY, version: null },
      { type: "put", key: KEY, value },
    ]);
  } catch (e) {
    if (!(e instanceof ConflictError)) throw e;
    await assertSealingKey(kv, keyId);
  }
}

/** Replaces the recorded sealing key (after every token was re-sealed with it). */
export async function replaceSealingKey(kv: KvStore, keyId: string): Promise<void> {
  await kv.commit(PARTITION, [{ type: "put", key: KEY, value: Buffer.from(keyId, "utf8") }]);
}
