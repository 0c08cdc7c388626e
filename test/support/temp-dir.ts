/**
 * A fresh directory under the OS temp dir for a suite (made before all its tests, removed after) or for
 * each test (`each`): the getter answers the current one.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach } from "vitest";

export function tempDir(prefix: string, scope: "all" | "each" = "all"): () => string {
  let dir: string | undefined;
  (scope === "all" ? beforeAll : beforeEach)(async () => {
    dir = await mkdtemp(join(tmpdir(), prefix));
  });
  (scope === "all" ? afterAll : afterEach)(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  return () => {
    if (!dir) throw new Error("tempDir is read before its suite started");
    return dir;
  };
}
