/**
 * Notifications are never lost across a SIGKILL (issue 14): a real server process commits an
 * assignment to a project's partition and is killed with SIGKILL before the commit reaches the ledger
 * and the change feed (dying-server.ts holds those two commits, so the kill lands exactly in that gap).
 * The real `flowstore serve` then starts on the same LMDB directory: its feed repair appends the
 * orphaned commit to the feed and the notification follower projects it into the assignee's inbox.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { FlowstoreClient } from "../../src/client/index.js";
import { run, waitHealthy } from "../cli/spawn.js";
import { freePort } from "../support/ports.js";
import { makeTempDirSync, removeTempDirSync } from "../support/temp-dir.js";
import { eventually } from "../support/eventually.js";

const SECRET = "a token secret for the kill test, long enough 0123456789";
const ROOT_PASSWORD = "root password kill";
let dir: string;
beforeAll(() => {
  dir = makeTempDirSync("notify-kill");
});
afterAll(() => {
  removeTempDirSync(dir);
});

it("a server SIGKILLed between a commit and its feed entry: the restarted server still notifies the assignee", async () => {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ["--import", "tsx", join(import.meta.dirname, "dying-server.ts"), dir, String(port)], {
    env: { ...process.env, FLOWSTORE_JWT_SECRET: SECRET, FLOWSTORE_ROOT_PASSWORD: ROOT_PASSWORD },
    stdio: ["pipe", "pipe", "pipe"],
  });
  const lines: Record<string, unknown>[] = [];
  const waiters: { test: (l: Record<string, unknown>) => boolean; done: () => void }[] = [];
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  let partial = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    partial += chunk;
    for (let nl = partial.indexOf("\n"); nl >= 0; nl = partial.indexOf("\n")) {
      const line = JSON.parse(partial.slice(0, nl)) as Record<string, unknown>;
      partial = partial.slice(nl + 1);
      lines.push(line);
      for (const w of [...waiters]) if (w.test(line)) waiters.splice(waiters.indexOf(w), 1), w.done();
    }
  });
  const exited = new Promise<NodeJS.Signals | null>((r) => child.on("exit", (_code, signal) => r(signal)));
  const line = (test: (l: Record<string, unknown>) => boolean) =>
    lines.some(test)
      ? Promise.resolve()
      : Promise.race([new Promise<void>((done) => waiters.push({ test, done })), exited.then(() => Promise.reject(new Error(`the child exited: ${stderr}`)))]);

  await line((l) => l.ready !== undefined);
  const root = new FlowstoreClient({ baseUrl: base });
  await root.login("root", ROOT_PASSWORD);
  await root.users.create({ id: "alice", displayName: "Alice", password: "alice password" });
  await root.projects.create({ id: "p", displayName: "School" });
  await root.project("p").subprojects.create({ id: "s", displayName: "Roof", currency: "EUR" });
  await root.project("p").subproject("s").workflowitems.create({ id: "w", displayName: "Tiles", amountType: "N/A" });

  child.stdin.write("hold\n");
  await line((l) => l.holding === true);
  const assign = root
    .project("p")
    .subproject("s")
    .workflowitem("w")
    .assign("alice")
    .catch((e: unknown) => e);
  await line((l) => l.held !== undefined); // committed to the project's partition, anchoring now
  child.kill("SIGKILL");
  expect(await exited).toBe("SIGKILL");
  expect(await assign).toBeInstanceOf(Error); // the client never heard of success

  const serve = run(["serve", "--port", String(port), "--data", dir], { FLOWSTORE_JWT_SECRET: SECRET, FLOWSTORE_FEED_REPAIR_SETTLE_MS: "0" });
  try {
    await waitHealthy(base, serve);
    const alice = new FlowstoreClient({ baseUrl: base });
    await alice.login("alice", "alice password");
    // The repair and the follower run in the background: poll the inbox (bounded; no timing assertion).
    const count = await eventually(
      async () => {
        const c = await alice.notifications.count();
        return c.total > 0 && c;
      },
      { what: "alice's notification", timeoutMs: 60_000, intervalMs: 100 },
    );
    expect(count).toEqual({ unread: 1, total: 1 });
    const [n] = (await alice.notifications.list()).items;
    expect(n).toMatchObject({ eventType: "workflowitem.assigned", actor: "root", read: false });
    // Being assigned grants no view (issue 29, finding 3), so the notification leaves the item's name out (finding 12).
    expect(n!.displayName).toBe("");
    expect(n!.path.map((x) => x.id)).toEqual(["p", "s", "w"]);
    // the assignment itself was committed, and the chain verifies with its anchor repaired
    const r = new FlowstoreClient({ baseUrl: base });
    await r.login("root", ROOT_PASSWORD);
    expect((await r.project("p").subproject("s").workflowitem("w").get()).data.assignee).toBe("alice");
    expect(await r.project("p").verify()).toMatchObject({ ok: true });
    expect(await r.notifications.count()).toEqual({ unread: 0, total: 0 }); // never the actor
  } finally {
    serve.child.kill("SIGTERM");
    await serve.exit;
  }
}, 240_000);
