/**
 * Server CPU time per request (not a benchmark row): the http workload's flowstore server (LMDB) and its
 * Fastify + SQLite peer, each in its own process as `npm run bench -- http` starts them, sent the same
 * bounded loads from this process over loopback (keep-alive, 20 in flight), peer and flowstore
 * alternating round by round. Each server's CPU time (user + system, over IPC) is read around each load:
 * a figure far less sensitive to other processes on the machine than req/s. The ratio printed is the
 * peer's CPU per request over flowstore's (above 1: flowstore spends less per request).
 *   npx tsx bench/profile/cpu.ts [get,create] [requests per load] [rounds] [--profile DIR]
 * With --profile each server writes a CPU profile (node:inspector) of its last load of each operation
 * (flowstore: DIR/<op>.cpuprofile, the peer: DIR/<op>-peer.cpuprofile); bench/profile/top.ts prints its
 * top frames. The last round's CPU figures then include the profiler's own cost.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { ChildProcess } from "node:child_process";
import { boundedLoad, start, stop, type Server } from "../http/processes.js";
import { CREATE_BODY, createPath, itemPath, ROOT_PASSWORD, S1K, SNEW } from "../http/shared.js";
import { itemId } from "../tree.js";

const { values, positionals } = parseArgs({ allowPositionals: true, options: { profile: { type: "string" } } });
const ops = (positionals[0] ?? "get,create").split(",");
const count = Number(positionals[1] ?? 5000);
const rounds = Number(positionals[2] ?? 3);
const IN_FLIGHT = 20;

const dir = mkdtempSync(join(tmpdir(), "fs-cpu-"));
const servers: Server[] = [];
try {
  const flow = await start("flowstore-server.ts", `lmdb:${join(dir, "flowstore")}`, join(dir, "flowstore"));
  servers.push(flow);
  const peer = await start("sqlite-server.ts", mkdtempSync(join(dir, "peer-")));
  servers.push(peer);
  const login = await fetch(`${flow.base}/api/v1/auth/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username: "mary", password: ROOT_PASSWORD }),
  });
  const { token } = (await login.json()) as { token: string };

  const load = (server: Server, op: string): Promise<{ cpuMs: number; seconds: number }> =>
    boundedLoad(server, token, (i) => (op === "create" ? ["POST", createPath(SNEW), CREATE_BODY] : ["GET", itemPath(S1K, itemId(i % 1000))]), count, IN_FLIGHT);
  const ask = (child: ChildProcess, message: object, answer: string) =>
    new Promise<void>((resolve) => {
      const on = (m: { type?: string }) => {
        if (m.type !== answer) return;
        child.off("message", on);
        resolve();
      };
      child.on("message", on);
      child.send(message);
    });

  for (const op of ops) {
    // one unmeasured load each first (JIT, caches)
    await load(peer, op);
    await load(flow, op);
    const per = { peer: [] as number[], flow: [] as number[] };
    for (let r = 0; r < rounds; r++) {
      const profiling = values.profile !== undefined && r === rounds - 1;
      for (const side of r % 2 === 0 ? (["peer", "flow"] as const) : (["flow", "peer"] as const)) {
        const server = side === "peer" ? peer : flow;
        if (profiling) await ask(server.child, { type: "profile-start" }, "profiling");
        const { cpuMs, seconds } = await load(server, op);
        if (profiling) await ask(server.child, { type: "profile-stop", file: join(values.profile!, `${op}${side === "peer" ? "-peer" : ""}.cpuprofile`) }, "profiled");
        per[side].push(cpuMs / count);
        process.stdout.write(`${op} ${side} round ${r + 1}: ${((1000 * cpuMs) / count).toFixed(0)} µs CPU/request, ${(count / seconds).toFixed(0)} req/s\n`);
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
    const p = median(per.peer);
    const f = median(per.flow);
    process.stdout.write(
      `== ${op}: peer ${(1000 * p).toFixed(0)} µs, flowstore ${(1000 * f).toFixed(0)} µs CPU/request (medians of ${rounds}): flowstore ${(p / f).toFixed(2)}× the peer\n`,
    );
  }
} finally {
  for (const s of servers.reverse()) await stop(s.child);
  rmSync(dir, { recursive: true, force: true });
}
