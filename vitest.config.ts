import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

/**
 * Two vitest projects that split the test files between them, so a file runs once whichever way it is asked
 * for (`npm test`, `npm run test:fast`, `npx vitest run <files>`):
 *
 * - `fast`: unit tests, the conformance and domain suites, and the shorter HTTP route suites: the quick
 *   signal for a developer. `npm run test:fast` runs it alone with FLOWSTORE_TEST_FAST=1, under which the global
 *   setups start no Redis or PostgreSQL server, so test/conformance/backends.ts runs these suites on memory
 *   and LMDB only.
 * - `slow`: what starts processes or servers of its own (the CLI, fleet, e2e, Redis/PostgreSQL suites, kill
 *   and soak tests), the package build, and the long fuzz and property runs.
 *
 * `npm test` (what CI runs) runs both, every file, on every backend: the shared redis-server processes and
 * the PostgreSQL cluster are started once for both projects (test/setup/shared.ts).
 *
 * The fast project runs in worker threads without per-file isolation: a worker imports src/ (Fastify, lmdb,
 * TypeBox...) once for all the files it runs instead of once a file, which was most of the fast run's time
 * (collection). So a fast file must leave no process-wide state behind (umask, cwd, globals, module mocks);
 * one that needs them goes to `slow`, which keeps a forked process per file.
 */
const slow = [
  "test/cli/**/*.test.ts",
  "test/e2e/**/*.test.ts",
  "test/fleet/**/*.test.ts",
  "test/kv/redis*.test.ts",
  "test/kv/postgres.test.ts",
  "test/kv/lmdb.test.ts",
  "test/package.test.ts",
  // starts the README's own server (npm start) and runs its shell blocks
  "test/docs/readme-run.test.ts",
  "test/archive/kill.test.ts",
  "test/archive/big-file.test.ts",
  "test/reliability/**/*.test.ts",
  "test/http/checkpoint.test.ts",
  "test/http/events-feed.test.ts",
  "test/http/openapi-lint.test.ts",
  "test/resources/*.property.test.ts",
  // a route × role matrix of several hundred real requests: minutes on a loaded 2-core machine
  "test/http/permission-matrix.test.ts",
  // spawns racing processes and a ulimit'ed shell, and sets the process umask (not allowed in a worker thread)
  "test/private-files.test.ts",
  // whole demo data sets and their replay checks: seconds a test over LMDB
  "test/workflow/demo.test.ts",
  "test/resources/verify-replay.test.ts",
  // whole sessions through a real server (each 5-12 s of test time here): the fast set keeps the unit,
  // conformance and domain suites and the shorter route suites
  "test/http/routes.test.ts",
  "test/http/workflow.test.ts",
  "test/http/sessions.test.ts",
  "test/http/login-guard-store.test.ts",
  "test/http/archive.test.ts",
  "test/http/conventions.test.ts",
  "test/http/restore-trust.test.ts",
  "test/http/events-expiry.test.ts",
  // a real server with webhook delivery and the example receiver as a child process
  "test/http/subscriptions.test.ts",
  "test/client/client.test.ts",
  // builds a Go program with Debian's Go and runs it against a server of its own
  "test/tlog/x-mod.test.ts",
  "test/archive/project.test.ts",
];

const shared = {
  pool: "forks" as const,
  testTimeout: 60_000,
  hookTimeout: 120_000,
  globalSetup: ["test/setup/redis.ts", "test/setup/postgres.ts"],
};

export default defineConfig({
  test: {
    reporters: ["default"],
    // Vitest's default is one worker fewer than the cores: one worker a pool on this 2-core machine, so the
    // fast project ran its files one after another (CI's fast run: 207 s of wall time for 186 s of file time)
    // and the slow project, whose files mostly wait on the processes and servers they start, ran one file
    // at a time for most of `npm test`. Two a pool at least.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // Whether a worker is reused for the next file is the pool's choice, and vitest 3.2 makes it from the
    // root's poolOptions (createThreadsPool reads `vitest.config.poolOptions.threads.isolate`), never from
    // a project's: with `isolate: false` on the fast project alone every file still got a new thread that
    // imported src/ again (81 threads for 80 files; collection was most of the run's CPU). Only the fast
    // project runs in threads, so this reaches no other project; the slow one keeps a fork per file.
    poolOptions: { threads: { isolate: false } },
    projects: [
      { test: { ...shared, name: "fast", include: ["test/**/*.test.ts"], exclude: [...slow, "**/node_modules/**"], pool: "threads", isolate: false } },
      { test: { ...shared, name: "slow", include: slow } },
    ],
  },
});
