/**
 * README.md runs top to bottom as written: its ```sh blocks, taken from the README in order, run the way a
 * newcomer runs them, against this clone's build (dist/, as `npm start` serves it; nothing is installed
 * here), in a scratch directory of their own (the files the examples write land there).
 *
 * - The block marked `run in the background` (the quick start's `npm start`) is started first, as one
 *   shell, and waited for with GET /health; it is stopped (SIGTERM, as Ctrl-C) at the end.
 * - Every other block, but those marked `not run by test/docs/readme-run.test.ts` in the comment before
 *   it (installs, the test command itself, Docker, placeholders), runs in one `bash -e`, in order, so
 *   the variables one block sets serve the next.
 * - Only what the README itself documents is set: FLOWSTORE_PORT (a free port) and FLOWSTORE_DATA (the
 *   scratch directory's ./data); `flowstore` is on the PATH, as `npm link` puts it.
 * - Every curl the blocks make is the real curl, behind a shim on the PATH that records each answer's
 *   status and body. An answer must be a 2xx unless the comment on its line states its status
 *   (`# 409: still has 1 provider child`); a comment holding a JSON object (`# {"ok":true,"checked":5}`)
 *   is what the answer's body must match.
 */
import { spawn, type ChildProcess, execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { chmod, copyFile, mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { afterAll, expect, it } from "vitest";
import { bindable, eventually, freePort, GiveUp, tempDir } from "../support/index.js";

const ROOT = resolve(import.meta.dirname, "../..");
const SKIP = "<!-- not run by test/docs/readme-run.test.ts";
const BACKGROUND = "<!-- run in the background by test/docs/readme-run.test.ts";

interface Block {
  /** The line of its opening fence (1-based). */
  readonly line: number;
  readonly code: string;
  readonly mark: "run" | "skip" | "background";
}

/** The README's ```sh blocks in order, each with what the comment line right before it says of it. */
function shellBlocks(markdown: string): Block[] {
  const lines = markdown.split("\n");
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== "```sh") continue;
    const line = i + 1;
    const before = lines[i - 1] === "" ? (lines[i - 2] ?? "") : (lines[i - 1] ?? "");
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== "```"; i++) body.push(lines[i]!);
    const mark = before.startsWith(SKIP) ? "skip" : before.startsWith(BACKGROUND) ? "background" : "run";
    blocks.push({ line, code: body.join("\n"), mark });
  }
  return blocks;
}

interface Call {
  /** Where the curl is: README line and the command. */
  readonly where: string;
  /** The status its comment states, or null for "a 2xx". */
  readonly status: number | null;
  /** The JSON its comment says the body matches, if any. */
  readonly body: unknown;
}

/** Every curl of the blocks, in the order a shell runs them (no loops or functions in the README), with what its comment claims. */
function curlCalls(blocks: readonly Block[]): Call[] {
  const calls: Call[] = [];
  for (const b of blocks) {
    const lines = b.code.split("\n");
    for (let i = 0; i < lines.length; i++) {
      const start = i;
      let logical = lines[i]!;
      if (logical.trimStart().startsWith("#")) continue;
      // A command goes on past a backslash, and past the line end inside a quoted string (the project's JSON body).
      const open = (text: string): boolean => (text.replace(/\s#\s.*$/, "").match(/'/g)?.length ?? 0) % 2 === 1;
      while ((logical.endsWith("\\") || open(logical)) && i + 1 < lines.length) logical = `${logical.replace(/\\$/, "")} ${lines[++i]!}`;
      const comment = /\s#\s+(.*)$/.exec(logical)?.[1] ?? "";
      const status = /^(\d{3})\b/.exec(comment)?.[1];
      const json = /(\{.*\})/.exec(comment)?.[1];
      for (const _ of logical.matchAll(/(^|[\s($])curl\s/g)) {
        calls.push({ where: `README.md:${b.line + 1 + start}: ${logical.trim()}`, status: status ? Number(status) : null, body: json ? JSON.parse(json) : undefined });
      }
    }
  }
  return calls;
}

const dir = tempDir("readme");
let server: ChildProcess | undefined;
afterAll(() => {
  if (server?.pid && server.exitCode === null && server.signalCode === null) process.kill(-server.pid, "SIGKILL");
});

it("README.md's shell blocks run as written against a fresh server, each answer as the README says", async () => {
  const blocks = shellBlocks(readFileSync(join(ROOT, "README.md"), "utf8"));
  const background = blocks.filter((b) => b.mark === "background");
  expect(background, "one block starts the server").toHaveLength(1);
  const run = blocks.filter((b) => b.mark === "run");
  expect(run.length).toBeGreaterThan(3);

  // The scratch directory a newcomer's shell is in: the package (for npm start) and its build.
  const cwd = dir();
  await copyFile(join(ROOT, "package.json"), join(cwd, "package.json"));
  await symlink(join(ROOT, "dist"), join(cwd, "dist"));
  const bin = join(cwd, ".bin");
  await mkdir(bin);
  await writeFile(join(bin, "flowstore"), `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, "dist/cli/main.js")}" "$@"\n`);
  const realCurl = execFileSync("sh", ["-c", "command -v curl"], { encoding: "utf8" }).trim();
  const log = join(cwd, ".curl-log");
  await writeFile(log, "");
  await writeFile(
    join(bin, "curl"),
    [
      "#!/usr/bin/env bash",
      "# the real curl; records each answer's status and body for test/docs/readme-run.test.ts",
      "set -o pipefail",
      `n=$(( $(wc -l < '${log}') + 1 ))`,
      `'${realCurl}' -D '${log}'.$n.headers "$@" | tee '${log}'.$n.body`,
      "rc=$?",
      `awk '/^HTTP\\// { s = $2 } END { print (s == "" ? "000" : s) }' '${log}'.$n.headers >> '${log}'`,
      "exit $rc",
      "",
    ].join("\n"),
  );
  await chmod(join(bin, "flowstore"), 0o755);
  await chmod(join(bin, "curl"), 0o755);

  const port = await freePort();
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("FLOWSTORE_")) env[k] = v;
  Object.assign(env, { FLOWSTORE_PORT: String(port), FLOWSTORE_DATA: join(cwd, "data"), PATH: `${bin}:${env.PATH}` });

  // The server, as the quick start starts it; its own process group, so the stop reaches npm and the server.
  let serverOut = "";
  server = spawn("bash", ["-e", "-c", background[0]!.code], { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  server.stdout!.on("data", (d) => (serverOut += d));
  server.stderr!.on("data", (d) => (serverOut += d));
  const serverExit = new Promise<number | null>((res) => server!.on("exit", (code) => res(code)));
  let exited = false;
  void serverExit.then(() => (exited = true));
  await eventually(
    async () => {
      if (exited) throw new GiveUp(`the README's server exited: ${serverOut}`);
      return (await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.status === 200;
    },
    { what: `GET /health on port ${port} to answer 200`, timeoutMs: 60_000, intervalMs: 100 },
  );

  // The other blocks, in order, in one shell.
  const script = run.map((b) => `# README.md:${b.line}\n${b.code}`).join("\n");
  const shell = await new Promise<{ code: number | null; out: string }>((res) => {
    const child = spawn("bash", ["-e", "-x", "-c", script], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    child.on("exit", (code) => res({ code, out }));
  });
  expect(shell.code, shell.out).toBe(0);

  const expected = curlCalls(run);
  const statuses = (await readFile(log, "utf8")).split("\n").filter((l) => l !== "");
  expect(statuses.length, `the README's ${expected.length} curl calls, each answered:\n${shell.out}`).toBe(expected.length);
  for (const [i, call] of expected.entries()) {
    const status = Number(statuses[i]);
    const body = await readFile(`${log}.${i + 1}.body`, "utf8");
    if (call.status === null) expect(status >= 200 && status < 300, `${call.where}\nanswered ${status}: ${body}`).toBe(true);
    else expect(status, `${call.where}\nanswered: ${body}`).toBe(call.status);
    if (call.body !== undefined) expect(JSON.parse(body), call.where).toMatchObject(call.body as object);
  }

  // Ctrl-C: the server stops, and nothing holds the port.
  process.kill(-server.pid!, "SIGINT");
  await serverExit;
  await eventually(() => bindable(port), { what: `port ${port} to be free`, timeoutMs: 30_000 });
}, 180_000);
