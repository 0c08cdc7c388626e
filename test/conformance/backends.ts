/**
 * The backends every conformance and domain suite runs against. Adding a backend is adding one entry.
 */
import { describe } from "vitest";
import type { KvStore } from "../../src/kv/contract.js";
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

export const backends: BackendFactory[] = [memory];

/** Runs `suite` once per backend, inside a describe named after it. */
export function forEachBackend(suite: (backend: BackendFactory) => void): void {
  for (const backend of backends) describe(backend.name, () => suite(backend));
}
