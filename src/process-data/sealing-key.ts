/**
 * Which key sealed a store's access tokens: the id of that key (TokenCipher.keyId, not the key) kept in
 * the store, in partition `["pd-key"]` under `["sealed-with"]`, written with the first token sealed and
 * moved by a rotation. A process opening the store with another key is refused at open (a configuration
 * mistake: a store moved without its key, two servers configured with different keys) instead of
 * answering 503 at the first read of a token. An export carries the entry, so an imported store asks for
 * its key too.
 */
import { ConfigurationError } from "../errors.js";
import type { KvStore } from "../kv/contract.js";
import { assertRecordedKey, type KeyRecord, recordedKeyOf, recordKeyId } from "../kv/recorded-key.js";
import { layout } from "./layout.js";

const AT: KeyRecord = {
  partition: layout.sealingKey,
  key: layout.sealedWith,
  refusal: (stored, configured) =>
    new ConfigurationError(
      `this store's process-data access tokens are sealed with key ${stored}, but the configured key is ${configured}: ` +
        "open it with the key it was written with (the process-data.key of its data directory, or the same FLOWSTORE_PROCESS_DATA_KEY)",
      "processData.encryptionKey",
    ),
};

/** The id of the key the store's tokens are sealed with, or null when none was recorded. */
export const sealingKeyOf = (kv: KvStore): Promise<string | null> => recordedKeyOf(kv, AT);

/** Refuses a key that is not the one the store's tokens were sealed with. */
export const assertSealingKey = (kv: KvStore, keyId: string): Promise<void> => assertRecordedKey(kv, AT, keyId);

/** Records `keyId` as the sealing key where none is recorded; refuses when another one is. */
export const recordSealingKey = (kv: KvStore, keyId: string): Promise<void> => recordKeyId(kv, AT, keyId);

/** Replaces the recorded sealing key (after every token was re-sealed with it). */
export async function replaceSealingKey(kv: KvStore, keyId: string): Promise<void> {
  await kv.commit(AT.partition, [{ type: "put", key: AT.key, value: Buffer.from(keyId, "utf8") }]);
}
