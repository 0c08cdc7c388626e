/**
 * vitest global setup: one throwaway PostgreSQL cluster (see postgres-server.ts) shared by every test file
 * through `inject("postgres")`; each backend handle gets a schema of its own. Stopped and removed at
 * teardown, whether the tests passed or not.
 *
 * With CI=true a missing PostgreSQL fails the run; otherwise the postgres backend is left out with a
 * loud message.
 */
import type { TestProject } from "vitest/node";
import { missingBinaries } from "./missing.js";
import { findPostgresBinaries, removePostgres, startPostgres } from "./postgres-server.js";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const bin = findPostgresBinaries();
  if (!bin) {
    missingBinaries("PostgreSQL (initdb, pg_ctl) not found: the postgres backend is NOT tested");
    project.provide("postgres", null);
    return async () => {};
  }
  const server = await startPostgres(bin);
  project.provide("postgres", server.url());
  return () => removePostgres(server);
}

declare module "vitest" {
  export interface ProvidedContext {
    /** postgres://… of the shared cluster's `postgres` database; null when PostgreSQL is not installed and CI is not set. */
    postgres: string | null;
  }
}
