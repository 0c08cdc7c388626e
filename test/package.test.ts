/**
 * The two packages as a user gets them: each packed with `npm pack` into a tarball and installed from it
 * with npm into a scratch project of its own, then the README's examples, taken from the README as written,
 * type-checked with tsc and run with node.
 *
 * - `@flowstore/client` (packages/client): installs nothing but itself (no server dependency), type-checks
 *   under `moduleResolution` node16 and bundler (the README's example, and a consumer of its generated
 *   `@flowstore/client/openapi` types), and runs its example against a live server.
 * - `flowstore` (the server, the library, the CLI): installs its dependencies from npm's cache, type-checks
 *   (nodenext), and runs the library example twice over the same ./data (a second run must not crash), and
 *   resolves only what its package.json exports.
 *
 * Both tarballs hold the build (`npm ci` runs it: the `prepare` script); without it the test is skipped,
 * except under CI=true, where it fails.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryKv } from "../src/kv/memory.js";
import { ROOT_PASSWORD, startServer, type Running } from "./http/harness.js";
import { makeTempDirSync, removeTempDirSync } from "./support/temp-dir.js";

const run = promisify(execFile);
const repo = resolve(import.meta.dirname, "..");
const built = ["dist/index.js", "dist/index.d.ts", "packages/client/dist/index.js", "packages/client/dist/index.d.ts"].every((f) => existsSync(join(repo, f)));
if (!built && process.env.CI === "true") throw new Error("dist/ is missing: the package test needs the build (npm ci runs it)");

/** The ```ts block of the README that imports from `from`. */
function readmeExample(from: string): string {
  const blocks = [...readFileSync(join(repo, "README.md"), "utf8").matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const found = blocks.filter((b) => b.includes(`from "${from}";`));
  if (found.length !== 1) throw new Error(`the README should hold one example importing from "${from}", it holds ${found.length}`);
  return found[0]!;
}

const npm = (args: string[], cwd: string) => run("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], { cwd, maxBuffer: 16 << 20 });

/** Packs the package in `workspace` (the root when undefined) into `dir`, without building again; the tarball's path. */
async function pack(dir: string, workspace?: string): Promise<string> {
  const { stdout } = await npm(["pack", "--ignore-scripts", "--json", "--pack-destination", dir, ...(workspace ? ["-w", workspace] : [])], repo);
  return join(dir, (JSON.parse(stdout) as { filename: string }[])[0]!.filename);
}

/** A scratch project: package.json, a tsconfig with the given resolution, its source files (name: source). */
function project(dir: string, resolution: "nodenext" | "node16" | "bundler", files: Record<string, string>): void {
  mkdirSync(dir, { recursive: true });
  if (!existsSync(join(dir, "package.json"))) writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "scratch", private: true, type: "module" }));
  const module = resolution === "bundler" ? "esnext" : resolution;
  const options = { target: "ES2022", module, moduleResolution: resolution, strict: true, skipLibCheck: false, types: ["node"], outDir: "out" };
  writeFileSync(join(dir, `tsconfig.${resolution}.json`), JSON.stringify({ compilerOptions: options, files: Object.keys(files) }));
  for (const [file, source] of Object.entries(files)) writeFileSync(join(dir, file), source);
}

/**
 * A consumer of `@flowstore/client/openapi`, the types the build generates from the served document (they are not
 * committed: scripts/openapi-types.ts): an operation by its path, a named schema under its own name and as a component.
 */
const OPENAPI_CONSUMER = `import type { components, operations, paths, Project } from "@flowstore/client/openapi";
type Create = paths["/api/v1/projects"]["post"];
export const created: Create extends operations["createProject"] ? true : false = true;
export const named: components["schemas"]["Project"] extends Project ? true : false = true;
export const id: Project["id"] = "p1";
`;

/** @types/node for the examples' process.env (linked after npm install, which would prune it). */
const linkNodeTypes = (dir: string) => {
  // The repository's own @types, in place of any a dependency installed (fast-csv, under exceljs, brings @types/node).
  rmSync(join(dir, "node_modules", "@types"), { recursive: true, force: true });
  symlinkSync(join(repo, "node_modules", "@types"), join(dir, "node_modules", "@types"), "dir");
};

const tsc = (dir: string, resolution: string, extra: string[] = []) =>
  run(process.execPath, [join(repo, "node_modules", "typescript", "bin", "tsc"), "-p", join(dir, `tsconfig.${resolution}.json`), ...extra]).catch((e: { stdout?: string }) => {
    throw new Error(`tsc (${resolution}) failed:\n${e.stdout}`);
  });

describe.skipIf(!built)("the packages, installed from their tarballs", () => {
  let dir: string;
  let server: Running;
  const kv = new MemoryKv();

  beforeAll(async () => {
    dir = makeTempDirSync("packages");
    server = await startServer(kv, { webRoot: false });
  });

  afterAll(async () => {
    await server?.close();
    await kv.close();
    if (dir) removeTempDirSync(dir);
  });

  it("@flowstore/client installs alone, type-checks under node16 and bundler, and runs the README's example", async () => {
    const tarball = await pack(dir, "@flowstore/client");
    const app = join(dir, "client-app");
    const files = { "client.ts": readmeExample("@flowstore/client"), "openapi.ts": OPENAPI_CONSUMER };
    project(app, "node16", files);
    project(app, "bundler", files);
    await npm(["install", "--offline", tarball], app);
    // nothing of the server (or anything else) comes with it
    expect(readdirSync(join(app, "node_modules")).filter((f) => !f.startsWith("."))).toEqual(["@flowstore"]);
    expect(readdirSync(join(app, "node_modules", "@flowstore"))).toEqual(["client"]);
    linkNodeTypes(app);

    await tsc(app, "bundler", ["--noEmit"]);
    await tsc(app, "node16");
    const env = { ...process.env, FLOWSTORE_URL: server.base, FLOWSTORE_ROOT_PASSWORD: ROOT_PASSWORD };
    const { stdout } = await run(process.execPath, [join(app, "out", "client.js")], { cwd: app, env });
    expect(stdout.trim().split("\n")).toEqual([expect.stringMatching(/^\S+ 1$/), "400"]);
  }, 300_000);

  it("flowstore installs with its dependencies, and the library example runs twice over the same data", async () => {
    const tarball = await pack(dir);
    const app = join(dir, "library-app");
    project(app, "nodenext", { "library.ts": readmeExample("flowstore") });
    // its dependencies come from npm's cache (npm ci filled it), the registry only for what is missing
    await npm(["install", "--prefer-offline", tarball], app);
    linkNodeTypes(app);
    await tsc(app, "nodenext");
    for (let i = 0; i < 2; i++) {
      const library = await run(process.execPath, [join(app, "out", "library.js")], { cwd: app });
      expect(library.stdout).toContain("Foundation");
      expect(library.stdout).toMatch(/^order-1-\d+ true$/m);
    }
    expect(existsSync(join(app, "data"))).toBe(true); // the example's lmdb:./data

    const probe = `import("flowstore/dist/kv/memory.js").then(() => console.log("reached"), (e) => console.log(e.code))`;
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", probe], { cwd: app });
    expect(stdout.trim()).toBe("ERR_PACKAGE_PATH_NOT_EXPORTED");
  }, 600_000);
});
