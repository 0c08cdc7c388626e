/**
 * Opens a store from a URL:
 *   memory:            a fresh in-memory store (tests, demos)
 *   lmdb:<dir>         the LMDB store in <dir> (created if needed)
 *   <dir>              a plain path (no scheme) is an LMDB directory too
 *   redis://host:port[/db][?namespace=…&waitReplicas=…]          one Redis server
 *   redis-cluster://host:port,host:port[?namespace=…&waitReplicas=…]  a Redis Cluster
 * (see src/kv/redis/connect.ts and docs/redis.md for the Redis options).
 */
import { ValidationError } from "../errors.js";
import type { KvStore } from "./contract.js";
import { LmdbKv } from "./lmdb.js";
import { MemoryKv } from "./memory.js";
import { openRedisKv } from "./redis/connect.js";
import type { RedisKvOptions } from "./redis/store.js";

export interface OpenKvOptions {
  /** LMDB: resolve commits only once flushed to disk (default true). */
  readonly durable?: boolean;
  /** Redis: options that override those in the URL's query string. */
  readonly redis?: RedisKvOptions;
}

export async function openKv(url: string, options: OpenKvOptions = {}): Promise<KvStore> {
  if (typeof url !== "string" || url.trim() === "") throw new ValidationError("a store URL is required", "store");
  if (url === "memory:" || url === "memory") return new MemoryKv();
  if (url.startsWith("lmdb:")) {
    const dir = url.slice("lmdb:".length).replace(/^\/\/(?=\/)/, "");
    if (dir === "") throw new ValidationError("lmdb: needs a directory (lmdb:./data)", "store");
    return LmdbKv.open(dir, { durable: options.durable });
  }
  if (url.startsWith("redis://") || url.startsWith("redis-cluster://")) return openRedisKv(url, options.redis);
  // A scheme is letters, digits, + . - followed by ':'; a Windows drive letter (C:\) is a path.
  if (/^[a-z][a-z0-9+.-]+:/i.test(url)) {
    throw new ValidationError(`unsupported store URL ${JSON.stringify(url.replace(/\/\/[^@/]*@/, "//…@"))}`, "store");
  }
  return LmdbKv.open(url, { durable: options.durable });
}
