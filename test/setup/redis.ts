/**
 * vitest global setup: one standalone redis-server (appendonly yes) and one cluster of 3 masters with 3
 * replicas, on free 127.0.0.1 ports in a temp dir, shared by every test file through `inject("redis")`.
 * Destructive tests start servers of their own (see redis-servers.ts). Everything is stopped and removed
 * at teardown, whether the tests passed or not.
 *
 * With CI=true a missing redis-server or redis-cli fails the run; otherwise the redis backends are left
 * out with a loud message. Started once for every project of the run (shared.ts); not at all under
 * FLOWSTORE_TEST_FAST=1 (`npm run test:fast`: memory and LMDB only).
 */
import type { TestProject } from "vitest/node";
import { missingBinaries } from "./missing.js";
import { serversSkipped, sharedServers } from "./shared.js";
import { findRedisBinaries, makeRedisDir, removeDir, startCluster, startStandalone, type RedisClusterHandle, type RedisServer } from "./redis-servers.js";

export interface ProvidedRedis {
  /** redis://127.0.0.1:port */
  readonly standalone: string;
  /** redis-cluster://127.0.0.1:port,... */
  readonly cluster: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    /** null when redis-server is not installed and CI is not set. */
    redis: ProvidedRedis | null;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const bin = serversSkipped() ? null : findRedisBinaries();
  if (!bin) {
    if (!serversSkipped()) missingBinaries("redis-server / redis-cli not found on PATH: the redis and redis-cluster backends are NOT tested");
    project.provide("redis", null);
    return async () => {};
  }
  const { value, release } = await sharedServers("redis", async () => {
    const dir = await makeRedisDir("shared");
    let standalone: RedisServer | undefined;
    let cluster: RedisClusterHandle | undefined;
    const teardown = async (): Promise<void> => {
      await Promise.all([standalone?.stop(), cluster?.stop()]);
      await removeDir(dir);
    };
    try {
      [standalone, cluster] = await Promise.all([startStandalone(bin, dir), startCluster(bin, dir)]);
    } catch (err) {
      await teardown();
      throw err;
    }
    return { value: { standalone: standalone.url, cluster: cluster.url }, stop: teardown };
  });
  project.provide("redis", value);
  return release;
}
