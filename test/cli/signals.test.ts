/**
 * Signals through `npm start` itself (the README's command, dist/ built): SIGTERM or SIGINT sent to npm
 * stops the server cleanly, a request in flight is answered first, no process is left holding the port;
 * `--shutdown-grace` bounds a request that never finishes.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { execFileSync } from "node:child_process";
import { connect, createServer, type Socket } from "node:net";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { freePort } from "../support/ports.js";
import { ROOT } from "./spawn.js";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";
import { eventually, GiveUp } from "../support/eventually.js";

let dir: string;
const started: ChildProcess[] = [];
beforeEach(async () => {
  dir = await makeTempDir("signals");
});
afterEach(async () => {
  for (const c of started.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  await removeTempDir(dir);
});

interface Started {
  npm: ChildProcess;
  /** The server process npm runs. */
  serverPid: number;
  out: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

async function npmStart(port: number, args: string[] = []): Promise<Started> {
  const npm = spawn("npm", ["start", "--silent", "--", "--port", String(port), ...args], {
    cwd: ROOT,
    env: { ...process.env, FLOWSTORE_DATA: join(dir, "data"), FLOWSTORE_ROOT_PASSWORD: "root password 1", FLOWSTORE_STORE: "", FLOWSTORE_JWT_SECRET: "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  started.push(npm);
  let out = "";
  npm.stdout!.on("data", (d) => (out += d));
  npm.stderr!.on("data", (d) => (out += d));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => npm.on("exit", (code, signal) => res({ code, signal })));
  let exited = false;
  void exit.then(() => (exited = true));
  await eventually(
    async () => {
      if (exited) throw new GiveUp(`npm start exited early: ${out}`);
      return (await fetch(`http://127.0.0.1:${port}/health`)).ok;
    },
    { what: `npm start to answer /health on port ${port}`, timeoutMs: 60_000, intervalMs: 100 },
  );
  const children = execFileSync("ps", ["-o", "pid=", "--ppid", String(npm.pid)], { encoding: "utf8" })
    .trim()
    .split(/\s+/)
    .map(Number);
  expect(children).toHaveLength(1);
  const serverPid = children[0]!;
  expect(execFileSync("ps", ["-o", "args=", "-p", String(serverPid)], { encoding: "utf8" })).toContain("dist/cli/main.js serve");
  return { npm, serverPid, out: () => out, exit };
}

/** A log-in request whose body is cut after `sent` bytes; `finish` sends the rest and reads the answer. */
function partialLogin(port: number, sent: number): { socket: Socket; finish: () => Promise<string> } {
  const body = JSON.stringify({ username: "root", password: "root password 1" });
  const socket = connect(port, "127.0.0.1");
  let answer = "";
  let failed: Error | null = null;
  socket.on("data", (d) => (answer += d));
  socket.on("error", (e) => (failed = e));
  socket.write(`POST /api/v1/auth/token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`);
  socket.write(body.slice(0, sent));
  return {
    socket,
    finish: () =>
      new Promise((resolve, reject) => {
        if (failed) return reject(failed);
        socket.on("end", () => resolve(answer));
        socket.on("error", reject);
        socket.write(body.slice(sent));
      }),
  };
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The port can be bound again: nothing holds it. */
async function portFree(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

async function until(condition: () => boolean): Promise<void> {
  await eventually(condition, { what: `${condition}`, timeoutMs: 30_000 });
}

it("SIGTERM to npm start: the request in flight is answered, the server exits 0, the port is freed", async () => {
  const port = await freePort();
  const s = await npmStart(port);
  const login = partialLogin(port, 10);
  await until(() => s.out().includes('"url":"/api/v1/auth/token"')); // the server has the request
  s.npm.kill("SIGTERM");
  await until(() => s.out().includes("shutting down"));
  const answer = await login.finish();
  expect(answer).toMatch(/^HTTP\/1\.1 200 /);
  expect(answer).toMatch(/"token":"/);
  expect(answer.toLowerCase()).toContain("connection: close");
  expect(await s.exit).toEqual({ code: 0, signal: null });
  expect(s.out()).toMatch(/"signal":"SIGTERM"/);
  expect(s.out()).toMatch(/"msg":"stopped"/);
  await until(() => !alive(s.serverPid));
  expect(await portFree(port)).toBe(true);
});

it("SIGINT to npm start stops it too; --shutdown-grace bounds a request that never finishes", async () => {
  const port = await freePort();
  const s = await npmStart(port, ["--shutdown-grace", "1"]);
  const stuck = partialLogin(port, 10); // never finished
  await until(() => s.out().includes('"url":"/api/v1/auth/token"'));
  s.npm.kill("SIGINT");
  const exit = await s.exit;
  expect(exit.signal).toBeNull();
  expect(exit.code).toBe(3);
  expect(s.out()).toMatch(/"signal":"SIGINT"/);
  expect(s.out()).toMatch(/did not finish in time/);
  stuck.socket.destroy();
  await until(() => !alive(s.serverPid));
  expect(await portFree(port)).toBe(true);
});
