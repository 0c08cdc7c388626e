/**
 * The store `flowstore serve` opens, as its options make it (cli/serve.ts `serveOptionsOf`,
 * `serveStoreOptions`; the http benchmark's server opens its store so too): the options' declared
 * defaults and the environment's values, the keys kept in the data directory, and the background work
 * it runs beside the requests, which `settle()` runs to the feed's end on demand (the benchmark's server
 * does before it reads its CPU time).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { serveOptionsOf, serveStoreOptions } from "../../src/cli/serve.js";
import { openFlowstore, type Flowstore } from "../../src/compose/index.js";
import { CONFIG } from "../../src/config.js";
import { createLogger } from "../../src/http/logging.js";
import { tempDir } from "../support/temp-dir.js";

const dir = tempDir("serve-store", "each");
const HOUR = 3_600_000;
let store: Flowstore | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
  delete process.env.FLOWSTORE_KEEP_NOTIFICATIONS;
});

it("serve's options: the declared defaults, then the environment, then the arguments", async () => {
  const defaults = await serveOptionsOf(["--data", dir()]);
  expect(defaults.data).toBe(dir());
  expect(defaults.keepNotifications).toBe(CONFIG.FLOWSTORE_KEEP_NOTIFICATIONS.default);
  expect(defaults.compress).toBe(true);
  process.env.FLOWSTORE_KEEP_NOTIFICATIONS = "7";
  expect((await serveOptionsOf(["--data", dir()])).keepNotifications).toBe("7");
  expect((await serveOptionsOf(["--data", dir(), "--keep-notifications", "9"])).keepNotifications).toBe("9");
});

it("serve's store keeps its keys in the data directory and follows the feed; settle() takes it in at once", async () => {
  const served = serveStoreOptions(await serveOptionsOf(["--data", dir()]), createLogger({ level: "silent" }));
  // The background's own timers wait an hour: only settle() runs its passes within the test.
  store = await openFlowstore(`lmdb:${dir()}`, {
    ...served,
    notifications: { ...served.notifications, pollMs: HOUR },
    log: { ...served.log, pollMs: HOUR, intervalMs: HOUR },
    subscriptions: { ...served.subscriptions, pollMs: HOUR, intervalMs: HOUR },
  });
  await store.settle(); // the appender's first pass at start
  for (const file of ["checkpoint-key.pem", "process-data.key"]) expect(existsSync(join(dir(), file)), file).toBe(true);
  for (const id of ["mary", "tom"]) await store.identity.createUser(SYSTEM, { id, displayName: id, password: "a long enough password" });
  await store.global.grant(SYSTEM, "global.createProject", "mary");
  await store.notifications.count(userActor("tom")); // the follower starts at the feed's head
  await store.settle();
  await store.workflow.createProject(userActor("mary"), { id: "p", displayName: "P", assignee: "tom" });
  expect(await store.log.tree.lag()).toBeGreaterThan(0);
  await store.settle();
  expect(await store.log.tree.lag()).toBe(0);
  expect((await store.notifications.count(userActor("tom"))).total).toBe(1);
});

it("settle() answers at once where no background work runs", async () => {
  store = await openFlowstore("memory:", {});
  await store.workflow.createProject(SYSTEM, { id: "p", displayName: "P" });
  await store.settle();
  expect(await store.log.tree.lag()).toBeGreaterThan(0);
});

it("settle() after close starts no pass over the closed store", async () => {
  const errors: string[] = [];
  const served = serveStoreOptions(await serveOptionsOf(["--data", dir()]), createLogger({ level: "silent" }));
  const closed = await openFlowstore(`lmdb:${dir()}`, { ...served, onBackgroundError: (_err, task) => errors.push(task) });
  await closed.settle();
  await closed.close();
  await closed.settle();
  expect(errors).toEqual([]);
});
