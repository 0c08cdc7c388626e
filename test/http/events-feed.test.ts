/**
 * The change feed across processes and servers (resources/feed.ts, http/routes/events.ts): two servers,
 * each with its own openFlowstore over its own handle on the same data (a second LMDB handle on one
 * directory, a second connection to one Redis, Redis Cluster or PostgreSQL), and a CLI process writing
 * to the LMDB directory; resume by Last-Event-ID; delivery by intent; a disabled user's stream ending.
 */
import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ProblemError, type FeedMessage, type FlowstoreClient } from "../../src/client/index.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { backends, forEachBackend, type BackendFactory } from "../conformance/backends.js";
import { startServer, startTwoServers } from "./harness.js";
import { makeTempDirSync, removeTempDirSync } from "../support/temp-dir.js";
import { eventually } from "../support/eventually.js";
import { CLI } from "../cli/spawn.js";

const ROOT = resolve(import.meta.dirname, "../..");

/** A subscriber collecting every message of one connection until closed or the stream ends. */
interface Sub {
  readonly messages: FeedMessage[];
  /** Resolves when the server ended the stream. */
  readonly ended: Promise<void>;
  /** Waits (bounded: 20 s) until a message satisfies `pred`; returns it. */
  until(pred: (m: FeedMessage) => boolean): Promise<FeedMessage>;
  close(): void;
}

async function subscribe(client: FlowstoreClient, lastEventId?: string): Promise<Sub> {
  const ctrl = new AbortController();
  const messages: FeedMessage[] = [];
  let opened!: () => void;
  const open = new Promise<void>((r) => (opened = r));
  const ended = (async () => {
    for await (const m of client.events({ signal: ctrl.signal, onOpen: opened, lastEventId })) messages.push(m);
  })();
  await Promise.race([open, ended]);
  return {
    messages,
    ended,
    async until(pred) {
      return eventually(() => messages.find(pred) ?? false, { what: `a message ${pred}`, timeoutMs: 20_000, intervalMs: 50 }).catch((err: Error) => {
        throw new Error(`${err.message}; got ${messages.map((m) => `${m.id} ${m.event} ${m.data.path.at(-1)?.id}`).join(", ")}`);
      });
    },
    close: () => ctrl.abort(),
  };
}

const created = (id: string) => (m: FeedMessage) => m.event === "project.created" && m.data.path[0]?.id === id;
const position = (m: FeedMessage): number => Number(m.id!.split("-")[0]);

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanup.length) await cleanup.pop()!().catch(() => {});
});

const twoServers = (backend: BackendFactory) => startTwoServers(backend, cleanup);

forEachBackend((backend) => {
  it("a write through either server reaches both servers' streams, each event with its feed position", async () => {
    const { a, b } = await twoServers(backend);
    const onA = await subscribe(a.root);
    const onB = await subscribe(b.root);
    cleanup.push(async () => (onA.close(), onB.close()));
    await b.root.projects.create({ id: "via-b", displayName: "through B" });
    await a.root.projects.create({ id: "via-a", displayName: "through A" });
    for (const sub of [onA, onB]) {
      const fromB = await sub.until(created("via-b"));
      const fromA = await sub.until(created("via-a"));
      expect(position(fromA)).toBeGreaterThan(position(fromB));
    }
    // Both streams carry the same events under the same ids.
    const ids = (s: Sub) => s.messages.map((m) => `${m.id} ${m.event} ${m.data.path.at(-1)!.id}`);
    expect(ids(onA)).toEqual(ids(onB));
    expect(new Set(onA.messages.map((m) => m.id)).size).toBe(onA.messages.length);
  });

  it("Last-Event-ID resumes after a disconnect with exactly the missed events, replayed from the logs", async () => {
    const { a, b } = await twoServers(backend);
    const witness = await subscribe(b.root);
    const first = await subscribe(a.root);
    cleanup.push(async () => (witness.close(), first.close()));
    await b.root.projects.create({ id: "before", displayName: "seen" });
    const last = await first.until(created("before"));
    first.close();
    await b.root.projects.create({ id: "missed-1", displayName: "missed" });
    await b.root.project("missed-1").update({ description: "changed while away" });
    await b.root.projects.create({ id: "missed-2", displayName: "missed" });
    await witness.until(created("missed-2"));
    const resumed = await subscribe(a.root, last.id);
    cleanup.push(async () => resumed.close());
    await b.root.projects.create({ id: "after", displayName: "live again" });
    await resumed.until(created("after"));
    await witness.until(created("after")); // both streams have everything to compare
    const after = witness.messages.slice(witness.messages.findIndex((m) => m.id === last.id) + 1);
    expect(resumed.messages.map((m) => m.id)).toEqual(after.map((m) => m.id));
    expect(resumed.messages.map((m) => m.data)).toEqual(after.map((m) => m.data));
    expect(resumed.messages.some(created("before"))).toBe(false);
  });
});

describe("the change feed on one LMDB directory", () => {
  it("a CLI process writing to the directory reaches a server's stream; a CLI disable ends the user's stream at once", async () => {
    const dir = makeTempDirSync("feed");
    cleanup.push(async () => removeTempDirSync(dir));
    const kv = LmdbKv.open(dir);
    cleanup.push(() => kv.close());
    const s = await startServer(kv);
    cleanup.push(() => s.close());
    // The demo's manager, created here first (the demo keeps existing users): the CLI's projects are hers.
    const mary = await subscribe(await s.userClient("mary"));
    cleanup.push(async () => mary.close());
    const cli = (...args: string[]) =>
      new Promise<string>((res, rej) => {
        const child = spawn(process.execPath, [...CLI, ...args, "--data", dir], {
          cwd: ROOT,
          env: { ...process.env, FLOWSTORE_STORE: "", FLOWSTORE_DATA: "" },
          stdio: ["ignore", "pipe", "pipe"],
        });
        let out = "";
        child.stdout.on("data", (d) => (out += d));
        child.stderr.on("data", (d) => (out += d));
        child.on("exit", (code) => (code === 0 ? res(out) : rej(new Error(`exit ${code}: ${out}`))));
      });
    await cli("demo", "--projects", "1", "--subprojects", "1", "--workflowitems", "1");
    await mary.until((m) => m.event === "workflowitem.created");
    expect(mary.messages.some(created("demo-1"))).toBe(true);
    expect(mary.messages.every((m) => m.id !== undefined)).toBe(true);
    await cli("user", "disable", "mary");
    await mary.ended; // the server learned of the disable through the store, long before a keep-alive
    expect((await s.root.users.get("mary")).enabled).toBe(false);
  });
});

describe("the change feed by intent", () => {
  it("history events need viewHistory, permission events listPermissions; created payloads carry no permission map otherwise", async () => {
    const s = await startServer((await backends[0]!.create()).kv);
    cleanup.push(() => s.close());
    const details = await s.userClient("details");
    const historian = await s.userClient("historian");
    const onDetails = await subscribe(details);
    const onHistory = await subscribe(historian);
    const onRoot = await subscribe(s.root);
    cleanup.push(async () => (onDetails.close(), onHistory.close(), onRoot.close()));
    await s.root.projects.create({ id: "p", displayName: "p" });
    await s.root.project("p").grant("project.viewDetails", "details");
    await s.root.project("p").grant("project.viewDetails", "historian");
    await s.root.project("p").grant("project.viewHistory", "historian");
    await s.root.project("p").update({ description: "changed" });
    // A last project both may read the history of: once it arrives, everything before it was decided.
    await s.root.projects.create({ id: "end", displayName: "end" });
    for (const id of ["details", "historian"]) for (const i of ["project.viewDetails", "project.viewHistory"]) await s.root.project("end").grant(i, id);
    await s.root.project("end").update({ description: "the end" });
    const theEnd = (m: FeedMessage) => m.event === "project.updated" && m.data.path[0]?.id === "end";
    await onRoot.until(theEnd);
    await onHistory.until(theEnd);
    await onDetails.until(theEnd);

    // The root (who may list permissions) sees everything, permission maps included.
    expect((await onRoot.until(created("p"))).data.payload.permissions).toBeDefined();
    expect(onRoot.messages.some((m) => m.event === "project.permission_granted")).toBe(true);
    // viewHistory without listPermissions: history events, no permission events, no permission maps.
    expect(onHistory.messages.some((m) => m.event === "project.updated" && m.data.path[0]?.id === "p")).toBe(true);
    expect(onHistory.messages.filter((m) => m.event.endsWith("permission_granted") || m.event.endsWith("permission_revoked"))).toEqual([]);
    expect(onHistory.messages.filter((m) => m.data.payload.permissions !== undefined)).toEqual([]);
    // viewDetails alone: not one event of p (its history is not theirs to read), nothing of permissions.
    expect(onDetails.messages.filter((m) => m.data.path[0]?.id === "p")).toEqual([]);
    expect(onDetails.messages.filter((m) => m.event.endsWith("permission_granted") || m.data.payload.permissions !== undefined)).toEqual([]);
  });

  it("a malformed or unknown Last-Event-ID answers 400 naming the field", async () => {
    const s = await startServer((await backends[0]!.create()).kv);
    cleanup.push(() => s.close());
    for (const id of ["nonsense", "1-x", "999999-0"]) {
      const e = await subscribe(s.root, id).then(
        () => null,
        (err: unknown) => err,
      );
      expect(e).toBeInstanceOf(ProblemError);
      expect((e as ProblemError).status).toBe(400);
      expect((e as ProblemError).field).toBe("Last-Event-ID");
    }
  });
});
