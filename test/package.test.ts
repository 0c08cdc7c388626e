/**
 * The package as a user gets it: a scratch project with `node_modules/flowstore` linked to this
 * repository imports `openFlowstore` from "flowstore" and the typed client from "flowstore/client" —
 * the README's two examples, taken from the README as written — type-checks them with tsc (`nodenext`)
 * and runs them with node against the built `dist/` (the client one against a live server).
 *
 * `dist/` is built by `npm ci` (the `prepare` script); without it the test is skipped, except under
 * CI=true, where it fails.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryKv } from "../src/kv/memory.js";
import { ROOT_PASSWORD, startServer, type Running } from "./http/harness.js";
import { makeTempDirSync, removeTempDirSync } from "./support/temp-dir.js";

const run = promisify(execFile);
const repo = resolve(import.meta.dirname, "..");
const built = ["dist/index.js", "dist/index.d.ts", "dist/client/index.js", "dist/client/index.d.ts"].every((f) => existsSync(join(repo, f)));
if (!built && process.env.CI === "true") throw new Error("dist/ is missing: the package test needs the build (npm ci runs it)");

/** The ```ts block of the README that imports from `from`. */
function readmeExample(from: string): string {
  const blocks = [...readFileSync(join(repo, "README.md"), "utf8").matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const found = blocks.filter((b) => b.includes(`from "${from}";`));
  if (found.length !== 1) throw new Error(`the README should hold one example importing from "${from}", it holds ${found.length}`);
  return found[0]!;
}

describe.skipIf(!built)("the package from a scratch project", () => {
  let dir: string;
  let server: Running;
  const kv = new MemoryKv();

  beforeAll(async () => {
    dir = makeTempDirSync("scratch");
    mkdirSync(join(dir, "node_modules"));
    symlinkSync(repo, join(dir, "node_modules", "flowstore"), "dir");
    symlinkSync(join(repo, "node_modules", "@types"), join(dir, "node_modules", "@types"), "dir");
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "scratch", private: true, type: "module" }));
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { target: "ES2022", module: "nodenext", moduleResolution: "nodenext", strict: true, skipLibCheck: true, types: ["node"], outDir: "out" },
        include: ["*.ts"],
      }),
    );
    writeFileSync(join(dir, "library.ts"), readmeExample("flowstore"));
    writeFileSync(join(dir, "client.ts"), readmeExample("flowstore/client"));
    server = await startServer(kv, { webRoot: false });
  });

  afterAll(async () => {
    await server?.close();
    await kv.close();
    if (dir) removeTempDirSync(dir);
  });

  it("type-checks the README's examples with tsc (nodenext) and runs them with node", async () => {
    const tsc = join(repo, "node_modules", "typescript", "bin", "tsc");
    await run(process.execPath, [tsc, "-p", dir]).catch((e: { stdout?: string }) => {
      throw new Error(`tsc failed:\n${e.stdout}`);
    });

    const library = await run(process.execPath, [join(dir, "out", "library.js")], { cwd: dir });
    expect(library.stdout).toContain("Foundation");
    expect(library.stdout).toMatch(/^order-1-\d+ true$/m);
    expect(existsSync(join(dir, "data"))).toBe(true); // the example's lmdb:./data

    const env = { ...process.env, FLOWSTORE_URL: server.base, FLOWSTORE_ROOT_PASSWORD: ROOT_PASSWORD };
    const client = await run(process.execPath, [join(dir, "out", "client.js")], { cwd: dir, env });
    expect(client.stdout.trim().split("\n")).toEqual([expect.stringMatching(/^\S+ 1$/), "400"]);
  });

  it("resolves only what package.json exports", async () => {
    const probe = `import("flowstore/dist/kv/memory.js").then(() => console.log("reached"), (e) => console.log(e.code))`;
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", probe], { cwd: dir });
    expect(stdout.trim()).toBe("ERR_PACKAGE_PATH_NOT_EXPORTED");
  });
});
