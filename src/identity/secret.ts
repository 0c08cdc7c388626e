/**
 * The token signing secret: `FLOWSTORE_JWT_SECRET` when set, else a random secret generated on first
 * start into `<dataDir>/jwt-secret` (mode 0600, the directory 0700) and read on later starts; without a data directory
 * (a memory store), a random secret for the life of the process.
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { ValidationError } from "../errors.js";
import { loadOrCreatePrivateFile } from "../private-files.js";

export const SECRET_FILE = "jwt-secret";

export async function loadTokenSecret(options: { dataDir?: string; env?: string }): Promise<Uint8Array> {
  if (options.env !== undefined && options.env !== "") {
    const bytes = new TextEncoder().encode(options.env);
    if (bytes.length < 32) throw new ValidationError("FLOWSTORE_JWT_SECRET must be at least 32 bytes", "FLOWSTORE_JWT_SECRET");
    return bytes;
  }
  if (options.dataDir === undefined) return randomBytes(32);
  const file = join(options.dataDir, SECRET_FILE);
  const text = (await loadOrCreatePrivateFile(file, () => randomBytes(48).toString("base64url") + "\n")).toString("utf8").trim();
  if (text.length < 32) throw new ValidationError(`${file} holds a secret shorter than 32 characters`, "jwt-secret");
  return new TextEncoder().encode(text);
}
