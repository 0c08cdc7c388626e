#!/usr/bin/env node
/**
 * Installs the two packages the quick start leaves out, each from its own lock file, when their
 * node_modules is missing or older than the lock file:
 *
 * - test/  the third-party tools only tests use (Redocly and Spectral, a Sigstore verifier, openapi-fetch,
 *          playwright-core; openapi-typescript is the root's: the build generates the client's types with it);
 * - bench/ the benchmark peers and load generator (better-sqlite3, compiled by node-gyp here, and autocannon).
 *
 * `npm test`, `npm run test:fast`, `npm run lint` and `npm run bench` run it first (their `pre` scripts), and
 * .ci/run through them, so what a test needs is always there; `npm install && npm start` never pays for it.
 * Usage: node scripts/extras.mjs [test] [bench]   (both when none is named)
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const wanted = process.argv.slice(2);
for (const name of wanted.length ? wanted : ["test", "bench"]) {
  const dir = join(root, name);
  const lock = join(dir, "package-lock.json");
  // npm writes node_modules/.package-lock.json after each install: the tree is current when it lists the
  // same packages at the same versions as the lock file (optional ones aside: another platform's are skipped).
  const installed = join(dir, "node_modules", ".package-lock.json");
  const versions = (file) =>
    JSON.stringify(
      Object.entries(JSON.parse(readFileSync(file, "utf8")).packages)
        .filter(([path, p]) => path.startsWith("node_modules/") && !p.optional)
        .map(([path, p]) => `${path}@${p.version}`)
        .sort(),
    );
  if (existsSync(installed) && versions(installed) === versions(lock)) continue;
  process.stderr.write(`${name}/: installing its dependencies (npm ci)\n`);
  execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: dir, stdio: "inherit" });
}
