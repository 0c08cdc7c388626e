/**
 * Erasure and what the store delivers (issue 26, part 2), through a real server on 127.0.0.1 over LMDB:
 * the change feed (SSE), a pull subscription and a webhook subscription (its receiver the example one, a
 * real child process checking every signature) deliver a data subject's personal fields as plain text
 * while the subject's key exists and as the erased marker after its erasure, never the sealed envelope;
 * a dead letter keeps the ciphertext in the store and reads as erased once the key is gone.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FeedMessage, FlowstoreClient } from "../../src/client/index.js";
import { scanAll } from "../../src/kv/contract.js";
import { ERASED_TEXT, SEALED_PREFIX as SEALED } from "../../src/resources/personal/subjects.js";
import { eventually } from "../support/eventually.js";
import { freePort } from "../support/ports.js";
import { makeTempDirSync, removeTempDirSync } from "../support/temp-dir.js";
import { startReceiver, type DeliveredEvent, type Receiver } from "../support/webhook-receiver.js";
import { raw, startLmdbServer, type Running } from "./harness.js";

const API = "/api/v1";
const NAME = "Jonas Berger";
const LATER = "Jonas Berger, second visit";

let s: Running;
let dir: string;
let receiver: Receiver;
let pullId: string;
let hookId: string;

const call = (c: FlowstoreClient, method: string, path: string, body?: unknown) =>
  raw(s.base, method, `${API}${path}`, {
    headers: { authorization: `Bearer ${c.token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });

/** Every message of one change-feed stream, from `lastEventId` on, until `until` holds (bounded), then closed. */
async function feed(lastEventId: string | undefined, until: (messages: FeedMessage[]) => boolean): Promise<FeedMessage[]> {
  const ctrl = new AbortController();
  const messages: FeedMessage[] = [];
  const reading = (async () => {
    for await (const m of s.root.events({ signal: ctrl.signal, lastEventId })) messages.push(m);
  })().catch(() => {});
  try {
    await eventually(() => until(messages), { what: "the feed's messages", timeoutMs: 30_000, intervalMs: 50 }).catch((e: Error) => {
      throw new Error(`${e.message}; got ${messages.map((m) => `${m.id} ${m.event}`).join(", ")}`);
    });
  } finally {
    ctrl.abort();
    await reading;
  }
  return messages;
}

const descriptionOf = (event: { type: string; path: readonly { id: string }[]; payload: Record<string, unknown> }, id: string): unknown =>
  event.type === "workflowitem.created" && event.path.at(-1)?.id === id ? (event.payload.data as { description?: unknown }).description : undefined;

/** Every value stored in a subscription's partition, as text. */
async function subscriptionBytes(id: string): Promise<string> {
  let all = "";
  for await (const e of scanAll(s.app.flowstore.kv, ["subscription", id], { limit: 1000 })) all += `${e.value.toString("utf8")}\n`;
  return all;
}

let before: string;

beforeAll(async () => {
  // The receiver runs on 127.0.0.1, which the webhook guard refuses unless the operator allows it (FLOWSTORE_WEBHOOK_ALLOW).
  s = await startLmdbServer("erasure-delivery", {
    webRoot: false,
    subscriptions: { deliver: true, retryBaseMs: 20, maxAttempts: 3, intervalMs: 50, pollMs: 50, allow: ["127.0.0.1"] },
  });
  dir = makeTempDirSync("erasure-hook");
  const port = await freePort();
  const pull = await call(s.root, "POST", "/subscriptions", { name: "p pulled", filter: { path: [{ type: "project", id: "p" }] } });
  pullId = pull.body.subscription.id;
  const hook = await call(s.root, "POST", "/subscriptions", {
    name: "p's items",
    filter: { path: [{ type: "project", id: "p" }], types: ["workflowitem.*"] },
    webhook: { url: `http://127.0.0.1:${port}/hook` },
  });
  hookId = hook.body.subscription.id;
  // The receiver answers 503 three times: the first batch (w1's creation) becomes a dead letter.
  receiver = await startReceiver({ secret: hook.body.secret, port, dir, fail: 3 });
  await s.root.projects.create({ id: "p", displayName: "Grants" });
  await s.root.project("p").subprojects.create({ id: "s", displayName: "Hardship fund", currency: "EUR", workflowMode: "unordered" });
  // Where a stream resumes to read the items again: right after the subproject's creation (read from the feed's first entry on).
  const start = await feed("1-0", (m) => m.some((x) => x.event === "subproject.created"));
  before = start.find((x) => x.event === "subproject.created")!.id!;
  await s.root.project("p").subproject("s").workflowitems.create({ id: "w1", displayName: "Grant 1", amountType: "N/A", dataSubject: "jonas", description: NAME });
});
afterAll(async () => {
  await receiver?.stop();
  await s?.close();
  if (dir) removeTempDirSync(dir);
});

describe("personal data as the feed and the subscriptions deliver it", () => {
  it("is plain text while the subject's key exists; a dead letter keeps it sealed in the store", async () => {
    const live = await feed(before, (m) => m.some((x) => descriptionOf(x.data, "w1") !== undefined));
    expect(descriptionOf(live.find((x) => descriptionOf(x.data, "w1") !== undefined)!.data, "w1")).toBe(NAME);
    expect(JSON.stringify(live)).not.toContain(SEALED);

    const pulled = (await call(s.root, "GET", `/subscriptions/${pullId}/events`)).body as { items: DeliveredEvent[] };
    expect(pulled.items.map((d) => descriptionOf(d.event, "w1")).filter(Boolean)).toEqual([NAME]);
    expect(JSON.stringify(pulled)).not.toContain(SEALED);

    const letters = await eventually(
      async () => {
        const r = await call(s.root, "GET", `/subscriptions/${hookId}/dead-letters`);
        return r.body.items.length > 0 && (r.body.items as { body: string }[]);
      },
      { what: "a dead letter", timeoutMs: 30_000, intervalMs: 50 },
    );
    const dead = JSON.parse(letters[0]!.body).events as DeliveredEvent[];
    expect(dead.map((d) => descriptionOf(d.event, "w1")).filter(Boolean)).toEqual([NAME]);
    // As stored, the dead letter holds the ciphertext, not the name.
    const stored = await subscriptionBytes(hookId);
    expect(stored).toContain(SEALED);
    expect(stored).not.toContain("Jonas");

    // Past the dead letter, the receiver gets the next item's text, opened, and its signature checks.
    await s.root.project("p").subproject("s").workflowitems.create({ id: "w2", displayName: "Grant 2", amountType: "N/A", dataSubject: "jonas", description: LATER });
    await eventually(() => receiver.events().some((d) => descriptionOf(d.event, "w2") === LATER), { what: "w2 delivered", timeoutMs: 30_000, intervalMs: 50 });
    expect(JSON.stringify(receiver.events())).not.toContain(SEALED);
  });

  it("is the erased marker after the erasure: the feed read again, the pull page read again, the dead letter", async () => {
    const erased = await call(s.root, "POST", "/subjects/jonas/erase");
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);

    const again = await feed(before, (m) => m.filter((x) => x.event === "workflowitem.subject_erased").length === 2);
    expect(descriptionOf(again.find((x) => descriptionOf(x.data, "w1") !== undefined)!.data, "w1")).toBe(ERASED_TEXT);
    expect(descriptionOf(again.find((x) => descriptionOf(x.data, "w2") !== undefined)!.data, "w2")).toBe(ERASED_TEXT);
    const text = JSON.stringify(again);
    expect(text).not.toContain("Jonas");
    expect(text).not.toContain(SEALED);

    // The pull consumer acknowledged nothing: the same page, read again, says erased.
    const pulled = (await call(s.root, "GET", `/subscriptions/${pullId}/events`)).body as { items: DeliveredEvent[] };
    expect(pulled.items.map((d) => descriptionOf(d.event, "w1")).filter(Boolean)).toEqual([ERASED_TEXT]);
    expect(pulled.items.map((d) => descriptionOf(d.event, "w2")).filter(Boolean)).toEqual([ERASED_TEXT]);
    expect(JSON.stringify(pulled)).not.toContain(SEALED);

    const letters = (await call(s.root, "GET", `/subscriptions/${hookId}/dead-letters`)).body.items as { body: string }[];
    const dead = JSON.parse(letters[0]!.body).events as DeliveredEvent[];
    expect(dead.map((d) => descriptionOf(d.event, "w1")).filter(Boolean)).toEqual([ERASED_TEXT]);
    expect(letters[0]!.body).not.toContain("Jonas");
    expect(letters[0]!.body).not.toContain(SEALED);

    // The erasure's events reach the webhook too; nothing the store holds changed its hash.
    await eventually(() => receiver.events().some((d) => d.event.type === "workflowitem.subject_erased"), { what: "the erasure delivered", timeoutMs: 30_000, intervalMs: 50 });
    expect((await s.app.flowstore.verifyAll()).ok).toBe(true);
  });
});
