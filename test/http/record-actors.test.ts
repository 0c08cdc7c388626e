/**
 * The record chains' events name who made each change (issue 29; kv/record-chain.ts), on both APIs of a
 * real server: an administrator's creates, memberships and grants name that administrator, never root
 * or "system"; a body that names another actor is refused (400) and appends nothing; a change refused
 * by the administrator hierarchy (alice resetting root's password) appends nothing; and an event whose
 * actor was edited in the store fails verify (the actor is inside the event's hash).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { GLOBAL } from "../../src/access/global.js";
import { PARTITION } from "../../src/identity/records.js";
import type { Partition } from "../../src/kv/contract.js";
import { MemoryKv } from "../../src/kv/memory.js";
import { CHAIN, recordEvents, type RecordEvent } from "../../src/kv/record-chain.js";
import { raw } from "./harness.js";
import { startTruBudget, tbLogin, type TbRunning } from "./trubudget/harness.js";

const API = "/api/v1";
let s: TbRunning;
let alice: string;

beforeAll(async () => {
  s = await startTruBudget(new MemoryKv());
  await s.root.users.create({ id: "alice", displayName: "Alice", password: "alice password 1" });
  for (const intent of ["global.createUser", "global.createGroup", "global.grantPermission"] as const) await s.root.globalPermissions.grant(intent, "alice");
  alice = (await tbLogin(s.base, "alice", "alice password 1")).token;
});
afterAll(async () => s?.close());

async function head(partition: Partition): Promise<number> {
  const e = await s.app.flowstore.kv.get(partition, CHAIN.pack(["head"]));
  return e ? (JSON.parse(e.value.toString("utf8")) as { seq: number }).seq : 0;
}
async function eventsAfter(partition: Partition, seq: number): Promise<RecordEvent[]> {
  return recordEvents(s.app.flowstore.kv, partition, seq + 1, await head(partition));
}
const asAlice = (method: string, path: string, body: unknown) =>
  raw(s.base, method, `${API}${path}`, { headers: { authorization: `Bearer ${alice}`, "content-type": "application/json" }, body: JSON.stringify(body) });

it("names the administrator who made each change, on the native API and TruBudget's, and nothing else", async () => {
  const identity0 = await head(PARTITION);
  const global0 = await head(GLOBAL.partition());
  // Naming another actor in the body is no way to change it: refused, nothing appended.
  const forged = await asAlice("POST", "/users", { id: "bob", displayName: "Bob", password: "bob password 1", actor: "root" });
  expect(forged.status).toBe(400);
  expect(await head(PARTITION)).toBe(identity0);

  expect((await asAlice("POST", "/users", { id: "bob", displayName: "Bob", password: "bob password 1" })).status).toBe(201);
  expect((await asAlice("POST", "/groups", { id: "crew", displayName: "Crew", members: ["bob"] })).status).toBe(201);
  expect((await s.call("global.createUser", { token: alice, data: { user: { id: "cy", displayName: "Cy", organization: "KfW", password: "cy password 123" } } })).status).toBe(200);
  expect((await s.call("global.grantPermission", { token: alice, data: { identity: "crew", intent: "global.createUser" } })).status).toBe(200);
  // Refused by the hierarchy: alice may not reset root's password; nothing is appended.
  const before = await head(PARTITION);
  expect((await asAlice("PUT", "/users/root/password", { password: "stolen password 1" })).status).toBe(403);
  expect(await head(PARTITION)).toBe(before);

  expect((await eventsAfter(PARTITION, identity0)).map((e) => e.actor)).toEqual(["alice", "alice", "alice"]);
  expect((await eventsAfter(GLOBAL.partition(), global0)).map((e) => e.actor)).toEqual(["alice"]);
  expect((await s.app.flowstore.verifyAll()).records.ok).toBe(true);
}, 120_000);

it("fails verify when an event's actor is edited in the store", async () => {
  const kv = s.app.flowstore.kv;
  const seq = await head(PARTITION);
  const key = CHAIN.pack(["log", seq]);
  const original = (await kv.get(PARTITION, key))!.value;
  await kv.commit(PARTITION, [{ type: "put", key, value: Buffer.from(JSON.stringify({ ...JSON.parse(original.toString("utf8")), actor: "root" })) }]);
  try {
    const [identity] = await s.app.flowstore.identity.verifyRecords(kv);
    expect(identity!.result).toMatchObject({ ok: false, firstBad: { seq, reason: "hash does not match the event's content" } });
  } finally {
    await kv.commit(PARTITION, [{ type: "put", key, value: original }]);
  }
  expect((await s.app.flowstore.verifyAll()).records.ok).toBe(true);
}, 120_000);
