/**
 * A restore on one server of a fleet drops no write another server acknowledged (issue 29, finding 15):
 * two `flowstore serve` processes on one Redis Cluster store (a namespace of its own), creates through B
 * while A restores a backup (TruBudget's system.restoreBackup). The store's fence (compose/fence.ts),
 * shut by A before it reads the upload, is honoured by B: B answers 503 while it is shut, and every
 * create B acknowledged is in the store after the restore or in the history the restore replaced (kept
 * as epoch 1, compose/epochs.ts), never erased. The restore answers 200, records its epoch, and every
 * token from before it fails on both servers. Real processes, real HTTP on 127.0.0.1.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { API } from "../../src/client/core.js";
import { listEpochs, replacedView } from "../../src/compose/epochs.js";
import { scanAll, type KvStore } from "../../src/kv/contract.js";
import { openKv } from "../../src/kv/open.js";
import { run, waitHealthy, type Run } from "../cli/spawn.js";
import { deleteNamespace } from "../setup/redis-keys.js";
import { eventually } from "../support/eventually.js";
import { freePort } from "../support/ports.js";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";

const ROOT_PASSWORD = "fleet root password";
const STARTUP_MS = 300_000;
/** Workflowitems in the backup: enough that checking and importing it takes a while. */
const IN_BACKUP = 60;
/** Creates through B running side by side. */
const WRITERS = 3;

interface Answer {
  readonly status: number;
  readonly body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

const redis = inject("redis");

describe.runIf(redis)("a restore on one server of a Redis Cluster fleet", () => {
  const space = `restore_fence_${process.pid}_${randomBytes(4).toString("hex")}`;
  const url = `${redis?.cluster}?namespace=${space}`;
  const procs: Run[] = [];
  const bases: string[] = [];
  let dir: string;
  let kv: KvStore;
  const secrets = { jwt: randomBytes(32).toString("base64url"), pd: randomBytes(32).toString("base64") };
  const env = (): Record<string, string> => ({
    FLOWSTORE_DATA: dir,
    FLOWSTORE_JWT_SECRET: secrets.jwt,
    FLOWSTORE_PROCESS_DATA_KEY: secrets.pd,
    FLOWSTORE_ROOT_PASSWORD: ROOT_PASSWORD,
    FLOWSTORE_TRUBUDGET_API: "1",
    FLOWSTORE_LOG_LEVEL: "warn",
  });

  const start = async (): Promise<void> => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const proc = run(["serve", "--port", String(port), "--store", url], env());
    procs.push(proc);
    bases.push(base);
    await waitHealthy(base, proc);
  };

  const login = async (i: number): Promise<string> => {
    const r = await fetch(`${bases[i]}${API}/auth/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "root", password: ROOT_PASSWORD }),
    });
    expect(r.status).toBe(200);
    return ((await r.json()) as { token: string }).token;
  };

  const call = async (i: number, token: string, method: string, path: string, body?: unknown): Promise<Answer> => {
    const res = await fetch(`${bases[i]}${API}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };

  const item = (id: string) => ({ id, displayName: id, amountType: "N/A" });
  const items = "/projects/f/subprojects/s/workflowitems";

  beforeAll(async () => {
    dir = await makeTempDir("restore-fence");
    await start(); // creates root on the empty store
    await start();
    kv = await openKv(url);
  }, STARTUP_MS);

  afterAll(async () => {
    for (const p of procs) p.child.kill("SIGKILL");
    await Promise.all(procs.map((p) => p.exit));
    await kv?.close();
    if (redis) await deleteNamespace(redis.cluster, space);
    if (dir) await removeTempDir(dir);
  });

  it("B answers 503 while A restores, and every create B acknowledged is kept: in the store after, or in the replaced history", async () => {
    const root = await login(0);
    expect((await call(0, root, "POST", "/projects", { id: "f", displayName: "f", projectedBudgets: [] })).status).toBe(201);
    expect((await call(0, root, "POST", "/projects/f/subprojects", { id: "s", displayName: "s", currency: "EUR" })).status).toBe(201);
    for (let n = 0; n < IN_BACKUP; n++) expect((await call(0, root, "POST", items, item(`old-${n}`))).status).toBe(201);
    const res = await fetch(`${bases[0]}/api/system.createBackup`, { headers: { authorization: `Bearer ${root}` } });
    expect(res.status).toBe(200);
    const saved = Buffer.from(await res.arrayBuffer());

    // Creates through B, from before the restore until it has answered.
    const acknowledged: string[] = [];
    const statuses = new Map<number, number>();
    let restoring = true;
    const writer = async (w: number): Promise<void> => {
      for (let n = 0; restoring; n++) {
        const id = `b-${w}-${n}`;
        const r = await call(1, root, "POST", items, item(id));
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        if (r.status === 201) acknowledged.push(id);
      }
    };
    const writers = Array.from({ length: WRITERS }, (_, w) => writer(w));
    while (acknowledged.length < 5) await new Promise((resolve) => setTimeout(resolve, 20));

    const restored = await fetch(`${bases[0]}/api/system.restoreBackup`, {
      method: "POST",
      headers: { authorization: `Bearer ${root}`, "content-type": "application/gzip" },
      body: saved,
    });
    const answer = await restored.text();
    restoring = false;
    await Promise.all(writers);
    expect(restored.status, answer).toBe(200);

    // B was fenced: it answered 503 while the store was shut, and nothing but 201, 503 and (after the
    // restore, the tokens of the old epoch) 401.
    expect(statuses.get(503) ?? 0, JSON.stringify([...statuses])).toBeGreaterThan(0);
    expect([...statuses.keys()].filter((s) => ![201, 503, 401].includes(s))).toEqual([]);

    // Every token from before the restore fails on both servers; a new log in works.
    // (A server's copy of the fence may be up to FENCE_CACHE_MS old: until it reads the open fence it answers 503.)
    for (const i of [0, 1]) {
      const me = await eventually(
        async () => {
          const r = await call(i, root, "GET", "/me");
          return r.status === 503 ? false : r;
        },
        { what: `server ${i} to read the open fence`, timeoutMs: 10_000, intervalMs: 50 },
      );
      expect(me.status, JSON.stringify(me.body)).toBe(401);
    }
    const fresh = await login(1);

    // Every create B acknowledged is kept: in the store now, or in the history the restore replaced.
    const live = new Set<string>();
    let cursor: string | null = null;
    do {
      const page = await call(1, fresh, "GET", `${items}?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      expect(page.status).toBe(200);
      for (const i of page.body.items as { id: string }[]) live.add(i.id);
      cursor = page.body.nextCursor;
    } while (cursor !== null);
    const epochs = await listEpochs(kv);
    expect(epochs.map((e) => ({ epoch: e.epoch, by: e.by }))).toEqual([{ epoch: 1, by: "root" }]);
    const replaced: string[] = [];
    for await (const e of scanAll(replacedView(kv, 1), ["project", "f"])) replaced.push(e.value.toString("latin1"));
    const lost = acknowledged.filter((id) => !live.has(id) && !replaced.some((v) => v.includes(`"id":"${id}"`)));
    expect(lost, `acknowledged by B, then erased (${acknowledged.length} acknowledged)`).toEqual([]);
    // The backup's items are back; B's creates acknowledged before the fence shut are in the replaced history.
    for (let n = 0; n < IN_BACKUP; n++) expect(live.has(`old-${n}`)).toBe(true);
    expect((await call(0, fresh, "GET", "/projects/f/verify")).body).toMatchObject({ ok: true });
    expect((await call(1, fresh, "POST", items, item("after"))).status).toBe(201);
  }, 300_000);
});
