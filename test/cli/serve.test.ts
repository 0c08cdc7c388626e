/** The real `flowstore` process: serve, graceful shutdown, refusal without root (leaving no file), operator commands, --help, --version. */
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { request } from "node:http";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Command, CommanderError } from "commander";
import { buildProgram } from "../../src/cli/program.js";
import { FlowstoreClient } from "../../src/client/index.js";
import { freePort } from "../support/ports.js";
import { VERSION } from "../../src/cli/version.js";
import { ROOT, run, waitHealthy } from "./spawn.js";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";
import { eventually } from "../support/eventually.js";

let dir: string;
beforeEach(async () => {
  dir = await makeTempDir("cli");
});
afterEach(async () => {
  await removeTempDir(dir);
});

describe("flowstore serve", () => {
  it("serves the LMDB store in --data, shuts down cleanly, and operator commands work on it between runs", async () => {
    const data = join(dir, "data");
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    let token: string;
    const first = run(["serve", "--port", String(port)], { FLOWSTORE_DATA: data, FLOWSTORE_ROOT_PASSWORD: "root password 1" });
    try {
      await waitHealthy(base, first);
      const c = new FlowstoreClient({ baseUrl: base });
      token = (await c.login("root", "root password 1")).token;
      expect((await c.users.list()).items.map((u) => u.id)).toEqual(["root"]);
      expect((await stat(join(data, "jwt-secret"))).mode & 0o777).toBe(0o600);
      first.child.kill("SIGTERM");
      expect(await first.exit).toEqual({ code: 0, signal: null });
      expect(first.out()).toMatch(/shutting down/);
      expect(first.out()).toMatch(/"msg":"stopped"/);
      expect(first.out()).toContain(`http://127.0.0.1:${port}`);
      expect(first.out()).not.toContain("root password 1");
    } finally {
      first.child.kill("SIGKILL");
    }

    // operator commands on the stopped server's store, as the system actor
    const add = run(["user", "add", "bob", "--display-name", "Bob", "--data", data], {}, "bob password 1\n");
    expect((await add.exit).code).toBe(0);
    expect(JSON.parse(add.out())).toMatchObject({ id: "bob", displayName: "Bob", enabled: true });
    expect(add.out()).not.toContain("bob password 1");
    const group = run(["group", "add", "team", "--member", "bob", "--data", data]);
    expect((await group.exit).code).toBe(0);
    expect(JSON.parse(group.out())).toMatchObject({ id: "team", members: ["bob"] });
    const passwd = run(["user", "passwd", "bob", "--data", data], { FLOWSTORE_PASSWORD: "bob password 2" });
    expect((await passwd.exit).code).toBe(0);

    // second start: the store is not empty, so no root password is needed; the secret persisted
    const second = run(["serve", "--port", String(port)], { FLOWSTORE_DATA: data });
    try {
      await waitHealthy(base, second);
      const asRoot = new FlowstoreClient({ baseUrl: base, token });
      expect((await asRoot.users.get("bob")).groups).toEqual(["team"]);
      const bob = new FlowstoreClient({ baseUrl: base });
      await expect(bob.login("bob", "bob password 1")).rejects.toMatchObject({ status: 401 });
      await bob.login("bob", "bob password 2");
      expect((await bob.groups.get("team")).members).toEqual(["bob"]);
      second.child.kill("SIGTERM");
      expect((await second.exit).code).toBe(0);
    } finally {
      second.child.kill("SIGKILL");
    }
  });

  it("finishes an in-flight request after SIGTERM before exiting", async () => {
    const port = await freePort();
    const r = run(["serve", "--port", String(port), "--store", "memory:"], { FLOWSTORE_DATA: join(dir, "d"), FLOWSTORE_ROOT_PASSWORD: "root password 1" });
    try {
      await waitHealthy(`http://127.0.0.1:${port}`, r);
      const body = JSON.stringify({ username: "root", password: "root password 1" });
      const req = request({
        host: "127.0.0.1",
        port,
        method: "POST",
        path: "/api/v1/auth/token",
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), "x-request-id": "inflight-1" },
      });
      const response = new Promise<{ status: number; text: string }>((res, rej) => {
        req.on("response", (m) => {
          let text = "";
          m.on("data", (d) => (text += d));
          m.on("end", () => res({ status: m.statusCode ?? 0, text }));
        });
        req.on("error", rej);
      });
      req.write(body.slice(0, 5)); // headers and part of the body: the request is in flight
      await eventually(() => r.out().includes('"reqId":"inflight-1"'), { what: "the server to log the request in flight" });
      r.child.kill("SIGTERM");
      await eventually(() => r.out().includes("shutting down"), { what: "the server to log that it is shutting down" });
      req.end(body.slice(5));
      const answer = await response;
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.text).token).toEqual(expect.any(String));
      expect(await r.exit).toEqual({ code: 0, signal: null });
      await expect(fetch(`http://127.0.0.1:${port}/health`)).rejects.toThrow();
    } finally {
      r.child.kill("SIGKILL");
    }
  });

  it("refuses to start on an empty store without FLOWSTORE_ROOT_PASSWORD, and leaves no file behind", async () => {
    const port = await freePort();
    const r = run(["serve", "--port", String(port), "--store", "memory:", "--data", join(dir, "d")]);
    const { code } = await r.exit;
    expect(code).toBe(2);
    expect(r.err()).toMatch(/FLOWSTORE_ROOT_PASSWORD/);
    expect(existsSync(join(dir, "d"))).toBe(false);
    // The default LMDB store in a --data that already holds a file of the operator's: only that file stays.
    const data = join(dir, "lmdb");
    await mkdir(data);
    await writeFile(join(data, "notes.txt"), "the operator's");
    const lmdb = run(["serve", "--port", String(port), "--data", data]);
    expect((await lmdb.exit).code).toBe(2);
    expect(lmdb.err()).toMatch(/FLOWSTORE_ROOT_PASSWORD/);
    expect(await readdir(data)).toEqual(["notes.txt"]);
  });

  it("takes its settings from the environment and refuses bad ones", async () => {
    const r = run(["serve", "--store", "memory:"], { FLOWSTORE_PORT: "99999", FLOWSTORE_DATA: join(dir, "d"), FLOWSTORE_ROOT_PASSWORD: "root password 1" });
    expect((await r.exit).code).not.toBe(0);
    expect(r.err()).toMatch(/invalid port "99999"/);
  });
});

describe("operator commands", () => {
  it("user add refuses a bad id, naming the field", async () => {
    const bad = run(["user", "add", "bad/id", "--store", "memory:"], { FLOWSTORE_PASSWORD: "some password" });
    expect((await bad.exit).code).toBe(2);
    expect(bad.err()).toMatch(/\(id\)/);
  });

  it("user add with no password anywhere says how to give it", async () => {
    const none = run(["user", "add", "ann", "--store", "memory:"], {}, "");
    expect((await none.exit).code).toBe(2);
    expect(none.err()).toMatch(/FLOWSTORE_PASSWORD/);
    expect(none.err()).toMatch(/stdin/);
  });

  it("--version answers the package's version without loading the command tree", async () => {
    const pkg = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as { version: string };
    expect(VERSION).toBe(pkg.version);
    const r = run(["--version"]);
    expect((await r.exit).code).toBe(0);
    expect(r.out()).toBe(`${pkg.version}\n`);
  });

  it("--store's help lists every store URL form", () => {
    const serve = buildProgram().commands.find((c) => c.name() === "serve")!;
    const help = serve.helpInformation();
    for (const form of ["memory:", "lmdb:<dir>", "redis://", "redis-sentinel://", "redis-cluster://", "postgres://"]) expect(help, form).toContain(form);
  });

  it("--help works on every command", async () => {
    const real = run(["--help"]);
    expect((await real.exit).code).toBe(0);
    expect(real.out()).toMatch(/^Usage: flowstore/);
    const commands = [
      ["serve"],
      ["user"],
      ["user", "add"],
      ["user", "disable"],
      ["user", "enable"],
      ["user", "passwd"],
      ["group"],
      ["group", "add"],
      ["group", "member"],
      ["group", "member", "add"],
    ];
    for (const args of commands) {
      let out = "";
      const program = buildProgram();
      const capture = (cmd: Command): void => {
        cmd.configureOutput({ writeOut: (s) => void (out += s), writeErr: (s) => void (out += s) });
        cmd.exitOverride();
        cmd.commands.forEach(capture);
      };
      capture(program);
      const err = await program.parseAsync(["node", "flowstore", ...args, "--help"]).catch((e: unknown) => e);
      expect(err, args.join(" ")).toBeInstanceOf(CommanderError);
      expect((err as CommanderError).exitCode).toBe(0);
      expect(out, args.join(" ")).toMatch(new RegExp(`^Usage: flowstore ${args.join(" ")}`));
    }
  });
});
