/**
 * Starts and stops real redis-server processes on free 127.0.0.1 ports, each in its own directory under
 * a temp dir: standalone servers and clusters (made with `redis-cli --cluster create`). Used by the vitest
 * global setup, by the fault tests (which need servers of their own to kill) and by the bench.
 * Never touches a Redis it did not start (the machine's own on 6379 included).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { eventually, GiveUp } from "../support/eventually.js";
import { freePort } from "../support/ports.js";

export interface RedisBinaries {
  readonly server: string;
  readonly cli: string;
}

/** The redis-server and redis-cli binaries on PATH, or null when either is missing. */
export function findRedisBinaries(): RedisBinaries | null {
  const which = (name: string): string | null => {
    const r = spawnSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" });
    return r.status === 0 && r.stdout.trim() ? r.stdout.trim() : null;
  };
  const server = which("redis-server");
  const cli = which("redis-cli");
  return server && cli ? { server, cli } : null;
}

/** For a test file with servers of its own: the binaries, null when missing (an error under CI=true). */
export function redisBinariesForTests(): RedisBinaries | null {
  const bin = findRedisBinaries();
  if (!bin && process.env.CI === "true") throw new Error("redis-server / redis-cli are required when CI=true");
  return bin;
}

const live = new Set<ChildProcess>();
process.once("exit", () => {
  for (const p of live) p.kill("SIGKILL");
});

export interface ServerOptions {
  readonly cluster?: boolean;
  readonly appendonly?: boolean;
  /** appendfsync policy (default everysec). */
  readonly appendfsync?: "always" | "everysec" | "no";
  readonly clusterNodeTimeoutMs?: number;
  /** Start as a replica of this server (`replicaof`). */
  readonly replicaOf?: { readonly host: string; readonly port: number };
  /** Start as a Redis Sentinel (`redis-server <conf> --sentinel`) monitoring this master. */
  readonly sentinel?: SentinelOptions;
}

export interface SentinelOptions {
  readonly masterName: string;
  readonly host: string;
  readonly port: number;
  /** Sentinels that must agree the master is down (default 2). */
  readonly quorum?: number;
  /** down-after-milliseconds (default 1000). */
  readonly downAfterMs?: number;
  /** failover-timeout (default 5000). */
  readonly failoverTimeoutMs?: number;
}

export class RedisServer {
  #proc: ChildProcess | undefined;
  constructor(
    readonly bin: RedisBinaries,
    readonly port: number,
    readonly dir: string,
    readonly options: ServerOptions,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.#proc !== undefined && this.#proc.exitCode === null && this.#proc.signalCode === null;
  }

  async #args(): Promise<string[]> {
    const o = this.options;
    if (o.sentinel) {
      // A sentinel rewrites its configuration file as it learns the topology: written once, kept on restart.
      const m = o.sentinel;
      const conf = join(this.dir, "sentinel.conf");
      await writeFile(
        conf,
        [
          `port ${this.port}`,
          "bind 127.0.0.1",
          `dir ${this.dir}`,
          `logfile ${join(this.dir, "sentinel.log")}`,
          `sentinel monitor ${m.masterName} ${m.host} ${m.port} ${m.quorum ?? 2}`,
          `sentinel down-after-milliseconds ${m.masterName} ${m.downAfterMs ?? 1000}`,
          `sentinel failover-timeout ${m.masterName} ${m.failoverTimeoutMs ?? 5000}`,
          `sentinel parallel-syncs ${m.masterName} 1`,
          "",
        ].join("\n"),
        { flag: "wx" },
      ).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== "EEXIST") throw err;
      });
      return [conf, "--sentinel"];
    }
    const args = [
      "--port",
      String(this.port),
      "--bind",
      "127.0.0.1",
      "--dir",
      this.dir,
      "--daemonize",
      "no",
      "--save",
      "",
      "--logfile",
      join(this.dir, "redis.log"),
      "--appendonly",
      o.appendonly === false ? "no" : "yes",
      "--appendfsync",
      o.appendfsync ?? "everysec",
      "--repl-diskless-sync-delay",
      "0",
    ];
    if (o.cluster) {
      args.push("--cluster-enabled", "yes", "--cluster-config-file", join(this.dir, "nodes.conf"), "--cluster-node-timeout", String(o.clusterNodeTimeoutMs ?? 2000));
    }
    if (o.replicaOf) args.push("--replicaof", o.replicaOf.host, String(o.replicaOf.port));
    return args;
  }

  /** Starts the process (again, on the same port and directory) and waits until it answers PING. */
  async start(): Promise<void> {
    const proc = spawn(this.bin.server, await this.#args(), { stdio: "ignore" });
    this.#proc = proc;
    live.add(proc);
    proc.once("exit", () => live.delete(proc));
    await eventually(
      async () => {
        if (!this.running) throw new GiveUp(`redis-server on port ${this.port} exited at start (see ${this.dir}/redis.log)`);
        return this.#ping();
      },
      { what: `redis-server on port ${this.port} to answer PING`, timeoutMs: 15_000, intervalMs: 50 },
    );
  }

  async #ping(): Promise<boolean> {
    const c = this.client({ lazyConnect: true });
    try {
      await c.connect();
      return (await c.ping()) === "PONG";
    } catch {
      return false;
    } finally {
      c.disconnect();
    }
  }

  /** A plain client on this one server (the caller disconnects it). */
  client(extra: { lazyConnect?: boolean } = {}): Redis {
    const c = new Redis({
      host: "127.0.0.1",
      port: this.port,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
      connectTimeout: 2000,
      ...extra,
    });
    c.on("error", () => {}); // failures surface as rejected commands
    return c;
  }

  /** SIGKILL: no shutdown, no final AOF write. */
  async kill(): Promise<void> {
    await this.#stop("SIGKILL");
  }

  /** SIGTERM (Redis flushes the AOF and exits), SIGKILL after 5 s. */
  async stop(): Promise<void> {
    await this.#stop("SIGTERM");
  }

  async #stop(signal: NodeJS.Signals): Promise<void> {
    const proc = this.#proc;
    if (!proc || !this.running) return;
    const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
    proc.kill(signal);
    const timer = setTimeout(() => proc.kill("SIGKILL"), 5000);
    await exited;
    clearTimeout(timer);
  }
}

/** A temp directory holding the servers' data; remove() stops nothing, stop the servers first. */
export async function makeRedisDir(label: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `flowstore-redis-${label}-`));
}

export async function startStandalone(bin: RedisBinaries, baseDir: string, options: ServerOptions = {}): Promise<RedisServer> {
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const dir = join(baseDir, `standalone-${port}`);
    await mkdir(dir, { recursive: true });
    const server = new RedisServer(bin, port, dir, { ...options, cluster: false });
    try {
      await server.start();
      return server;
    } catch (err) {
      await server.kill();
      if (attempt >= 3) throw err; // a port taken between the check and the start: try another
    }
  }
}

export class RedisClusterHandle {
  constructor(
    readonly bin: RedisBinaries,
    readonly nodes: RedisServer[],
  ) {}

  get url(): string {
    return `redis-cluster://${this.nodes.map((n) => `127.0.0.1:${n.port}`).join(",")}`;
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop()));
  }

  /** The nodes that are masters right now (asked of the running nodes). */
  async masters(): Promise<RedisServer[]> {
    const roles = await Promise.all(
      this.nodes.map(async (n) => {
        if (!n.running) return null;
        const c = n.client();
        try {
          const info = await c.info("replication");
          return /role:master/.test(info) ? n : null;
        } catch {
          return null;
        } finally {
          c.disconnect();
        }
      }),
    );
    return roles.filter((n): n is RedisServer => n !== null);
  }

  /** Waits until every running node says cluster_state:ok, knows the same number of masters, and every
   * running replica's link to its master is up. */
  async waitHealthy(masters: number, timeoutMs = 30_000): Promise<void> {
    await eventually(() => this.isHealthy(masters), { what: `the redis cluster to be healthy with ${masters} masters`, timeoutMs, intervalMs: 200 });
  }

  async isHealthy(masters: number): Promise<boolean> {
    const running = this.nodes.filter((n) => n.running);
    const oks = await Promise.all(
      running.map(async (n) => {
        const c = n.client();
        try {
          const info = await c.cluster("INFO");
          if (!/cluster_state:ok/.test(info)) return false;
          const size = /cluster_size:(\d+)/.exec(info)?.[1];
          if (Number(size) !== masters) return false;
          const repl = await c.info("replication");
          if (/role:slave/.test(repl) && !/master_link_status:up/.test(repl)) return false;
          return true;
        } catch {
          return false;
        } finally {
          c.disconnect();
        }
      }),
    );
    return oks.every(Boolean);
  }
}

/** Starts 2 * masters nodes and joins them with `redis-cli --cluster create --cluster-replicas 1`. */
export async function startCluster(
  bin: RedisBinaries,
  baseDir: string,
  options: { masters?: number; clusterNodeTimeoutMs?: number } & Omit<ServerOptions, "cluster"> = {},
): Promise<RedisClusterHandle> {
  const masters = options.masters ?? 3;
  const nodes: RedisServer[] = [];
  try {
    for (let i = 0; i < masters * 2; i++) {
      const port = await freePort();
      const dir = join(baseDir, `cluster-${port}`);
      await mkdir(dir, { recursive: true });
      const node = new RedisServer(bin, port, dir, { ...options, cluster: true });
      nodes.push(node);
      await node.start();
    }
    const create = spawnSync(bin.cli, ["--cluster", "create", ...nodes.map((n) => `127.0.0.1:${n.port}`), "--cluster-replicas", "1", "--cluster-yes"], {
      encoding: "utf8",
      timeout: 60_000,
    });
    if (create.status !== 0) {
      throw new Error(`redis-cli --cluster create failed: ${create.stdout}\n${create.stderr}`);
    }
    const cluster = new RedisClusterHandle(bin, nodes);
    await cluster.waitHealthy(masters);
    return cluster;
  } catch (err) {
    await Promise.all(nodes.map((n) => n.kill()));
    throw err;
  }
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}
