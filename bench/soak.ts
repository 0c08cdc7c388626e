/**
 * `npm run soak`: the long crash soak of issue 16, outside CI. A real `flowstore serve` is killed with
 * SIGKILL under mixed writes over HTTP (test/reliability/server-soak.ts), 100 times on LMDB and 100 times
 * on a redis-server started here (appendonly, as test/setup/redis-servers.ts starts them), both at once.
 * Prints the figures (kills, acknowledged writes, lost writes, verify failures, time) and exits 1 when
 * a write was lost, a partition failed to verify or a live server refused the load.
 *
 * Options (environment): FLOWSTORE_SOAK_KILLS (default 100), FLOWSTORE_SOAK_SEED, FLOWSTORE_SOAK_MINUTES
 * (no kill round starts after this many minutes; default 120), FLOWSTORE_SOAK_BACKENDS (default "lmdb,redis").
 */
import { findRedisBinaries, makeRedisDir, removeDir, startStandalone } from "../test/setup/redis-servers.js";
import { soak, type SoakFigures } from "../test/reliability/server-soak.js";

const KILLS = Number(process.env.FLOWSTORE_SOAK_KILLS ?? 100);
const SEED = Number(process.env.FLOWSTORE_SOAK_SEED ?? 20261122);
const deadline = Date.now() + Number(process.env.FLOWSTORE_SOAK_MINUTES ?? 120) * 60_000;
const wanted = (process.env.FLOWSTORE_SOAK_BACKENDS ?? "lmdb,redis").split(",");
const log = (line: string) => process.stdout.write(`${new Date().toISOString()} ${line}\n`);

log(`crash soak: ${KILLS} kills per backend (${wanted.join(", ")}), seed ${SEED}`);
const runs: Promise<SoakFigures>[] = [];
if (wanted.includes("lmdb")) runs.push(soak({ backend: "lmdb", kills: KILLS, seed: SEED, deadline, log }));
let stopRedis = async () => {};
if (wanted.includes("redis")) {
  const bin = findRedisBinaries();
  if (!bin) throw new Error("redis-server / redis-cli are not on PATH");
  const dir = await makeRedisDir("soak");
  const server = await startStandalone(bin, dir);
  stopRedis = async () => {
    await server.stop();
    await removeDir(dir);
  };
  runs.push(soak({ backend: "redis", store: server.url, kills: KILLS, seed: SEED, deadline, log }));
}
const figures = await Promise.all(runs).finally(() => stopRedis());
let failed = false;
for (const f of figures) {
  const ok = f.lost === 0 && f.verifyFailures === 0 && f.problems.length === 0 && f.errors.length === 0;
  failed ||= !ok;
  log(
    `${f.backend}: ${f.kills} kills, ${f.acknowledged} acknowledged writes (${f.deletes} cascade deletes, ${f.documents} document uploads, ${f.snapshots} snapshots with a file), ` +
      `${f.lost} lost, ${f.verifyFailures} verify failures, ${f.problems.length} problems, ${f.errors.length} refused, ${(f.ms / 1000).toFixed(0)} s${ok ? "" : " FAILED"}`,
  );
  for (const p of [...f.problems, ...f.errors].slice(0, 20)) log(`  ${f.backend}: ${p}`);
}
process.exit(failed ? 1 : 0);
