/**
 * vitest global setup: one throwaway PostgreSQL cluster (see postgres-server.ts) shared by every test file
 * through `inject("postgres")`; each backend handle gets a schema of its own. Stopped and removed at
 * teardown, whether the tests passed or not.
 *
 * With CI=true a missing PostgreSQL fails the run; otherwise the postgres backend is left out with a
 * loud message. Started once for every project of the run (shared.ts); not at all under
 * FLOWSTORE_TEST_FAST=1 (`npm run test:fast`: memory and LMDB only).
 */
import type { TestProject } from "vitest/node";
import { missingBinaries } from "./missing.js";
import { serversSkipped, sharedServers } from "./shared.js";
import { findPostgresBinaries, removePostgres, startPostgres } from "./postgres-server.js";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const bin = serversSkipped() ? null : findPostgresBinaries();
  if (!bin) {
    if (!serversSkipped()) missingBinaries("PostgreSQL (initdb, pg_ctl) not found: the postgres backend is NOT tested");
    project.provide("postgres", null);
    return async () => {};
  }
  const { value, release } = await sharedServers("postgres", async () => {
    const server = await startPostgres(bin);
    return { value: server.url(), stop: () => removePostgres(server) };
  });
  project.provide("postgres", value);
  return release;
}

declare module "vitest" {
  export interface ProvidedContext {
    /** postgres://… of the shared cluster's `postgres` database; null when PostgreSQL is not installed and CI is not set. */
    postgres: string | null;
  }
}
