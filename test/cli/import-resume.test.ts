/**
 * An import killed midway (issue 16, finding 2), with the real `flowstore` command on LMDB: the importer
 * (a child process) is killed with SIGKILL right after its marker, midway, and just before its end;
 * each time `serve` refuses the store (exit 4, naming `import --resume`), `verify` fails, a plain import
 * refuses, and `import --resume` from the same export completes it to a store equal byte for byte to a
 * clean import.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createWriteStream } from "node:fs";
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { finished } from "node:stream/promises";
import { Readable } from "node:stream";
import { afterAll, beforeAll, expect, it } from "vitest";
import { userActor, SYSTEM } from "../../src/access/actor.js";
import { exportStore, importStore, unfinishedImport } from "../../src/cli/transfer.js";
import { ALL_KINDS, openFlowstore } from "../../src/compose/index.js";
import { allPartitions, scanAll, type KvStore } from "../../src/kv/contract.js";
import { layout } from "../../src/resources/model/layout.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { dumpAll } from "../setup/dump.js";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";
import { eventually } from "../support/eventually.js";
import { CLI } from "./spawn.js";

const ROOT = resolve(import.meta.dirname, "../..");
const mary = userActor("mary");

function start(args: string[]): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, [...CLI, ...args], { cwd: ROOT, env: { ...process.env, FLOWSTORE_STORE: "", FLOWSTORE_DATA: "" } });
}
function run(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const child = start(args);
  child.stdin.end();
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  return new Promise((res) => child.on("exit", (code) => res({ code, out, err })));
}

let dir: string;
let exportFile: string;
let lines: string[];
let clean: string[];

beforeAll(async () => {
  dir = await makeTempDir("import-kill");
  const src = await openFlowstore(`lmdb:${join(dir, "src")}`);
  await src.identity.createUser(SYSTEM, { id: "mary", displayName: "mary", password: "mary password" });
  await src.global.grant(SYSTEM, "global.createProject", "mary");
  for (const p of ["a", "b", "c", "d"]) {
    await src.workflow.createProject(mary, { id: p, displayName: p });
    await src.workflow.createSubproject(mary, p, { id: "s", displayName: "s", currency: "EUR" });
    for (let i = 0; i < 30; i++) await src.workflow.createWorkflowitem(mary, p, "s", { id: `w${i}`, displayName: `w${i}`, amountType: "N/A" });
  }
  exportFile = join(dir, "export.ndjson");
  const out = createWriteStream(exportFile);
  await exportStore(src.kv, out);
  out.end();
  await finished(out);
  await src.close();
  lines = (await readFile(exportFile, "utf8")).trimEnd().split("\n");
  const reference = LmdbKv.open(join(dir, "clean"));
  await importStore(reference, Readable.from([lines.join("\n") + "\n"]));
  clean = await dumpAll(reference);
  await reference.close();
}, 120_000);
afterAll(async () => {
  await removeTempDir(dir);
});

/** Polls (bounded) the store another process writes until `done` holds. */
async function until(data: string, done: (kv: KvStore) => Promise<boolean>): Promise<void> {
  await eventually(
    async () => {
      const kv = LmdbKv.open(data);
      return done(kv).finally(() => kv.close());
    },
    { what: `the importer to reach the point it is killed at in ${data}`, timeoutMs: 60_000, intervalMs: 50 },
  );
}

/** Entries of every kind but the import's marker (and `except`). */
async function contentEntries(kv: KvStore, except: readonly string[] = []): Promise<number> {
  let n = 0;
  for (const kind of ALL_KINDS.filter((k) => k !== "import" && !except.includes(k))) for await (const p of allPartitions(kv, kind)) for await (const _ of scanAll(kv, p)) n++;
  return n;
}

const totalEntries = (): number => lines.filter((l) => l.startsWith('{"k"')).length;
const lastPartitionEntries = (): number => lines.length - 2 - lines.findLastIndex((l) => l.startsWith('{"partition"'));

// Each point: the lines fed to the importer before it is killed, and what the store shows by then.
const points: [string, () => string[], (kv: KvStore) => Promise<boolean>][] = [
  ["after the marker", () => lines.slice(0, 1), async (kv) => (await unfinishedImport(kv)) !== null],
  // The importer's open writes the visibility index's "built" markers before it reads the export's
  // header, so entries alone do not show the import has begun: its marker and an imported entry do.
  ["midway", () => lines.slice(0, Math.floor(lines.length / 2)), async (kv) => (await unfinishedImport(kv)) !== null && (await contentEntries(kv, [layout.visibleKind])) > 0],
  ["just before the end", () => lines.slice(0, -1), async (kv) => (await contentEntries(kv)) >= totalEntries() - lastPartitionEntries()],
];

it.each(points)(
  "killed %s: serve refuses, verify fails, --resume completes it to a clean import's bytes",
  async (_name, fed, reached) => {
    const data = join(dir, `dst-${_name.replace(/ /g, "-")}`);
    const importer = start(["import", "--data", data]);
    const exited = new Promise((res) => importer.on("exit", res));
    importer.stdin.write(fed().join("\n") + "\n"); // the rest never comes: the importer waits for it
    await until(data, reached);
    importer.kill("SIGKILL");
    await exited;

    const served = await run(["serve", "--data", data, "--port", "18471"]);
    expect(served.code, served.err).toBe(3);
    expect(served.err).toMatch(/unfinished import.*flowstore import --resume/);
    const verified = await run(["verify", "--data", data]);
    expect(verified.code).toBe(1);
    // verify prints a line per failing partition (a half-imported one may be among them), then the total.
    expect(JSON.parse(verified.out.trim().split("\n").at(-1)!)).toMatchObject({ ok: false, unfinishedImport: true });
    const again = await run(["import", "--in", exportFile, "--data", data]);
    expect(again.code).toBe(2);
    expect(again.err).toMatch(/--resume/);

    const resumed = await run(["import", "--resume", "--in", exportFile, "--data", data]);
    expect(resumed.code, resumed.err).toBe(0);
    const kv = LmdbKv.open(data);
    try {
      expect(await dumpAll(kv)).toEqual(clean);
    } finally {
      await kv.close();
    }
    expect((await run(["verify", "--data", data])).code).toBe(0);
    expect((await run(["import", "--resume", "--in", exportFile, "--data", data])).code).toBe(2); // nothing left to resume
  },
  300_000,
);
