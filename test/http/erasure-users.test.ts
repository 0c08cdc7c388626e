/**
 * Users' display names under their subject's key (issue 26, part 2), through a real server on 127.0.0.1
 * over LMDB with the native and TruBudget APIs, and the real `flowstore` CLI: a user's display name is
 * stored sealed (the identity partition, its record chain and every backup hold the ciphertext) and served
 * opened by the native user routes and TruBudget's `user.list`; a sealed value as a display name is
 * refused (400 naming the field). Erasing the subject named as the user (its id; the route and
 * `flowstore erase-subject`) destroys its key: the name reads `(erased)`, the account is disabled (its
 * tokens and logins refused, enabling it again refused), the receipt names the identity chain's head
 * after, `flowstore verify` passes, and a backup taken before (which holds the ciphertext and the key)
 * restored does not bring the name or the account back. A store, and a backup, holding display names
 * in plain text (written before they were sealed) are sealed at open and at restore.
 */
import { createWriteStream, readFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { openFlowstore } from "../../src/compose/index.js";
import { listEpochs } from "../../src/compose/epochs.js";
import { exportStore } from "../../src/compose/transfer.js";
import { scanAll, type KvStore } from "../../src/kv/contract.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { recordHead } from "../../src/kv/record-chain.js";
import { ERASED_TEXT, SEALED_PREFIX, subjectLayout, USER_HOLDER } from "../../src/personal/subjects.js";
import { PARTITION, userKey } from "../../src/identity/records.js";
import { run } from "../cli/spawn.js";
import { tempDir } from "../support/temp-dir.js";
import { ROOT_PASSWORD, raw, startServer, type Running } from "./harness.js";
import { startTruBudget, TB_ORGANIZATION, tbCall } from "./trubudget/harness.js";

const API = "/api/v1";
const NAME = "Erin Example";
const EMAIL = "erin.example@mail.example";
const dir = tempDir("erasure-users", "each");
const elsewhere = tempDir("erasure-users-files", "each");

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const json = (token: string) => ({ ...bearer(token), "content-type": "application/json" });

/** Every value of the identity partition (users, groups, the record chain), as text. */
async function identityText(kv: KvStore): Promise<string> {
  let all = "";
  for await (const e of scanAll(kv, PARTITION)) all += `${e.value.toString("utf8")}\n`;
  return all;
}

/** A backup over HTTP, unpacked: its NDJSON lines and every stored value as text. */
async function backup(s: Running): Promise<{ ndjson: Buffer; text: string }> {
  const res = await fetch(`${s.base}${API}/store/backup`, { headers: bearer(s.root.token!) });
  expect(res.status).toBe(200);
  const ndjson = gunzipSync(Buffer.from(await res.arrayBuffer()));
  return { ndjson, text: valuesOf(ndjson) };
}

/** Every value an export (NDJSON, values in base64) holds, as text. */
function valuesOf(ndjson: Buffer): string {
  let text = "";
  for (const line of ndjson.toString("utf8").split("\n").filter(Boolean)) {
    const o = JSON.parse(line) as { v?: string };
    if (o.v !== undefined) text += `${Buffer.from(o.v, "base64").toString("utf8")}\n`;
  }
  return text;
}

async function restore(s: Running, ndjson: Buffer): Promise<void> {
  const res = await raw(s.base, "POST", `${API}/store/restore`, { headers: { ...bearer(s.root.token!), "content-type": "application/gzip" }, body: gzipSync(ndjson) });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  await s.root.login("root", ROOT_PASSWORD); // a restore ends every session
}

async function verified(data: string): Promise<void> {
  const verify = run(["verify", "--data", data]);
  expect((await verify.exit).code, verify.out() + verify.err()).toBe(0);
}

describe("a user's display name under its subject's key", () => {
  it("is sealed, served opened, refused as input when sealed; erasing it disables the account, keeps verify green and outlives a restore", async () => {
    const kv = LmdbKv.open(dir());
    const s = await startTruBudget(kv);
    let before: { ndjson: Buffer; text: string };
    try {
      const created = await raw(s.base, "POST", `${API}/users`, {
        headers: json(s.root.token!),
        body: JSON.stringify({ id: "erin", displayName: NAME, email: EMAIL, password: "erin password 1" }),
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect(created.body).toMatchObject({ displayName: NAME, email: EMAIL });
      const erin = s.client();
      await erin.login("erin", "erin password 1");
      await s.user("fred");

      // Served opened: the native user routes and TruBudget's user list.
      expect((await raw(s.base, "GET", `${API}/users/erin`, { headers: bearer(s.root.token!) })).body).toMatchObject({
        id: "erin",
        displayName: NAME,
        email: EMAIL,
        enabled: true,
      });
      const listed = await raw(s.base, "GET", `${API}/users`, { headers: bearer(s.root.token!) });
      expect(listed.body.items.find((u: { id: string }) => u.id === "erin")).toMatchObject({ displayName: NAME, email: EMAIL });
      const tbList = await s.call("user.list");
      expect(tbList.body.data.items.find((u: { id: string }) => u.id === "erin").displayName).toBe(NAME);

      // Stored sealed: the user record (which the identity record chain hashes) holds the ciphertext only.
      const stored = JSON.parse((await kv.get(PARTITION, userKey("erin")))!.value.toString("utf8")) as { displayName: string; email: string };
      expect(stored.displayName.startsWith(SEALED_PREFIX)).toBe(true);
      expect(stored.email.startsWith(SEALED_PREFIX)).toBe(true);
      expect(await identityText(kv)).not.toContain(NAME);
      expect(await identityText(kv)).not.toContain(EMAIL);

      // A sealed value is refused as a display name, on both APIs, naming the field.
      const forged = await raw(s.base, "POST", `${API}/users`, {
        headers: json(s.root.token!),
        body: JSON.stringify({ id: "eve", displayName: stored.displayName, password: "eve password 1" }),
      });
      expect(forged.status).toBe(400);
      expect(forged.body.field).toBe("displayName");
      for (const email of [stored.email, `${SEALED_PREFIX}x@y.example`, "not an address"]) {
        const bad = await raw(s.base, "POST", `${API}/users`, {
          headers: json(s.root.token!),
          body: JSON.stringify({ id: "eve", displayName: "Eve", email, password: "eve password 1" }),
        });
        expect(bad.status, email).toBe(400);
        expect(bad.body.field).toMatch(/(^|\.)email$/);
      }
      const tbForged = await s.call("global.createUser", {
        data: { user: { id: "eve", displayName: stored.displayName, organization: TB_ORGANIZATION, password: "eve password 1" } },
      });
      expect(tbForged.status).toBe(400);
      expect((await raw(s.base, "GET", `${API}/users/eve`, { headers: bearer(s.root.token!) })).status).toBe(404);

      // A backup taken before the erasure holds the ciphertext (and erin's key), not the name.
      before = await backup(s);
      expect(before.text).not.toContain(NAME);
      expect(before.text).not.toContain(EMAIL);
      expect(before.text).toContain(stored.displayName);

      const erased = await raw(s.base, "POST", `${API}/subjects/erin/erase`, { headers: bearer(s.root.token!) });
      expect(erased.status, JSON.stringify(erased.body)).toBe(200);
      const head = await recordHead(kv, PARTITION);
      expect(erased.body).toMatchObject({
        subject: "erin",
        erasedBy: "root",
        complete: true,
        resources: [{ type: USER_HOLDER, ids: ["erin"], fields: ["displayName", "email"], event: head }],
      });
      expect((await raw(s.base, "GET", `${API}/subjects/erin/erasure`, { headers: bearer(s.root.token!) })).body).toEqual(erased.body);

      // The name reads erased everywhere it is served; the account is disabled, its token and logins refused.
      expect((await raw(s.base, "GET", `${API}/users/erin`, { headers: bearer(s.root.token!) })).body).toMatchObject({
        displayName: ERASED_TEXT,
        email: ERASED_TEXT,
        enabled: false,
      });
      const tbAfter = await s.call("user.list");
      expect(tbAfter.body.data.items.find((u: { id: string }) => u.id === "erin").displayName).toBe(ERASED_TEXT);
      expect((await raw(s.base, "GET", `${API}/users/erin`, { headers: bearer(erin.token!) })).status).toBe(401);
      expect(
        (
          await raw(s.base, "POST", `${API}/auth/token`, {
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ username: "erin", password: "erin password 1" }),
          })
        ).status,
      ).toBe(401);
      // TruBudget's log-in answers a disabled user's right password 403, as TruBudget does.
      expect((await tbCall(s.base, "user.authenticate", { data: { user: { id: "erin", password: "erin password 1" } } })).status).toBe(403);
      const enable = await s.call("global.enableUser", { data: { userId: "erin" } });
      expect(enable.status).toBe(409);
      // The stored record keeps its ciphertext (the chain's hashes hold); only the key is gone.
      const now = JSON.parse((await kv.get(PARTITION, userKey("erin")))!.value.toString("utf8")) as { displayName: string };
      expect(now.displayName).toBe(stored.displayName);
      expect(await kv.get(subjectLayout.partition("erin"), subjectLayout.key)).toBeUndefined();
      const after = await backup(s);
      expect(after.text).toContain(stored.displayName);
      expect(after.text).not.toContain(NAME);
      expect(after.text).not.toContain(EMAIL);

      // The backup from before (it holds the key) restored: the key is deleted again, the account stays disabled.
      await restore(s, before.ndjson);
      expect(await kv.get(subjectLayout.partition("erin"), subjectLayout.key)).toBeUndefined();
      expect((await raw(s.base, "GET", `${API}/users/erin`, { headers: bearer(s.root.token!) })).body).toMatchObject({ displayName: ERASED_TEXT, enabled: false });
      expect((await raw(s.base, "GET", `${API}/users/fred`, { headers: bearer(s.root.token!) })).body).toMatchObject({ displayName: "fred", enabled: true });
    } finally {
      await s.close();
      await kv.close();
    }
    await verified(dir());

    // The operators' CLI erases fred's subject the same way: its receipt names the account, verify passes.
    const cli = run(["erase-subject", "fred", "--data", dir()]);
    expect((await cli.exit).code, cli.err()).toBe(0);
    expect(JSON.parse(cli.out())).toMatchObject({
      subject: "fred",
      erasedBy: "system",
      complete: true,
      resources: [{ type: USER_HOLDER, ids: ["fred"], fields: ["displayName", "email"] }],
    });
    await verified(dir());
    const again = LmdbKv.open(dir());
    try {
      const fs = await openFlowstore(again);
      expect(await fs.identity.getUser("fred")).toMatchObject({ displayName: ERASED_TEXT, enabled: false });
      expect(await identityText(again)).not.toContain(NAME);
      await fs.close();
    } finally {
      await again.close();
    }
  });

  it("display names stored plain (a store, or a backup, from before sealing) are sealed at open and at restore", async () => {
    const file = join(elsewhere(), "plain.ndjson");
    let kv = LmdbKv.open(dir());
    try {
      const fs = await openFlowstore(kv);
      await fs.identity.ensureRoot(ROOT_PASSWORD);
      // A user record as stores before the sealing wrote it, through the record chain (so verify holds).
      const plain = { id: "olga", displayName: "Olga Old", email: "olga@old.example", enabled: true, groups: [], createdAt: new Date().toISOString() };
      await fs.identity.kv.commit(PARTITION, [{ type: "put", key: userKey("olga"), value: Buffer.from(JSON.stringify(plain)) }]);
      await fs.close();
      // Its export as such a store made it (the store's own export, without an open's repairs): the name in plain text.
      const out = createWriteStream(file);
      await exportStore(kv, out);
      await new Promise((resolve) => out.end(resolve));
    } finally {
      await kv.close();
    }
    expect(valuesOf(readFileSync(file))).toContain('"displayName":"Olga Old"');

    kv = LmdbKv.open(dir());
    const s = await startServer(kv, { webRoot: false });
    try {
      // Sealed at open.
      expect(await identityText(kv)).not.toContain("Olga Old");
      expect(await identityText(kv)).not.toContain("olga@old.example");
      expect((await raw(s.base, "GET", `${API}/users/olga`, { headers: bearer(s.root.token!) })).body).toMatchObject({ displayName: "Olga Old", email: "olga@old.example" });
      // The plain backup restored: sealed again before the store is served. Its identity chain is a prefix
      // of the live one's (the restore's scratch store does not seal), so the epoch records no fork.
      await restore(s, readFileSync(file));
      expect((await listEpochs(kv)).at(-1)?.forkedRecords).toBeUndefined();
      expect(await identityText(kv)).not.toContain("Olga Old");
      expect((await raw(s.base, "GET", `${API}/users/olga`, { headers: bearer(s.root.token!) })).body.displayName).toBe("Olga Old");
    } finally {
      await s.close();
      await kv.close();
    }
    await verified(dir());
  });
});
