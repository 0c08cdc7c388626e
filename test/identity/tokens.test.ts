import { readFile, stat, writeFile, chmod } from "node:fs/promises";
import { join } from "node:path";
import { SignJWT } from "jose";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { UnauthorizedError, ValidationError } from "../../src/errors.js";
import { Identity, loadTokenSecret, Tokens } from "../../src/identity/index.js";
import { SYSTEM } from "../../src/access/actor.js";
import { forEachBackend, type BackendHandle } from "../conformance/backends.js";
import { tempDir } from "../support/temp-dir.js";

const pw = "correct horse battery";
const secret = new TextEncoder().encode("s".repeat(40));

forEachBackend((backend) => {
  let h: BackendHandle;
  let id: Identity;
  let clock: Date;
  let tokens: Tokens;
  beforeEach(async () => {
    h = await backend.create();
    id = new Identity(h.kv);
    clock = new Date("2030-01-01T00:00:00Z");
    tokens = new Tokens(id, { secret, ttlSeconds: 60, now: () => clock });
    await id.createUser(SYSTEM, { id: "alice", displayName: "Alice", password: pw });
    await id.createGroup(SYSTEM, { id: "team", displayName: "Team", members: ["alice"] });
  });
  afterEach(async () => {
    await h.destroy();
  });

  it("logs in and verifies to the user's actor", async () => {
    const { token, expiresAt } = await tokens.login("alice", pw);
    expect(expiresAt).toBe(clock.getTime() / 1000 + 60);
    expect(await tokens.verify(token)).toEqual({ id: "alice", groups: ["team"] });
    await expect(tokens.login("alice", "nope nope")).rejects.toBeInstanceOf(UnauthorizedError);
  });

  it("rejects expired, forged, tampered and malformed tokens", async () => {
    const { token } = await tokens.login("alice", pw);
    clock = new Date(clock.getTime() + 61_000);
    await expect(tokens.verify(token)).rejects.toThrow(/expired/);
    clock = new Date("2030-01-01T00:00:00Z");
    const other = new Tokens(id, { secret: new TextEncoder().encode("x".repeat(40)), now: () => clock });
    await expect(tokens.verify((await other.issue("alice")).token)).rejects.toBeInstanceOf(UnauthorizedError);
    const [head, body, sig] = token.split(".");
    const evil = Buffer.from(JSON.stringify({ sub: "root", iss: "flowstore", exp: 2e9 })).toString("base64url");
    await expect(tokens.verify(`${head}.${evil}.${sig}`)).rejects.toBeInstanceOf(UnauthorizedError);
    const none = Buffer.from(JSON.stringify({ alg: "none" })).toString("base64url");
    await expect(tokens.verify(`${none}.${body}.`)).rejects.toBeInstanceOf(UnauthorizedError);
    for (const bad of ["", "a.b.c", "x".repeat(5000), "é.é.é"]) {
      await expect(tokens.verify(bad)).rejects.toBeInstanceOf(UnauthorizedError);
    }
    // signed with the right secret but without an expiry: refused
    const noExp = await new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject("alice").setIssuer("flowstore").sign(secret);
    await expect(tokens.verify(noExp)).rejects.toBeInstanceOf(UnauthorizedError);
  });

  it("stops a disabled user's token", async () => {
    const { token } = await tokens.login("alice", pw);
    await id.disableUser(SYSTEM, "alice");
    await expect(tokens.verify(token)).rejects.toBeInstanceOf(UnauthorizedError);
  });

  it("refuses a token issued before a password change, and after a disable even once enabled again", async () => {
    const before = await tokens.login("alice", pw);
    await id.setPassword(SYSTEM, "alice", "a new password 1");
    await expect(tokens.verify(before.token)).rejects.toThrow(/revoked/);
    await expect(tokens.refresh(before.refreshToken)).rejects.toBeInstanceOf(UnauthorizedError);
    await expect(tokens.login("alice", pw)).rejects.toBeInstanceOf(UnauthorizedError);
    const after = await tokens.login("alice", "a new password 1");
    expect(await tokens.verify(after.token)).toEqual({ id: "alice", groups: ["team"] });
    await id.disableUser(SYSTEM, "alice");
    await id.enableUser(SYSTEM, "alice");
    await expect(tokens.verify(after.token)).rejects.toBeInstanceOf(UnauthorizedError);
    await expect(tokens.refresh(after.refreshToken)).rejects.toBeInstanceOf(UnauthorizedError);
  });

  it("logout ends one session, logout-all every session of the user", async () => {
    const a = await tokens.login("alice", pw);
    const b = await tokens.login("alice", pw);
    const c = await tokens.login("alice", pw);
    await tokens.logout(await tokens.verifySession(a.token));
    await expect(tokens.verify(a.token)).rejects.toThrow(/revoked/);
    await expect(tokens.refresh(a.refreshToken)).rejects.toBeInstanceOf(UnauthorizedError);
    expect((await tokens.verify(b.token)).id).toBe("alice");
    await tokens.logoutAll(await tokens.verifySession(b.token));
    for (const t of [b, c]) {
      await expect(tokens.verify(t.token)).rejects.toThrow(/revoked/);
      await expect(tokens.refresh(t.refreshToken)).rejects.toBeInstanceOf(UnauthorizedError);
    }
    expect((await tokens.verify((await tokens.login("alice", pw)).token)).id).toBe("alice");
  });

  it("reads a verified token's records again only once the identity partition changed, where the store reads its sequence synchronously; every change is seen at once", async () => {
    // Identity and Tokens over the same store, counting the reads of records (a sequence read is not one)
    let reads = 0;
    const counted = new Proxy(h.kv, {
      get(target, name) {
        const v = Reflect.get(target, name, target);
        if (typeof v !== "function") return v;
        if (name === "getSync" || name === "getMany" || name === "get") return (...args: unknown[]) => (reads++, v.apply(target, args));
        return v.bind(target);
      },
    });
    const cached = new Tokens(new Identity(counted), { secret, ttlSeconds: 600, now: () => clock });
    const { token } = await tokens.login("alice", pw);
    const second = await tokens.login("alice", pw);
    const verifyReads = async (t: string) => {
      const before = reads;
      await cached.verify(t);
      return reads - before;
    };
    expect(await verifyReads(token)).toBeGreaterThan(0);
    const again = [await verifyReads(token), await verifyReads(token)];
    // memory and LMDB read synchronously (partitionVersionSync); Redis and PostgreSQL read the records each time
    if (backend.name === "memory" || backend.name === "lmdb") expect(again).toEqual([0, 0]);
    else expect(again.every((n) => n > 0)).toBe(true);
    // a write to the partition by another writer (another Identity on the store): the records are read again
    await id.createUser(SYSTEM, { id: "bob", displayName: "Bob", password: pw });
    expect(await verifyReads(token)).toBeGreaterThan(0);
    // each change through the other writer refuses (or re-groups) at the next verify
    await id.createGroup(SYSTEM, { id: "crew", displayName: "Crew", members: ["alice"] });
    expect((await cached.verify(token)).groups).toEqual(["team", "crew"]);
    await tokens.logout(await tokens.verifySession(second.token));
    await expect(cached.verify(second.token)).rejects.toThrow(/revoked/);
    expect((await cached.verify(token)).id).toBe("alice");
    await id.disableUser(SYSTEM, "alice");
    await expect(cached.verify(token)).rejects.toThrow(/disabled/);
    await id.enableUser(SYSTEM, "alice");
    const third = await tokens.login("alice", pw);
    expect((await cached.verify(third.token)).id).toBe("alice");
    await id.setPassword(SYSTEM, "alice", "a new password 1");
    await expect(cached.verify(third.token)).rejects.toThrow(/revoked/);
  });

  it("refreshes an expired access token once: the spent refresh token is refused and revokes the session", async () => {
    const first = await tokens.login("alice", pw);
    clock = new Date(clock.getTime() + 61_000);
    await expect(tokens.verify(first.token)).rejects.toThrow(/expired/);
    const second = await tokens.refresh(first.refreshToken);
    expect(second.refreshToken).not.toBe(first.refreshToken);
    expect(await tokens.verify(second.token)).toEqual({ id: "alice", groups: ["team"] });
    await expect(tokens.refresh(first.refreshToken)).rejects.toThrow(/already used/);
    // The reuse revoked the session: the thief's copy and the rightful holder's tokens alike.
    await expect(tokens.verify(second.token)).rejects.toThrow(/revoked/);
    await expect(tokens.refresh(second.refreshToken)).rejects.toBeInstanceOf(UnauthorizedError);
    for (const bad of ["", "x.y.z", `${Buffer.from("alice").toString("base64url")}.00000000aaaa.nope`, "a".repeat(600)]) {
      await expect(tokens.refresh(bad)).rejects.toBeInstanceOf(UnauthorizedError);
    }
  });

  it("refuses a refresh token past its lifetime", async () => {
    const short = new Tokens(id, { secret, ttlSeconds: 60, refreshTtlSeconds: 120, now: () => clock });
    const t = await short.login("alice", pw);
    clock = new Date(clock.getTime() + 121_000);
    await expect(short.refresh(t.refreshToken)).rejects.toBeInstanceOf(UnauthorizedError);
  });
});

describe("token secret", () => {
  const tmp = tempDir("secret", "each");

  it("is generated once into the data directory with mode 0600 and read back", async () => {
    const data = join(tmp(), "data");
    const a = await loadTokenSecret({ dataDir: data });
    expect(a.length).toBeGreaterThanOrEqual(32);
    expect((await stat(join(data, "jwt-secret"))).mode & 0o777).toBe(0o600);
    const b = await loadTokenSecret({ dataDir: data });
    expect(Buffer.from(b).equals(Buffer.from(a))).toBe(true);
    expect((await readFile(join(data, "jwt-secret"), "utf8")).trim()).toBe(Buffer.from(a).toString());
  });

  it("tightens a loose file, prefers the environment, refuses short secrets", async () => {
    const dir = tmp();
    await writeFile(join(dir, "jwt-secret"), "k".repeat(40));
    await chmod(join(dir, "jwt-secret"), 0o644);
    await loadTokenSecret({ dataDir: dir });
    expect((await stat(join(dir, "jwt-secret"))).mode & 0o777).toBe(0o600);
    const env = await loadTokenSecret({ dataDir: dir, env: "e".repeat(32) });
    expect(Buffer.from(env).toString()).toBe("e".repeat(32));
    await expect(loadTokenSecret({ env: "short" })).rejects.toBeInstanceOf(ValidationError);
    expect((await loadTokenSecret({})).length).toBe(32);
  });
});
