/**
 * Webhook secrets at rest (docs/security.md): the server needs a webhook's HMAC secret to sign its
 * deliveries, so it keeps it, sealed with AES-256-GCM (node:crypto) under the webhook key. A sealed
 * secret is `whs1.<keyId>.<base64url(iv[12] | tag[16] | ciphertext)>`, its additional authenticated
 * data the subscription's id (a sealed secret copied into another subscription does not open); `keyId`
 * (the first 8 hex digits of the key's sha-256) tells a wrong key from a tampered record.
 *
 * The key: `FLOWSTORE_WEBHOOK_KEY` (base64, 32 bytes) when given, which servers of a fleet without a
 * shared data directory (PostgreSQL, Redis) must all be given, as the checkpoint key; else the key file
 * `<data>/webhook-secrets.key`, made on first use by the one loader of key files (private-files.ts); else
 * (a memory store) a random key for the life of the process, as the store itself.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { join } from "node:path";
import { ConfigurationError, UnavailableError } from "../errors.js";
import type { KeyRecord } from "../kv/recorded-key.js";
import { loadOrCreatePrivateFile } from "../private-files.js";
import { subscriptionLayout as L } from "./layout.js";

export const WEBHOOK_KEY_FILE = "webhook-secrets.key";
const PREFIX = "whs1";
const KEY_BYTES = 32;

export interface WebhookKeyOptions {
  /** The key itself (configuration): 32 bytes, or their base64. */
  readonly key?: Uint8Array | string;
  /** A directory holding (or to hold) the key file. */
  readonly dataDir?: string;
}

/** Where the store records the id of its webhook key (kv/recorded-key.ts): a server with another key is refused at open. */
export const WEBHOOK_KEY_RECORD: KeyRecord = {
  partition: L.sealingKey,
  key: L.sealedWith,
  refusal: (stored, configured) =>
    new ConfigurationError(
      `this store's webhook secrets are sealed with key ${stored}, but this server's webhook key is ${configured}: ` +
        `give every server of the store the same FLOWSTORE_WEBHOOK_KEY (or the ${WEBHOOK_KEY_FILE} it was written with)`,
      "FLOWSTORE_WEBHOOK_KEY",
    ),
};

export class SecretSeal {
  readonly keyId: string;
  readonly #key: Buffer;

  private constructor(key: Buffer) {
    this.#key = key;
    this.keyId = createHash("sha256").update(key).digest("hex").slice(0, 8);
  }

  static async load(options: WebhookKeyOptions = {}): Promise<SecretSeal> {
    if (options.key !== undefined && options.key !== "") {
      const key = typeof options.key === "string" ? Buffer.from(options.key, "base64") : Buffer.from(options.key);
      if (key.length !== KEY_BYTES) throw new ConfigurationError(`FLOWSTORE_WEBHOOK_KEY must be ${KEY_BYTES} bytes (base64)`, "FLOWSTORE_WEBHOOK_KEY");
      return new SecretSeal(key);
    }
    if (options.dataDir === undefined) return new SecretSeal(randomBytes(KEY_BYTES));
    const file = join(options.dataDir, WEBHOOK_KEY_FILE);
    const key = Buffer.from((await loadOrCreatePrivateFile(file, () => randomBytes(KEY_BYTES).toString("base64") + "\n")).toString("utf8").trim(), "base64");
    if (key.length !== KEY_BYTES) throw new ConfigurationError(`${file} does not hold a ${KEY_BYTES}-byte base64 key`, "FLOWSTORE_WEBHOOK_KEY");
    return new SecretSeal(key);
  }

  seal(secret: string, subscriptionId: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.#key, iv).setAAD(Buffer.from(subscriptionId, "utf8"));
    const sealed = Buffer.concat([iv, Buffer.alloc(16), cipher.update(secret, "utf8"), cipher.final()]);
    cipher.getAuthTag().copy(sealed, 12);
    return [PREFIX, this.keyId, sealed.toString("base64url")].join(".");
  }

  /** The secret; an UnavailableError when it was sealed under another key or altered. */
  open(sealed: string, subscriptionId: string): string {
    const [prefix, keyId, body = ""] = sealed.split(".");
    if (prefix !== PREFIX) throw new UnavailableError(`the webhook secret of subscription ${subscriptionId} is not a sealed secret`);
    if (keyId !== this.keyId)
      throw new UnavailableError(`the webhook secret of subscription ${subscriptionId} was sealed with key ${keyId}, not this server's FLOWSTORE_WEBHOOK_KEY (${this.keyId})`);
    const raw = Buffer.from(body, "base64url");
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.#key, raw.subarray(0, 12)).setAAD(Buffer.from(subscriptionId, "utf8"));
      decipher.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
    } catch {
      throw new UnavailableError(`the webhook secret of subscription ${subscriptionId} fails authentication (altered, or moved from another subscription)`);
    }
  }
}
