/**
 * The processes of the http workload and how it drives them: each server (flowstore, the SQLite peer, the
 * limit prototype) in its own process on 127.0.0.1, autocannon in another for uniform loads, and the load
 * driver (driver.ts) in another for mixed, paging and rate-limited writer loads. Every load is bounded in
 * time; every process started here is stopped here (a server exits when its parent disconnects).
 */
import { fork, spawn, type ChildProcess } from "node:child_process";
import { Agent, request } from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { DriverResult, DriverSpec } from "./driver.js";

const HERE = dirname(fileURLToPath(import.meta.url));

export interface Ready {
  type: "ready";
  port: number;
  rss: number;
  loadSec?: number;
}

export interface Server {
  readonly child: ChildProcess;
  readonly ready: Ready;
  readonly base: string;
}

/** Forks bench/http/<script> with its arguments and waits for its {ready} message. */
export function start(script: string, dir: string, ...args: string[]): Promise<Server> {
  const child = fork(join(HERE, script), [dir, ...args], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => (child.kill("SIGKILL"), reject(new Error(`${script} not ready in 300 s`))), 300_000);
    child.once("message", (m: Ready) => {
      clearTimeout(timer);
      resolve({ child, ready: m, base: `http://127.0.0.1:${m.port}` });
    });
    child.once("exit", (code) => reject(new Error(`${script} exited (${code})`)));
  });
}

export interface Usage {
  readonly rss: number;
  /** CPU time (user + system) the process has used so far. */
  readonly cpuMs: number;
}

export function usageOf(child: ChildProcess): Promise<Usage> {
  return new Promise((resolve) => {
    const on = (m: { type?: string } & Usage) => {
      if (m.type !== "usage") return;
      child.off("message", on);
      resolve(m);
    };
    child.on("message", on);
    child.send({ type: "usage" });
  });
}

/** Runs `load` and adds the CPU time `server` used meanwhile. */
export async function withCpu<T>(server: Server, load: () => Promise<T>): Promise<T & { serverCpuMs: number }> {
  const before = await usageOf(server.child);
  const r = await load();
  return { ...r, serverCpuMs: (await usageOf(server.child)).cpuMs - before.cpuMs };
}

/**
 * A bounded load for the profiling drivers (bench/profile/cpu.ts, http-ab.ts): `count` requests over
 * keep-alive loopback, `inFlight` at a time, the i-th being `next(i)` ([method, path, body?]) sent with the
 * bearer `token`; every answer must be 2xx. Returns the server's CPU time over the load and its seconds.
 */
export async function boundedLoad(
  server: Server,
  token: string,
  next: (i: number) => [string, string, string?],
  count: number,
  inFlight: number,
): Promise<{ cpuMs: number; seconds: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: inFlight });
  const url = new URL(server.base);
  const send = (method: string, path: string, body?: string) =>
    new Promise<void>((resolve, reject) => {
      const headers: Record<string, string> = { authorization: `Bearer ${token}` };
      if (body) headers["content-type"] = "application/json";
      const req = request({ host: url.hostname, port: url.port, method, path, agent, headers }, (res) => {
        res.resume();
        res.on("end", () => (res.statusCode! < 300 ? resolve() : reject(new Error(`${method} ${path}: ${res.statusCode}`))));
      });
      req.on("error", reject);
      req.end(body);
    });
  const before = await usageOf(server.child);
  const t0 = performance.now();
  let i = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (i < count) {
        const [m, p, b] = next(i++);
        await send(m, p, b);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const after = await usageOf(server.child);
  agent.destroy();
  return { cpuMs: after.cpuMs - before.cpuMs, seconds };
}

/** Disconnects (the child then closes and exits); SIGKILL after 10 s. */
export function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const kill = setTimeout(() => child.kill("SIGKILL"), 10_000);
    child.once("exit", () => (clearTimeout(kill), resolve()));
    if (child.connected) child.disconnect();
    else child.kill("SIGTERM");
  });
}

export interface Cannon {
  rps: number;
  p50: number;
  p99: number;
  total: number;
  timeouts: number;
  errors: number;
}

export interface CannonOptions {
  readonly connections: number;
  /** A POST of this body instead of a GET. */
  readonly post?: string;
}

/** autocannon in its own process; fails on any error or non-2xx answer. */
export function cannon(url: string, token: string, seconds: number, options: CannonOptions): Promise<Cannon> {
  const args = [
    join(HERE, "..", "node_modules", "autocannon", "autocannon.js"),
    "-c",
    String(options.connections),
    "-d",
    String(seconds),
    "-j",
    "-H",
    `authorization=Bearer ${token}`,
  ];
  if (options.post !== undefined) args.push("-m", "POST", "-H", "content-type=application/json", "-b", options.post);
  args.push(url);
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.resume();
  const timer = setTimeout(() => child.kill("SIGKILL"), (seconds + 60) * 1000);
  return new Promise((resolve, reject) => {
    child.once("exit", (code) => {
      clearTimeout(timer);
      try {
        const r = JSON.parse(out) as { requests: { average: number; total: number }; latency: { p50: number; p99: number }; errors: number; non2xx: number; timeouts: number };
        if (code !== 0 || r.non2xx) throw new Error(`autocannon: exit ${code}, ${r.non2xx} non-2xx answers`);
        // a request unanswered after autocannon's 10 s timeout counts as an error, reported with the row
        resolve({ rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, total: r.requests.total, timeouts: r.timeouts, errors: r.errors });
      } catch (e) {
        reject(e);
      }
    });
  });
}

/** A load driver: `started` once it runs, `done` with its figures (rejects on any non-2xx answer). */
export interface Driving {
  readonly started: Promise<void>;
  readonly done: Promise<DriverResult>;
}

/** Runs driver.ts in its own process with `spec`; bounded by spec.seconds (killed 60 s after). */
export function drive(spec: DriverSpec): Driving {
  const child = fork(join(HERE, "driver.ts"), [], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const timer = setTimeout(() => child.kill("SIGKILL"), (spec.seconds + 60) * 1000);
  let begun = () => {};
  const started = new Promise<void>((resolve) => (begun = resolve));
  const done = new Promise<DriverResult>((resolve, reject) => {
    let answer: { result?: DriverResult; error?: string } | undefined;
    child.on("message", (m: { started?: true; result?: DriverResult; error?: string }) => (m.started ? begun() : (answer = m)));
    child.once("exit", (code) => {
      clearTimeout(timer);
      begun();
      if (answer?.result) resolve(answer.result);
      else reject(new Error(`load driver: ${answer?.error ?? `exited (${code}) without a result`}`));
    });
  });
  child.send({ spec });
  return { started, done };
}

/**
 * What a row's note says of one load: latencies, count, any timeouts and, when known, the server's CPU
 * time per request (`serverCpuMs` over `cpuRequests`, default `total`: the load-insensitive cost).
 */
export function loadNote(c: { p50: number; p99: number; total: number; timeouts: number; errors?: number; serverCpuMs?: number }, cpuRequests = c.total): string {
  const errors = c.errors ?? 0;
  const cpu = c.serverCpuMs === undefined || cpuRequests === 0 ? "" : `, server CPU ${(c.serverCpuMs / cpuRequests).toFixed(2)} ms/request`;
  return `p50 ${c.p50} ms, p99 ${c.p99} ms, ${c.total.toLocaleString("en-US")} requests${c.timeouts || errors ? `, ${c.timeouts} timed out after 10 s, ${errors} errors` : ""}${cpu}`;
}
