/**
 * `flowstore keys export|import|rotate`: the keys are part of what an operator moves with a store.
 *
 * A data directory holds four keys beside an LMDB store (each may be given by configuration instead):
 *   process-data.key    FLOWSTORE_PROCESS_DATA_KEY  seals process-data access tokens (the store records
 *                                                   the id of the key that sealed them)
 *   jwt-secret          FLOWSTORE_JWT_SECRET        signs sessions (access and refresh tokens)
 *   archive-seal.key    FLOWSTORE_ARCHIVE_KEY       seals archived projects (a restore checks the seal)
 *   checkpoint-key.pem  FLOWSTORE_CHECKPOINT_KEY    signs checkpoints
 * `keys export` writes the files of a data directory as one JSON bundle (0600; it holds secrets), `keys
 * import` writes them into another, `keys rotate` re-seals every access token under a new key and
 * replaces the JWT secret (every session ends).
 */
import { readEnv } from "../config.js";
import { randomBytes } from "node:crypto";
import { readFile, rename } from "node:fs/promises";
import { join } from "node:path";
import { Option, type Command } from "commander";
import { SEAL_KEY_FILE } from "../archive/index.js";
import { ConfigurationError, ValidationError } from "../errors.js";
import { SECRET_FILE } from "../identity/index.js";
import { KEY_FILE, TokenCipher } from "../process-data/index.js";
import { sealingKeyOf } from "../process-data/sealing-key.js";
import { makePrivateDir, writePrivateFile } from "../private-files.js";
import { CHECKPOINT_KEY_FILE } from "../resources/audit/checkpoint.js";
import { configOption, storeOptions, type StoreOptions } from "./options.js";
import { print, withStore } from "./store.js";

/** Each key file of a data directory with the variable that configures it instead, and what it keeps working. */
export const KEY_FILES = [
  { file: KEY_FILE, env: "FLOWSTORE_PROCESS_DATA_KEY", keeps: "process-data access tokens" },
  { file: SECRET_FILE, env: "FLOWSTORE_JWT_SECRET", keeps: "sessions" },
  { file: SEAL_KEY_FILE, env: "FLOWSTORE_ARCHIVE_KEY", keeps: "restoring archived projects" },
  { file: CHECKPOINT_KEY_FILE, env: "FLOWSTORE_CHECKPOINT_KEY", keeps: "the checkpoint signing key" },
] as const;

interface KeyBundle {
  flowstore: "keys";
  version: 1;
  files: Record<string, string>;
}

async function readKeyFiles(dataDir: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const { file } of KEY_FILES) {
    const text = await readFile(join(dataDir, file), "utf8").catch((e: NodeJS.ErrnoException) => {
      if (e.code === "ENOENT") return undefined;
      throw e;
    });
    if (text !== undefined) files[file] = text;
  }
  return files;
}

/** The keys a copy of this store needs, as lines for an operator (what `export` tells). */
export async function keysNeeded(options: StoreOptions, sealedWith: string | null): Promise<string> {
  const present = await readKeyFiles(options.data).catch(() => ({}) as Record<string, string>);
  const lines = KEY_FILES.map(({ file, env, keeps }) => {
    const where = readEnv(env) ? `${env} (set here)` : file in present ? `${join(options.data, file)}` : `${file} (none yet)`;
    const id = file === KEY_FILE && sealedWith ? `, the tokens are sealed with key id ${sealedWith}` : "";
    return `  ${where}: keeps ${keeps} working${id}`;
  });
  return (
    "flowstore: the target store needs this store's keys:\n" +
    lines.join("\n") +
    `\n  copy the files with \`flowstore keys export --data ${options.data} --out keys.json\` and ` +
    "`flowstore keys import --data <target> --in keys.json`, or configure the target with the same variables\n"
  );
}

export function keysCommands(program: Command): void {
  const keys = program.command("keys").description("export, import and rotate the keys of a data directory (see README, Keys)");

  keys
    .command("export")
    .description("write the key files of --data as one JSON bundle (to --out, 0600, or stdout): it holds secrets")
    .addOption(configOption("FLOWSTORE_DATA"))
    .addOption(new Option("--out <file>", "output file (default: stdout)"))
    .action(async (options: { data: string; out?: string }) => {
      const files = await readKeyFiles(options.data).catch((e: NodeJS.ErrnoException) => {
        throw e.code === "ENOTDIR" || e.code === "ENOENT" ? new ConfigurationError(`cannot read the keys in ${options.data}: ${e.message}`, "data") : e;
      });
      if (Object.keys(files).length === 0) throw new ConfigurationError(`${options.data} holds no key files`, "data");
      const bundle: KeyBundle = { flowstore: "keys", version: 1, files };
      const text = JSON.stringify(bundle) + "\n";
      if (options.out) await writePrivateFile(options.out, text);
      else process.stdout.write(text);
      for (const { env } of KEY_FILES) if (readEnv(env)) process.stderr.write(`flowstore: ${env} is set: configure the target with the same value\n`);
    });

  keys
    .command("import")
    .description("write the key files of a bundle (from --in or stdin) into --data; refuses to replace a different key unless --force")
    .addOption(configOption("FLOWSTORE_DATA"))
    .addOption(new Option("--in <file>", "input file (default: stdin)"))
    .addOption(new Option("--force", "replace key files that differ (the data sealed with them becomes unreadable)"))
    .action(async (options: { data: string; in?: string; force?: boolean }) => {
      const text = options.in ? await readFile(options.in, "utf8") : await readStdin();
      let bundle: KeyBundle;
      try {
        bundle = JSON.parse(text) as KeyBundle;
      } catch {
        throw new ValidationError("not a key bundle (not JSON)", "input");
      }
      if (bundle?.flowstore !== "keys" || bundle.version !== 1 || typeof bundle.files !== "object" || bundle.files === null) {
        throw new ValidationError("not a flowstore key bundle (version 1)", "input");
      }
      const known = new Set<string>(KEY_FILES.map((k) => k.file));
      const unknown = Object.keys(bundle.files).filter((f) => !known.has(f));
      if (unknown.length > 0) throw new ValidationError(`the bundle holds unknown files: ${unknown.join(", ")}`, "input");
      await makePrivateDir(options.data);
      const present = await readKeyFiles(options.data);
      const differ = Object.keys(bundle.files).filter((f) => present[f] !== undefined && present[f] !== bundle.files[f]);
      if (differ.length > 0 && !options.force) {
        throw new ConfigurationError(`${options.data} already holds other keys (${differ.join(", ")}): use --force to replace them`, "data");
      }
      const written: string[] = [];
      for (const [file, content] of Object.entries(bundle.files)) {
        if (present[file] === content) continue;
        await writePrivateFile(join(options.data, file), content);
        written.push(file);
      }
      print({ data: options.data, written, kept: Object.keys(bundle.files).filter((f) => !written.includes(f)) });
    });

  storeOptions(
    keys.command("rotate").description("re-seal every process-data access token under a new key and replace the JWT secret (every session ends); stop the servers first"),
  ).action(async (options: StoreOptions) => {
    const envKey = readEnv("FLOWSTORE_PROCESS_DATA_KEY");
    const next = join(options.data, `${KEY_FILE}.next`);
    // The store is opened first: a missing one is refused before any key file is made.
    const result = await withStore(options, async (store) => {
      const from = await TokenCipher.fromConfig(envKey ? { encryptionKey: envKey } : { dataDir: options.data });
      // The new key is kept beside the old one until every token is re-sealed: a rotation cut off is
      // finished by running it again (tokens already under the new key are skipped).
      const pending = await readFile(next, "utf8").catch(() => undefined);
      const newKey = pending !== undefined ? Buffer.from(pending.trim(), "base64") : randomBytes(32);
      if (pending === undefined) await writePrivateFile(next, newKey.toString("base64") + "\n");
      const to = new TokenCipher(newKey);
      const sealedWith = await sealingKeyOf(store.kv);
      if (sealedWith !== null && sealedWith !== from.keyId && sealedWith !== to.keyId) {
        throw new ConfigurationError(`the store's tokens are sealed with key ${sealedWith}, not with the configured key ${from.keyId}`, "processData.encryptionKey");
      }
      const { resealed } = await store.processData.resealTokens(from, to);
      return { from: from.keyId, to: to.keyId, resealed };
    });
    await rename(next, join(options.data, KEY_FILE));
    await writePrivateFile(join(options.data, SECRET_FILE), randomBytes(48).toString("base64url") + "\n");
    print({ processDataKey: result, jwtSecret: "replaced" });
    for (const env of ["FLOWSTORE_PROCESS_DATA_KEY", "FLOWSTORE_JWT_SECRET"] as const) {
      if (readEnv(env)) process.stderr.write(`flowstore: ${env} is set and overrides the new key file: set it to the content of the new file\n`);
    }
  });
}

async function readStdin(): Promise<string> {
  let text = "";
  for await (const chunk of process.stdin) text += chunk;
  return text;
}
