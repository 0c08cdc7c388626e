/**
 * The short crash soak of `npm test` (issue 16): a real `flowstore serve` is killed with SIGKILL a few
 * times under mixed writes over HTTP, on LMDB and on the global setup's Redis (server-soak.ts). `npm run
 * soak` runs the long one (100 kills per backend). Reproduce with FLOWSTORE_SOAK_SEED=<seed> (printed).
 */
import { randomUUID } from "node:crypto";
import { expect, inject, it } from "vitest";
import { deleteNamespace } from "../setup/redis-keys.js";
import { soak } from "./server-soak.js";

const SEED = Number(process.env.FLOWSTORE_SOAK_SEED ?? 20261122);
/** A server start takes seconds (tsx, schema compilation), a minute or more on a loaded machine: few kills here. */
const KILLS = 3;
const redis = inject("redis");

const backends: { backend: string; store?: string; namespace?: string }[] = [{ backend: "lmdb" }];
if (redis) {
  const namespace = `soak-${randomUUID().slice(0, 8)}`;
  backends.push({ backend: "redis", store: `${redis.standalone}?namespace=${namespace}`, namespace });
}

for (const b of backends) {
  it(`${b.backend}: ${KILLS} SIGKILLs of the server under mixed writes lose no acknowledged write and every partition verifies (seed ${SEED})`, async () => {
    try {
      const figures = await soak({ backend: b.backend, store: b.store, kills: KILLS, seed: SEED });
      console.log(`soak ${b.backend}: ${JSON.stringify({ ...figures, problems: figures.problems.length, errors: figures.errors.length })}`);
      expect(figures.errors.slice(0, 5), "requests refused by a live server").toEqual([]);
      expect(figures.problems.slice(0, 10)).toEqual([]);
      expect(figures.lost).toBe(0);
      expect(figures.verifyFailures).toBe(0);
      expect(figures.acknowledged).toBeGreaterThanOrEqual(KILLS * 5);
    } finally {
      if (b.namespace) await deleteNamespace(redis!.standalone, b.namespace);
    }
  }, 600_000);
}
