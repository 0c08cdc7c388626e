/**
 * A fleet: three `flowstore serve` processes on one shared store — the global setup's Redis
 * Cluster (a namespace of its own) and its PostgreSQL (a schema of its own) — sharing the JWT secret and
 * the process-data key through configuration, with no session affinity: every request may go to any
 * server. Real processes, real HTTP on 127.0.0.1, a real SIGKILL. Bounded in count.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { API } from "../../src/client/core.js";
import { FlowstoreClient, type FeedMessage } from "../../src/client/index.js";
import { run, waitHealthy, type Run } from "../cli/spawn.js";
import { dropSchema } from "../setup/postgres-server.js";
import { deleteNamespace } from "../setup/redis-keys.js";
import { freePort } from "../support/ports.js";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";
import { eventually } from "../support/eventually.js";

/**
 * What a write with a stale If-Match answers: 412 Precondition Failed (RFC 9110 §13.1.1; errors.ts
 * StaleVersionError). The only place in this file that names it.
 */
const STALE_IF_MATCH = 412;
const SERVERS = 3;
const ROOT_PASSWORD = "fleet root password";
const STARTUP_MS = 300_000;

interface FleetStore {
  readonly name: string;
  readonly url: string;
  readonly remove: () => Promise<unknown>;
}

/** The shared stores of the global setup, each on a fresh space. */
function fleetStores(): FleetStore[] {
  const stores: FleetStore[] = [];
  const space = `fleet_${process.pid}_${randomBytes(4).toString("hex")}`;
  const redis = inject("redis");
  if (redis) {
    stores.push({ name: "redis-cluster", url: `${redis.cluster}?namespace=${space}`, remove: () => deleteNamespace(redis.cluster, space) });
  }
  const postgres = inject("postgres");
  if (postgres) stores.push({ name: "postgres", url: `${postgres}?schema=${space}`, remove: () => dropSchema(postgres, space) });
  return stores;
}

interface Answer {
  readonly status: number;
  readonly body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  readonly headers: Headers;
}

interface Server {
  readonly base: string;
  readonly proc: Run;
}

describe.each(fleetStores())("a fleet of $name", (store) => {
  const servers: Server[] = [];
  let dir: string;
  let token: string;
  const jwtSecret = randomBytes(32).toString("base64url");
  const processDataKey = randomBytes(32).toString("base64");
  const env = (): Record<string, string> => ({
    FLOWSTORE_DATA: dir, // nothing of a fleet's state may live here: the secrets below come from configuration
    FLOWSTORE_JWT_SECRET: jwtSecret,
    FLOWSTORE_PROCESS_DATA_KEY: processDataKey,
    FLOWSTORE_ROOT_PASSWORD: ROOT_PASSWORD,
    FLOWSTORE_LOG_LEVEL: "warn",
  });

  const start = async (): Promise<Server> => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const proc = run(["serve", "--port", String(port), "--store", store.url], env());
    servers.push({ base, proc });
    await waitHealthy(base, proc);
    return { base, proc };
  };

  /** One request to server `i`, with the shared token. */
  const call = async (i: number, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> => {
    const res = await fetch(`${servers[i]!.base}${API}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
  };

  /** Every item of a list, page by page, through server `i`. */
  const listAll = async (i: number, path: string): Promise<string[]> => {
    const ids: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 100; page++) {
      const r = await call(i, "GET", `${path}?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      expect(r.status).toBe(200);
      ids.push(...r.body.items.map((item: { id: string }) => item.id));
      cursor = r.body.nextCursor;
      if (cursor === null) return ids;
    }
    throw new Error(`${path}: more than 100 pages`);
  };

  const subproject = async (p: string, s: string): Promise<void> => {
    expect((await call(0, "POST", "/projects", { id: p, displayName: p, projectedBudgets: [] })).status).toBe(201);
    expect((await call(1, "POST", `/projects/${p}/subprojects`, { id: s, displayName: s, currency: "EUR" })).status).toBe(201);
  };

  // Three tsx processes starting on a loaded machine: bounded, but above the default hook timeout.
  beforeAll(async () => {
    dir = await makeTempDir("fleet");
    // The first server creates root on the empty store; the others then start on a store that has it.
    await start();
    await Promise.all(Array.from({ length: SERVERS - 1 }, () => start()));
    const login = await fetch(`${servers[0]!.base}${API}/auth/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "root", password: ROOT_PASSWORD }),
    });
    token = ((await login.json()) as { token: string }).token;
  }, STARTUP_MS);

  afterAll(async () => {
    for (const s of servers) s.proc.child.kill("SIGKILL");
    await Promise.all(servers.map((s) => s.proc.exit));
    await store.remove();
    if (dir) await removeTempDir(dir);
  });

  it("accepts a token issued by one server on every other (the JWT secret comes from configuration)", async () => {
    for (let i = 0; i < SERVERS; i++) expect((await call(i, "GET", "/me")).body).toMatchObject({ id: "root" });
  });

  it("lets exactly one of concurrent reorders with the same If-Match win, whichever server each reaches", async () => {
    await subproject("reorder", "s");
    const items = ["a", "b", "c"];
    for (const w of items) expect((await call(2, "POST", "/projects/reorder/subprojects/s/workflowitems", { id: w, displayName: w, amountType: "N/A" })).status).toBe(201);
    const path = "/projects/reorder/subprojects/s/workflowitem-ordering";
    for (let round = 0; round < 4; round++) {
      const etag = (await call(round % SERVERS, "GET", path)).headers.get("etag")!;
      // server i proposes the items rotated by i: each proposal differs, so the winner is visible
      const proposals = Array.from({ length: SERVERS }, (_, i) => [...items.slice(i), ...items.slice(0, i)]);
      const answers = await Promise.all(proposals.map((ordering, i) => call(i, "PUT", path, { ordering }, { "if-match": etag })));
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses).toEqual([200, ...Array(SERVERS - 1).fill(STALE_IF_MATCH)]);
      const winner = answers.findIndex((a) => a.status === 200);
      for (let i = 0; i < SERVERS; i++) expect((await call(i, "GET", path)).body).toEqual({ ordering: proposals[winner] });
    }
    expect((await call(1, "GET", "/projects/reorder/verify")).body).toMatchObject({ ok: true });
  });

  it("loses none of the creates made concurrently through all three servers", async () => {
    await subproject("creates", "s");
    const perServer = 12;
    const ids = (i: number): string[] => Array.from({ length: perServer }, (_, n) => `w-${i}-${n}`);
    const answers = await Promise.all(
      Array.from({ length: SERVERS }, (_, i) =>
        Promise.all(ids(i).map((id) => call(i, "POST", "/projects/creates/subprojects/s/workflowitems", { id, displayName: id, amountType: "N/A" }))),
      ),
    );
    expect(answers.flat().map((a) => a.status)).toEqual(Array(SERVERS * perServer).fill(201));
    const expected = Array.from({ length: SERVERS }, (_, i) => ids(i))
      .flat()
      .sort();
    for (let i = 0; i < SERVERS; i++) {
      const listed = await listAll(i, "/projects/creates/subprojects/s/workflowitems");
      expect(listed).toHaveLength(SERVERS * perServer);
      expect([...listed].sort()).toEqual(expected);
    }
    expect((await call(2, "GET", "/projects/creates/verify")).body).toMatchObject({ ok: true, checked: 2 + SERVERS * perServer });
  });

  it("streams on every server the events committed through every other, and resumes on another server by Last-Event-ID", async () => {
    const client = (i: number): FlowstoreClient => new FlowstoreClient({ baseUrl: servers[i]!.base, token });
    /** Every message of one stream on server `i`, until `stop` is aborted. */
    const stream = async (i: number, stop: AbortController, lastEventId?: string) => {
      const messages: FeedMessage[] = [];
      let opened!: () => void;
      const open = new Promise<void>((r) => (opened = r));
      const done = (async () => {
        try {
          for await (const m of client(i).events({ signal: stop.signal, onOpen: opened, ...(lastEventId ? { lastEventId } : {}) })) messages.push(m);
        } catch (e) {
          if (!stop.signal.aborted) throw e;
        }
      })();
      await Promise.race([open, done]);
      /** Waits (bounded: 30 s) until the project `id`'s created event has arrived. */
      const until = async (id: string): Promise<FeedMessage> => {
        return eventually(() => messages.find((m) => m.event === "project.created" && m.data.path[0]?.id === id) ?? false, {
          what: `project ${id} streamed by server ${i}`,
          timeoutMs: 30_000,
          intervalMs: 50,
        }).catch((err: Error) => {
          throw new Error(`${err.message}; got ${messages.map((m) => m.event).join(", ")}`);
        });
      };
      return { messages, until, done };
    };
    const created = (id: string, i: number) => call(i, "POST", "/projects", { id, displayName: id, projectedBudgets: [] });

    const first = new AbortController();
    const watcher = await stream(2, first);
    for (const i of [0, 1]) expect((await created(`feed-${i}`, i)).status).toBe(201);
    const seen0 = await watcher.until("feed-0");
    const seen1 = await watcher.until("feed-1");
    // one store-wide feed: positions follow the commit order, whichever server committed
    expect(Number(seen1.id!.split("-")[0])).toBeGreaterThan(Number(seen0.id!.split("-")[0]));
    first.abort();
    await watcher.done;

    // Written while no stream is open, then resumed on another server from the last id seen.
    for (const i of [1, 0]) expect((await created(`missed-${i}`, i)).status).toBe(201);
    const second = new AbortController();
    const resumed = await stream(0, second, seen1.id);
    await resumed.until("missed-0");
    second.abort();
    await resumed.done;
    const projects = resumed.messages.filter((m) => m.event === "project.created").map((m) => m.data.path[0]!.id);
    expect(projects).toEqual(["missed-1", "missed-0"]);
  });

  // Kills a server: the last test of the file.
  it("keeps every write acknowledged before a server is SIGKILLed mid-load, and the others keep serving", async () => {
    await subproject("kill", "s");
    const victim = SERVERS - 1;
    const perServer = 30;
    const killAfter = 8;
    const acknowledged: string[] = [];
    const failures: string[] = [];
    let killed = false;
    let victimAcks = 0;
    let acksAfterKill = 0;
    const writer = async (i: number): Promise<void> => {
      for (let n = 0; n < perServer; n++) {
        const id = `w-${i}-${n}`;
        let answer: Answer;
        try {
          answer = await call(i, "POST", "/projects/kill/subprojects/s/workflowitems", { id, displayName: id, amountType: "N/A" });
        } catch (e) {
          if (i === victim && killed) return; // the connection died with the server: not acknowledged
          throw e;
        }
        if (answer.status !== 201) {
          failures.push(`${id} through server ${i}: ${answer.status} ${JSON.stringify(answer.body)}`);
          continue;
        }
        acknowledged.push(id);
        if (killed) acksAfterKill++;
        if (i === victim && ++victimAcks === killAfter) {
          servers[victim]!.proc.child.kill("SIGKILL");
          killed = true;
        }
      }
    };
    await Promise.all(Array.from({ length: SERVERS }, (_, i) => writer(i)));
    expect(killed).toBe(true);
    expect(await servers[victim]!.proc.exit).toEqual({ code: null, signal: "SIGKILL" });
    expect(failures).toEqual([]);
    expect(acksAfterKill).toBeGreaterThan(0);
    for (let i = 0; i < victim; i++) {
      const listed = new Set(await listAll(i, "/projects/kill/subprojects/s/workflowitems"));
      for (const id of acknowledged) expect(listed.has(id), `${id} acknowledged, then lost`).toBe(true);
      // nothing but what was attempted: the victim's in-flight write may or may not have committed
      for (const id of listed) expect(id).toMatch(/^w-\d-\d+$/);
      expect((await call(i, "GET", "/projects/kill/verify")).body).toMatchObject({ ok: true });
    }
    for (let i = 0; i < victim; i++) {
      const after = `after-${i}`;
      expect((await call(i, "POST", "/projects/kill/subprojects/s/workflowitems", { id: after, displayName: after, amountType: "N/A" })).status).toBe(201);
    }
  });
});
