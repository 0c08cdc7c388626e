/**
 * Opening a Redis store by URL:
 *   redis://[user:password@]host:port[/db][?options]
 *   redis-cluster://[user:password@]host:port,host:port,...[?options]
 *   redis-sentinel://[user:password@]host:port,host:port,.../mastername[?options]
 * Options in the query string (each may also be given in `options`, which wins): namespace,
 * waitReplicas, waitTimeoutMs, timeoutMs. With Sentinel, the host:port list names the sentinels; the
 * client asks them for the master of `mastername` (user and password are the master's) and asks again
 * after a failover, so the store follows a promoted replica by itself.
 */
import { Cluster, Redis, type RedisOptions } from "ioredis";
import { ValidationError } from "../../errors.js";
import { RedisKv, resolveRedisKvOptions, type RedisKvOptions } from "./store.js";

export interface RedisTarget {
  readonly cluster: boolean;
  /** redis-sentinel://: the master name the sentinels in `nodes` monitor. */
  readonly sentinel?: string;
  readonly nodes: { host: string; port: number }[];
  readonly db: number;
  readonly username?: string;
  readonly password?: string;
  readonly options: RedisKvOptions;
}

const INT_OPTIONS = ["waitReplicas", "waitTimeoutMs", "timeoutMs"] as const;

export function parseRedisUrl(url: string): RedisTarget {
  const m = /^(redis|redis-cluster|redis-sentinel):\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/?]+)(?:\/([^/?]*))?(?:\?(.*))?$/.exec(url);
  if (!m) {
    throw new ValidationError(
      `not a redis URL: ${url} (expected redis://host:port[/db], redis-cluster://host:port,host:port ` + `or redis-sentinel://host:port,host:port/mastername)`,
      "store",
    );
  }
  const [, scheme, user, pass, hosts, path, query] = m;
  const cluster = scheme === "redis-cluster";
  const sentinel = scheme === "redis-sentinel" ? decodeURIComponent(path ?? "") : undefined;
  if (sentinel === "") throw new ValidationError("redis-sentinel:// needs the master name: redis-sentinel://host:port/mymaster", "store");
  const db = sentinel === undefined ? path : undefined;
  if (db && !/^\d+$/.test(db)) throw new ValidationError(`bad database number "${db}" in ${url}`, "store");
  const nodes = hosts!.split(",").map((hp) => {
    const hm = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(hp);
    const port = hm?.[2] === undefined ? (sentinel === undefined ? 6379 : 26379) : Number(hm[2]);
    if (!hm || port < 1 || port > 65535) throw new ValidationError(`bad host:port "${hp}" in ${url}`, "store");
    return { host: hm[1]!.replace(/^\[|\]$/g, ""), port };
  });
  if (scheme === "redis" && nodes.length !== 1) {
    throw new ValidationError("redis:// takes one host:port; use redis-cluster:// for several", "store");
  }
  if (cluster && db) throw new ValidationError("a redis cluster has no database number", "store");
  const params = new URLSearchParams(query ?? "");
  const options: Record<string, string | number> = {};
  for (const [name, value] of params) {
    if (name === "namespace") options.namespace = value;
    else if ((INT_OPTIONS as readonly string[]).includes(name)) {
      if (!/^\d+$/.test(value)) throw new ValidationError(`${name} must be a non-negative integer`, name);
      options[name] = Number(value);
    } else throw new ValidationError(`unknown redis URL option "${name}"`, "store");
  }
  return {
    cluster,
    ...(sentinel !== undefined ? { sentinel } : {}),
    nodes,
    db: db ? Number(db) : 0,
    ...(user ? { username: decodeURIComponent(user) } : {}),
    ...(pass ? { password: decodeURIComponent(pass) } : {}),
    options: options as RedisKvOptions,
  };
}

/** Opens a store on `redis://`, `redis-cluster://` or `redis-sentinel://`. Connects in the background; never throws for I/O. */
export function openRedisKv(url: string, options: RedisKvOptions = {}): RedisKv {
  const target = parseRedisUrl(url);
  // Validate before connecting, so a bad option leaves no client reconnecting in the background.
  const kvOptions = resolveRedisKvOptions({ ...target.options, ...options });
  const common: RedisOptions = {
    connectTimeout: 2000,
    commandTimeout: kvOptions.timeoutMs,
    // A command waiting for a connection fails after one reconnection attempt instead of queueing
    // for long; reconnection itself goes on forever, so the store serves again once Redis is back.
    maxRetriesPerRequest: 1,
    ...(target.username ? { username: target.username } : {}),
    ...(target.password ? { password: target.password } : {}),
  };
  if (target.cluster) {
    const client = new Cluster(target.nodes, {
      redisOptions: common,
      clusterRetryStrategy: (times) => Math.min(100 * times, 1000),
      retryDelayOnFailover: 200,
      retryDelayOnClusterDown: 200,
      retryDelayOnTryAgain: 200,
      maxRedirections: 16,
      slotsRefreshTimeout: 2000,
    });
    return new RedisKv(client, "redis-cluster", kvOptions);
  }
  const retryStrategy = (times: number): number => Math.min(100 * times, 1000);
  if (target.sentinel !== undefined) {
    const client = new Redis({
      ...common,
      sentinels: target.nodes,
      name: target.sentinel,
      role: "master",
      // A failover is noticed when the connection to the old master breaks, or when the old master,
      // demoted to a replica, refuses a write: the client then reconnects, asking the sentinels again (the
      // refused write fails, it is never re-sent). ioredis's `failoverDetector` is not used: a
      // +switch-master arriving while the client is already reconnecting ends the client for good.
      reconnectOnError: (err) => (err.message.startsWith("READONLY") ? 1 : false),
      sentinelRetryStrategy: retryStrategy,
      retryStrategy,
    });
    return new RedisKv(client, "redis-sentinel", kvOptions);
  }
  const node = target.nodes[0]!;
  const client = new Redis({
    ...common,
    host: node.host,
    port: node.port,
    db: target.db,
    retryStrategy,
  });
  return new RedisKv(client, "redis", kvOptions);
}
