/** The real `flowstore archive` commands on an LMDB store: archive a closed project (dropping it), restore it. */
import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Command, CommanderError } from "commander";
import { buildProgram } from "../../src/cli/program.js";
import { scanAll, type KvStore } from "../../src/kv/contract.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { ResourceStore } from "../../src/resources/store.js";
import { Workflow } from "../../src/workflow/commands.js";
import { workflowSchema } from "../../src/workflow/schema.js";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";
import { CLI } from "./spawn.js";

const ROOT = resolve(import.meta.dirname, "../..");
const mary = userActor("mary");

function run(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, [...CLI, ...args], {
    cwd: ROOT,
    env: { ...process.env, FLOWSTORE_STORE: "", FLOWSTORE_DATA: "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  return new Promise((res) => child.on("exit", (code) => res({ code, out, err })));
}

async function dumpPartition(kv: KvStore, p: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of scanAll(kv, ["project", p])) out.push(`${e.keyBytes.toString("hex")}=${e.value.toString("hex")}`);
  return out;
}

let dir: string;
beforeEach(async () => {
  dir = await makeTempDir("cli-archive");
});
afterEach(async () => {
  await removeTempDir(dir);
});

describe("flowstore archive", () => {
  it("archives a closed project with --drop and restores it byte for byte; refuses an open project", async () => {
    let kv: KvStore = LmdbKv.open(dir);
    let before: string[];
    try {
      const wf = new Workflow(new ResourceStore(kv, workflowSchema));
      await wf.store.global.grant(SYSTEM, "global.createProject", "mary");
      await wf.createProject(mary, { id: "p", displayName: "School" });
      await wf.createSubproject(mary, "p", { id: "s", displayName: "Roof", currency: "EUR" });
      await wf.createWorkflowitem(mary, "p", "s", { id: "w", displayName: "Tiles", amountType: "N/A" });
      await wf.closeWorkflowitem(mary, "p", "s", "w");
      await wf.closeSubproject(mary, "p", "s");
      await wf.closeProject(mary, "p");
      await wf.createProject(mary, { id: "open", displayName: "Still open" });
      before = await dumpPartition(kv, "p");
    } finally {
      await kv.close();
    }

    const open = await run(["archive", "project", "open", "--data", dir]);
    expect(open.code).toBe(2);
    expect(open.err).toMatch(/only a closed project/);

    const archived = await run(["archive", "project", "p", "--drop", "--data", dir]);
    expect(archived.code, archived.err).toBe(0);
    const result = JSON.parse(archived.out);
    expect(result).toMatchObject({ projectId: "p", dropped: true, snapshot: { id: expect.stringMatching(/^project:p-\d+$/) } });

    kv = LmdbKv.open(dir);
    try {
      expect(await dumpPartition(kv, "p")).toEqual([]);
    } finally {
      await kv.close();
    }

    const restored = await run(["archive", "restore", result.snapshot.id, "--data", dir]);
    expect(restored.code, restored.err).toBe(0);
    expect(JSON.parse(restored.out)).toMatchObject({ projectId: "p", verify: { ok: true, checked: result.chainHead.seq } });
    kv = LmdbKv.open(dir);
    try {
      expect(await dumpPartition(kv, "p")).toEqual(before);
    } finally {
      await kv.close();
    }
    const again = await run(["archive", "restore", result.snapshot.id, "--data", dir]);
    expect(again.code).toBe(2);
    expect(again.err).toMatch(/exists/);
  });

  it("has --help on each archive command", async () => {
    for (const [args, expected] of [
      [["archive"], /^Usage: flowstore archive \[options\] \[command\][\s\S]*project \[options\] <id>[\s\S]*restore \[options\] <snapshotId>/],
      [["archive", "project"], /^Usage: flowstore archive project \[options\] <id>[\s\S]*--drop/],
      [["archive", "restore"], /^Usage: flowstore archive restore \[options\] <snapshotId>/],
    ] as const) {
      let out = "";
      const program = buildProgram();
      const capture = (cmd: Command): void => {
        cmd.configureOutput({ writeOut: (s) => void (out += s), writeErr: (s) => void (out += s) });
        cmd.exitOverride();
        cmd.commands.forEach(capture);
      };
      capture(program);
      const err = await program.parseAsync(["node", "flowstore", ...args, "--help"]).catch((e: unknown) => e);
      expect((err as CommanderError).exitCode, args.join(" ")).toBe(0);
      expect(out, args.join(" ")).toMatch(expected);
    }
  });
});
