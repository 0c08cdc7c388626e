/**
 * The server crash soak (issue 16): a real `flowstore serve` process over LMDB or Redis takes the seeded
 * mixed write load of load.ts over HTTP (creates, updates, reorders, closes, document uploads, cascade
 * deletes, archive snapshots uploaded with a file) and is killed with SIGKILL after a seeded number of acknowledged (2xx)
 * writes, again and again on the same store. After each kill the store is opened directly and checked
 * against every acknowledgement the client saw (acknowledged.ts): nothing acknowledged is lost, no
 * acknowledged delete is undone, every partition verifies. The next server continues on that store.
 *
 * Used by server-soak.test.ts (a few kills, in `npm test`) and soak/run.ts (`npm run soak`, 100 kills).
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import fc from "fast-check";
import { FlowstoreClient, ProblemError, whole } from "../../src/client/index.js";
import { defaultStoreUrl } from "../../src/cli/store.js";
import { openFlowstore } from "../../src/compose/index.js";
import { check, liveSubs, Model } from "./acknowledged.js";
import { Load, plan, PROJECTS, type LiveSub, type LoadTarget } from "./load.js";

const ROOT = resolve(import.meta.dirname, "../..");
const MAIN = join(ROOT, "src/cli/main.ts");
/** With FLOWSTORE_SOAK_DIST=1 (`npm run soak` builds first) the servers run the built CLI: no compilation at each start. */
const ENTRY = process.env.FLOWSTORE_SOAK_DIST === "1" ? [join(ROOT, "dist/cli/main.js")] : ["--import", "tsx", MAIN];
const ROOT_PASSWORD = "soak root password";
const WORKERS = 6;
/** Writes acknowledged before a kill: seeded in this range. */
const KILL_AFTER = { min: 5, max: 40 };
/** Longest a server may take to start listening (tsx compiles the sources and the server compiles its schemas at every start; minutes on a loaded machine). */
const START_TIMEOUT_MS = 300_000;

export interface SoakOptions {
  /** A label for the report ("lmdb", "redis"). */
  readonly backend: string;
  /** The store URL; without one, the LMDB store in the data directory. */
  readonly store?: string;
  readonly kills: number;
  readonly seed: number;
  /** No new kill round starts after this time (epoch ms); the figures say how many kills were done. */
  readonly deadline?: number;
  /** Progress lines (one per kill) go here. */
  readonly log?: (line: string) => void;
}

export interface SoakFigures {
  readonly backend: string;
  readonly kills: number;
  readonly acknowledged: number;
  readonly deletes: number;
  readonly snapshots: number;
  /** Acknowledged workflowitem document uploads. */
  readonly documents: number;
  /** Acknowledged writes missing after a restart (undone deletes included). */
  readonly lost: number;
  /** Partitions that did not verify, summed over the checks. */
  readonly verifyFailures: number;
  /** Everything the checks found (lost writes, verify failures, orphans, half-applied cascades). */
  readonly problems: string[];
  /** Requests refused by a live server (a load that should never be refused). */
  readonly errors: string[];
  readonly ms: number;
}

interface Serving {
  readonly base: string;
  kill(): Promise<void>;
}

/** Starts `flowstore serve` on a free port and waits until it listens; `kill` is SIGKILL. */
async function serve(data: string, store: string | undefined): Promise<Serving> {
  // No overload 503s (--max-event-loop-delay 0): the soak's subject is durability, and a loaded machine
  // would otherwise shed some of its writes, which it counts as refused.
  const args = [...ENTRY, "serve", "--port", "0", "--data", data, "--log-level", "info", "--max-event-loop-delay", "0", ...(store ? ["--store", store] : [])];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: {
      ...process.env,
      FLOWSTORE_ROOT_PASSWORD: ROOT_PASSWORD,
      FLOWSTORE_JWT_SECRET: "soak secret that is long enough 0123456789",
      FLOWSTORE_PROCESS_DATA_KEY: Buffer.alloc(32, 7).toString("base64"),
      FLOWSTORE_STORE: "",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  let out = "";
  let err = "";
  child.stderr.on("data", (d) => (err += d));
  const base = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`serve did not listen in ${START_TIMEOUT_MS} ms: ${err}`));
    }, START_TIMEOUT_MS);
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (d: string) => {
      out += d;
      const m = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
      if (out.length > 1_000_000) out = out.slice(-1000);
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`serve exited at start: ${err} ${out.slice(-2000)}`));
    });
  });
  child.stdout.resume();
  return {
    base,
    async kill() {
      child.kill("SIGKILL");
      await exited;
    },
  };
}

/** The load's writes as HTTP requests of the typed client. */
function httpTarget(c: FlowstoreClient): LoadTarget {
  const sub = (p: string, s: string) => c.project(p).subproject(s);
  return {
    createSubproject: async (p, s) => void (await c.project(p).subprojects.create({ id: s, displayName: `subproject ${s}`, currency: "EUR", workflowMode: "unordered" })),
    createWorkflowitem: async (p, s, w) => void (await sub(p, s).workflowitems.create({ id: w, displayName: `item ${w}`, amountType: "N/A" })),
    update: async (p, s, w, description) => whole(await sub(p, s).workflowitem(w).update({ description })).meta.version,
    reorder: async (p, s, o) => Number(/\d+/.exec((await sub(p, s).setOrdering(o)).etag)?.[0]),
    deleteSubproject: (p, s) => sub(p, s).delete(),
    close: async (p, s, w) => void (await sub(p, s).workflowitem(w).close()),
    uploadDocument: async (p, s, w, fileName, file) =>
      (
        await sub(p, s)
          .workflowitem(w)
          .documents.upload({ fileName, content: new Blob([file]) })
      ).id,
    snapshot: async (u, file) => (await c.archive.write(u, { kind: ["soak"] }, [{ name: "upload.bin", content: new Blob([file]) }])).id,
  };
}

/** Runs the soak in a data directory of its own (removed at the end); a Redis store's keys are the caller's to remove. */
export async function soak(options: SoakOptions): Promise<SoakFigures> {
  const started = Date.now();
  const data = await mkdtemp(join(tmpdir(), `flowstore-soak-${options.backend}-`));
  const url = options.store ?? defaultStoreUrl(data);
  const killPoints = fc.sample(fc.integer(KILL_AFTER), { seed: options.seed, numRuns: options.kills });
  const model = new Model();
  const problems: string[] = [];
  const errors: string[] = [];
  let lost = 0;
  let verifyFailures = 0;
  let subs: LiveSub[] = [];
  let kills = 0;
  try {
    for (let run = 0; run < options.kills && Date.now() < (options.deadline ?? Infinity); run++) {
      const server = await serve(data, options.store);
      let killing: Promise<void> | null = null;
      let acked = 0;
      const say = (line: Record<string, unknown>) => {
        if (killing) return; // an answer read after the kill began: counted as in doubt, never as acknowledged
        model.apply(line);
        if (line.a !== "deleting" && ++acked >= killPoints[run]!) killing = server.kill();
      };
      try {
        const client = new FlowstoreClient({ baseUrl: server.base });
        await client.login("root", ROOT_PASSWORD);
        for (const p of PROJECTS) {
          if (model.projects.has(p)) continue;
          await client.projects.create({ id: p, displayName: `project ${p}` }).catch((e: unknown) => {
            if (!(e instanceof ProblemError && e.status === 409)) throw e;
          });
          say({ a: "project", p });
        }
        const load = new Load(`r${run}`, httpTarget(client), subs, say);
        await load.drive(
          plan(options.seed + run, 100_000),
          WORKERS,
          () => killing !== null,
          (e) => {
            if (!killing) errors.push(`${(e as Error).name}: ${(e as Error).message}`);
          },
        );
      } finally {
        await (killing ?? server.kill());
      }
      kills++;
      const fs = await openFlowstore(url);
      try {
        const found = await check(fs, model);
        lost += found.filter((p) => p.startsWith("acknowledged")).length;
        verifyFailures += found.filter((p) => / does not verify|verifyAll failed/.test(p)).length;
        problems.push(...found.map((p) => `after kill ${run + 1}: ${p}`));
        subs = await liveSubs(fs.resources);
      } finally {
        await fs.close();
      }
      options.log?.(
        `${options.backend}: kill ${kills}/${options.kills} at ${((Date.now() - started) / 1000).toFixed(0)} s, ${model.acks} acknowledged writes so far, ${problems.length} problems, ${errors.length} refused`,
      );
      if (errors.length > 20) break;
    }
  } finally {
    await rm(data, { recursive: true, force: true });
  }
  return {
    backend: options.backend,
    kills,
    acknowledged: model.acks,
    deletes: model.deletes,
    snapshots: model.snapshots.size,
    documents: model.documents.length,
    lost,
    verifyFailures,
    problems,
    errors,
    ms: Date.now() - started,
  };
}
