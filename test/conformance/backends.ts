/**
 * The backends every conformance and domain suite runs against. Adding a backend is adding one entry.
 */
import { randomBytes } from "node:crypto";
import { describe, inject } from "vitest";
import type { KvStore } from "../../src/kv/contract.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { MemoryData, MemoryKv } from "../../src/kv/memory.js";
import { PostgresKv } from "../../src/kv/postgres/index.js";
import { openRedisKv } from "../../src/kv/redis/connect.js";
import { deleteNamespace } from "../setup/redis-keys.js";
import { dropSchema } from "../setup/postgres-server.js";
import { makeTempDirSync, removeTempDirSync } from "../support/temp-dir.js";

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
    const dir = makeTempDirSync("lmdb");
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
        removeTempDirSync(dir);
      },
    };
  },
};

/**
 * A backend on a shared server: each create() opens stores on a fresh space of their own (`open(space)`),
 * and destroy() closes them and removes the space with `remove(space)`.
 */
function sharedServerBackend(name: string, newSpace: () => string, open: (space: string) => KvStore, remove: (space: string) => Promise<unknown>): BackendFactory {
  return {
    name,
    async create() {
      const space = newSpace();
      const handles: KvStore[] = [];
      const next = (): KvStore => {
        const kv = open(space);
        handles.push(kv);
        return kv;
      };
      return {
        kv: next(),
        reopen: async () => next(),
        destroy: async () => {
          await Promise.all(handles.map((h) => h.close()));
          await remove(space);
        },
      };
    },
  };
}

/** The shared redis-server processes of test/setup/redis.ts: a namespace per store, its keys deleted. */
function redisBackends(): BackendFactory[] {
  const redis = inject("redis");
  if (!redis) return [];
  const newNamespace = (): string => `t-${process.pid}-${randomBytes(6).toString("hex")}`;
  return (
    [
      ["redis", redis.standalone],
      ["redis-cluster", redis.cluster],
    ] as const
  ).map(([name, url]) =>
    sharedServerBackend(
      name,
      newNamespace,
      (namespace) => openRedisKv(url, { namespace }),
      (namespace) => deleteNamespace(url, namespace),
    ),
  );
}

/** The shared PostgreSQL cluster of test/setup/postgres.ts: a schema per store, dropped. */
function postgresBackends(): BackendFactory[] {
  const url = inject("postgres");
  if (!url) return [];
  return [
    sharedServerBackend(
      "postgres",
      () => `t_${process.pid}_${randomBytes(6).toString("hex")}`,
      (schema) => PostgresKv.open(url, { schema }),
      (schema) => dropSchema(url, schema),
    ),
  ];
}

export const backends: BackendFactory[] = [memory, lmdb, ...redisBackends(), ...postgresBackends()];

/**
 * The backends the HTTP and client suites run on. What they test (routes, status codes, shapes) sits
 * above the storage contract and is the same on every backend, which the conformance and domain suites
 * already run on all of them; so these run on the specification (memory) and the embedded default
 * (lmdb). `FLOWSTORE_TEST_BACKENDS=all` widens them to every backend (`npm run soak` does).
 */
export const httpBackends: BackendFactory[] = process.env.FLOWSTORE_TEST_BACKENDS === "all" ? backends : backends.filter((b) => b.name === "memory" || b.name === "lmdb");

/** Runs `suite` once per backend of `among` (every backend by default), inside a describe named after it. */
export function forEachBackend(suite: (backend: BackendFactory) => void, among: BackendFactory[] = backends): void {
  for (const backend of among) describe(backend.name, () => suite(backend));
}
