/**
 * Files that hold secrets or stored data are the owner's alone: directories 0700, files 0600 (the modes
 * OpenSSH asks of ~/.ssh and its keys). A directory or file flowstore creates is created with these
 * modes; one that already exists is tightened, so a copy made with looser rights is not left readable.
 */
import { chmodSync, mkdirSync } from "node:fs";
import { chmod, mkdir, rename, unlink, writeFile } from "node:fs/promises";

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Creates `dir` (and missing parents, 0700) and sets `dir` itself to 0700. */
export async function makePrivateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  await chmod(dir, PRIVATE_DIR_MODE);
}

/** makePrivateDir, synchronously (for openers that are synchronous, as LMDB's is). */
export function makePrivateDirSync(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  chmodSync(dir, PRIVATE_DIR_MODE);
}

/** Sets each existing file to 0600; a file that does not exist is skipped. */
export function makePrivateFilesSync(files: readonly string[]): void {
  for (const file of files) {
    try {
      chmodSync(file, PRIVATE_FILE_MODE);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
    }
  }
}

/**
 * Writes `content` to `file` (0600) whole or not at all: into a file beside it, then renamed over it, so
 * a reader (or a crash) never sees half a key.
 */
export async function writePrivateFile(file: string, content: string): Promise<void> {
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  await writeFile(tmp, content, { flag: "wx", mode: PRIVATE_FILE_MODE });
  try {
    await rename(tmp, file);
  } catch (e) {
    await unlink(tmp).catch(() => {});
    throw e;
  }
}
