/**
 * TruBudget's `system.restoreBackup` (api/src/system/restoreBackup.ts, its swagger schema `restoreBackup`;
 * v2.18) on flowstore, through a real server:
 *
 * | route | contract (TruBudget's) | flowstore |
 * |---|---|---|
 * | restoreBackup | POST, root only, body application/gzip (else 415), answers `{ apiVersion, data: {} }` | the body is a backup of system.createBackup (flowstore's export, gzip); it replaces the whole store |
 *
 * A bad body (not gzip, cut off, not an export, an export that does not verify) is a 400 naming why, and
 * the live store is unchanged; while the store is replaced every other request answers 503 with
 * Retry-After; after it, the backup's data is served, what was written since is gone, and tokens of users
 * the backup does not hold fail.
 */
import { readdir } from "node:fs/promises";
import { gunzipSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Partition } from "../../../src/kv/contract.js";
import { MemoryKv } from "../../../src/kv/memory.js";
import { raw } from "../harness.js";
import { expectError, expectShape, startTruBudget, TB, tbCall, tbLogin, type Answer, type TbRunning } from "./harness.js";
import { makeTempDir, removeTempDir } from "../../support/temp-dir.js";

/** TruBudget's 200 of restoreBackup (its swagger: apiVersion and an object `data`). */
const RESTORED = {
  type: "object",
  required: ["apiVersion", "data"],
  properties: { apiVersion: { type: "string" }, data: { type: "object" } },
} as const;

/** A memory store whose next partition drop (a restore's wipe, after its marker) waits for the test. */
class HeldKv extends MemoryKv {
  #hold: { reached: () => void; release: Promise<void> } | null = null;

  /** Arms the hold: `reached` resolves once the wipe waits; the wipe goes on when `release` is called. */
  arm(): { reached: Promise<void>; release: () => void } {
    let reached!: () => void;
    let release!: () => void;
    const r = new Promise<void>((resolve) => (reached = resolve));
    this.#hold = { reached, release: new Promise<void>((resolve) => (release = resolve)) };
    return { reached: r, release };
  }

  /** What happened, in order, while `record` is on: commits to project partitions and partition drops. */
  record = false;
  readonly events: string[] = [];

  override async commit(...args: Parameters<MemoryKv["commit"]>): ReturnType<MemoryKv["commit"]> {
    if (this.record && args[0][0] === "project") this.events.push("project commit");
    return super.commit(...args);
  }

  override async dropPartition(partition: Partition): Promise<void> {
    if (this.record) this.events.push("drop");
    const hold = this.#hold;
    if (hold) {
      this.#hold = null;
      hold.reached();
      await hold.release;
    }
    return super.dropPartition(partition);
  }
}

const restore = (s: TbRunning, body: Uint8Array | string, options: { token?: string; type?: string } = {}): Promise<Answer> =>
  raw(s.base, "POST", `${TB}/system.restoreBackup`, {
    headers: { authorization: `Bearer ${options.token ?? s.rootToken}`, "content-type": options.type ?? "application/gzip" },
    body,
  });

async function backup(s: TbRunning): Promise<Buffer> {
  const res = await fetch(`${s.base}${TB}/system.createBackup`, { headers: { authorization: `Bearer ${s.rootToken}` } });
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

/** ann, who creates the projects (root may not: TruBudget's rule), logged in afresh (a restore ends sessions). */
const asAnn = async (s: TbRunning): Promise<string> => (await tbLogin(s.base, "ann", "ann password 123")).token;
const annMakesProjects = async (s: TbRunning): Promise<string> => {
  const token = await s.user("ann");
  expect((await s.call("global.grantPermission", { data: { identity: "ann", intent: "global.createProject" } })).status).toBe(200);
  return token;
};
const projectNames = async (s: TbRunning): Promise<string[]> => {
  const list = await s.call("project.list", { token: await asAnn(s) });
  expect(list.status, JSON.stringify(list.body)).toBe(200);
  return list.body.data.items.map((i: { data: { displayName: string } }) => i.data.displayName).sort();
};
const userIds = async (s: TbRunning): Promise<string[]> =>
  (await s.call("user.list")).body.data.items
    .filter((i: { isGroup?: boolean }) => !i.isGroup)
    .map((i: { id: string }) => i.id)
    .sort();
const createProject = async (s: TbRunning, displayName: string): Promise<void> => {
  const r = await s.call("global.createProject", { token: await asAnn(s), data: { project: { displayName, projectedBudgets: [] } } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
};

describe("TruBudget's system.restoreBackup", () => {
  let s: TbRunning;
  let kv: HeldKv;
  let dir: string;
  let ann: string;
  let saved: Buffer;

  beforeAll(async () => {
    dir = await makeTempDir("tb-restore");
    kv = new HeldKv();
    s = await startTruBudget(kv, { restoreDir: dir });
    ann = await annMakesProjects(s);
    await createProject(s, "School");
    saved = await backup(s);
  });
  afterAll(async () => {
    await s?.close();
    await kv?.close();
    await removeTempDir(dir);
  });

  it("refuses a non-root caller (403) and a body that is not gzip (415), in TruBudget's shape", async () => {
    expectError(await restore(s, saved, { token: ann }), 403, "root");
    expectError(await restore(s, JSON.stringify({ apiVersion: "1.0", data: {} }), { type: "application/json" }), 415, "application/gzip");
    expect(await projectNames(s)).toEqual(["School"]);
  });

  it("refuses a bad backup with a 400 naming why, and changes nothing", async () => {
    const text = gunzipSync(saved).toString("utf8");
    const lines = text.split("\n");
    // One event of the log altered (its project's name): its hash no longer matches, the chain breaks.
    const at = lines.findIndex(
      (l) =>
        l.startsWith('{"k"') &&
        Buffer.from(JSON.parse(l).v, "base64").toString("latin1").includes('"hash"') &&
        Buffer.from(JSON.parse(l).v, "base64").toString("latin1").includes("School"),
    );
    expect(at).toBeGreaterThan(0);
    const entry = JSON.parse(lines[at]!) as { k: string; v: string };
    const tampered = [...lines];
    tampered[at] = JSON.stringify({ k: entry.k, v: Buffer.from(Buffer.from(entry.v, "base64").toString("latin1").replace("School", "Schoal"), "latin1").toString("base64") });
    const bad: [string, Uint8Array, string][] = [
      ["garbage", Buffer.from("this is not a backup"), "gzip"],
      ["a cut-off gzip", saved.subarray(0, Math.floor(saved.length / 2)), "gzip"],
      ["a gzip of something else", gzipSync('{"hello":"world"}\n'), "not a flowstore export"],
      ["an export cut before its end", gzipSync(lines.filter((l) => !l.startsWith('{"end"')).join("\n")), "cut off"],
      ["an export whose chain is broken", gzipSync(tampered.join("\n")), "does not verify"],
    ];
    for (const [what, body, why] of bad) {
      const r = await restore(s, body);
      expectError(r, 400, why);
      expect(r.body.error.message, what).toContain(why);
    }
    expect(await projectNames(s)).toEqual(["School"]);
    expect(await userIds(s)).toEqual(["ann", "root"]);
    expect((await s.app.flowstore.verifyAll()).ok).toBe(true);
    expect(await readdir(dir)).toEqual([]); // nothing kept of a refused upload
  });

  it("replaces the store with the backup: later changes are gone, their users' tokens fail, writes go on", async () => {
    await createProject(s, "Hospital");
    const bob = await s.user("bob");
    expect(await projectNames(s)).toEqual(["Hospital", "School"]);

    const r = await restore(s, saved);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expectShape(RESTORED, r.body);
    expect(r.body).toEqual({ apiVersion: "1.0", data: {} });

    expect(await projectNames(s)).toEqual(["School"]);
    // Every session from before the restore ended (issue 29 finding 9): bob's, ann's and root's.
    expectError(await tbCall(s.base, "user.list", { token: bob }), 401);
    expectError(await tbCall(s.base, "project.list", { token: ann }), 401);
    expectError(await s.call("user.list"), 401);
    await s.loginRoot();
    expect(await userIds(s)).toEqual(["ann", "root"]);
    expect((await s.app.flowstore.verifyAll()).ok).toBe(true);
    expect(await readdir(dir)).toEqual([]);

    // The store goes on from the restored heads.
    await createProject(s, "Library");
    expect(await projectNames(s)).toEqual(["Library", "School"]);
    expect((await s.app.flowstore.verifyAll()).ok).toBe(true);
  });

  it("answers every other request 503 with Retry-After while the store is replaced, but liveness; ends change-feed streams", async () => {
    const feed = await fetch(`${s.base}/api/v1/events`, { headers: { authorization: `Bearer ${s.rootToken}` } });
    expect(feed.status).toBe(200);
    const held = kv.arm();
    const running = restore(s, saved);
    await held.reached;
    // The stream was ended when the gate shut (clients reconnect once it is open again).
    const reader = feed.body!.getReader();
    while (!(await reader.read()).done);

    const tb = await s.call("project.list");
    expectError(tb, 503, "restore");
    expect(Number(tb.headers.get("retry-after"))).toBeGreaterThan(0);
    const native = await raw(s.base, "GET", "/api/v1/projects", { headers: { authorization: `Bearer ${s.rootToken}` } });
    expect(native.status).toBe(503);
    expect(native.type).toContain("application/problem+json");
    expect(native.body.detail).toContain("restore");
    expect(Number(native.headers.get("retry-after"))).toBeGreaterThan(0);
    expectError(await restore(s, saved), 503, "restore"); // one restore at a time
    expect((await raw(s.base, "GET", `${TB}/liveness`)).status).toBe(200);
    expect((await raw(s.base, "GET", "/health")).status).toBe(200);

    held.release();
    const r = await running;
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    await s.loginRoot();
    expect(await projectNames(s)).toEqual(["School"]);
    expect((await s.app.flowstore.verifyAll()).ok).toBe(true);
  });

  it("lets the requests in flight finish before it replaces the store; their writes, under the shut fence, are refused (503), not acknowledged and dropped", async () => {
    // A project's creation whose body is still on its way when the restore shuts the gate.
    let send!: (text: string) => void;
    let finish!: () => void;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        send = (text) => controller.enqueue(new TextEncoder().encode(text));
        finish = () => controller.close();
      },
    });
    const json = JSON.stringify({ apiVersion: "1.0", data: { project: { displayName: "In flight", projectedBudgets: [] } } });
    const inFlight = fetch(`${s.base}${TB}/global.createProject`, {
      method: "POST",
      headers: { authorization: `Bearer ${await asAnn(s)}`, "content-type": "application/json" },
      body,
      duplex: "half",
    } as RequestInit);
    send(json.slice(0, 10));
    kv.events.length = 0;
    kv.record = true;
    try {
      const running = restore(s, saved);
      while (s.app.flowstore.gate.shutFor === null) await new Promise((resolve) => setImmediate(resolve));
      expectError(await s.call("project.list"), 503, "restore"); // a new request is refused meanwhile
      send(json.slice(10));
      finish();
      // The store's fence shut before the upload was read: the write in flight is refused, not acknowledged.
      expect((await inFlight).status).toBe(503);
      expect((await running).status).toBe(200);
      // The restore waited for it: nothing of the project partitions was written before the first drop.
      expect(kv.events[0]).toBe("drop");
    } finally {
      kv.record = false;
    }
    expect(await projectNames(s)).toEqual(["School"]);
  });
});

describe("TruBudget's system.restoreBackup failing midway", () => {
  /** A memory store whose partition drops fail once armed (a disk that died during the wipe). */
  class FailingKv extends MemoryKv {
    armed = false;
    override async dropPartition(partition: Partition): Promise<void> {
      if (this.armed) throw new Error("the disk died");
      return super.dropPartition(partition);
    }
  }

  it("keeps the gate shut, naming import --resume, and keeps the export for it", async () => {
    const dir = await makeTempDir("tb-restore-fail");
    const kv = new FailingKv();
    const s = await startTruBudget(kv, { restoreDir: dir });
    try {
      await annMakesProjects(s);
      await createProject(s, "School");
      const saved = await backup(s);
      kv.armed = true;
      const r = await restore(s, saved);
      // Not a 400 (the store was changed): a 503 saying it is resumable, and how.
      expectError(r, 503, "import --resume");
      const after = await s.call("project.list");
      expectError(after, 503, "restore");
      expect(Number(after.headers.get("retry-after"))).toBeGreaterThan(0);
      const kept = (await readdir(dir)).filter((f) => f.endsWith(".ndjson"));
      expect(kept).toHaveLength(1);
    } finally {
      await s.close();
      await kv.close();
      await removeTempDir(dir);
    }
  });
});
