/**
 * The rules around an erased user account (issue 26, the review of seal26), through a real server on
 * 127.0.0.1 over LMDB and real reopenings of the store:
 * - erasing a subject that is a user account needs that the eraser outranks the account, as disabling
 *   it does (403 otherwise, and nothing erased: the key, the receipt, the register, the account as they
 *   were); allowed, the disabling is recorded in the identity chain as the eraser's act;
 * - a user's e-mail address is served to the user itself and to holders of `global.createUser` only;
 * - a receipt found only in a subject partition (unchained: put there past the store) disables nothing;
 * - the sealing at open reads the register of erasures, not one receipt per user.
 */
import { createReadStream, createWriteStream } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SYSTEM } from "../../src/access/actor.js";
import { openFlowstore, type Flowstore } from "../../src/compose/index.js";
import type { NewUser } from "../../src/identity/identity.js";
import { exportStore, importStore } from "../../src/compose/transfer.js";
import type { Entry, Key, KvStore, Partition } from "../../src/kv/contract.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { CHAIN, recordEvents } from "../../src/kv/record-chain.js";
import { encode } from "../../src/kv/tuple.js";
import { registeredErasure, subjectLayout, USER_HOLDER } from "../../src/personal/subjects.js";
import { PARTITION } from "../../src/identity/records.js";
import { tempDir } from "../support/temp-dir.js";
import { ROOT_PASSWORD, raw, startServer, type Running } from "./harness.js";

const API = "/api/v1";
const dir = tempDir("erasure-users-rules", "each");
const elsewhere = tempDir("erasure-users-rules-files", "each");
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function identityHead(kv: KvStore): Promise<number> {
  const e = await kv.get(PARTITION, CHAIN.pack(["head"]));
  return e ? (JSON.parse(e.value.toString("utf8")) as { seq: number }).seq : 0;
}

/** A server over LMDB with users dpo (global.eraseSubject), useradmin (global.createUser), carol (nothing), toggler (enabling and disabling), each with an e-mail address; their tokens. */
async function withUsers(kv: KvStore, test: (s: Running, tokens: Record<"dpo" | "useradmin" | "toggler", string>) => Promise<void>): Promise<void> {
  const s = await startServer(kv, { webRoot: false });
  try {
    for (const id of ["dpo", "useradmin", "carol", "toggler"]) {
      const created = await raw(s.base, "POST", `${API}/users`, {
        headers: { ...bearer(s.root.token!), "content-type": "application/json" },
        body: JSON.stringify({ id, displayName: `The ${id}`, email: `${id}@mail.example`, password: `${id} password 1` }),
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
    }
    await s.root.globalPermissions.grant("global.eraseSubject", "dpo");
    await s.root.globalPermissions.grant("global.createUser", "useradmin");
    await s.root.globalPermissions.grant("global.enableUser", "toggler");
    await s.root.globalPermissions.grant("global.disableUser", "toggler");
    const as = async (id: string) => {
      const c = s.client();
      await c.login(id, `${id} password 1`);
      return c.token!;
    };
    await test(s, { dpo: await as("dpo"), useradmin: await as("useradmin"), toggler: await as("toggler") });
  } finally {
    await s.close();
    await kv.close();
  }
}

/** Opens the store in `path` (LMDB), runs `fn` over it (and its raw kv) and closes both. */
async function inStore(path: string, fn: (fs: Flowstore, kv: KvStore) => Promise<void>, options: { instrument?: (kv: KvStore) => KvStore } = {}): Promise<void> {
  const kv = LmdbKv.open(path);
  try {
    const fs = await openFlowstore(kv, options);
    try {
      await fn(fs, kv);
    } finally {
      await fs.close();
    }
  } finally {
    await kv.close();
  }
}
/** A store in `path` with root and these users. */
const setUp = (path: string, users: readonly NewUser[]) =>
  inStore(path, async (fs) => {
    await fs.identity.ensureRoot(ROOT_PASSWORD);
    for (const u of users) await fs.identity.createUser(SYSTEM, u);
  });

describe("erasing a user account, and who reads a user's e-mail address", () => {
  it("serves a user's e-mail address to the user itself and to holders of global.createUser only", async () => {
    await withUsers(LmdbKv.open(dir()), async (s, { dpo, useradmin, toggler }) => {
      // E-mail addresses: the user itself and a holder of global.createUser read them; nobody else does.
      const listedBy = async (token: string) =>
        new Map(((await raw(s.base, "GET", `${API}/users?limit=100`, { headers: bearer(token) })).body.items as { id: string; email?: string }[]).map((u) => [u.id, u]));
      const dpoList = await listedBy(dpo);
      expect(dpoList.get("carol")).toMatchObject({ displayName: "The carol" });
      expect(dpoList.get("carol")!.email).toBeUndefined();
      expect(dpoList.get("useradmin")!.email).toBeUndefined();
      expect(dpoList.get("dpo")!.email).toBe("dpo@mail.example");
      const dpoListText = JSON.stringify([...dpoList.values()]);
      expect(dpoListText).not.toContain("carol@mail.example");
      expect((await listedBy(useradmin)).get("carol")!.email).toBe("carol@mail.example");
      expect((await listedBy(s.root.token!)).get("carol")!.email).toBe("carol@mail.example");
      const carolTo = async (token: string) => (await raw(s.base, "GET", `${API}/users/carol`, { headers: bearer(token) })).body;
      expect(await carolTo(dpo)).toMatchObject({ id: "carol", displayName: "The carol" });
      expect((await carolTo(dpo)).email).toBeUndefined();
      expect((await carolTo(useradmin)).email).toBe("carol@mail.example");
      expect((await raw(s.base, "GET", `${API}/users/dpo`, { headers: bearer(dpo) })).body.email).toBe("dpo@mail.example");
      // Enabling and disabling need other intents than global.createUser: their answers leave the address out too.
      const disabled = await raw(s.base, "POST", `${API}/users/carol/disable`, { headers: bearer(toggler) });
      expect(disabled.status, JSON.stringify(disabled.body)).toBe(200);
      expect(disabled.body).toMatchObject({ id: "carol", enabled: false });
      expect(disabled.body.email).toBeUndefined();
      const enabled = await raw(s.base, "POST", `${API}/users/carol/enable`, { headers: bearer(toggler) });
      expect(enabled.body).toMatchObject({ id: "carol", enabled: true });
      expect(enabled.body.email).toBeUndefined();
    });
  });

  it("needs the eraser to outrank the account (403, nothing erased) and records the disabling as the eraser's", async () => {
    const kv = LmdbKv.open(dir());
    await withUsers(kv, async (s, { dpo }) => {
      // dpo holds global.eraseSubject but not global.createUser, which useradmin holds: refused, nothing erased.
      const identityBefore = await identityHead(kv);
      const refused = await raw(s.base, "POST", `${API}/subjects/useradmin/erase`, { headers: bearer(dpo) });
      expect(refused.status, JSON.stringify(refused.body)).toBe(403);
      expect(refused.type).toContain("application/problem+json");
      expect(await kv.get(subjectLayout.partition("useradmin"), subjectLayout.key)).toBeDefined();
      expect(await kv.get(subjectLayout.partition("useradmin"), subjectLayout.erasure)).toBeUndefined();
      expect(await registeredErasure(kv, "useradmin")).toBeNull();
      expect(await identityHead(kv)).toBe(identityBefore);
      expect((await raw(s.base, "GET", `${API}/users/useradmin`, { headers: bearer(s.root.token!) })).body).toMatchObject({
        displayName: "The useradmin",
        email: "useradmin@mail.example",
        enabled: true,
      });
      // Nor root's names.
      expect((await raw(s.base, "POST", `${API}/subjects/root/erase`, { headers: bearer(dpo) })).status).toBe(403);
      expect(await kv.get(subjectLayout.partition("root"), subjectLayout.key)).toBeDefined();

      // carol holds no intent dpo lacks: erased, and the identity chain names dpo as who disabled the account.
      const erased = await raw(s.base, "POST", `${API}/subjects/carol/erase`, { headers: bearer(dpo) });
      expect(erased.status, JSON.stringify(erased.body)).toBe(200);
      expect(erased.body).toMatchObject({ subject: "carol", erasedBy: "dpo", complete: true, resources: [{ type: USER_HOLDER, ids: ["carol"] }] });
      const events = await recordEvents(kv, PARTITION, identityBefore + 1, await identityHead(kv));
      expect(events.length).toBeGreaterThan(0);
      expect(events.map((e) => e.actor)).toEqual(events.map(() => "dpo"));
      expect((await raw(s.base, "GET", `${API}/users/carol`, { headers: bearer(s.root.token!) })).body).toMatchObject({ enabled: false, displayName: "(erased)" });
    });
  });

  it("a receipt planted only in a subject partition disables nothing at the next open, and enabling is not refused on it", async () => {
    await setUp(dir(), [{ id: "paula", displayName: "Paula P", email: "paula@mail.example", password: "paula password 1" }]);
    // Written into the files past the store: a receipt naming paula's account, the key deleted, as an erasure leaves them.
    const kv = LmdbKv.open(dir());
    const receipt = {
      subject: "paula",
      erasedAt: new Date().toISOString(),
      erasedBy: "root",
      keyId: "0000000000000000",
      resources: [{ type: USER_HOLDER, ids: ["paula"], fields: ["displayName", "email"] }],
      complete: false,
    };
    await kv.commit(subjectLayout.partition("paula"), [
      { type: "delete", key: subjectLayout.key },
      { type: "put", key: subjectLayout.erasure, value: Buffer.from(JSON.stringify(receipt)) },
    ]);
    const head = await identityHead(kv);
    await kv.close();

    await inStore(dir(), async (fs, reopened) => {
      expect(await registeredErasure(reopened, "paula")).toBeNull();
      expect((await fs.identity.getUser("paula")).enabled).toBe(true);
      expect(await identityHead(reopened)).toBe(head);
      // The enable refusal trusts the register alone: disabled and enabled again by an administrator.
      await fs.identity.disableUser(SYSTEM, "paula");
      expect((await fs.identity.enableUser(SYSTEM, "paula")).enabled).toBe(true);
    });
  });

  it("an import registers the erasure of a user account its file brought: the account stays disabled, enabling it refused", async () => {
    const file = join(elsewhere(), "erased.ndjson");
    await setUp(dir(), [{ id: "ivan", displayName: "Ivan I", password: "ivan password 1" }]);
    await inStore(dir(), async (fs, kv) => {
      expect((await fs.eraseSubject(SYSTEM, "ivan")).complete).toBe(true);
      const out = createWriteStream(file);
      await exportStore(kv, out);
      await new Promise((resolve) => out.end(resolve));
    });
    // Into an empty store: the export does not carry the register, so the import registers what it brought.
    const kv = LmdbKv.open(elsewhere());
    try {
      await importStore(kv, createReadStream(file));
      expect(await registeredErasure(kv, "ivan")).not.toBeNull();
    } finally {
      await kv.close();
    }
    await inStore(elsewhere(), async (fs) => {
      expect(await fs.identity.getUser("ivan")).toMatchObject({ enabled: false, displayName: "(erased)" });
      await expect(fs.identity.enableUser(SYSTEM, "ivan")).rejects.toMatchObject({ field: "id" });
    });
  });

  it("the sealing at open reads the register of erasures, not each user's subject partition", async () => {
    const users = 30;
    await setUp(
      dir(),
      Array.from({ length: users }, (_, i) => ({ id: `u${i}`, displayName: `User ${i}`, password: `u${i} password 1` })),
    );
    {
      // Every read of a subject partition's erasure entry during the open, by subject (real LMDB underneath).
      const reads = new Map<string, number>();
      const count = (partition: Partition, keys: readonly Key[]) => {
        if (partition[0] !== "subject") return;
        const erasure = encode(subjectLayout.erasure);
        for (const k of keys) if (encode(k).equals(erasure)) reads.set(String(partition[1]), (reads.get(String(partition[1])) ?? 0) + 1);
      };
      const counting = (inner: KvStore): KvStore =>
        new Proxy(inner, {
          get(target, prop) {
            const v = Reflect.get(target, prop, target) as unknown;
            if (prop === "get") return (p: Partition, k: Key): Promise<Entry | undefined> => (count(p, [k]), target.get(p, k));
            if (prop === "getMany") return (p: Partition, ks: readonly Key[]) => (count(p, ks), target.getMany(p, ks));
            if (prop === "getSync" && target.getSync) return (p: Partition, k: Key) => (count(p, [k]), target.getSync!(p, k));
            return typeof v === "function" ? v.bind(target) : v;
          },
        });
      await inStore(
        dir(),
        async () => {
          // The repair of erasures at open (keepErasures) looks at each subject partition once; the sealing of users adds no read per user.
          expect(reads.size).toBe(users + 1);
          expect(Math.max(...reads.values())).toBe(1);
        },
        { instrument: counting },
      );
    }
  });
});
