/**
 * Access tokens across processes on one LMDB directory (issue 25, the GET's identity reads): each server
 * keeps, per token, what the user record, the token version and the session decided, and reads them again
 * only once the identity partition's commit sequence moved (kv partitionVersionSync). Two real
 * `flowstore serve` processes on the same directory: whatever one of them changes (a logout, a logout-all,
 * a disable, a password reset, a group joined), the other, whose answers for the token were cached, honours
 * at its very next request.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { API } from "../../src/client/core.js";
import { FlowstoreClient } from "../../src/client/index.js";
import { run, waitHealthy, type Run } from "../cli/spawn.js";
import { freePort } from "../support/ports.js";
import { makeTempDirSync, removeTempDirSync } from "../support/temp-dir.js";

const ROOT_PASSWORD = "root password of the token processes test";
const env = { FLOWSTORE_JWT_SECRET: "a token secret for the token processes test, 0123456789", FLOWSTORE_ROOT_PASSWORD: ROOT_PASSWORD, FLOWSTORE_LOG_LEVEL: "warn" };
const PASSWORD = "dora password 1";

let dir: string;
const procs: Run[] = [];
beforeAll(() => {
  dir = makeTempDirSync("tokens-processes");
});
afterAll(async () => {
  for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
  await Promise.all(procs.map((p) => p.exit));
  removeTempDirSync(dir);
});

async function serve(): Promise<{ base: string; root: FlowstoreClient }> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const proc = run(["serve", "--port", String(port), "--data", dir], env);
  procs.push(proc);
  await waitHealthy(base, proc);
  const root = new FlowstoreClient({ baseUrl: base });
  await root.login("root", ROOT_PASSWORD);
  return { base, root };
}

it("a logout, a logout-all, a disable, a password reset or a group joined in one process holds in the other at its next request", async () => {
  const a = await serve();
  const b = await serve();
  /** Dora's GET /me on server A with `token`: the status, and her groups when it is 200. */
  const onA = async (token: string): Promise<{ status: number; groups?: string[] }> => {
    const r = await fetch(`${a.base}${API}/me`, { headers: { authorization: `Bearer ${token}` } });
    const body = (await r.json()) as { groups?: string[] };
    return r.ok ? { status: r.status, groups: body.groups } : { status: r.status };
  };
  /** A session of Dora's, logged in through B, and A's answer to it twice (the second from what A kept). */
  const session = async (): Promise<FlowstoreClient> => {
    const c = new FlowstoreClient({ baseUrl: b.base });
    await c.login("dora", PASSWORD);
    expect((await onA(c.token!)).status).toBe(200);
    expect((await onA(c.token!)).status).toBe(200);
    return c;
  };
  await b.root.users.create({ id: "dora", displayName: "Dora", password: PASSWORD });

  // a group joined through B: A's next answer names it
  const first = await session();
  const second = await session();
  await b.root.groups.create({ id: "crew", displayName: "Crew", members: ["dora"] });
  expect(await onA(first.token!)).toEqual({ status: 200, groups: ["crew"] });

  // a logout through B ends that session on A, and only it
  await first.logout();
  expect((await onA(first.token!)).status).toBe(401);
  expect((await onA(second.token!)).status).toBe(200);

  // a logout-all through B ends every session on A
  const third = await session();
  await second.logoutAll();
  expect((await onA(second.token!)).status).toBe(401);
  expect((await onA(third.token!)).status).toBe(401);

  // Dora disabled through B: refused on A at once, and still after she is enabled again
  const fourth = await session();
  await b.root.users.disable("dora");
  expect((await onA(fourth.token!)).status).toBe(401);
  await b.root.users.enable("dora");
  expect((await onA(fourth.token!)).status).toBe(401);

  // her password reset through B: the session's token refused on A at once
  const fifth = await session();
  await b.root.users.resetPassword("dora", "dora password 2");
  expect((await onA(fifth.token!)).status).toBe(401);
});
