/**
 * Erasure that keeps the proof (issue 26, part 2), through a real server on 127.0.0.1 over LMDB: a
 * workflowitem naming a data subject (`dataSubject`) stores its personal fields (description, markdown,
 * rejectReason) sealed under the subject's key, in the state and in every event (so the hash chain
 * covers the ciphertext), and serves them opened. `POST /subjects/{id}/erase` destroys the key: the
 * fields read as erased in the state, lists and history (diffs included); the erasure is an event in the
 * item's chain and a receipt naming it; `verify` and a checkpoint taken before still pass; a backup taken
 * before holds the ciphertext and the key (which opens it), one taken after the ciphertext alone.
 */
import { createDecipheriv } from "node:crypto";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FlowstoreClient } from "../../src/client/index.js";
import { scanAll } from "../../src/kv/contract.js";
import { decode } from "../../src/kv/tuple.js";
import { layout } from "../../src/resources/model/layout.js";
import { ERASED_TEXT } from "../../src/resources/store.js";
import { raw, startLmdbServer, type Running } from "./harness.js";

const API = "/api/v1";
const ITEM = `${API}/projects/p/subprojects/s/workflowitems`;
const NAME = "Anna Schmidt";

let s: Running;
let clerk: FlowstoreClient;
const auth = (c: FlowstoreClient) => ({ authorization: `Bearer ${c.token}` });
const call = (c: FlowstoreClient, method: string, path: string, body?: unknown) =>
  raw(s.base, method, path, {
    headers: { ...auth(c), ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });

/** Every value stored in the project's partition (state, access, indexes, the log), as text. */
async function projectBytes(): Promise<string> {
  let all = "";
  for await (const e of scanAll(s.app.flowstore.kv, ["project", "p"], { limit: 1000 })) all += `${e.value.toString("utf8")}\n`;
  return all;
}

/** A backup (the export, NDJSON, values in base64): every stored value as text, and the subject anna's partition's values by key family. */
async function backup(): Promise<{ text: string; subjectFamilies: Map<string, Buffer[]> }> {
  const res = await fetch(`${s.base}${API}/store/backup`, { headers: auth(s.root) });
  expect(res.status).toBe(200);
  const lines = gunzipSync(Buffer.from(await res.arrayBuffer())).toString("utf8");
  const subjectFamilies = new Map<string, Buffer[]>();
  let text = "";
  let inSubject = false;
  for (const line of lines.split("\n").filter(Boolean)) {
    const o = JSON.parse(line) as { partition?: string; k?: string; v?: string };
    // anna's partition only: every user's display name is sealed under a subject key of its own too.
    if (o.partition !== undefined) inSubject = JSON.stringify(decode(Buffer.from(o.partition, "base64"))) === JSON.stringify(layout.subject("anna"));
    else if (o.k !== undefined && o.v !== undefined) {
      const value = Buffer.from(o.v, "base64");
      text += `${value.toString("utf8")}\n`;
      if (!inSubject) continue;
      const family = decode(Buffer.from(o.k, "base64"))[0] as string;
      subjectFamilies.set(family, [...(subjectFamilies.get(family) ?? []), value]);
    }
  }
  return { text, subjectFamilies };
}

/** Opens a sealed value (psd1.<subject>.<iv|tag|ct>) with a key: what anyone holding both can do. */
function openWith(key: Buffer, sealed: string): string {
  const [, subject, body] = sealed.split(".");
  const raw = Buffer.from(body!, "base64url");
  const d = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12));
  d.setAAD(Buffer.from(subject!, "base64url"));
  d.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([d.update(raw.subarray(28)), d.final()]).toString("utf8");
}

beforeAll(async () => {
  s = await startLmdbServer("erasure", { webRoot: false });
  clerk = await s.userClient("clerk");
  await s.root.projects.create({ id: "p", displayName: "Grants" });
  await s.root.project("p").subprojects.create({ id: "s", displayName: "Hardship fund", currency: "EUR", workflowMode: "unordered" });
  const items = s.root.project("p").subproject("s").workflowitems;
  await items.create({ id: "w1", displayName: "Grant 1", amountType: "N/A", dataSubject: "anna", description: `${NAME}, Hauptstr. 5`, markdown: "**income** below the line" });
  await items.create({ id: "w2", displayName: "Grant 2", amountType: "N/A", description: "no one in particular" });
  await items.create({ id: "w3", displayName: "Grant 3", amountType: "N/A", dataSubject: "anna", assignee: "root" });
  s.root.reason = "moved";
  await s.root
    .project("p")
    .subproject("s")
    .workflowitem("w1")
    .update({ description: `${NAME}, Hauptstr. 7` });
  s.root.reason = undefined;
  expect((await call(s.root, "POST", `${ITEM}/w3/close`, { rejectReason: `${NAME} withdrew` })).status).toBe(200);
});
afterAll(async () => {
  await s?.close();
});

describe("personal fields under a per-subject key", () => {
  it("are stored sealed (state and events) and served opened: get, list, history with its diff", async () => {
    const stored = await projectBytes();
    expect(stored).not.toContain(NAME);
    expect(stored).not.toContain("income");
    expect(stored).toContain('"psd1.');
    expect(stored).toContain("no one in particular"); // an item naming no subject holds no personal data
    const w1 = await call(s.root, "GET", `${ITEM}/w1`);
    expect(w1.body.data).toMatchObject({ description: `${NAME}, Hauptstr. 7`, markdown: "**income** below the line", dataSubject: "anna" });
    const list = await call(s.root, "GET", ITEM);
    expect(list.body.items.map((i: { data: { description?: string } }) => i.data.description)).toContain(`${NAME}, Hauptstr. 7`);
    const history = await call(s.root, "GET", `${ITEM}/w1/history?diff=true`);
    expect(history.body.items[0].payload.data.description).toBe(`${NAME}, Hauptstr. 5`);
    expect(history.body.items[1].payload).toMatchObject({ reason: "moved", changes: [{ path: "/description", old: `${NAME}, Hauptstr. 5`, new: `${NAME}, Hauptstr. 7` }] });
    expect((await call(s.root, "GET", `${ITEM}/w3`)).body.data.rejectReason).toBe(`${NAME} withdrew`);
  });

  it("an unchanged personal field is no change; the subject is set at creation only and must be an id", async () => {
    await s.root
      .project("p")
      .subproject("s")
      .workflowitem("w1")
      .update({ description: `${NAME}, Hauptstr. 7`, displayName: "Grant one" });
    const last = await call(s.root, "GET", `${ITEM}/w1/history?order=desc&limit=1`);
    expect(last.body.items[0].payload.changes).toEqual([{ path: "/displayName", old: "Grant 1", new: "Grant one" }]);
    const moved = await call(s.root, "PATCH", `${ITEM}/w1`, { dataSubject: "bert" });
    expect(moved.status).toBe(400);
    expect(moved.body.field).toMatch(/dataSubject/);
    const bad = await call(s.root, "POST", ITEM, { displayName: "x", amountType: "N/A", dataSubject: "a/b", description: "y" });
    expect(bad.status).toBe(400);
    expect(bad.body.field).toMatch(/dataSubject/);
  });

  it("erasing destroys the key: reads say erased everywhere, the receipt names the chain's erasure event, verify and an earlier checkpoint pass", async () => {
    const checkpoint = (await call(s.root, "GET", `${API}/projects/p/checkpoint`)).body;
    const before = await backup();
    expect(before.text).not.toContain(NAME);
    expect(before.subjectFamilies.get("key")).toHaveLength(1);

    expect((await call(clerk, "POST", `${API}/subjects/anna/erase`)).status).toBe(403);
    expect((await call(s.root, "POST", `${API}/subjects/nobody/erase`)).status).toBe(404);
    expect((await call(s.root, "GET", `${API}/subjects/anna/erasure`)).status).toBe(404);
    const erased = await call(s.root, "POST", `${API}/subjects/anna/erase`);
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    const receipt = erased.body;
    expect(receipt).toMatchObject({ subject: "anna", erasedBy: "root", complete: true, keyId: expect.stringMatching(/^[0-9a-f]{16}$/) });
    expect(receipt.resources.map((r: { ids: string[] }) => r.ids.join("/")).sort()).toEqual(["p/s/w1", "p/s/w3"]);
    for (const r of receipt.resources) {
      expect(r.fields).toEqual(["description", "markdown", "rejectReason"]);
      const last = (await call(s.root, "GET", `${ITEM}/${r.ids[2]}/history?order=desc&limit=1`)).body.items[0];
      expect(last).toMatchObject({ type: "workflowitem.subject_erased", actor: "root", seq: r.event.seq, hash: r.event.hash, payload: { subject: "anna" } });
    }
    // The receipt again, to show the subject; erasing again answers it unchanged.
    expect((await call(s.root, "GET", `${API}/subjects/anna/erasure`)).body).toEqual(receipt);
    expect((await call(s.root, "POST", `${API}/subjects/anna/erase`)).body).toEqual(receipt);

    // State, lists and history (its data and its diffs) read as erased; the rest is kept.
    const w1 = (await call(s.root, "GET", `${ITEM}/w1`)).body.data;
    expect(w1).toMatchObject({ description: ERASED_TEXT, markdown: ERASED_TEXT, displayName: "Grant one", dataSubject: "anna" });
    expect((await call(s.root, "GET", `${ITEM}/w3`)).body.data.rejectReason).toBe(ERASED_TEXT);
    const list = (await call(s.root, "GET", ITEM)).body.items.map((i: { data: { description?: string } }) => i.data.description);
    expect(list).toEqual(expect.arrayContaining([ERASED_TEXT, "no one in particular"]));
    const history = JSON.stringify((await call(s.root, "GET", `${ITEM}/w1/history?diff=true`)).body);
    expect(history).not.toContain(NAME);
    expect((await call(s.root, "GET", `${ITEM}/w1/history`)).body.items[1].payload.changes).toEqual([{ path: "/description", old: ERASED_TEXT, new: ERASED_TEXT }]);

    // The chains hash the ciphertext, which is unchanged: verify passes, and so does the checkpoint taken before.
    expect((await call(s.root, "GET", `${API}/projects/p/verify`)).body).toMatchObject({ ok: true });
    expect((await s.app.flowstore.verifyAll()).ok).toBe(true);
    expect(await s.app.flowstore.verifyCheckpoint(checkpoint, { trustedFingerprint: checkpoint.keyFingerprint })).toMatchObject({ ok: true });

    // No new personal data for an erased subject.
    const again = await call(s.root, "POST", ITEM, { displayName: "Grant 4", amountType: "N/A", dataSubject: "anna", description: "again" });
    expect(again.status).toBe(409);
    expect(again.body.field).toBe("body.dataSubject");

    // A backup taken after holds the same ciphertext and no key; one taken before holds the key, which opens it.
    const after = await backup();
    expect(after.subjectFamilies.get("key")).toBeUndefined();
    expect(after.subjectFamilies.get("erasure")).toHaveLength(1);
    const anna = Buffer.from("anna").toString("base64url"); // the users' display names are sealed under their own subjects
    const sealed = [...before.text.matchAll(/psd1\.([A-Za-z0-9_-]+)\.[A-Za-z0-9_-]+/g)].filter((m) => m[1] === anna).map((m) => m[0]);
    expect(sealed.length).toBeGreaterThan(0);
    for (const v of sealed.slice(0, 3)) expect(after.text).toContain(v);
    expect(after.text).not.toContain(NAME);
    const oldKey = Buffer.from(JSON.parse(before.subjectFamilies.get("key")![0]!.toString("utf8")).key, "base64");
    expect(sealed.map((v) => openWith(oldKey, v))).toContain(`${NAME}, Hauptstr. 5`);
  });
});
