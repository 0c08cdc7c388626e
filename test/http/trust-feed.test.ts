/**
 * Issue 29, findings 5 and 14 (streams), through a real server on 127.0.0.1: an open change-feed stream
 * ends after a logout-all (its token is verified again on every tick and delivery), stops delivering
 * what a group granted once the user leaves the group, and a user holds at most MAX_STREAMS_PER_USER
 * streams at a time.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FlowstoreClient, ProblemError, type FeedMessage } from "../../src/client/index.js";
import { MAX_STREAMS_PER_USER } from "../../src/http/routes/events.js";
import { MemoryKv } from "../../src/kv/memory.js";
import { raw, startServer, type Running } from "./harness.js";

interface Sub {
  readonly messages: FeedMessage[];
  readonly ended: Promise<"ended">;
  until(pred: (m: FeedMessage) => boolean): Promise<FeedMessage>;
  close(): void;
}

async function subscribe(client: FlowstoreClient): Promise<Sub> {
  const ctrl = new AbortController();
  const messages: FeedMessage[] = [];
  let opened!: () => void;
  const open = new Promise<void>((r) => (opened = r));
  const ended = (async () => {
    try {
      for await (const m of client.events({ signal: ctrl.signal, onOpen: opened })) messages.push(m);
    } catch {
      // a reconnect refused (the tokens are revoked) ends it too
    }
    return "ended" as const;
  })();
  await Promise.race([open, ended]);
  return {
    messages,
    ended,
    async until(pred) {
      for (let i = 0; i < 400; i++) {
        const found = messages.find(pred);
        if (found) return found;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`not received; got ${messages.map((m) => m.event).join(", ")}`);
    },
    close: () => ctrl.abort(),
  };
}

/** Resolves "open" after `ms` unless `p` settled first (a bound, not a timing assertion). */
const within = <T>(p: Promise<T>, ms: number): Promise<T | "open"> => Promise.race([p, new Promise<"open">((r) => setTimeout(() => r("open"), ms))]);

describe("change-feed streams re-check the caller", () => {
  let s: Running;
  const subs: Sub[] = [];
  const tokenOf = async (id: string) =>
    (await raw(s.base, "POST", "/api/v1/auth/token", { headers: { "content-type": "application/json" }, body: JSON.stringify({ username: id, password: `${id} password` }) })).body
      .token as string;
  beforeAll(async () => {
    s = await startServer(new MemoryKv(), { webRoot: false, loginRateLimit: false });
    for (const id of ["watcher", "member", "capper"]) await s.root.users.create({ id, displayName: id, password: `${id} password` });
  });
  afterAll(async () => {
    for (const sub of subs) sub.close();
    await s?.close();
  });

  it("ends a stream once its user logs out everywhere (finding 5)", async () => {
    const token = await tokenOf("watcher");
    const sub = await subscribe(new FlowstoreClient({ baseUrl: s.base, token }));
    subs.push(sub);
    expect((await raw(s.base, "POST", "/api/v1/auth/logout-all", { headers: { authorization: `Bearer ${token}` } })).status).toBe(204);
    await s.root.projects.create({ id: "after-logout", displayName: "x" }); // something to deliver
    expect(await within(sub.ended, 20_000)).toBe("ended");
  });

  it("stops delivering what a group granted once the user leaves the group (finding 5)", async () => {
    await s.root.groups.create({ id: "viewers", displayName: "viewers", members: ["member"] });
    await s.root.projects.create({ id: "q", displayName: "q" });
    await s.root.project("q").grant("project.viewHistory", "viewers");
    await s.root.projects.create({ id: "marker", displayName: "marker" });
    await s.root.project("marker").grant("project.viewHistory", "member");
    const sub = await subscribe(new FlowstoreClient({ baseUrl: s.base, token: await tokenOf("member") }));
    subs.push(sub);
    await s.root.project("q").update({ description: "seen" });
    await sub.until((m) => m.event === "project.updated" && m.data.path[0]?.id === "q");
    await s.root.groups.removeMember("viewers", "member");
    await s.root.project("q").update({ description: "not for member any more" });
    await s.root.project("marker").update({ description: "the end" });
    await sub.until((m) => m.event === "project.updated" && m.data.path[0]?.id === "marker");
    expect(sub.messages.filter((m) => m.event === "project.updated" && m.data.path[0]?.id === "q")).toHaveLength(1);
  });

  it(`caps a user's open streams at ${MAX_STREAMS_PER_USER} (finding 14)`, async () => {
    const client = new FlowstoreClient({ baseUrl: s.base, token: await tokenOf("capper") });
    for (let i = 0; i < MAX_STREAMS_PER_USER; i++) subs.push(await subscribe(client));
    const refused = await client
      .events({})
      [Symbol.asyncIterator]()
      .next()
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(refused).toBeInstanceOf(ProblemError);
    expect((refused as ProblemError).status).toBe(429);
  });
});
