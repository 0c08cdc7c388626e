/**
 * The real `flowstore` process: its exit codes (0 ok, 1 verification failed, 2 usage, 3 configuration
 * or I/O), stores that must exist, data directories named like `mktemp -d`'s (with a dot), and the
 * progress of long commands (plain lines off a terminal, a bar with its total and ETA on one).
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, stat } from "node:fs/promises";
import { createServer, type AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ROOT, run } from "./spawn.js";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";

let dir: string;
let dotted: string;
beforeAll(async () => {
  dir = await makeTempDir("exit");
  // what `mktemp -d` makes: /tmp/tmp.X1y2Z3 (lmdb-js takes a path with an extension for a file)
  dotted = await mkdtemp(join(dir, "tmp."));
});
afterAll(async () => removeTempDir(dir));

const cli = async (args: string[], env: Record<string, string> = {}) => {
  const r = run(args, { FLOWSTORE_DATA: "", ...env });
  const { code } = await r.exit;
  return { code, out: r.out(), err: r.err() };
};

it("usage errors exit 2 with a clear message: a log level that does not exist, a bad count", async () => {
  const loud = await cli(["serve", "--log-level", "loud"]);
  expect(loud.code).toBe(2);
  expect(loud.err).toMatch(/option '--log-level <level>' argument 'loud' is invalid\. Allowed choices are fatal, error, warn, info, debug, trace, silent/);
  expect(loud.err).not.toMatch(/Usage:/);
  const fromEnv = await cli(["serve"], { FLOWSTORE_LOG_LEVEL: "loud" });
  expect(fromEnv.code).toBe(2);
  expect(fromEnv.err).toContain("value 'loud' from env 'FLOWSTORE_LOG_LEVEL' is invalid");
  const bad = await cli(["demo", "--data", join(dir, "never"), "--projects", "many"]);
  expect(bad.code).toBe(2);
  expect(bad.err).toContain("--projects must be an integer");
  expect((await cli(["verify", "--no-such-option"])).code).toBe(2);
  expect((await cli(["--help"])).out).toContain("Exit codes: 0 ok, 1 verification failed, 2 usage");
});

it("the webhook lookup bounds are checked at start: a bad value from the environment or an option exits 2 naming both", async () => {
  const data = join(dir, "lookups");
  for (const [env, args, says] of [
    [{ FLOWSTORE_WEBHOOK_LOOKUPS: "0" }, [], "--webhook-lookups (FLOWSTORE_WEBHOOK_LOOKUPS) must be an integer of at least 1"],
    [{ FLOWSTORE_WEBHOOK_LOOKUPS: "many" }, [], "--webhook-lookups (FLOWSTORE_WEBHOOK_LOOKUPS) must be an integer of at least 1"],
    // As many as libuv has threads: names that never answer would hold them all.
    [
      { UV_THREADPOOL_SIZE: "4" },
      ["--webhook-lookups", "4"],
      "--webhook-lookups (FLOWSTORE_WEBHOOK_LOOKUPS) must be below libuv's thread pool size (UV_THREADPOOL_SIZE, 4 here), not 4",
    ],
    [{ FLOWSTORE_WEBHOOK_LOOKUP_TIMEOUT_MS: "0" }, [], "--webhook-lookup-timeout-ms (FLOWSTORE_WEBHOOK_LOOKUP_TIMEOUT_MS) must be an integer of at least 1"],
  ] as const) {
    const r = await cli(["serve", "--data", data, ...args], { ...env });
    expect(r.code, r.err).toBe(2);
    expect(r.err).toContain(says);
  }
  // Nothing was created: the values are checked before the store is opened.
  expect(existsSync(data)).toBe(false);
});

it("a reader that stops early (`flowstore serve --help | head -1`) ends the command quietly: no EPIPE stack trace", async () => {
  const r = run(["serve", "--help"]);
  // The reading end of the output pipe is closed before the command writes a byte: every write it makes meets EPIPE,
  // as the writes after the first line do under `| head -1` (where it depends on when head exits).
  r.child.stdout!.destroy();
  const { code } = await r.exit;
  expect(r.err()).toBe("");
  expect(code).toBe(0);
});

it("a command that reads a store refuses a missing one (exit 3) and creates nothing", async () => {
  const typo = join(dir, "typo");
  for (const args of [["verify"], ["export"], ["user", "enable", "bob"], ["keys", "rotate"]]) {
    const r = await cli([...args, "--data", typo]);
    expect(r.code, args.join(" ")).toBe(3);
    expect(r.err).toContain(`there is no store in ${typo}: the directory does not exist`);
    expect(existsSync(typo)).toBe(false);
  }
  const empty = join(dir, "empty");
  await mkdir(empty);
  const r = await cli(["verify", "--data", empty]);
  expect(r.code).toBe(3);
  expect(r.err).toContain(`${empty} holds no flowstore store`);
});

it("works in a dotted data directory, with progress lines off a terminal, and a port in use exits 3", async () => {
  const demo = await cli(["demo", "--data", dotted, "--projects", "1", "--subprojects", "1", "--workflowitems", "3"], { FLOWSTORE_PROGRESS_SECONDS: "0" });
  expect(demo.code, demo.err).toBe(0);
  expect((await stat(dotted)).isDirectory()).toBe(true);
  expect(demo.err).toContain("created 1/3 workflowitems (33%)");
  expect(demo.err).toContain("created 3 workflowitems: done");
  const verified = await cli(["verify", "--data", dotted], { FLOWSTORE_PROGRESS_SECONDS: "0" });
  expect(verified.code, verified.err).toBe(0);
  expect(verified.err).toMatch(/^verified 1\/1 chained partitions \(100%\)/m);
  expect(JSON.parse(verified.out)).toMatchObject({ ok: true, chained: 1 });

  // serve opens the dotted directory, then cannot listen: a configuration / I/O failure
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
  try {
    const port = (taken.address() as AddressInfo).port;
    const serve = await cli(["serve", "--data", dotted, "--port", String(port)]);
    expect(serve.code).toBe(3);
    expect(serve.err).toContain("EADDRINUSE");
    expect(serve.err).not.toContain("Is a directory");
  } finally {
    await new Promise((r) => taken.close(r));
  }
});

const hasScript = (() => {
  try {
    execFileSync("script", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

it.skipIf(!hasScript)("on a terminal, verify draws a bar with its total and ETA", () => {
  // script(1) runs the command on a pseudo-terminal
  const command = `${process.execPath} --import tsx src/cli/main.ts verify --data '${dotted}'`;
  const out = execFileSync("script", ["-qec", command, "/dev/null"], { cwd: ROOT, encoding: "utf8", env: { ...process.env, FLOWSTORE_DATA: "" } });
  expect(out).toMatch(/verified \[[█░]+\] 100% \| 1\/1 chained partitions \| .* \| ETA /);
  // the demo of one project: 26 events (its closers are granted the close intent first, issue 29)
  expect(out).toContain("verified 1 chained partitions, 26 events: done");
});
