/**
 * Access tokens at rest: AES-256-GCM (node:crypto). A sealed token is
 * `v1.<keyId>.<base64url(iv[12] | tag[16] | ciphertext)>`; the additional authenticated data is the
 * record's keyspace and key, so a sealed token copied into another record does not open. `keyId` (the
 * first 8 hex digits of the key's sha-256) tells a wrong key from a tampered token.
 *
 * The key comes from configuration (32 bytes, or their base64) or, when a data directory is given, from
 * the file `process-data.key` there, created (mode 0600) with a random key on first use.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { join } from "node:path";
import { UnavailableError, ValidationError } from "../errors.js";
import { loadOrCreatePrivateFile } from "../private-files.js";

export const KEY_FILE = "process-data.key";

export interface KeyConfig {
  /** 32 bytes, or a base64 string of 32 bytes. */
  encryptionKey?: Uint8Array | string;
  /** A directory holding (or to hold) the key file. Used when no encryptionKey is given. */
  dataDir?: string;
}

export class TokenCipher {
  readonly #key: Buffer;
  readonly keyId: string;

  constructor(key: Uint8Array) {
    if (key.length !== 32) throw new ValidationError("the encryption key must be 32 bytes (AES-256)", "encryptionKey");
    this.#key = Buffer.from(key);
    this.keyId = createHash("sha256").update(this.#key).digest("hex").slice(0, 8);
  }

  static async fromConfig(config: KeyConfig): Promise<TokenCipher> {
    if (config.encryptionKey !== undefined) {
      const raw = typeof config.encryptionKey === "string" ? Buffer.from(config.encryptionKey, "base64") : config.encryptionKey;
      return new TokenCipher(raw);
    }
    if (config.dataDir !== undefined) return new TokenCipher(await loadOrCreateKeyFile(config.dataDir));
    throw new ValidationError("process data needs an encryption key (32 bytes) or a data directory to keep its key file in", "encryptionKey");
  }

  seal(plain: string, aad: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.#key, iv);
    cipher.setAAD(Buffer.from(aad, "utf8"));
    const ct = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
    return `v1.${this.keyId}.${Buffer.concat([iv, cipher.getAuthTag(), ct]).toString("base64url")}`;
  }

  open(sealed: string, aad: string): string {
    const [version, keyId, body] = sealed.split(".");
    if (version !== "v1" || body === undefined) throw new UnavailableError("a stored access token is malformed");
    if (keyId !== this.keyId) {
      throw new UnavailableError(`a stored access token was sealed with key ${keyId}, not the configured key ${this.keyId}`);
    }
    const raw = Buffer.from(body, "base64url");
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.#key, raw.subarray(0, 12));
      decipher.setAAD(Buffer.from(aad, "utf8"));
      decipher.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
    } catch {
      throw new UnavailableError("a stored access token fails authentication (tampered or moved)");
    }
  }
}

async function loadOrCreateKeyFile(dir: string): Promise<Buffer> {
  const path = join(dir, KEY_FILE);
  const text = await loadOrCreatePrivateFile(path, () => randomBytes(32).toString("base64") + "\n");
  const key = Buffer.from(text.toString("utf8").trim(), "base64");
  if (key.length !== 32) throw new ValidationError(`${path} does not hold a 32-byte base64 key`, "encryptionKey");
  return key;
}
