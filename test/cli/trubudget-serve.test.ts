/** `flowstore serve --trubudget-api` / FLOWSTORE_TRUBUDGET_API: TruBudget's API at /api only when asked. */
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { freePort } from "../support/ports.js";
import { run, waitHealthy } from "./spawn.js";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";

let dir: string;
beforeEach(async () => {
  dir = await makeTempDir("tb");
});
afterEach(async () => {
  await removeTempDir(dir);
});

/** Serves a memory store with `args` and `env`; the status of GET /api/readiness and of a TruBudget log in. */
async function probe(args: string[], env: Record<string, string>): Promise<{ readiness: number; login: number }> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const r = run(["serve", "--port", String(port), "--store", "memory:", ...args], { FLOWSTORE_DATA: join(dir, "d"), FLOWSTORE_ROOT_PASSWORD: "root password 1", ...env });
  try {
    await waitHealthy(base, r);
    const readiness = (await fetch(`${base}/api/readiness`)).status;
    const login = await fetch(`${base}/api/user.authenticate`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ apiVersion: "1.0", data: { user: { id: "root", password: "root password 1" } } }),
    });
    r.child.kill("SIGTERM");
    expect((await r.exit).code).toBe(0);
    return { readiness, login: login.status };
  } finally {
    r.child.kill("SIGKILL");
  }
}

// Each case starts a server process: slow on a loaded machine, so each has its own test and time.
it("does not serve TruBudget's API by default", async () => {
  expect(await probe([], {})).toEqual({ readiness: 404, login: 404 });
}, 120_000);

it("serves TruBudget's API with --trubudget-api", async () => {
  expect(await probe(["--trubudget-api"], {})).toEqual({ readiness: 200, login: 200 });
}, 120_000);

it("serves TruBudget's API with FLOWSTORE_TRUBUDGET_API=1, and not with 0", async () => {
  expect(await probe([], { FLOWSTORE_TRUBUDGET_API: "1" })).toEqual({ readiness: 200, login: 200 });
  expect(await probe([], { FLOWSTORE_TRUBUDGET_API: "0" })).toEqual({ readiness: 404, login: 404 });
}, 180_000);

it("refuses a variable that is neither 1 nor 0 as a usage error", async () => {
  const r = run(["serve", "--store", "memory:"], { FLOWSTORE_DATA: join(dir, "d"), FLOWSTORE_ROOT_PASSWORD: "root password 1", FLOWSTORE_TRUBUDGET_API: "perhaps" });
  expect((await r.exit).code).toBe(2);
  expect(r.err()).toContain("FLOWSTORE_TRUBUDGET_API");
}, 120_000);

/** Serves with TruBudget's API and `args`; the status of root creating a user whose password is "test" (TruBudget's provisioning data), and the process's log. */
async function shortPassword(args: string[], env: Record<string, string> = {}): Promise<{ created: number; log: string }> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const r = run(["serve", "--port", String(port), "--store", "memory:", "--trubudget-api", "--organization", "KfW", ...args], {
    FLOWSTORE_DATA: join(dir, "d"),
    FLOWSTORE_ROOT_PASSWORD: "root password 1",
    ...env,
  });
  try {
    await waitHealthy(base, r);
    const post = (path: string, data: unknown, token?: string) =>
      fetch(`${base}/api/${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify({ apiVersion: "1.0", data }),
      });
    const token = ((await (await post("user.authenticate", { user: { id: "root", password: "root password 1" } })).json()) as { data: { user: { token: string } } }).data.user
      .token;
    const created = (await post("global.createUser", { user: { id: "mstein", displayName: "Mauro", organization: "KfW", password: "test" } }, token)).status;
    r.child.kill("SIGTERM");
    expect((await r.exit).code).toBe(0);
    return { created, log: r.out() + r.err() };
  } finally {
    r.child.kill("SIGKILL");
  }
}

it("accepts TruBudget's test passwords only with --trubudget-test-passwords (or its variable), logging it; refused by default", async () => {
  const standard = await shortPassword([]);
  expect(standard.created).toBe(400);
  expect(standard.log).not.toContain("--trubudget-test-passwords");
  const test = await shortPassword(["--trubudget-test-passwords"]);
  expect(test.created).toBe(200);
  expect(test.log).toContain("accepts any non-empty password");
  expect((await shortPassword([], { FLOWSTORE_TRUBUDGET_TEST_PASSWORDS: "1" })).created).toBe(200);
}, 240_000);
