/**
 * A sealed value opens only where it was sealed (review of issue 26 part 2, finding 1), through a real
 * server on 127.0.0.1 over LMDB. The ciphertext of an item's personal field reaches callers who may not
 * view the item (a project archive file holds it), so:
 * - a write holding a string with the seal prefix is refused (400 naming the field), on the native API
 *   and on the TruBudget adapter: the ciphertext taken from the store and written into the caller's own
 *   project is not stored;
 * - a ciphertext put past the API (straight into the store) into a field that is not personal, or into
 *   another resource's personal field, reads as stored (the ciphertext) in the state, a list, the history
 *   and its diff, and the feed: never as the plain text; in its own item it still opens.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FlowstoreClient } from "../../src/client/index.js";
import { scanAll } from "../../src/kv/contract.js";
import { SEALED_PREFIX } from "../../src/resources/personal/subjects.js";
import { eventually } from "../support/eventually.js";
import { raw, startLmdbServer, type Running } from "./harness.js";
import { expectError, startTruBudget, type TbRunning } from "./trubudget/harness.js";

const API = "/api/v1";
const NAME = "Anna Schmidt, Hauptstr. 5";
const SEALED_RE = /psd1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+/;

let s: Running;
let mallory: FlowstoreClient;
const call = (c: FlowstoreClient, method: string, path: string, body?: unknown) =>
  raw(s.base, method, `${API}${path}`, {
    headers: { authorization: `Bearer ${c.token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });

/** Every value of a partition, with its key. */
async function entries(partition: string[]) {
  const out = [];
  for await (const e of scanAll(s.app.flowstore.kv, partition, { limit: 1000 })) out.push(e);
  return out;
}

/** Puts `sealed` in place of `marker` in every value of the partition that holds it (state, log): a write no API makes. */
async function inject(partition: string[], marker: string, sealed: string): Promise<number> {
  let n = 0;
  const from = Buffer.from(marker, "utf8");
  const to = Buffer.from(sealed, "utf8");
  for (const e of await entries(partition)) {
    // Byte by byte: a record's header is binary (record.ts), its JSON the tail.
    const parts: Buffer[] = [];
    let at = 0;
    for (let i = e.value.indexOf(from); i >= 0; i = e.value.indexOf(from, at)) {
      parts.push(e.value.subarray(at, i), to);
      at = i + from.length;
    }
    if (at === 0) continue;
    parts.push(e.value.subarray(at));
    await s.app.flowstore.kv.commit(partition, [{ type: "put", key: e.key, value: Buffer.concat(parts) }]);
    n++;
  }
  return n;
}

let ciphertext: string;
let pullId: string;

beforeAll(async () => {
  s = await startLmdbServer("erasure-oracle", { webRoot: false });
  mallory = await s.userClient("mallory");
  expect((await call(s.root, "POST", "/global/permissions/grant", { intent: "global.createProject", identity: "mallory" })).status).toBeLessThan(300);
  const pull = await call(mallory, "POST", "/subscriptions", { name: "m pulled", filter: { path: [{ type: "project", id: "m" }] } });
  expect(pull.status, JSON.stringify(pull.body)).toBe(201);
  pullId = pull.body.subscription.id;
  await s.root.projects.create({ id: "p", displayName: "Grants" });
  await s.root.project("p").subprojects.create({ id: "s", displayName: "Hardship fund", currency: "EUR", workflowMode: "unordered" });
  await s.root.project("p").subproject("s").workflowitems.create({ id: "w1", displayName: "Grant 1", amountType: "N/A", dataSubject: "anna", description: NAME });
  // The ciphertext as an archive file or an export holds it: taken from the stored bytes.
  const found = (await entries(["project", "p"])).map((e) => SEALED_RE.exec(e.value.toString("utf8"))?.[0]).find(Boolean);
  expect(found).toBeDefined();
  ciphertext = found!;
  expect((await call(mallory, "GET", "/projects/p/subprojects/s/workflowitems/w1")).status).toBe(404);
});
afterAll(async () => {
  await s?.close();
});

describe("a copied ciphertext", () => {
  it("is refused in any write, named by its field (400 problem+json): a project's description, additionalData, an item's description", async () => {
    const created = await call(mallory, "POST", "/projects", { id: "m", displayName: "Mine", description: ciphertext });
    expect(created.status, JSON.stringify(created.body)).toBe(400);
    expect(created.type).toContain("application/problem+json");
    expect(created.body.field).toMatch(/description$/);
    expect((await call(mallory, "GET", "/projects/m")).status).toBe(404); // nothing half-written

    expect((await call(mallory, "POST", "/projects", { id: "m", displayName: "Mine", description: "marker-one" })).status).toBe(201);
    const nested = await call(mallory, "PATCH", "/projects/m", { additionalData: { note: ciphertext } });
    expect(nested.status, JSON.stringify(nested.body)).toBe(400);
    expect(nested.body.field).toMatch(/additionalData\.note$/);
    const renamed = await call(mallory, "PATCH", "/projects/m", { displayName: `${SEALED_PREFIX}anything` });
    expect(renamed.status).toBe(400);
    expect(renamed.body.field).toMatch(/displayName$/);

    await call(mallory, "POST", "/projects/m/subprojects", { id: "s", displayName: "s", currency: "EUR", workflowMode: "unordered" });
    const item = await call(mallory, "POST", "/projects/m/subprojects/s/workflowitems", {
      id: "x",
      displayName: "x",
      amountType: "N/A",
      dataSubject: "anna",
      description: ciphertext,
    });
    expect(item.status, JSON.stringify(item.body)).toBe(400);
    expect(item.body.field).toMatch(/description$/);
    expect((await call(mallory, "GET", "/projects/m")).body.data.description).toBe("marker-one");
  });

  it("put in the store past the API, opens nowhere but in its own item: not in a field that is not personal, not in another item's personal field", async () => {
    // Mallory's own project (a field that is not personal), changed once so its history holds a diff.
    expect((await call(mallory, "PATCH", "/projects/m", { description: "marker-two" })).status).toBe(200);
    // Another item (another subject) of mallory's project, its personal field.
    const other = await call(mallory, "POST", "/projects/m/subprojects/s/workflowitems", {
      id: "y",
      displayName: "y",
      amountType: "N/A",
      dataSubject: "mallory",
      description: "marker-three",
    });
    expect(other.status, JSON.stringify(other.body)).toBe(201);
    expect(await inject(["project", "m"], "marker-one", ciphertext)).toBeGreaterThan(0);
    expect(await inject(["project", "m"], "marker-two", ciphertext)).toBeGreaterThan(0);

    const seen: unknown[] = [];
    const project = await call(mallory, "GET", "/projects/m");
    expect(project.status, JSON.stringify(project.body)).toBe(200);
    expect(project.body.data.description).toBe(ciphertext);
    seen.push(project.body, (await call(mallory, "GET", "/projects")).body);
    const history = await call(mallory, "GET", "/projects/m/history?diff=true");
    expect(history.status).toBe(200);
    expect(JSON.stringify(history.body)).toContain(ciphertext);
    seen.push(history.body);

    // The item's personal field: mallory's item's sealed value is replaced by anna's, in state and log.
    const stored = (await entries(["project", "m"])).map((e) => SEALED_RE.exec(e.value.toString("utf8"))?.[0]).filter((x) => x && x !== ciphertext);
    expect(stored.length).toBeGreaterThan(0);
    for (const own of new Set(stored)) await inject(["project", "m"], own!, ciphertext);
    const item = await call(mallory, "GET", "/projects/m/subprojects/s/workflowitems/y");
    expect(item.body.data.description).toBe(ciphertext);
    seen.push(item.body, (await call(mallory, "GET", "/projects/m/subprojects/s/workflowitems")).body);
    seen.push((await call(mallory, "GET", "/projects/m/subprojects/s/workflowitems/y/history?diff=true")).body);
    // The feed, as mallory's pull subscription reads it: the ciphertext there too.
    const pulled = await eventually(
      async () => {
        const r = await call(mallory, "GET", `/subscriptions/${pullId}/events?limit=100`);
        return JSON.stringify(r.body).includes(ciphertext) && r;
      },
      { what: "project m's events pulled", timeoutMs: 30_000, intervalMs: 50 },
    );
    seen.push(pulled.body);
    for (const answer of seen) expect(JSON.stringify(answer)).not.toContain("Anna");

    // In its own item, the same value opens.
    expect((await call(s.root, "GET", "/projects/p/subprojects/s/workflowitems/w1")).body.data.description).toBe(NAME);
  });
});

describe("the TruBudget adapter", () => {
  let tb: TbRunning;
  let mia: string;
  beforeAll(async () => {
    tb = await startTruBudget();
    mia = await tb.user("mia");
    expect((await tb.call("global.grantPermission", { data: { identity: "mia", intent: "global.createProject" } })).status).toBe(200);
  });
  afterAll(async () => {
    await tb?.close();
  });

  it("refuses a sealed value in a write, naming the field (400)", async () => {
    const created = await tb.call("global.createProject", { token: mia, data: { project: { displayName: "School", description: `${SEALED_PREFIX}YW5uYQ.AAAA` } } });
    expectError(created, 400, "description");
  });
});
