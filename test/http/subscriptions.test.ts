/**
 * Durable subscriptions through a real server on 127.0.0.1 (issue 26, part 3): filter semantics, the
 * pull consumer's acknowledgments, events re-checked against the owner's view at delivery, who may see a
 * subscription, webhook retries into dead letters and their replay (signatures checked by the example
 * receiver, a real child process), and the digest of open assignments.
 */
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { API } from "../../src/client/core.js";
import type { FlowstoreClient } from "../../src/client/index.js";
import { allPartitions } from "../../src/kv/contract.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { subscriptionLayout } from "../../src/subscriptions/layout.js";
import { backends } from "../conformance/backends.js";
import { freePort } from "../support/ports.js";
import { eventually } from "../support/eventually.js";
import { makeTempDirSync, removeTempDirSync } from "../support/temp-dir.js";
import { startReceiver, type DeliveredEvent } from "../support/webhook-receiver.js";
import { raw, SCRAPE, startServer, type Running, type StartOptions } from "./harness.js";

/** The receivers run on 127.0.0.1: the test servers allow it, as an operator would (FLOWSTORE_WEBHOOK_ALLOW). */
const LOOPBACK = ["127.0.0.1"];

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

async function serve(options: StartOptions = {}): Promise<Running> {
  const handle = await backends[0]!.create();
  cleanup.push(() => handle.destroy());
  const s = await startServer(handle.kv, options);
  cleanup.push(() => s.close());
  return s;
}

/** One request as `who`. */
function call(s: Running, who: FlowstoreClient, method: string, path: string, body?: unknown) {
  return raw(s.base, method, `${API}${path}`, {
    headers: { authorization: `Bearer ${who.token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function subscribe(s: Running, who: FlowstoreClient, body: unknown): Promise<{ id: string; secret?: string }> {
  const r = await call(s, who, "POST", "/subscriptions", body);
  expect(r.status).toBe(201);
  return { id: r.body.subscription.id, secret: r.body.secret };
}

/** The subscription's dead letters, once there is one. */
function firstDeadLetters(s: Running, who: FlowstoreClient, id: string, what: string) {
  return eventually(
    async () => {
      const r = await call(s, who, "GET", `/subscriptions/${id}/dead-letters`);
      return r.body.items.length > 0 && (r.body.items as { n: number; attempts: number; error: string; body: string }[]);
    },
    { what, timeoutMs: 30_000, intervalMs: 50 },
  );
}

type Pulled = { items: DeliveredEvent[]; ack: string; more: boolean };
async function pull(s: Running, who: FlowstoreClient, id: string, query = ""): Promise<Pulled> {
  const r = await call(s, who, "GET", `/subscriptions/${id}/events${query}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as Pulled;
}

const item = (s: Running, p: string, w: string) => s.root.project(p).subproject("s").workflowitems.create({ id: w, displayName: w, amountType: "N/A" });
async function project(s: Running, p: string): Promise<void> {
  await s.root.projects.create({ id: p, displayName: p });
  await s.root.project(p).subprojects.create({ id: "s", displayName: "s", currency: "EUR" });
}

/** Positions `<feed position>-<seq>` in the order delivered must grow, and each partition's seqs too. */
function inOrder(items: readonly DeliveredEvent[]): void {
  const last = new Map<string, number>();
  let previous = [0, 0];
  for (const { position, event } of items) {
    const [p, q] = position.split("-").map(Number) as [number, number];
    expect(p > previous[0]! || (p === previous[0] && q > previous[1]!), position).toBe(true);
    previous = [p, q];
    const key = event.path[0]!.id;
    expect(event.seq, `${key} seq ${event.seq}`).toBeGreaterThan(last.get(key) ?? 0);
    last.set(key, event.seq);
  }
}

describe("a pull subscription", () => {
  it("delivers what its filter selects (subtree, types), in order, again until acknowledged", async () => {
    const s = await serve();
    const items = await subscribe(s, s.root, { name: "items of p1", filter: { path: [{ type: "project", id: "p1" }], types: ["workflowitem.*"] } });
    const projects = await subscribe(s, s.root, { name: "new projects", filter: { types: ["project.created"] } });
    const all = await subscribe(s, s.root, { name: "everything" });
    for (const p of ["p1", "p2"]) await project(s, p);
    await item(s, "p1", "w1");
    await item(s, "p2", "w1");
    await s.root.project("p1").subproject("s").workflowitem("w1").update({ description: "changed" });

    const got = await pull(s, s.root, items.id);
    expect(got.items.map((d) => [d.event.type, d.event.path.map((x) => x.id).join("/")])).toEqual([
      ["workflowitem.created", "p1/s/w1"],
      ["workflowitem.updated", "p1/s/w1"],
    ]);
    expect(got.more).toBe(false);
    expect((await pull(s, s.root, projects.id)).items.map((d) => d.event.path[0]!.id)).toEqual(["p1", "p2"]);
    const everything = await pull(s, s.root, all.id);
    expect(everything.items.length).toBeGreaterThanOrEqual(7); // 2 projects, 2 subprojects, 2 items, an update
    inOrder(everything.items);

    // At least once: unacknowledged, the same events come again; acknowledged, they do not.
    expect(await pull(s, s.root, items.id)).toEqual(got);
    const rest = await pull(s, s.root, items.id, `?ack=${got.items[0]!.position}`);
    expect(rest.items.map((d) => d.event.type)).toEqual(["workflowitem.updated"]);
    expect((await pull(s, s.root, items.id, `?ack=${rest.ack}`)).items).toEqual([]);
    // An older acknowledgment moves nothing back.
    expect((await pull(s, s.root, items.id, `?ack=${got.items[0]!.position}`)).items).toEqual([]);
    expect((await call(s, s.root, "GET", `/subscriptions/${items.id}`)).body.position).toBe(rest.ack);
    // Its lag: the feed's entries past its position; none once acknowledged up to the head.
    expect((await call(s, s.root, "GET", `/subscriptions/${all.id}`)).body.behind).toBeGreaterThanOrEqual(7);
    expect((await call(s, s.root, "GET", `/subscriptions/${items.id}`)).body.behind).toBe(0);

    // A page at a time: `ack` covers what the page read.
    const first = await pull(s, s.root, all.id, "?limit=1");
    expect(first.items).toHaveLength(1);
    expect(first.more).toBe(true);
    const second = await pull(s, s.root, all.id, `?limit=1&ack=${first.ack}`);
    expect(second.items[0]).toEqual(everything.items[1]);

    // Bad acknowledgments: 400 naming ack, nothing moved.
    for (const bad of ["nonsense", "1-x", "999999-1"]) {
      const r = await call(s, s.root, "GET", `/subscriptions/${all.id}/events?ack=${bad}`);
      expect(r.status, bad).toBe(400);
      expect(r.type).toContain("application/problem+json");
      expect(r.body.field).toContain("ack");
    }
    expect((await pull(s, s.root, all.id, "?limit=1")).items[0]).toEqual(everything.items[1]);
  });

  it("re-checks every event against the owner's view at delivery: a revoked view hides what was written while it held", async () => {
    const s = await serve();
    const alice = await s.userClient("alice");
    const bob = await s.userClient("bob");
    const sub = await subscribe(s, alice, { name: "mine" });
    await s.root.projects.create({ id: "p", displayName: "p" });
    for (const i of ["project.viewDetails", "project.viewHistory"]) await s.root.project("p").grant(i, "alice");
    await s.root.project("p").update({ description: "while alice may read it" });
    await s.root.project("p").revoke("project.viewHistory", "alice");
    await s.root.projects.create({ id: "q", displayName: "q" });
    for (const i of ["project.viewDetails", "project.viewHistory"]) await s.root.project("q").grant(i, "alice");

    const got = await pull(s, alice, sub.id);
    expect(got.items.filter((d) => d.event.path[0]!.id === "p")).toEqual([]);
    const created = got.items.find((d) => d.event.type === "project.created");
    expect(created?.event.path[0]!.id).toBe("q");
    // Without the intent to list permissions: no permission map, no permission events.
    expect(created!.event.payload.permissions).toBeUndefined();
    expect(got.items.filter((d) => d.event.type.includes("permission"))).toEqual([]);

    // A subscription is its owner's: anyone else hears of none; root (the operators) may read it.
    expect((await call(s, bob, "GET", `/subscriptions/${sub.id}`)).status).toBe(404);
    expect((await call(s, bob, "GET", `/subscriptions/${sub.id}/events`)).status).toBe(404);
    expect((await call(s, bob, "GET", "/subscriptions")).body.items).toEqual([]);
    expect((await call(s, s.root, "GET", `/subscriptions/${sub.id}`)).body).toMatchObject({ owner: "alice", name: "mine" });
    expect((await call(s, alice, "GET", "/subscriptions")).body.items.map((x: { id: string }) => x.id)).toEqual([sub.id]);
  });

  it("refuses bad input with the field named, and forgets a deleted subscription", async () => {
    const s = await serve();
    for (const [body, field] of [
      [{ name: "x", webhook: { url: "ftp://example.invalid/" } }, "url"],
      [{ name: "x", filter: { intent: "project.fly" } }, "filter.intent"],
      [{ name: "x", filter: { colour: "red" } }, "filter"],
      [{ name: "" }, "name"],
    ] as const) {
      const r = await call(s, s.root, "POST", "/subscriptions", body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.field, JSON.stringify(body)).toContain(field);
    }
    const sub = await subscribe(s, s.root, { name: "gone soon", filter: { intent: "project.update" } });
    expect((await call(s, s.root, "DELETE", `/subscriptions/${sub.id}`)).status).toBe(204);
    expect((await call(s, s.root, "GET", `/subscriptions/${sub.id}`)).status).toBe(404);
    expect((await call(s, s.root, "GET", `/subscriptions/${sub.id}/events`)).status).toBe(404);
  });
});

describe("a webhook subscription", () => {
  it("retries with backoff, gives up into a dead letter an operator reads and replays; every body is signed", async () => {
    const dir = makeTempDirSync("webhook");
    cleanup.push(async () => removeTempDirSync(dir));
    const s = await serve({ subscriptions: { deliver: true, retryBaseMs: 20, maxAttempts: 3, intervalMs: 50, pollMs: 50, allow: LOOPBACK } });
    const port = await freePort();
    const sub = await subscribe(s, s.root, { name: "p's events", filter: { path: [{ type: "project", id: "p" }] }, webhook: { url: `http://127.0.0.1:${port}/hook` } });
    expect(sub.secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // The secret is shown once: never again.
    expect(JSON.stringify((await call(s, s.root, "GET", `/subscriptions/${sub.id}`)).body)).not.toContain(sub.secret);
    const receiver = await startReceiver({ secret: sub.secret!, port, dir, fail: 3 });
    cleanup.push(() => receiver.stop());

    await s.root.projects.create({ id: "p", displayName: "p" });
    const letters = await firstDeadLetters(s, s.root, sub.id, "a dead letter");
    expect(letters[0]).toMatchObject({ n: 1, attempts: 3, error: "the receiver answered 503" });
    expect(receiver.lines.filter((l) => l.failing)).toHaveLength(3);
    const dead = JSON.parse(letters[0]!.body).events as DeliveredEvent[];
    expect(dead.map((d) => d.event.type)).toContain("project.created");

    // Past the dead letter, delivery goes on.
    await s.root.project("p").update({ description: "after" });
    await eventually(() => receiver.events().some((d) => d.event.type === "project.updated"), { what: "the update delivered", timeoutMs: 30_000, intervalMs: 50 });

    // Dead letters are the owner's and the operators' (global.manageSubscriptions) to read and replay.
    const alice = await s.userClient("alice");
    expect((await call(s, alice, "GET", `/subscriptions/${sub.id}/dead-letters`)).status).toBe(404);
    expect((await call(s, alice, "POST", `/subscriptions/${sub.id}/dead-letters/1/replay`)).status).toBe(404);
    await s.root.globalPermissions.grant("global.manageSubscriptions", "alice");
    expect((await call(s, alice, "GET", `/subscriptions/${sub.id}/dead-letters`)).body.items).toHaveLength(1);
    const replayed = await call(s, alice, "POST", `/subscriptions/${sub.id}/dead-letters/1/replay`);
    expect(replayed.body).toEqual({ delivered: true, status: 204 });
    expect((await call(s, alice, "GET", `/subscriptions/${sub.id}/dead-letters`)).body.items).toEqual([]);
    expect((await call(s, alice, "POST", `/subscriptions/${sub.id}/dead-letters/1/replay`)).status).toBe(404);

    // Every event of p reached the receiver, verified by its signature.
    const types = receiver.events().map((d) => d.event.type);
    expect(types).toContain("project.created");
    expect(types).toContain("project.updated");
    // A body the secret did not sign is refused by the receiver.
    const forged = await fetch(receiver.url, { method: "POST", headers: { "flowstore-signature": `t=${Math.floor(Date.now() / 1000)},v1=${"0".repeat(64)}` }, body: "{}" });
    expect(forged.status).toBe(401);
  });
});

/** A plain HTTP server on 127.0.0.1 that counts its requests and answers each with `answer`. */
async function listen(answer: (res: import("node:http").ServerResponse) => void): Promise<{ url: string; hits: () => number }> {
  let hits = 0;
  const server: Server = createServer((req, res) => {
    hits++;
    req.resume();
    answer(res);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanup.push(() => new Promise((r) => server.close(r)));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, hits: () => hits };
}

/** A receiver on 127.0.0.1 that answers 204 and hands each body to `take`; its URL. */
async function listenFor(take: (body: string) => void): Promise<string> {
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      take(Buffer.concat(chunks).toString("utf8"));
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanup.push(() => new Promise((r) => server.close(r)));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}

describe("webhook URLs (server-side request forgery)", () => {
  const INTERNAL = [
    "http://127.0.0.1:8080/hook",
    "http://localhost/hook", // a name that resolves to loopback
    "http://[::1]/hook",
    "http://10.1.2.3/hook",
    "http://172.16.0.1/hook",
    "http://192.168.1.1/hook",
    "http://100.64.0.1/hook",
    "http://169.254.169.254/latest/meta-data/", // the cloud metadata address (link-local)
    "http://[fe80::1]/hook",
    "http://[fd00::1]/hook",
    "http://224.0.0.1/hook",
    "http://[ff02::1]/hook",
    "http://0.0.0.0/hook",
    "http://[::]/hook",
    "http://[::ffff:127.0.0.1]/hook", // IPv4-mapped IPv6
    "http://2130706433/hook", // 127.0.0.1 spelled as one number
    "http://[::7f00:1]/hook", // IPv4-compatible (::/96)
    "http://[64:ff9b::a9fe:a9fe]/hook", // NAT64 of 169.254.169.254
    "http://[64:ff9b:1::a00:1]/hook", // local-use NAT64
    "http://[2002:a00:1::1]/hook", // 6to4 of 10.0.0.1
  ];

  it("refuses internal addresses and other schemes with a 400 naming webhook.url, unless the operator's allow-list names them", async () => {
    const s = await serve();
    for (const url of [...INTERNAL, "ftp://example.com/hook", "file:///etc/passwd", "gopher://example.com/"]) {
      const r = await call(s, s.root, "POST", "/subscriptions", { name: "x", webhook: { url } });
      expect(r.status, url).toBe(400);
      expect(r.type, url).toContain("application/problem+json");
      expect(r.body.field, url).toContain("url");
    }
    const loop = await call(s, s.root, "POST", "/subscriptions", { name: "x", webhook: { url: "http://127.0.0.1:8080/hook" } });
    expect(loop.body.detail).toContain("loopback");
    const metadata = await call(s, s.root, "POST", "/subscriptions", { name: "x", webhook: { url: "http://169.254.169.254/" } });
    expect(metadata.body.detail).toContain("link-local");
    // A name's refusal names the kind of address, not the address it resolves to.
    const named = await call(s, s.root, "POST", "/subscriptions", { name: "x", webhook: { url: "http://localhost/hook" } });
    expect(named.body.detail).toBe("webhook.url: localhost resolves to a loopback address (not in FLOWSTORE_WEBHOOK_ALLOW)");
    // Nothing was written by a refusal.
    expect((await call(s, s.root, "GET", "/subscriptions")).body.items).toEqual([]);

    // The allow-list names hosts, addresses and CIDRs: what it names is taken, the rest still refused.
    const allowed = await serve({ subscriptions: { allow: ["127.0.0.1", "10.9.0.0/16", "localhost"] } });
    for (const url of ["http://127.0.0.1:8080/hook", "http://10.9.8.7/hook", "http://localhost:8080/hook"]) {
      const r = await call(allowed, allowed.root, "POST", "/subscriptions", { name: url, webhook: { url } });
      expect(r.status, url).toBe(201);
    }
    for (const url of ["http://10.1.2.3/hook", "http://127.0.0.2/hook", "http://[::1]/hook"]) {
      const r = await call(allowed, allowed.root, "POST", "/subscriptions", { name: url, webhook: { url } });
      expect(r.status, url).toBe(400);
      expect(r.body.field, url).toBe("webhook.url");
    }
  });

  it("refuses a host that does not resolve in time with a 400 naming webhook.url, and writes nothing", async () => {
    // A nameserver that never answers, as the server's lookup sees it (one cannot be run on loopback).
    const s = await serve({ subscriptions: { resolve: { lookup: () => new Promise(() => {}), timeoutMs: 100 } } });
    const r = await call(s, s.root, "POST", "/subscriptions", { name: "x", webhook: { url: "https://hook.never-answers.example/hook" } });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ field: "webhook.url", detail: "webhook.url: its host hook.never-answers.example did not resolve in time" });
    expect((await call(s, s.root, "GET", "/subscriptions")).body.items).toEqual([]);
  });

  it("answers 503 naming webhook.url when no lookup place came free in time (the name is not at fault), and writes nothing", async () => {
    let release = () => {};
    const held = new Promise<void>((r) => (release = r));
    // One place: alice's name, whose nameserver never answers, holds it past its timeout.
    const lookup = async (host: string) => {
      if (host.startsWith("slow.")) await held;
      return [{ address: "93.184.216.34", family: 4 }];
    };
    const s = await serve({ subscriptions: { resolve: { lookup, timeoutMs: 100, concurrent: 1 } } });
    const alice = await s.userClient("alice");
    const bob = await s.userClient("bob");
    const slow = await call(s, alice, "POST", "/subscriptions", { name: "slow", webhook: { url: "https://slow.example/hook" } });
    expect(slow.status).toBe(400);
    const busy = await call(s, bob, "POST", "/subscriptions", { name: "fine", webhook: { url: "https://fine.example/hook" } });
    expect(busy.status).toBe(503);
    expect(busy.body).toMatchObject({ field: "webhook.url", detail: expect.stringContaining("the lookup of fine.example found no free place in time") });
    expect((await call(s, bob, "GET", "/subscriptions")).body.items).toEqual([]);
    release();
    expect((await call(s, bob, "POST", "/subscriptions", { name: "fine", webhook: { url: "https://fine.example/hook" } })).status).toBe(201);
  });

  it("does not follow a redirect, to an internal address or any other", async () => {
    const s = await serve({ subscriptions: { deliver: true, retryBaseMs: 20, maxAttempts: 2, intervalMs: 50, pollMs: 50, allow: LOOPBACK } });
    // The redirect's target is a real server: had the redirect been followed, it would count a request.
    const target = await listen((res) => res.writeHead(204).end());
    const redirector = await listen((res) => res.writeHead(307, { location: target.url }).end());
    const sub = await subscribe(s, s.root, { name: "redirected", webhook: { url: redirector.url } });
    await s.root.projects.create({ id: "p", displayName: "p" });
    const letters = await firstDeadLetters(s, s.root, sub.id, "the redirected delivery dead-lettered");
    expect(letters[0]).toMatchObject({ attempts: 2, error: "the receiver answered 307" });
    expect(redirector.hits()).toBeGreaterThanOrEqual(2);
    expect(target.hits()).toBe(0);
  });

  it("checks the address again at each delivery, resolving the host then: delivered while allowed, refused once the allow-list is withdrawn", async () => {
    const dir = makeTempDirSync("webhook-recheck");
    cleanup.push(async () => removeTempDirSync(dir));
    const key = randomBytes(32).toString("base64");
    const receiver = await listen((res) => res.writeHead(204).end());
    // A host name, resolved by the delivery's own lookup (the guard's) to the loopback address it listens on.
    const url = receiver.url.replace("127.0.0.1", "localhost");
    const options = { deliver: true, retryBaseMs: 20, maxAttempts: 2, intervalMs: 50, pollMs: 50, secretKey: { key } };
    const first = await startServer(LmdbKv.open(dir), { subscriptions: { ...options, allow: ["localhost"] } });
    const sub = await subscribe(first, first.root, { name: "was allowed", webhook: { url } });
    await first.root.projects.create({ id: "p", displayName: "p" });
    await eventually(() => receiver.hits() > 0, { what: "a delivery to localhost while allowed", timeoutMs: 30_000, intervalMs: 50 });
    await first.close();
    const delivered = receiver.hits();
    // The same store, restarted without the allow-list: the stored URL now resolves to a refused address.
    const second = await startServer(LmdbKv.open(dir), { subscriptions: options });
    cleanup.push(() => second.close());
    await second.root.projects.create({ id: "q", displayName: "q" });
    const letters = await firstDeadLetters(second, second.root, sub.id, "the refused delivery dead-lettered");
    // The kind of address, not the address (what an internal name resolves to is the operator's to know).
    expect(letters[0]!.error).toBe("localhost resolves to a loopback address (not in FLOWSTORE_WEBHOOK_ALLOW)");
    expect(receiver.hits()).toBe(delivered);
  });
});

/**
 * The lookup the guard takes by injection (a nameserver that never answers cannot be run on loopback):
 * `alice.*` and `bob.*` answer the receivers' loopback address, alice's not after `hang()` until `release()`.
 */
function aliceCanHang() {
  let hanging: Promise<void> | null = null;
  let release = () => {};
  const asked = { alice: 0, bob: 0 };
  const lookup = async (host: string) => {
    const who = host.split(".")[0] as "alice" | "bob";
    asked[who]++;
    if (who === "alice" && hanging) await hanging;
    return [{ address: "127.0.0.1", family: 4 }];
  };
  const hang = () => void (hanging = new Promise<void>((r) => (release = r)));
  return { lookup, asked, hang, release: () => release() };
}

describe("webhook name lookups shared between owners", () => {
  it("one owner's name whose nameserver never answers delays neither another owner's deliveries nor counts its own unstarted lookups as attempts", async () => {
    const { lookup, asked, hang, release } = aliceCanHang();
    // Two places (the default), one an owner's; two attempts before a dead letter, retried at once.
    const s = await serve({
      subscriptions: { deliver: true, retryBaseMs: 1, maxAttempts: 2, intervalMs: 50, pollMs: 50, allow: LOOPBACK, resolve: { lookup, timeoutMs: 300 } },
    });
    const received = { alice: [] as string[], bob: [] as string[] };
    const receivers = await Promise.all(
      (["alice", "bob"] as const).map((who) =>
        listenFor((body) =>
          received[who].push(...(JSON.parse(body) as { events: DeliveredEvent[] }).events.map((d) => String((d.event.payload.data as { description?: string }).description))),
        ),
      ),
    );
    const subs: Record<"alice" | "bob", string> = { alice: "", bob: "" };
    for (const [i, who] of (["alice", "bob"] as const).entries()) {
      const client = await s.userClient(who);
      subs[who] = (await subscribe(s, client, { name: who, filter: { types: ["project.updated"] }, webhook: { url: receivers[i]!.replace("127.0.0.1", `${who}.hooks.test`) } })).id;
    }
    await s.root.projects.create({ id: "p", displayName: "p" });
    for (const who of ["alice", "bob"]) for (const i of ["project.viewDetails", "project.viewHistory"]) await s.root.project("p").grant(i, who);

    // Alice's name stops answering: her first attempt times out (her fault: counted), and that lookup
    // keeps her place, as a thread of the system's resolver stays busy with it.
    hang();
    const sealed = asked.alice;
    await s.root.project("p").update({ description: "E1" });
    await eventually(() => received.bob.includes("E1"), { what: "bob's delivery of E1", timeoutMs: 30_000, intervalMs: 20 });
    const retry = () => s.app.flowstore.kv.get(subscriptionLayout.partition(subs.alice), subscriptionLayout.retry);
    await eventually(async () => (await retry()) !== undefined, { what: "alice's failed attempt", timeoutMs: 30_000, intervalMs: 20 });
    // Passes go on (each one tries alice's delivery again, due at once): bob's deliveries are not delayed by hers.
    for (const d of ["E2", "E3"]) {
      await s.root.project("p").update({ description: d });
      await eventually(() => received.bob.includes(d), { what: `bob's delivery of ${d}`, timeoutMs: 30_000, intervalMs: 20 });
    }
    // Alice's later attempts found her place held and were never started: not counted (two would be a dead letter).
    expect(JSON.parse((await retry())!.value.toString("utf8"))).toMatchObject({ attempts: 1, error: "alice.hooks.test did not resolve in time" });
    expect((await call(s, s.root, "GET", `/subscriptions/${subs.alice}/dead-letters`)).body.items).toEqual([]);
    expect(asked.alice - sealed).toBe(1);
    expect(received.alice).toEqual([]);
    // Her nameserver answers at last: her place is free, and everything is delivered to her, in order.
    release();
    await eventually(() => received.alice.includes("E3"), { what: "alice's delivery once her name answers", timeoutMs: 30_000, intervalMs: 20 });
    expect(received.alice).toEqual(["E1", "E2", "E3"]);
    expect(received.bob).toEqual(["E1", "E2", "E3"]);
    expect((await call(s, s.root, "GET", `/subscriptions/${subs.bob}/dead-letters`)).body.items).toEqual([]);
  });
});

describe("an owner with many webhooks whose names never answer", () => {
  it("holds one place of a delivery pass: once the owner's lookup is past its time her other lookups are refused at once, another owner is delivered meanwhile, and the deferrals are counted in /metrics", async () => {
    // Alice's names stop answering. Her one started lookup is past its time after 300 ms and still holds
    // her place (the system has not answered); her other lookups wait for her place until then, and are
    // refused at once after. The delivery's own timeout is longer than the test.
    const { lookup, asked, hang, release } = aliceCanHang();
    const told: [string, number, string][] = [];
    // The test runs the delivery passes itself (as the background does), so that it knows which pass sees E1.
    const s = await serve({
      subscriptions: {
        retryBaseMs: 1,
        maxAttempts: 2,
        timeoutMs: 3_600_000,
        allow: LOOPBACK,
        resolve: { lookup, timeoutMs: 300 },
        onDeferred: (owner, deliveries, reason) => told.push([owner, deliveries, reason]),
      },
    });
    const received = { alice: 0, bob: [] as string[] };
    const [aliceHook, bobHook] = await Promise.all([
      listenFor(() => received.alice++),
      listenFor((body) =>
        received.bob.push(...(JSON.parse(body) as { events: DeliveredEvent[] }).events.map((d) => String((d.event.payload.data as { description?: string }).description))),
      ),
    ]);
    const alice = await s.userClient("alice");
    const bob = await s.userClient("bob");
    const hook = { filter: { types: ["project.updated"] } };
    const alices = 12;
    const aliceIds = new Set<string>();
    for (let i = 0; i < alices; i++) aliceIds.add((await subscribe(s, alice, { name: `a${i}`, ...hook, webhook: { url: aliceHook.replace("127.0.0.1", "alice.hooks.test") } })).id);
    // Bob's subscription comes after at least 8 of alice's in the order a pass walks them (ids are random):
    // a pass in batches of 8 would then hold bob's delivery behind a batch holding one of alice's.
    const order = async () => {
      const ids: string[] = [];
      for await (const p of allPartitions(s.app.flowstore.kv, subscriptionLayout.kind.kind)) ids.push(String(p[1]));
      return ids;
    };
    const alicesBefore = async (id: string) => {
      const ids = await order();
      return ids.slice(0, ids.indexOf(id)).filter((a) => aliceIds.has(a)).length;
    };
    let bobs = "";
    for (let tries = 0; tries < 50; tries++) {
      bobs = (await subscribe(s, bob, { name: "b", ...hook, webhook: { url: bobHook.replace("127.0.0.1", "bob.hooks.test") } })).id;
      if ((await alicesBefore(bobs)) >= 8) break;
      expect((await call(s, bob, "DELETE", `/subscriptions/${bobs}`)).status).toBe(204);
    }
    expect(await alicesBefore(bobs)).toBeGreaterThanOrEqual(8);
    await s.root.projects.create({ id: "p", displayName: "p" });
    for (const who of ["alice", "bob"]) for (const i of ["project.viewDetails", "project.viewHistory"]) await s.root.project("p").grant(i, who);

    hang();
    const before = asked.alice;
    await s.root.project("p").update({ description: "E1" });
    const { subscriptions } = s.app.flowstore;
    const failed: unknown[] = [];
    const pass = subscriptions.deliverPending((e) => failed.push(e));
    // Bob is delivered in this pass while alice's one started lookup still hangs.
    await eventually(() => received.bob.includes("E1"), { what: "bob's delivery of E1", timeoutMs: 30_000, intervalMs: 20 });
    // Her other eleven deliveries found her place held (refused, at once or after waiting for it), were
    // never asked, and are counted in /metrics.
    const deferred = async () => Number(/^flowstore_webhook_deliveries_deferred_total (\d+)$/m.exec(await (await fetch(s.base + "/metrics", SCRAPE)).text())?.[1]);
    await eventually(async () => (await deferred()) === alices - 1, { what: "alice's deferred deliveries in /metrics", timeoutMs: 30_000, intervalMs: 20 });
    expect(asked.alice - before).toBe(1);
    expect(received.alice).toBe(0);
    // One attempt was counted, the started lookup's (the name's fault); none for the eleven never started.
    const retries = await Promise.all([...aliceIds].map((id) => s.app.flowstore.kv.get(subscriptionLayout.partition(id), subscriptionLayout.retry)));
    expect(retries.filter((r) => r !== undefined).map((r) => JSON.parse(r!.value.toString("utf8")))).toEqual([
      expect.objectContaining({ attempts: 1, error: "alice.hooks.test did not resolve in time" }),
    ]);

    // The pass ends, telling the operator once of alice's deferrals (and nothing of bob's); her name
    // answers, and the next pass delivers E1 to each of her webhooks.
    await pass;
    expect(told).toEqual([["alice", alices - 1, expect.stringMatching(/waits for the owner's own lookups|found no free place in time/)]]);
    expect(received.alice).toBe(0);
    release();
    await eventually(() => asked.alice - before === 1 && received.alice === 0, { what: "the hanging lookup answered", timeoutMs: 5_000, intervalMs: 10 });
    await subscriptions.deliverPending((e) => failed.push(e));
    expect(received.alice).toBe(alices);
    expect(told).toHaveLength(1);
    expect(failed).toEqual([]);
    expect(received.bob).toEqual(["E1"]);
    for (const id of [...aliceIds, bobs]) expect((await call(s, s.root, "GET", `/subscriptions/${id}/dead-letters`)).body.items).toEqual([]);
  });
});

describe("webhook secrets at rest", () => {
  it("are sealed: the store's files hold no secret in clear, the key file is the owner's, and deliveries still verify", async () => {
    const dir = makeTempDirSync("webhook-sealed");
    cleanup.push(async () => removeTempDirSync(dir));
    const storeDir = join(dir, "store");
    const s = await startServer(LmdbKv.open(storeDir), {
      subscriptions: { deliver: true, intervalMs: 50, pollMs: 50, allow: LOOPBACK, secretKey: { dataDir: dir } },
    });
    let open = true;
    cleanup.push(() => (open ? s.close() : Promise.resolve()));
    const port = await freePort();
    const sub = await subscribe(s, s.root, { name: "sealed-secret-subscription", webhook: { url: `http://127.0.0.1:${port}/hook` } });
    const receiver = await startReceiver({ secret: sub.secret!, port, dir });
    cleanup.push(() => receiver.stop());
    await s.root.projects.create({ id: "p", displayName: "p" });
    await eventually(() => receiver.events().some((d) => d.event.type === "project.created"), { what: "a verified delivery", timeoutMs: 30_000, intervalMs: 50 });
    await s.close();
    open = false;

    expect(statSync(join(dir, "webhook-secrets.key")).mode & 0o777).toBe(0o600);
    // Every byte the store wrote: the subscription's record is there (its name in clear), its secret is not.
    const bytes = Buffer.concat(readdirSync(storeDir).map((f) => readFileSync(join(storeDir, f))));
    expect(bytes.includes("sealed-secret-subscription")).toBe(true);
    expect(bytes.includes(sub.secret!)).toBe(false);
    expect(bytes.includes("whs1.")).toBe(true);
  });
});

describe("a webhook secret kept in clear (a store written before secrets were sealed)", () => {
  it("is sealed at open, in a commit checked on the record's version, and deliveries still verify with it", async () => {
    const handle = await backends.find((b) => b.name === "lmdb")!.create();
    cleanup.push(() => handle.destroy());
    const key = randomBytes(32).toString("base64");
    const port = await freePort();
    const a = await startServer(handle.kv, { subscriptions: { allow: LOOPBACK, secretKey: { key } } });
    const sub = await subscribe(a, a.root, { name: "legacy", webhook: { url: `http://127.0.0.1:${port}/hook` } });
    await a.close();
    // The record as such a store holds it: the secret in clear, nothing sealed.
    const kv = await handle.reopen();
    const partition = subscriptionLayout.partition(sub.id);
    const stored = JSON.parse((await kv.get(partition, subscriptionLayout.record))!.value.toString("utf8"));
    delete stored.sealedSecret;
    await kv.commit(partition, [{ type: "put", key: subscriptionLayout.record, value: Buffer.from(JSON.stringify({ ...stored, secret: sub.secret })) }]);
    const b = await startServer(kv, { subscriptions: { deliver: true, intervalMs: 50, pollMs: 50, allow: LOOPBACK, secretKey: { key } } });
    cleanup.push(() => b.close());
    const resealed = JSON.parse((await b.app.flowstore.kv.get(partition, subscriptionLayout.record))!.value.toString("utf8"));
    expect(resealed.secret).toBeUndefined();
    expect(resealed.sealedSecret).toMatch(/^whs1\./);
    expect(JSON.stringify(resealed)).not.toContain(sub.secret!);
    const dir = makeTempDirSync("webhook-legacy");
    cleanup.push(async () => removeTempDirSync(dir));
    const receiver = await startReceiver({ secret: sub.secret!, port, dir });
    cleanup.push(() => receiver.stop());
    await b.root.projects.create({ id: "p", displayName: "p" });
    await eventually(() => receiver.events().some((d) => d.event.type === "project.created"), { what: "a verified delivery", timeoutMs: 30_000, intervalMs: 50 });
  });
});

describe("a server whose webhook key is not the store's", () => {
  const lmdb = backends.find((b) => b.name === "lmdb")!;
  const keyA = randomBytes(32).toString("base64");
  const keyB = randomBytes(32).toString("base64");

  it("refuses to start, naming FLOWSTORE_WEBHOOK_KEY and both keys' ids, while a server with the store's key runs", async () => {
    const handle = await lmdb.create();
    cleanup.push(() => handle.destroy());
    const a = await startServer(handle.kv, { subscriptions: { allow: LOOPBACK, secretKey: { key: keyA } } });
    cleanup.push(() => a.close());
    await subscribe(a, a.root, { name: "sealed under A", webhook: { url: "http://127.0.0.1:9/hook" } });
    const kvB = await handle.reopen();
    cleanup.push(() => kvB.close());
    const refused = startServer(kvB, { subscriptions: { allow: LOOPBACK, secretKey: { key: keyB } } });
    await expect(refused).rejects.toThrow(/webhook secrets are sealed with key [0-9a-f]{8}, but this server's webhook key is [0-9a-f]{8}: .*FLOWSTORE_WEBHOOK_KEY/);
    // The same key opens it.
    const kvC = await handle.reopen();
    const c = await startServer(kvC, { subscriptions: { allow: LOOPBACK, secretKey: { key: keyA } } });
    cleanup.push(() => c.close());
    expect((await call(c, c.root, "GET", "/subscriptions")).body.items).toHaveLength(1);
  });

  it("refuses to start with a malformed key, naming FLOWSTORE_WEBHOOK_KEY, on a store that holds no secret yet", async () => {
    const handle = await lmdb.create();
    cleanup.push(() => handle.destroy());
    const started = startServer(handle.kv, { subscriptions: { allow: LOOPBACK, secretKey: { key: "bad" } } }).then((s) => {
      cleanup.push(() => s.close());
      return "started";
    });
    await expect(started).rejects.toThrow(/FLOWSTORE_WEBHOOK_KEY must be 32 bytes/);
  });

  it("gives the lease up when a secret does not open, so a server with the right key delivers", async () => {
    const handle = await lmdb.create();
    cleanup.push(() => handle.destroy());
    const port = await freePort();
    const a = await startServer(handle.kv, { subscriptions: { allow: LOOPBACK, secretKey: { key: keyA } } });
    cleanup.push(() => a.close());
    const sub = await subscribe(a, a.root, { name: "sealed under A", webhook: { url: `http://127.0.0.1:${port}/hook` } });
    await a.root.projects.create({ id: "p", displayName: "p" });
    // B holds another key and is let open the store anyway (requireKey off): it delivers, with a long lease.
    const errors: string[] = [];
    const kvB = await handle.reopen();
    const b = await startServer(kvB, {
      subscriptions: { deliver: true, intervalMs: 50, pollMs: 50, leaseMs: 600_000, allow: LOOPBACK, secretKey: { key: keyB }, requireKey: false },
      onBackgroundError: (e) => errors.push(e instanceof Error ? e.message : String(e)),
    });
    cleanup.push(() => b.close());
    await eventually(() => errors.some((m) => m.includes(`subscription ${sub.id} was sealed with key`)), {
      what: "B's pass over the subscription",
      timeoutMs: 30_000,
      intervalMs: 50,
    });
    // It takes the lease for each pass and gives it up (kept, it would be there from the first pass on).
    const lease = () => b.app.flowstore.kv.get(subscriptionLayout.partition(sub.id), subscriptionLayout.lease);
    await eventually(async () => !(await lease()), { what: "the lease given up", timeoutMs: 30_000, intervalMs: 20 });
    // A server with the store's key delivers while B keeps running.
    const dir = makeTempDirSync("webhook-wrong-key");
    cleanup.push(async () => removeTempDirSync(dir));
    const receiver = await startReceiver({ secret: sub.secret!, port, dir });
    cleanup.push(() => receiver.stop());
    const kvC = await handle.reopen();
    const c = await startServer(kvC, { subscriptions: { deliver: true, intervalMs: 50, pollMs: 50, allow: LOOPBACK, secretKey: { key: keyA } } });
    cleanup.push(() => c.close());
    await eventually(() => receiver.events().some((d) => d.event.type === "project.created"), { what: "C's verified delivery", timeoutMs: 30_000, intervalMs: 50 });
  });
});

describe("the digest", () => {
  it("summarizes the caller's open assignments as JSON and text, and is delivered to a webhook once a day", async () => {
    const dir = makeTempDirSync("digest");
    cleanup.push(async () => removeTempDirSync(dir));
    const s = await serve({ subscriptions: { deliver: true, intervalMs: 50, pollMs: 50, allow: LOOPBACK } });
    const alice = await s.userClient("alice");
    await project(s, "p");
    await item(s, "p", "v"); // first: items close in order (TruBudget's rule)
    await item(s, "p", "w");
    await s.root.project("p").subproject("s").workflowitem("w").assign("alice");
    await s.root.project("p").subproject("s").workflowitem("v").assign("alice");
    // TruBudget's close rule: the assignee closes (seeing the item).
    await s.root.project("p").grant("project.viewDetails", "alice");
    await s.root.project("p").subproject("s").grant("subproject.viewDetails", "alice");
    for (const i of ["workflowitem.viewDetails", "workflowitem.close"]) await s.root.project("p").subproject("s").workflowitem("v").grant(i, "alice");
    await alice.project("p").subproject("s").workflowitem("v").close();

    const digest = (await call(s, alice, "GET", "/subscriptions/digest")).body;
    expect(digest).toMatchObject({ user: "alice", open: 1, items: [{ type: "workflowitem", ids: ["p", "s", "w"], status: "open" }] });
    expect(digest.day).toBe(new Date().toISOString().slice(0, 10));
    expect(digest.text).toContain("workflowitem p/s/w");
    expect(digest.text).not.toContain("p/s/v");
    // The plain-text form (a mail body), by Accept or by `format=text`.
    for (const [query, accept] of [
      ["", "text/plain"],
      ["?format=text", "application/json"],
    ] as const) {
      const text = await raw(s.base, "GET", `${API}/subscriptions/digest${query}`, { headers: { authorization: `Bearer ${alice.token}`, accept } });
      expect(text.status).toBe(200);
      expect(text.type).toMatch(/^text\/plain/);
      expect(text.body).toBe(digest.text);
    }
    const bad = await call(s, alice, "GET", "/subscriptions/digest?format=pdf");
    expect(bad.status).toBe(400);
    expect(bad.body.field).toContain("format");

    const port = await freePort();
    const sub = await subscribe(s, alice, { name: "daily", filter: { types: ["nothing.*"] }, webhook: { url: `http://127.0.0.1:${port}/hook`, digest: true } });
    const receiver = await startReceiver({ secret: sub.secret!, port, dir });
    cleanup.push(() => receiver.stop());
    await eventually(() => receiver.digests().length > 0, { what: "the digest delivered", timeoutMs: 30_000, intervalMs: 50 });
    // Once a day: further passes send no second one (a pass moves the position past the update it filters out).
    const position = (await call(s, alice, "GET", `/subscriptions/${sub.id}`)).body.position;
    await s.root.project("p").update({ description: "a pass of the deliverer" });
    await eventually(async () => (await call(s, alice, "GET", `/subscriptions/${sub.id}`)).body.position !== position, { what: "a pass", timeoutMs: 30_000, intervalMs: 50 });
    expect(receiver.digests()).toHaveLength(1);
    expect(receiver.digests()[0]!.text).toBe(digest.text);
  });
});
