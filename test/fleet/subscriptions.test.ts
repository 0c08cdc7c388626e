/**
 * A webhook subscription across a SIGKILL and a switch of servers (issue 26, part 3, its Proof): real
 * `flowstore serve` processes on one store (servers of a fleet share it), the example receiver as a real
 * process checking every body's signature. Once per backend: one LMDB directory (the servers share it,
 * and the webhook key file in it), and the global setup's Redis Cluster and PostgreSQL (each server with
 * a data directory of its own: the keys, the webhook key included, come from configuration). Server A delivers until it is SIGKILLed
 * while deliveries are pending (the receiver is down, so they are being retried); server B, started on
 * the same store, takes the subscription's lease once A's has expired and delivers from the position
 * kept in the store. Every event arrives at least once, each partition's in order, none in the dead
 * letters.
 */
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { API } from "../../src/client/core.js";
import { FlowstoreClient } from "../../src/client/index.js";
import { run, waitHealthy, type Run } from "../cli/spawn.js";
import { dropSchema } from "../setup/postgres-server.js";
import { deleteNamespace } from "../setup/redis-keys.js";
import { eventually } from "../support/eventually.js";
import { freePort } from "../support/ports.js";
import { makeTempDirSync, removeTempDirSync } from "../support/temp-dir.js";
import { startReceiver, type DeliveredEvent, type Receiver } from "../support/webhook-receiver.js";

const SECRET = "a token secret for the subscription fleet test, 0123456789";
const ROOT_PASSWORD = "root password of the subscription fleet";
const env = {
  FLOWSTORE_JWT_SECRET: SECRET,
  FLOWSTORE_ROOT_PASSWORD: ROOT_PASSWORD,
  FLOWSTORE_LOG_LEVEL: "warn",
  // A dead deliverer's lease runs out soon; retries start at 100 ms and never reach the dead letters here.
  FLOWSTORE_WEBHOOK_LEASE_MS: "1500",
  FLOWSTORE_WEBHOOK_RETRY_MS: "100",
  FLOWSTORE_WEBHOOK_ATTEMPTS: "30",
  // The receivers listen on 127.0.0.1, an address webhooks are refused unless the operator allows it.
  FLOWSTORE_WEBHOOK_ALLOW: "127.0.0.1",
};

interface FleetStore {
  readonly name: string;
  /** The `serve` arguments of server `n` (its store and data directory) under the test's directory. */
  readonly args: (dir: string, n: number) => string[];
  /** What a server is configured with beyond `env`: a fleet without a shared directory shares its keys so. */
  readonly env: Record<string, string>;
  readonly remove: () => Promise<unknown>;
}

/** LMDB (one directory), and the global setup's shared stores, each on a fresh space. */
function fleetStores(): FleetStore[] {
  const stores: FleetStore[] = [{ name: "lmdb", args: (dir) => ["--data", dir], env: {}, remove: async () => {} }];
  const space = `subsfleet_${process.pid}_${randomBytes(4).toString("hex")}`;
  const keys = {
    FLOWSTORE_WEBHOOK_KEY: randomBytes(32).toString("base64"),
    FLOWSTORE_PROCESS_DATA_KEY: randomBytes(32).toString("base64"),
    FLOWSTORE_CHECKPOINT_KEY: generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
  };
  const shared = (url: string) => (dir: string, n: number) => ["--store", url, "--data", join(dir, `server-${n}`)];
  const redis = inject("redis");
  if (redis) stores.push({ name: "redis-cluster", args: shared(`${redis.cluster}?namespace=${space}`), env: keys, remove: () => deleteNamespace(redis.cluster, space) });
  const postgres = inject("postgres");
  if (postgres) stores.push({ name: "postgres", args: shared(`${postgres}?schema=${space}`), env: keys, remove: () => dropSchema(postgres, space) });
  return stores;
}

describe.each(fleetStores())("on $name", (store) => {
  let dir: string;
  const procs: Run[] = [];
  const receivers: Receiver[] = [];
  beforeAll(() => {
    dir = makeTempDirSync(`subs-fleet-${store.name}`);
  });
  afterAll(async () => {
    for (const r of receivers) await r.stop();
    for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
    await Promise.all(procs.map((p) => p.exit));
    removeTempDirSync(dir);
    await store.remove();
  });

  async function serve(): Promise<{ base: string; proc: Run; root: FlowstoreClient }> {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const proc = run(["serve", "--port", String(port), ...store.args(dir, procs.length)], { ...env, ...store.env });
    procs.push(proc);
    await waitHealthy(base, proc);
    const root = new FlowstoreClient({ baseUrl: base });
    await root.login("root", ROOT_PASSWORD);
    return { base, proc, root };
  }

  const items = async (root: FlowstoreClient, ids: readonly string[]): Promise<void> => {
    for (const p of ["p", "q"]) for (const w of ids) await root.project(p).subproject("s").workflowitems.create({ id: w, displayName: w, amountType: "N/A" });
  };
  const has = (r: Receiver, p: string, w: string) => r.events().some((d) => d.event.type === "workflowitem.created" && d.event.path[0]!.id === p && d.event.path[2]?.id === w);

  it("survives a SIGKILL of its deliverer and a switch to another server: every event at least once, in order per partition, signed", async () => {
    const a = await serve();
    const hookPort = await freePort();
    const created = await fetch(`${a.base}${API}/subscriptions`, {
      method: "POST",
      headers: { authorization: `Bearer ${a.root.token}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "everything", webhook: { url: `http://127.0.0.1:${hookPort}/hook` } }),
    });
    expect(created.status).toBe(201);
    const { subscription, secret } = (await created.json()) as { subscription: { id: string }; secret: string };
    const first = await startReceiver({ secret, port: hookPort, dir });
    receivers.push(first);

    for (const p of ["p", "q"]) {
      await a.root.projects.create({ id: p, displayName: p });
      await a.root.project(p).subprojects.create({ id: "s", displayName: "s", currency: "EUR" });
    }
    await items(a.root, ["w1", "w2", "w3"]);
    await eventually(() => has(first, "p", "w3") && has(first, "q", "w3"), { what: "A's deliveries", timeoutMs: 60_000, intervalMs: 50 });

    // The receiver goes away: A's deliveries of what follows fail and are retried; then A is killed.
    await first.stop();
    await items(a.root, ["w4", "w5", "w6"]);
    a.proc.child.kill("SIGKILL");
    expect((await a.proc.exit).signal).toBe("SIGKILL");

    const second = await startReceiver({ secret, port: hookPort, dir });
    receivers.push(second);
    const b = await serve();
    await items(b.root, ["w7"]);
    await eventually(() => has(second, "p", "w7") && has(second, "q", "w7"), { what: "B's deliveries", timeoutMs: 60_000, intervalMs: 50 });

    // Both receivers wrote to one file: every verified delivery, A's and B's, repeats included.
    const events: DeliveredEvent[] = second.events();
    for (const p of ["p", "q"]) {
      const mine = events.filter((d) => d.event.path[0]!.id === p);
      // First arrivals in order of seq, with no gap from the first event of the partition on.
      const firsts: number[] = [];
      for (const d of mine) if (!firsts.includes(d.event.seq)) firsts.push(d.event.seq);
      expect(firsts, p).toEqual(Array.from({ length: firsts.length }, (_, i) => i + 1));
      for (let w = 1; w <= 7; w++) expect(has(second, p, `w${w}`), `${p} w${w}`).toBe(true);
    }
    const letters = await fetch(`${b.base}${API}/subscriptions/${subscription.id}/dead-letters`, { headers: { authorization: `Bearer ${b.root.token}` } });
    expect(((await letters.json()) as { items: unknown[] }).items).toEqual([]);
    expect(first.lines.some((l) => l.rejected !== undefined) || second.lines.some((l) => l.rejected !== undefined)).toBe(false);
  }, 240_000);
});
