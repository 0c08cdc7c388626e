/**
 * Temporary directories under the OS temp dir, always removed: `tempDir` for a suite (made before all its
 * tests, removed after) or for each test (`each`), whose getter answers the current one; `withTempDir` for
 * one block of code; `makeTempDir(Sync)` where the caller owns the removal (a harness that removes it in its
 * own close).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach } from "vitest";

/** A fresh directory `flowstore-<name>-XXXXXX`; the caller removes it (`removeTempDir`). */
export async function makeTempDir(name: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `flowstore-${name}-`));
}

/** makeTempDir, synchronously. */
export function makeTempDirSync(name: string): string {
  return mkdtempSync(join(tmpdir(), `flowstore-${name}-`));
}

export async function removeTempDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

export function removeTempDirSync(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** A directory for the suite (`all`) or for each test (`each`), removed after it whether it passed or not. */
export function tempDir(name: string, scope: "all" | "each" = "all"): () => string {
  let dir: string | undefined;
  (scope === "all" ? beforeAll : beforeEach)(async () => {
    dir = await makeTempDir(name);
  });
  (scope === "all" ? afterAll : afterEach)(async () => {
    if (dir) await removeTempDir(dir);
    dir = undefined;
  });
  return () => {
    if (!dir) throw new Error(`tempDir("${name}") is read outside its suite`);
    return dir;
  };
}

/** Runs `fn` with a fresh directory and removes it afterwards, whether `fn` succeeded or not. */
export async function withTempDir<T>(name: string, fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await makeTempDir(name);
  try {
    return await fn(dir);
  } finally {
    await removeTempDir(dir);
  }
}
