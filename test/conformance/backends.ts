/**
 * The backends every conformance and domain suite runs against. Adding a backend is adding one entry.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe } from "vitest";
import type { KvStore } from "../../src/kv/contract.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { MemoryData, MemoryKv } from "../../src/kv/memory.js";

export interface BackendHandle {
  readonly kv: KvStore;
  /** Closes nothing; opens a second handle on the same data (call after closing `kv`). */
  reopen(): Promise<KvStore>;
  /** Closes every handle and removes the data. */
  destroy(): Promise<void>;
}

export interface BackendFactory {
  readonly name: string;
  create(): Promise<BackendHandle>;
}

const memory: BackendFactory = {
  name: "memory",
  async create() {
    const data = new MemoryData();
    return {
      kv: new MemoryKv(data),
      reopen: async () => new MemoryKv(data),
      destroy: async () => {},
    };
  },
};

const lmdb: BackendFactory = {
  name: "lmdb",
  async create() {
    const dir = mkdtempSync(join(tmpdir(), "flowstore-lmdb-"));
    const handles: KvStore[] = [LmdbKv.open(dir)];
    return {
      kv: handles[0]!,
      reopen: async () => {
        const kv = LmdbKv.open(dir);
        handles.push(kv);
        return kv;
      },
      destroy: async () => {
        for (const kv of handles) await kv.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

export const backends: BackendFactory[] = [memory, lmdb];

/** Runs `suite` once per backend, inside a describe named after it. */
export function forEachBackend(suite: (backend: BackendFactory) => void): void {
  for (const backend of backends) describe(backend.name, () => suite(backend));
}
