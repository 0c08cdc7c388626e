/**
 * The archive seal: an HMAC-SHA256 (RFC 2104) by which the server recognizes snapshots it produced
 * itself (project archives), so that an uploaded look-alike can never be restored. The key is
 * `FLOWSTORE_ARCHIVE_KEY`-style configuration (at least 32 bytes) when given, else a random key
 * generated on first use into `<dataDir>/archive-seal.key` (mode 0600, as identity/secret.ts keeps the
 * token secret), else (no data directory: a memory store) a random key for the life of the process.
 *
 * What is sealed: the snapshot's document without its `seal` item, as canonical JSON (keys sorted,
 * RFC 8785's idea), and the sha-256 of its file — so neither the summary nor one byte of the file can
 * change without the seal failing.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { join } from "node:path";
import { ValidationError } from "../errors.js";
import { canonicalJson } from "../kv/canonical.js";
import { loadOrCreatePrivateFile } from "../private-files.js";

export const SEAL_KEY_FILE = "archive-seal.key";
/** The document item holding the seal. */
export const SEAL_ITEM = "seal";
const MIN_KEY_BYTES = 32;

export interface SealKeyOptions {
  /** The key itself (configuration), at least 32 bytes; a string is taken as base64. */
  readonly key?: Uint8Array | string;
  /** A directory holding (or to hold) the key file. */
  readonly dataDir?: string;
}

export async function loadSealKey(options: SealKeyOptions = {}): Promise<Uint8Array> {
  if (options.key !== undefined && options.key !== "") {
    const bytes = typeof options.key === "string" ? Buffer.from(options.key, "base64") : Buffer.from(options.key);
    if (bytes.length < MIN_KEY_BYTES) throw new ValidationError(`the archive seal key must be at least ${MIN_KEY_BYTES} bytes`, "archiveSeal.key");
    return bytes;
  }
  if (options.dataDir === undefined) return randomBytes(MIN_KEY_BYTES);
  const file = join(options.dataDir, SEAL_KEY_FILE);
  const text = await loadOrCreatePrivateFile(file, () => randomBytes(MIN_KEY_BYTES).toString("base64") + "\n");
  const bytes = Buffer.from(text.toString("utf8").trim(), "base64");
  if (bytes.length < MIN_KEY_BYTES) throw new ValidationError(`${file} holds a key shorter than ${MIN_KEY_BYTES} bytes`, SEAL_KEY_FILE);
  return bytes;
}

/** The seal (hex) of a document (its own seal item left out) and its file's sha-256 (hex). */
export function sealOf(key: Uint8Array, document: Record<string, unknown>, fileSha256: string): string {
  const { [SEAL_ITEM]: _, ...rest } = document;
  return createHmac("sha256", key).update(canonicalJson(rest)).update("\n").update(fileSha256).digest("hex");
}

/** True when `seal` is the seal of the document and file under `key` (compared in constant time). */
export function sealHolds(key: Uint8Array, document: Record<string, unknown>, fileSha256: string, seal: unknown): boolean {
  if (typeof seal !== "string" || !/^[0-9a-f]{64}$/.test(seal)) return false;
  return timingSafeEqual(Buffer.from(sealOf(key, document, fileSha256), "hex"), Buffer.from(seal, "hex"));
}
