/**
 * Server CPU time per request, this checkout against others (a profiling driver, not a benchmark row):
 * the http workload's flowstore server (bench/http/flowstore-server.ts, LMDB, each in its own process as
 * `npm run bench -- http` starts it) of this checkout and of each `--root DIR` (a worktree of main at the
 * base commit: its own bench/http/flowstore-server.ts and src), sent the same bounded loads from this
 * process over loopback (keep-alive, 20 in flight), the servers alternating round by round (the order
 * turned each round). Each server's CPU time (user + system, over IPC) is read around each load: a figure
 * far less sensitive to the other processes on the machine than req/s, though contention still inflates
 * it (the least of the rounds is printed beside the median). Prints both per operation and server.
 *   npx tsx bench/profile/http-ab.ts [--ops create,update,get,list] [--count 3000] [--rounds 5] --root DIR...
 * A root `DIR?NAME=VALUE&…` starts that checkout's server with those environment variables set (an
 * ablation its server script reads).
 * create: POST a workflowitem to the empty subproject; update: PATCH the description of one of s1k's
 * 1,000 (a new value each time); get: GET one of them; list: GET s1k's 1,000 with the page cache off, as
 * the http workload's "page cache off" row does (a second server of the same checkout on the same store,
 * started with `nocache`: what every list costs after a write to the subproject).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { fork } from "node:child_process";
import { boundedLoad, stop, type Ready, type Server } from "../http/processes.js";
import { CREATE_BODY, createPath, itemPath, listPath, ROOT_PASSWORD, S1K, SNEW } from "../http/shared.js";
import { itemId } from "../tree.js";

const { values } = parseArgs({
  options: {
    ops: { type: "string", default: "create,update,get" },
    count: { type: "string", default: "3000" },
    rounds: { type: "string", default: "5" },
    root: { type: "string", multiple: true },
  },
});
const ops = values.ops!.split(",");
const count = Number(values.count);
/** A list answers 1,000 items (about 700 KiB): a tenth of the count (at least 100) per load. */
const listCount = Math.max(100, Math.round(count / 10));
const countOf = (op: string) => (op === "list" ? listCount : count);
const rounds = Number(values.rounds);
const IN_FLIGHT = 20;
/** `DIR?NAME=VALUE&…`: that checkout's server with these environment variables set (an ablation). */
const roots = [resolve(import.meta.dirname, "../.."), ...(values.root ?? [])].map((r) => {
  const [path, query] = r.split("?") as [string, string?];
  return { label: r, path: resolve(path), env: Object.fromEntries(new URLSearchParams(query ?? "")) };
});

/** Forks `root`'s bench/http/flowstore-server.ts on a fresh LMDB directory (its cwd: the checkout, for its tsx). */
function startAt(root: (typeof roots)[number], dir: string, ...args: string[]): Promise<Server> {
  const child = fork(join(root.path, "bench/http/flowstore-server.ts"), [`lmdb:${dir}`, dir, ...args], {
    cwd: root.path,
    env: { ...process.env, ...root.env },
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  return new Promise((ok, fail) => {
    child.once("message", (m: Ready) => ok({ child, ready: m, base: `http://127.0.0.1:${m.port}` }));
    child.once("exit", (code) => fail(new Error(`${root.label}: server exited (${code})`)));
  });
}

const dir = mkdtempSync(join(tmpdir(), "fs-http-ab-"));
const servers: { root: string; server: Server; token: string; cold?: Server }[] = [];
try {
  for (const [i, root] of roots.entries()) {
    const server = await startAt(root, join(dir, String(i)));
    const login = await fetch(`${server.base}/api/v1/auth/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "mary", password: ROOT_PASSWORD }),
    });
    const { token } = (await login.json()) as { token: string };
    // the list's server: the same checkout on the same store, its page cache off
    const cold = ops.includes("list") ? await startAt(root, join(dir, String(i)), "nocache") : undefined;
    servers.push({ root: root.label, server, token, cold });
  }

  let n = 0;
  const next = (op: string, i: number): [string, string, string?] => {
    switch (op) {
      case "create":
        return ["POST", createPath(SNEW), CREATE_BODY];
      case "update":
        return ["PATCH", itemPath(S1K, itemId(i % 1000)), JSON.stringify({ description: `Changed under load, ${n++}.` })];
      case "get":
        return ["GET", itemPath(S1K, itemId(i % 1000))];
      case "list":
        return ["GET", listPath(S1K)];
      default:
        throw new Error(`unknown op ${op}`);
    }
  };
  const load = ({ server, token, cold }: (typeof servers)[number], op: string): Promise<{ cpuMs: number; seconds: number }> =>
    boundedLoad(op === "list" ? cold! : server, token, (i) => next(op, i), countOf(op), IN_FLIGHT);

  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  for (const op of ops) {
    for (const s of servers) await load(s, op); // one unmeasured load each first (JIT, caches)
    const per = servers.map(() => [] as number[]);
    for (let r = 0; r < rounds; r++) {
      const order = servers.map((_, i) => i);
      if (r % 2 === 1) order.reverse();
      for (const i of order) {
        const { cpuMs, seconds } = await load(servers[i]!, op);
        per[i]!.push(cpuMs / countOf(op));
        process.stdout.write(
          `${op} ${servers[i]!.root} round ${r + 1}: ${((1000 * cpuMs) / countOf(op)).toFixed(0)} µs CPU/request, ${(countOf(op) / seconds).toFixed(0)} req/s\n`,
        );
      }
    }
    const base = median(per[0]!);
    for (const [i, s] of servers.entries())
      process.stdout.write(
        `== ${op} ${s.root}: ${(1000 * median(per[i]!)).toFixed(0)} µs CPU/request (median of ${rounds}, least ${(1000 * Math.min(...per[i]!)).toFixed(0)}; rounds ${per[i]!.map((x) => (1000 * x).toFixed(0)).join(" ")})${i > 0 ? `, ${(median(per[i]!) / base).toFixed(2)}× this checkout's` : ""}\n`,
      );
  }
} finally {
  for (const s of servers.reverse()) {
    if (s.cold) await stop(s.cold.child);
    await stop(s.server.child);
  }
  rmSync(dir, { recursive: true, force: true });
}
