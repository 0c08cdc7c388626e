/**
 * `--store redis` / `--store redis-cluster` without an address: start redis-server processes for the run
 * (on free 127.0.0.1 ports in a temp dir, appendonly yes / appendfsync everysec, as the test harness does)
 * and stop and remove them afterwards. Any other --store value is used as given.
 */
import {
  findRedisBinaries,
  makeRedisDir,
  removeDir,
  startCluster,
  startStandalone,
} from "../test/setup/redis-servers.js";

export interface BenchRedis {
  readonly url: string;
  stop(): Promise<void>;
}

export async function startBenchRedis(store: string | undefined): Promise<BenchRedis | undefined> {
  if (store !== "redis" && store !== "redis-cluster") return undefined;
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
