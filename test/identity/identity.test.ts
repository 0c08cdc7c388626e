import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConflictError, ForbiddenError, NotFoundError, UnauthorizedError, ValidationError } from "../../src/errors.js";
import { Identity } from "../../src/identity/index.js";
import type { KvStore } from "../../src/kv/contract.js";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { ACCESS_INTENTS } from "../../src/access/intents.js";
import { IDENTITY_INTENTS } from "../../src/identity/index.js";
import { forEachBackend, type BackendHandle } from "../conformance/backends.js";

const pw = "correct horse battery";

forEachBackend((backend) => {
  let h: BackendHandle;
  let kv: KvStore;
  let id: Identity;
  beforeEach(async () => {
    h = await backend.create();
    kv = h.kv;
    id = new Identity(kv);
  });
  afterEach(async () => {
    await h.destroy();
  });

  describe("ensureRoot", () => {
    it("refuses an empty store without a password, naming the variable", async () => {
      const err = await id.ensureRoot(undefined).catch((e) => e);
      expect(err).toBeInstanceOf(ValidationError);
      expect(err.field).toBe("FLOWSTORE_ROOT_PASSWORD");
      expect(err.message).toMatch(/FLOWSTORE_ROOT_PASSWORD/);
    });

    it("creates root with every global intent once, then does nothing", async () => {
      expect(await id.ensureRoot(pw)).toEqual({ created: true });
      const root = await id.actorFor("root");
      expect(id.global.intents.list()).toEqual([...ACCESS_INTENTS, ...IDENTITY_INTENTS]);
      expect(await id.global.held(root)).toEqual(id.global.intents.list());
      expect((await id.authenticate("root", pw)).id).toBe("root");
      // later starts need no password and do not touch root
      expect(await id.ensureRoot(undefined)).toEqual({ created: false });
      expect(await id.ensureRoot("another password")).toEqual({ created: false });
      await expect(id.authenticate("root", "another password")).rejects.toBeInstanceOf(UnauthorizedError);
    });
  });

  describe("users", () => {
    it("creates, reads, authenticates and never stores the password in the public record", async () => {
      const u = await id.createUser(SYSTEM, { id: "alice", displayName: "Alice", password: pw });
      expect(u).toMatchObject({ id: "alice", displayName: "Alice", enabled: true, groups: [] });
      expect(await id.getUser("alice")).toEqual(u);
      expect((await id.authenticate("alice", pw)).id).toBe("alice");
      await expect(id.authenticate("alice", "wrong password")).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(id.authenticate("nobody", pw)).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(id.authenticate(42, pw)).rejects.toBeInstanceOf(UnauthorizedError);
      const list = await id.listUserBytes(SYSTEM);
      const text = Buffer.concat(list.items).toString();
      expect(text).not.toMatch(/scrypt|password/);
    });

    it("hashes with a per-user salt", async () => {
      await id.createUser(SYSTEM, { id: "a", displayName: "A", password: pw });
      await id.createUser(SYSTEM, { id: "b", displayName: "B", password: pw });
      const [ha, hb] = await kv.getMany(
        ["identity"],
        [
          ["password", "a"],
          ["password", "b"],
        ],
      );
      expect(ha!.value.toString()).toMatch(/^scrypt\$/);
      expect(ha!.value.toString()).not.toBe(hb!.value.toString());
      expect(ha!.value.toString()).not.toContain(pw);
    });

    it("refuses duplicates, taken group ids, bad ids and bad fields, naming the field", async () => {
      await id.createUser(SYSTEM, { id: "alice", displayName: "Alice", password: pw });
      const dup = await id.createUser(SYSTEM, { id: "alice", displayName: "A2", password: pw }).catch((e) => e);
      expect(dup).toBeInstanceOf(ConflictError);
      expect(dup.field).toBe("id");
      await id.createGroup(SYSTEM, { id: "team", displayName: "Team" });
      await expect(id.createUser(SYSTEM, { id: "team", displayName: "T", password: pw })).rejects.toBeInstanceOf(ConflictError);
      await expect(id.createGroup(SYSTEM, { id: "alice", displayName: "A" })).rejects.toBeInstanceOf(ConflictError);
      const cases: [Record<string, unknown>, string][] = [
        [{ id: "", displayName: "x", password: pw }, "id"],
        [{ id: "x".repeat(65), displayName: "x", password: pw }, "id"],
        [{ id: "a/b", displayName: "x", password: pw }, "id"],
        [{ id: "a\u0000b", displayName: "x", password: pw }, "id"],
        [{ id: "émile", displayName: "x", password: pw }, "id"],
        [{ id: "system", displayName: "x", password: pw }, "id"],
        [{ id: 7, displayName: "x", password: pw }, "id"],
        [{ id: "ok", displayName: "  ", password: pw }, "displayName"],
        [{ id: "ok", displayName: "x".repeat(201), password: pw }, "displayName"],
        [{ id: "ok", displayName: "x", password: "short" }, "password"],
        [{ id: "ok", displayName: "x" }, "password"],
      ];
      for (const [input, field] of cases) {
        const err = await id.createUser(SYSTEM, input as never).catch((e) => e);
        expect(err, JSON.stringify(input)).toBeInstanceOf(ValidationError);
        expect(err.field).toBe(field);
      }
      expect((await id.listUsers(SYSTEM)).items.map((u) => u.id)).toEqual(["alice"]);
    });

    it("checks global.createUser and global.disableUser (each alone) for the actor, system bypasses", async () => {
      await id.createUser(SYSTEM, { id: "alice", displayName: "Alice", password: pw });
      const alice = await id.actorFor("alice");
      await expect(id.createUser(alice, { id: "bob", displayName: "Bob", password: pw })).rejects.toBeInstanceOf(ForbiddenError);
      await expect(id.disableUser(alice, "alice")).rejects.toBeInstanceOf(ForbiddenError);
      await id.global.grant(SYSTEM, "global.createUser", "alice");
      await id.createUser(alice, { id: "bob", displayName: "Bob", password: pw });
      // creating users is not disabling them (issue 28: TruBudget grants global.disableUser alone)
      await expect(id.disableUser(alice, "bob")).rejects.toBeInstanceOf(ForbiddenError);
      await id.global.grant(SYSTEM, "global.disableUser", "alice");
      await id.disableUser(alice, "bob");
      await expect(id.disableUser(alice, "alice")).rejects.toBeInstanceOf(ValidationError);
    });

    it("grants through a group count for the actor", async () => {
      await id.createUser(SYSTEM, { id: "alice", displayName: "Alice", password: pw });
      await id.createGroup(SYSTEM, { id: "admins", displayName: "Admins", members: ["alice"] });
      await id.global.grant(SYSTEM, "global.createUser", "admins");
      await id.createUser(await id.actorFor("alice"), { id: "bob", displayName: "Bob", password: pw });
    });

    it("disabling stops authentication and actorFor; enabling restores them", async () => {
      await id.createUser(SYSTEM, { id: "alice", displayName: "Alice", password: pw });
      expect((await id.disableUser(SYSTEM, "alice")).enabled).toBe(false);
      await expect(id.authenticate("alice", pw)).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(id.actorFor("alice")).rejects.toBeInstanceOf(UnauthorizedError);
      await id.enableUser(SYSTEM, "alice");
      expect(await id.actorFor("alice")).toEqual({ id: "alice", groups: [] });
      await expect(id.disableUser(SYSTEM, "nobody")).rejects.toBeInstanceOf(NotFoundError);
    });

    it("sets passwords for self, admins and system, not for others", async () => {
      await id.createUser(SYSTEM, { id: "alice", displayName: "Alice", password: pw });
      await id.createUser(SYSTEM, { id: "bob", displayName: "Bob", password: pw });
      const alice = await id.actorFor("alice");
      await id.setPassword(alice, "alice", "new password 1");
      expect((await id.authenticate("alice", "new password 1")).id).toBe("alice");
      await expect(id.authenticate("alice", pw)).rejects.toBeInstanceOf(UnauthorizedError);
      await expect(id.setPassword(alice, "bob", "new password 2")).rejects.toBeInstanceOf(ForbiddenError);
      await id.setPassword(SYSTEM, "bob", "new password 3");
      expect((await id.authenticate("bob", "new password 3")).id).toBe("bob");
      await expect(id.setPassword(SYSTEM, "carol", "new password 4")).rejects.toBeInstanceOf(NotFoundError);
    });

    it("lists users by pages with a cursor", async () => {
      const ids = ["u.1", "u.2", "u.3", "u.4", "u.5"];
      for (const u of ids) await id.createUser(SYSTEM, { id: u, displayName: u, password: pw });
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: Awaited<ReturnType<Identity["listUsers"]>> = await id.listUsers(SYSTEM, { limit: 2, cursor });
        expect(page.items.length).toBeLessThanOrEqual(2);
        seen.push(...page.items.map((u) => u.id));
        cursor = page.nextCursor;
      } while (cursor);
      expect(seen).toEqual(ids);
      await expect(id.listUsers(SYSTEM, { limit: 0 })).rejects.toMatchObject({ field: "limit" });
      await expect(id.listUsers(SYSTEM, { limit: 1001 })).rejects.toMatchObject({ field: "limit" });
      await expect(id.listUsers(SYSTEM, { cursor: "!!" })).rejects.toMatchObject({ field: "cursor" });
    });
  });

  describe("groups", () => {
    beforeEach(async () => {
      for (const u of ["alice", "bob"]) await id.createUser(SYSTEM, { id: u, displayName: u, password: pw });
    });

    it("keeps the per-user membership index in step with the group", async () => {
      const g = await id.createGroup(SYSTEM, { id: "team", displayName: "Team", members: ["alice"] });
      expect(g.members).toEqual(["alice"]);
      expect(await id.actorFor("alice")).toEqual({ id: "alice", groups: ["team"] });
      await id.addMember(SYSTEM, "team", "bob");
      await id.addMember(SYSTEM, "team", "bob"); // idempotent
      expect((await id.getGroup("team")).members).toEqual(["alice", "bob"]);
      expect((await id.actorFor("bob")).groups).toEqual(["team"]);
      await id.createGroup(SYSTEM, { id: "other", displayName: "Other", members: ["bob"] });
      expect((await id.actorFor("bob")).groups).toEqual(["team", "other"]);
      expect((await id.listGroups(SYSTEM)).items.map((x) => x.id)).toEqual(["other", "team"]);
    });

    it("builds an actor in one store read", async () => {
      await id.createGroup(SYSTEM, { id: "g1", displayName: "G1", members: ["alice"] });
      await id.createGroup(SYSTEM, { id: "g2", displayName: "G2", members: ["alice"] });
      let reads = 0;
      const counting: KvStore = new Proxy(kv, {
        get(target, prop, receiver) {
          const v = Reflect.get(target, prop, receiver);
          if (typeof v !== "function") return v;
          return (...args: unknown[]) => {
            if (prop === "get" || prop === "getMany" || prop === "scan") reads++;
            return (v as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      });
      const actor = await new Identity(counting).actorFor("alice");
      expect(actor.groups).toEqual(["g1", "g2"]);
      expect(reads).toBe(1);
    });

    it("refuses unknown and duplicate members, unknown groups and missing intents", async () => {
      await expect(id.createGroup(SYSTEM, { id: "t", displayName: "T", members: ["alice", "nobody"] })).rejects.toMatchObject({
        field: "members[1]",
      });
      await expect(id.createGroup(SYSTEM, { id: "t", displayName: "T", members: ["alice", "alice"] })).rejects.toMatchObject({
        field: "members[1]",
      });
      await expect(id.createGroup(SYSTEM, { id: "t", displayName: "T", members: ["bad id"] })).rejects.toMatchObject({
        field: "members[0]",
      });
      // nothing half-applied: alice is in no group
      expect((await id.actorFor("alice")).groups).toEqual([]);
      await expect(id.addMember(SYSTEM, "missing", "alice")).rejects.toBeInstanceOf(NotFoundError);
      await id.createGroup(SYSTEM, { id: "t", displayName: "T" });
      await expect(id.addMember(SYSTEM, "t", "nobody")).rejects.toMatchObject({ field: "userId" });
      const alice = userActor("alice");
      await expect(id.createGroup(alice, { id: "u", displayName: "U" })).rejects.toBeInstanceOf(ForbiddenError);
      await expect(id.addMember(alice, "t", "alice")).rejects.toBeInstanceOf(ForbiddenError);
    });

    it("concurrent membership changes all land on both sides", async () => {
      const users = Array.from({ length: 8 }, (_, i) => `m${i}`);
      for (const u of users) await id.createUser(SYSTEM, { id: u, displayName: u, password: pw });
      await id.createGroup(SYSTEM, { id: "g1", displayName: "G1" });
      await id.createGroup(SYSTEM, { id: "g2", displayName: "G2" });
      await Promise.all(users.flatMap((u) => [id.addMember(SYSTEM, "g1", u), id.addMember(SYSTEM, "g2", u)]));
      expect([...(await id.getGroup("g1")).members].sort()).toEqual(users);
      expect([...(await id.getGroup("g2")).members].sort()).toEqual(users);
      for (const u of users) expect([...(await id.actorFor(u)).groups].sort()).toEqual(["g1", "g2"]);
    });
  });
});
