/**
 * Opens a store from a URL, in one of the forms of STORE_URL_FORMS (below; `flowstore --store` lists
 * them in its help): memory, LMDB (a `lmdb:` URL or a plain path), Redis (one server, a cluster, behind
 * Sentinel) and PostgreSQL (see src/kv/redis/connect.ts and docs/redis.md for the Redis options,
 * docs/postgres.md for PostgreSQL).
 */
import { ValidationError } from "../errors.js";
import type { KvStore } from "./contract.js";
import { LmdbKv } from "./lmdb.js";
import { MemoryKv } from "./memory.js";
import { PostgresKv, type PostgresKvOptions } from "./postgres/index.js";
import { openRedisKv } from "./redis/connect.js";
import type { RedisKvOptions } from "./redis/store.js";

/** Every URL form openKv takes, with what it opens. */
export const STORE_URL_FORMS: readonly (readonly [form: string, what: string])[] = [
  ["memory:", "a fresh in-memory store (tests, demos)"],
  ["lmdb:<dir>", "the LMDB store in <dir>, created if needed (a plain path is one too)"],
  ["redis://host:port[/db][?namespace=…&waitReplicas=…]", "one Redis server"],
  ["redis-sentinel://host:port,host:port/mastername[?…]", "Redis behind Sentinel"],
  ["redis-cluster://host:port,host:port[?namespace=…&waitReplicas=…]", "a Redis Cluster"],
  ["postgres://user@host:port/db[?schema=…]", "a PostgreSQL database (postgresql:// too)"],
];

export interface OpenKvOptions {
  /** LMDB: resolve commits only once flushed to disk (default true). */
  readonly durable?: boolean;
  /** LMDB: create the store when its directory holds none (default true); false refuses (a typo'd path). */
  readonly create?: boolean;
  /** Redis: options that override those in the URL's query string. */
  readonly redis?: RedisKvOptions;
  /** PostgreSQL: options that override those in the URL's query string. */
  readonly postgres?: PostgresKvOptions;
}

export async function openKv(url: string, options: OpenKvOptions = {}): Promise<KvStore> {
  if (typeof url !== "string" || url.trim() === "") throw new ValidationError("a store URL is required", "store");
  if (url === "memory:" || url === "memory") return new MemoryKv();
  if (url.startsWith("lmdb:")) {
    const dir = url.slice("lmdb:".length).replace(/^\/\/(?=\/)/, "");
    if (dir === "") throw new ValidationError("lmdb: needs a directory (lmdb:./data)", "store");
    return LmdbKv.open(dir, { durable: options.durable, create: options.create });
  }
  if (/^redis(-cluster|-sentinel)?:\/\//.test(url)) return openRedisKv(url, options.redis);
  if (/^postgres(ql)?:\/\//.test(url)) return PostgresKv.open(url, options.postgres);
  // A scheme is letters, digits, + . - followed by ':'; a Windows drive letter (C:\) is a path.
  if (/^[a-z][a-z0-9+.-]+:/i.test(url)) {
    throw new ValidationError(`unsupported store URL ${JSON.stringify(url.replace(/\/\/[^@/]*@/, "//…@"))}`, "store");
  }
  return LmdbKv.open(url, { durable: options.durable, create: options.create });
}
