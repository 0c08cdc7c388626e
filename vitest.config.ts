import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    pool: "forks",
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ["default"],
    // Starts the shared redis-server processes (standalone and cluster) and the throwaway PostgreSQL
    // cluster the redis and postgres backends run on.
    globalSetup: ["test/setup/redis.ts", "test/setup/postgres.ts"],
  },
});
