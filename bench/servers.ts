/**
 * `--store redis`, `--store redis-cluster` or `--store postgres` without an address: start the servers for
 * the run, as the test harness does (test/setup/redis-servers.ts: free 127.0.0.1 ports in a temp dir,
 * appendonly yes / appendfsync everysec; test/setup/postgres-server.ts: a throwaway cluster, fsync on,
 * synchronous_commit on by default), and stop and remove them afterwards. Any other --store value is used
 * as given.
 *
 * The PostgreSQL peer (bench/peers/postgres.ts) needs a server in every run: unless PG_URL names one, a
 * throwaway cluster is started for it too (the same one when the store is `postgres`).
 */
import { findPostgresBinaries, removePostgres, startPostgres } from "../test/setup/postgres-server.js";
import { findRedisBinaries, makeRedisDir, removeDir, startCluster, startStandalone } from "../test/setup/redis-servers.js";

export interface BenchServers {
  /** The store under test, when it was started here. */
  readonly url: string | undefined;
  stop(): Promise<void>;
}

async function startRedis(store: "redis" | "redis-cluster"): Promise<BenchServers> {
  const bin = findRedisBinaries();
  if (!bin) throw new Error("--store redis needs redis-server and redis-cli on PATH (or give redis://host:port)");
  const dir = await makeRedisDir("bench");
  try {
    const servers = store === "redis" ? await startStandalone(bin, dir) : await startCluster(bin, dir);
    process.stdout.write(`started ${store} for the bench: ${servers.url}\n`);
    return {
      url: servers.url,
      async stop() {
        await servers.stop();
        await removeDir(dir);
      },
    };
  } catch (err) {
    await removeDir(dir);
    throw err;
  }
}

/** A throwaway PostgreSQL cluster; undefined (the peer is then skipped with its reason) when not installed. */
async function startPg(): Promise<BenchServers | undefined> {
  const bin = findPostgresBinaries();
  if (!bin) return undefined;
  const server = await startPostgres(bin, "bench");
  process.stdout.write(`started PostgreSQL for the bench: ${server.url()}\n`);
  return { url: server.url(), stop: () => removePostgres(server) };
}

export async function startBenchServers(store: string | undefined): Promise<BenchServers> {
  const started: BenchServers[] = [];
  const stop = async () => {
    for (const s of started.reverse()) await s.stop();
  };
  try {
    let url: string | undefined;
    if (store === "redis" || store === "redis-cluster") {
      const redis = await startRedis(store);
      started.push(redis);
      url = redis.url;
    }
    if (store === "postgres" || !process.env.PG_URL) {
      const pg = await startPg();
      if (!pg && store === "postgres") throw new Error("--store postgres needs initdb and pg_ctl (or give postgres://…)");
      if (pg) {
        started.push(pg);
        process.env.PG_URL ??= pg.url;
        if (store === "postgres") url = pg.url;
      }
    }
    return { url, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
