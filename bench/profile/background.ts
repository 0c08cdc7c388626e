/**
 * CPU time per write of the background work `flowstore serve` runs beside the requests (a profiling
 * driver, not a benchmark row): the notification follower and the transparency log's appender, each run
 * alone to the feed's end after every `--pass` writes (a server's pass takes in what 200 ms brought),
 * over the events of a bounded batch of writes like the http workload's (LMDB: updates of the
 * description of 1,000 workflowitems assigned to tom, jane and mary, made by mary, 20 in flight; or
 * creates of workflowitems with no assignee given, the creator's). The writes are not counted: the
 * store is opened with no background work, and the passes are called between batches.
 *   npx tsx bench/profile/background.ts [--ops update,create] [--writes 2000] [--pass 200] [--rounds 5] [--root DIR] [--profile DIR]
 * `--root DIR` runs another checkout's src (a worktree of main at the base) in this process: run it and
 * this checkout alternately for an A/B. With --profile, a CPU profile (node:inspector) of the passes of
 * the last round is written to DIR/<op>-<follower|appender>.cpuprofile (bench/profile/top.ts prints its
 * top frames).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { pool } from "../peers/flowstore.js";
import { MARY, subproject } from "../tree.js";

const { values } = parseArgs({
  options: {
    ops: { type: "string", default: "update,create" },
    writes: { type: "string", default: "2000" },
    pass: { type: "string", default: "200" },
    rounds: { type: "string", default: "5" },
    root: { type: "string", default: resolve(import.meta.dirname, "../..") },
    profile: { type: "string" },
  },
});
const writes = Number(values.writes);
const rounds = Number(values.rounds);
const pass = Number(values.pass);
const src = (path: string) => import(join(resolve(values.root!), "src", path));
const { openFlowstore } = (await src("compose/index.ts")) as typeof import("../../src/compose/index.js");
const { SYSTEM } = (await src("access/actor.ts")) as typeof import("../../src/access/actor.js");
const { workflowitemRef } = (await src("workflow/commands.ts")) as typeof import("../../src/workflow/commands.js");

interface Profile {
  nodes: { id: number; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}
/** Two CPU profiles as one (the second's node ids moved past the first's; two roots): what top.ts sums. */
function merge(a: Profile | undefined, b: Profile): Profile {
  if (!a) return b;
  const shift = Math.max(...a.nodes.map((n) => n.id));
  return {
    nodes: [...a.nodes, ...b.nodes.map((n) => ({ ...n, id: n.id + shift, children: n.children?.map((c) => c + shift) }))],
    samples: [...a.samples, ...b.samples.map((id) => id + shift)],
    timeDeltas: [...a.timeDeltas, ...b.timeDeltas],
    startTime: a.startTime,
    endTime: b.endTime,
  };
}

const dir = mkdtempSync(join(tmpdir(), "fs-background-"));
const fs = await openFlowstore(`lmdb:${dir}`, {});
try {
  await fs.identity.createUser(SYSTEM, { id: "mary", displayName: "Mary", password: "bench password 0123456789" });
  for (const id of ["tom", "jane"]) await fs.identity.createUser(SYSTEM, { id, displayName: id, password: "bench password 0123456789" });
  await fs.identity.createGroup(SYSTEM, { id: "managers", displayName: "Managers", members: ["mary"] });
  await fs.global.grant(SYSTEM, "global.createProject", "managers");
  const s1k = subproject("s1k", 1_000);
  await fs.workflow.createProject(MARY, { id: "p", displayName: "P" });
  for (const s of ["s1k", "snew"]) await fs.workflow.createSubproject(MARY, "p", { id: s, displayName: s, currency: "EUR" });
  await pool(s1k.items, 64, (it) => fs.workflow.createWorkflowitem(MARY, "p", "s1k", it.data));
  const feed = fs.resources.writer.feed;
  // Both caught up before the first round (the follower's first pass sets its cursor at the feed's head).
  await fs.notifications.followAll(feed);
  await fs.log.tree.appendPending();

  let n = 0;
  const write = (op: string, i: number): Promise<unknown> =>
    op === "update"
      ? fs.workflow.update(MARY, workflowitemRef("p", "s1k", s1k.items[i % 1000]!.id), { description: `Changed under load, ${n++}.` })
      : fs.workflow.createWorkflowitem(MARY, "p", "snew", { displayName: "Load test step", amountType: "N/A" });
  const cpuMs = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const passes = { follower: () => fs.notifications.followAll(feed), appender: () => fs.log.tree.appendPending() };
  for (const op of values.ops!.split(",")) {
    const per: Record<string, number[]> = { follower: [], appender: [] };
    const profiles: Record<string, Profile | undefined> = {};
    for (let r = 0; r < rounds; r++) {
      const profiling = values.profile !== undefined && r === rounds - 1;
      const spent: Record<string, number> = { follower: 0, appender: 0 };
      const sessions = Object.fromEntries(Object.keys(passes).map((name) => [name, profiling ? new Session() : undefined]));
      for (const session of Object.values(sessions)) session?.connect();
      for (let done = 0; done < writes; done += pass) {
        await pool(
          Array.from({ length: Math.min(pass, writes - done) }, (_, i) => done + i),
          20,
          (i) => write(op, i),
        );
        for (const [name, run] of Object.entries(passes)) {
          const session = sessions[name];
          if (session) {
            await session.post("Profiler.enable");
            await session.post("Profiler.start");
          }
          const t0 = cpuMs();
          await run();
          spent[name]! += cpuMs() - t0;
          if (session) {
            const { profile } = await session.post("Profiler.stop");
            profiles[name] = merge(profiles[name], profile as Profile);
          }
        }
      }
      for (const [name, ms] of Object.entries(spent)) per[name]!.push((1000 * ms) / writes);
      for (const [name, session] of Object.entries(sessions)) {
        if (!session) continue;
        writeFileSync(join(values.profile!, `${op}-${name}.cpuprofile`), JSON.stringify(profiles[name]));
        session.disconnect();
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
    for (const [name, xs] of Object.entries(per))
      process.stdout.write(`== ${op} ${name} ${values.root}: ${median(xs).toFixed(1)} µs CPU/write (median of ${rounds}; rounds ${xs.map((x) => x.toFixed(1)).join(" ")})\n`);
  }
} finally {
  await fs.close();
  rmSync(dir, { recursive: true, force: true });
}
