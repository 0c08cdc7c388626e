/**
 * Starts and stops a throwaway PostgreSQL cluster with the Debian binaries (`initdb`, `pg_ctl`): a data
 * directory under a temp dir, a free 127.0.0.1 port, trust authentication for one superuser, `fsync` on
 * (PostgreSQL's default). Used by the vitest global setup and by tests that need a server of their own.
 * Never touches a PostgreSQL it did not start (the machine's own on 5432 included).
 *
 * PostgreSQL refuses to run as root; as root, every binary runs as the `postgres` OS user (which owns the
 * temp dir), through `runuser`.
 */
import { spawnSync } from "node:child_process";
import { chownSync, existsSync, readdirSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { freePort } from "../support/ports.js";

/** The directory holding initdb and pg_ctl, or null when PostgreSQL is not installed. */
export function findPostgresBinaries(): string | null {
  const has = (dir: string): boolean => existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl"));
  const config = spawnSync("pg_config", ["--bindir"], { encoding: "utf8" });
  if (config.status === 0 && has(config.stdout.trim())) return config.stdout.trim();
  const root = "/usr/lib/postgresql";
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => /^\d+$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    for (const v of versions) if (has(join(root, v, "bin"))) return join(root, v, "bin");
  }
  const which = spawnSync("sh", ["-c", "command -v initdb"], { encoding: "utf8" });
  if (which.status === 0 && which.stdout.trim()) {
    const dir = which.stdout.trim().replace(/\/initdb$/, "");
    if (has(dir)) return dir;
  }
  return null;
}

/** The OS user the binaries run as: ourselves, or `postgres` when we are root. */
function runAs(): { uid: number; gid: number; prefix: string[] } | null {
  if (userInfo().uid !== 0) return null;
  const id = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" });
  const gid = spawnSync("id", ["-g", "postgres"], { encoding: "utf8" });
  if (id.status !== 0) throw new Error("running as root and there is no `postgres` OS user to run PostgreSQL as");
  return { uid: Number(id.stdout.trim()), gid: Number(gid.stdout.trim()), prefix: ["runuser", "-u", "postgres", "--"] };
}

export const SUPERUSER = "flowstore";

/** Runs one of the binaries (as the `postgres` user when we are root); throws with its output on failure. */
function runTool(bin: string, cwd: string, tool: string, args: string[], timeout = 120_000): void {
  const cmd = [...(runAs()?.prefix ?? []), join(bin, tool), ...args];
  const r = spawnSync(cmd[0]!, cmd.slice(1), { encoding: "utf8", timeout, cwd });
  if (r.status !== 0) throw new Error(`${tool} failed (${r.status ?? r.signal}): ${r.stdout}\n${r.stderr}`);
}

export class PostgresServer {
  constructor(
    readonly bin: string,
    readonly dir: string,
    readonly port: number,
  ) {}

  get dataDir(): string {
    return join(this.dir, "data");
  }

  /** postgres://flowstore@127.0.0.1:port/<database> */
  url(database = "postgres"): string {
    return `postgres://${SUPERUSER}@127.0.0.1:${this.port}/${database}`;
  }

  async start(): Promise<void> {
    runTool(this.bin, this.dir, "pg_ctl", [
      "start",
      "-w",
      "-t",
      "60",
      "-D",
      this.dataDir,
      "-l",
      join(this.dir, "postgres.log"),
      "-o",
      `-p ${this.port} -c listen_addresses=127.0.0.1 -k ${this.dir} -c max_connections=300 -c fsync=on`,
    ]);
  }

  /** Fast shutdown (in-flight transactions are rolled back), immediate after 30 s. */
  async stop(): Promise<void> {
    if (!existsSync(join(this.dataDir, "postmaster.pid"))) return;
    try {
      runTool(this.bin, this.dir, "pg_ctl", ["stop", "-w", "-t", "30", "-m", "fast", "-D", this.dataDir]);
    } catch {
      runTool(this.bin, this.dir, "pg_ctl", ["stop", "-w", "-m", "immediate", "-D", this.dataDir]);
    }
  }

  async log(): Promise<string> {
    return readFile(join(this.dir, "postgres.log"), "utf8").catch(() => "");
  }
}

/** initdb in a fresh temp dir, then start on a free port. */
export async function startPostgres(bin: string, label = "shared"): Promise<PostgresServer> {
  const dir = await mkdtemp(join(tmpdir(), `flowstore-postgres-${label}-`));
  const user = runAs();
  if (user) chownSync(dir, user.uid, user.gid);
  const port = await freePort();
  const server = new PostgresServer(bin, dir, port);
  try {
    runTool(bin, dir, "initdb", ["-D", server.dataDir, "-U", SUPERUSER, "--auth=trust", "-E", "UTF8", "--locale=C", "--no-instructions"]);
    await server.start();
    return server;
  } catch (err) {
    await server.stop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

export async function removePostgres(server: PostgresServer): Promise<void> {
  await server.stop();
  await rm(server.dir, { recursive: true, force: true });
}

/** Drops a schema and everything in it (a test's data) from the database behind a URL. */
export async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema.replace(/"/g, '""')}" CASCADE`);
  } finally {
    await client.end();
  }
}
