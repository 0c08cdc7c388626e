/**
 * The real `flowstore` process, spawned with its output captured: used by the CLI tests and by the fleet
 * (several `serve` processes on one store).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { eventually, GiveUp } from "../support/eventually.js";

export const ROOT = resolve(import.meta.dirname, "../..");

/** The newest modification time of the files under `dir` (0 when it does not exist). */
function newest(dir: string): number {
  if (!existsSync(dir)) return 0;
  let t = 0;
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) if (e.isFile()) t = Math.max(t, statSync(join(e.parentPath, e.name)).mtimeMs);
  return t;
}

/**
 * Node's arguments that start the CLI: the build (`dist/cli/main.js`) when it is newer than every file
 * under src/, as after `npm ci` or `npm run build` (CI's case: the install builds it), else the sources
 * through tsx (a tree edited since its last build). The build starts a server in about a third of
 * tsx's CPU time, and the CLI, fleet and crash suites start a few hundred processes.
 */
export const CLI: readonly string[] =
  newest(join(ROOT, "dist")) >= newest(join(ROOT, "src")) ? [join(ROOT, "dist/cli/main.js")] : ["--import", "tsx", join(ROOT, "src/cli/main.ts")];

export interface Run {
  readonly child: ChildProcess;
  readonly out: () => string;
  readonly err: () => string;
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs the CLI with `args`; the environment's FLOWSTORE_* settings are blanked unless `env` gives them. */
export function run(args: string[], env: Record<string, string> = {}, input?: string): Run {
  const child = spawn(process.execPath, [...CLI, ...args], {
    cwd: ROOT,
    env: { ...process.env, FLOWSTORE_ROOT_PASSWORD: "", FLOWSTORE_JWT_SECRET: "", FLOWSTORE_STORE: "", ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (err += d));
  if (input !== undefined) child.stdin!.end(input);
  else child.stdin!.end();
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => child.on("exit", (code, signal) => res({ code, signal })));
  return { child, out: () => out, err: () => err, exit };
}

/** Polls `base`/health until it answers 200 (bounded: 60 s unless told); throws at once when the process exits first. */
export async function waitHealthy(base: string, r: Run, timeoutMs = 60_000): Promise<void> {
  let exited = false;
  void r.exit.then(() => (exited = true));
  await eventually(
    async () => {
      if (exited) throw new GiveUp(`serve exited early: ${r.err()} ${r.out()}`);
      return (await fetch(`${base}/health`)).ok;
    },
    { what: `${base}/health to answer 200`, timeoutMs, intervalMs: 100 },
  );
}
