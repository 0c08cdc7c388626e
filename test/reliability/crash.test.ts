/**
 * Crash test (issue 9, item 4; DESIGN.md "Reliability"): a child process runs a write load through the
 * Workflow API on LMDB (load.ts) and is killed with SIGKILL at seeded points, many times, on one
 * directory. After each kill the parent reopens the store and checks it against the acknowledgements
 * (acknowledged.ts). The next child then continues on the same directory from what it finds there.
 * server-soak.ts does the same to a real server over HTTP.
 *
 * Reproduce a run with FLOWSTORE_CRASH_SEED=<seed> (the seed is printed).
 */
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import { openFlowstore } from "../../src/compose/index.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { check, Model } from "./acknowledged.js";
import { runChild } from "./child.js";
import { makeTempDirSync, removeTempDirSync } from "../support/temp-dir.js";

const SEED = Number(process.env.FLOWSTORE_CRASH_SEED ?? 20260301);
const KILLS = 18;
const SCRIPT = join(import.meta.dirname, "crash-writer.ts");

let dir: string;
beforeAll(() => {
  dir = makeTempDirSync("crash");
});
afterAll(() => {
  removeTempDirSync(dir);
});

it(`survives ${KILLS} SIGKILLs mid-load with every acknowledged write intact (seed ${SEED})`, async () => {
  console.log(`crash test seed: ${SEED} (FLOWSTORE_CRASH_SEED=${SEED} to reproduce)`);
  const killPoints = fc.sample(fc.integer({ min: 8, max: 60 }), { seed: SEED, numRuns: KILLS });
  const model = new Model();
  let deletesSeen = 0;
  let maxCascade = 0;
  for (let run = 0; run <= KILLS; run++) {
    const last = run === KILLS;
    // the last run is not killed: it continues on the directory and finishes a short plan on its own
    const killAt = killPoints[run] ?? Infinity;
    let acked = 0;
    const result = await runChild(SCRIPT, [dir, String(SEED + run), `r${run}`, last ? "40" : "100000"], (line) => {
      if (["sub", "wi", "upd", "ord", "close", "del"].includes(line.a)) acked++;
      return acked >= killAt;
    });
    const errors = result.lines.filter((l) => l.a === "error" || l.a === "garbage");
    expect(errors, `child run ${run} reported errors; stderr: ${result.stderr}`).toEqual([]);
    expect(result.lines[0]?.a === "ready" || result.lines[0]?.a === "project", `run ${run} did not start: ${result.stderr}`).toBe(true);
    if (last) {
      expect(result.code, result.stderr).toBe(0);
      expect(result.lines.at(-1)).toEqual({ a: "done" });
    } else {
      expect(result.killed, `run ${run} ended before the kill: code ${result.code}; ${result.stderr}`).toBe(true);
      expect(result.signal).toBe("SIGKILL");
    }
    for (const line of result.lines) {
      if (line.a === "del") {
        deletesSeen++;
        maxCascade = Math.max(maxCascade, model.subs.get(`${line.p}/${line.s}`)?.items.size ?? 0);
      }
      model.apply(line);
    }
    const kv = LmdbKv.open(dir);
    const fs = await openFlowstore(kv);
    try {
      expect(await check(fs, model), `after run ${run} (seed ${SEED})`).toEqual([]);
    } finally {
      await fs.close();
      await kv.close();
    }
  }
  console.log(`crash test: ${model.acks} acknowledged writes over ${KILLS} kills, ${deletesSeen} cascade deletes (largest ${maxCascade} workflowitems)`);
  expect(model.acks).toBeGreaterThan(KILLS * 8);
  expect(deletesSeen).toBeGreaterThan(0);
}, 240_000);
