/**
 * The backends every conformance and domain suite runs against. Adding a backend is adding one entry.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { describe, inject } from "vitest";
import type { KvStore } from "../../src/kv/contract.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { MemoryData, MemoryKv } from "../../src/kv/memory.js";
import { openRedisKv } from "../../src/kv/redis/connect.js";
import { deleteNamespace } from "../setup/redis-keys.js";

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

/** A backend on the shared redis-server processes of test/setup/redis.ts; each create() gets a fresh
 * namespace, and destroy() removes its keys. */
function redisBackend(name: "redis" | "redis-cluster", url: string): BackendFactory {
  return {
    name,
    async create() {
      const namespace = `t-${process.pid}-${randomBytes(6).toString("hex")}`;
      const handles: KvStore[] = [];
      const open = (): KvStore => {
        const kv = openRedisKv(url, { namespace });
        handles.push(kv);
        return kv;
      };
      return {
        kv: open(),
        reopen: async () => open(),
        destroy: async () => {
          await Promise.all(handles.map((h) => h.close()));
          await deleteNamespace(url, namespace);
        },
      };
    },
  };
}

function redisBackends(): BackendFactory[] {
  const redis = inject("redis");
  if (!redis) return [];
  return [redisBackend("redis", redis.standalone), redisBackend("redis-cluster", redis.cluster)];
}

export const backends: BackendFactory[] = [memory, lmdb, ...redisBackends()];

/** Runs `suite` once per backend, inside a describe named after it. */
export function forEachBackend(suite: (backend: BackendFactory) => void): void {
  for (const backend of backends) describe(backend.name, () => suite(backend));
}
