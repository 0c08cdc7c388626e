/**
 * Users and groups over a KvStore. Every operation takes the acting Actor and checks global intents
 * through GlobalPermissions (`global.createUser` administers users, `global.createGroup` administers
 * groups); the system actor bypasses the checks. Any authenticated actor may list users and groups.
 */
import { ConflictError, NotFoundError, UnauthorizedError, ValidationError } from "../errors.js";
import type { KvStore, Op } from "../kv/contract.js";
import { SYSTEM, type Actor } from "../resources/actor.js";
import { GLOBAL_INTENTS, GlobalPermissions } from "../resources/global.js";
import { checkDisplayName, checkId, checkNewId, checkPassword, MAX_GROUP_MEMBERS } from "./ids.js";
import { dummyHash, hashPassword, verifyPassword } from "./password.js";
import {
  commitOrRace,
  decodeRecord,
  groupKey,
  PARTITION,
  passwordKey,
  RaceLost,
  replace,
  userKey,
  withRetry,
  type GroupRecord,
  type Page,
  type UserRecord,
} from "./records.js";

export interface NewUser {
  readonly id: string;
  readonly displayName: string;
  readonly password: string;
}

export interface NewGroup {
  readonly id: string;
  readonly displayName: string;
  readonly members?: readonly string[];
}

export interface PageRequest {
  readonly cursor?: string | null;
  readonly limit?: number;
}

export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 1000;

export interface IdentityOptions {
  readonly global?: GlobalPermissions;
  readonly now?: () => Date;
}

export class Identity {
  readonly global: GlobalPermissions;
  readonly #now: () => Date;

  constructor(
    readonly kv: KvStore,
    options: IdentityOptions = {},
  ) {
    this.global = options.global ?? new GlobalPermissions(kv);
    this.#now = options.now ?? (() => new Date());
  }

  // ---- users -------------------------------------------------------------------------------------

  async createUser(actor: Actor, input: NewUser): Promise<UserRecord> {
    const id = checkNewId(input?.id, "id");
    const displayName = checkDisplayName(input.displayName);
    const password = checkPassword(input.password);
    await this.global.assert(actor, "global.createUser");
    const hash = await hashPassword(password);
    const user: UserRecord = { id, displayName, enabled: true, groups: [], createdAt: this.#now().toISOString() };
    try {
      await this.kv.commit(PARTITION, [
        ...replace(userKey(id), null, user),
        { type: "check", key: groupKey(id), version: null },
        { type: "put", key: passwordKey(id), value: Buffer.from(hash) },
      ]);
    } catch (e) {
      if (e instanceof ConflictError) throw new ConflictError(`the id ${id} is taken by a user or a group`, "id");
      throw e;
    }
    return user;
  }

  /** The user's public record; NotFoundError when there is none. */
  async getUser(id: string): Promise<UserRecord> {
    const entry = await this.kv.get(PARTITION, userKey(checkId(id, "id")));
    if (!entry) throw new NotFoundError(`no user ${id}`);
    return decodeRecord<UserRecord>(entry);
  }

  /** One page of users in id order, as the stored JSON bytes of each record. */
  async listUserBytes(actor: Actor, page: PageRequest = {}): Promise<Page<Buffer>> {
    return this.#listBytes(actor, "user", page);
  }

  async listUsers(actor: Actor, page: PageRequest = {}): Promise<Page<UserRecord>> {
    const raw = await this.listUserBytes(actor, page);
    return { items: raw.items.map((b) => JSON.parse(b.toString("utf8")) as UserRecord), nextCursor: raw.nextCursor };
  }

  async disableUser(actor: Actor, id: string): Promise<UserRecord> {
    return this.#setEnabled(actor, id, false);
  }

  async enableUser(actor: Actor, id: string): Promise<UserRecord> {
    return this.#setEnabled(actor, id, true);
  }

  async #setEnabled(actor: Actor, id: string, enabled: boolean): Promise<UserRecord> {
    checkId(id, "id");
    await this.global.assert(actor, "global.createUser");
    if (!enabled && !actor.system && actor.id === id) throw new ValidationError("a user cannot disable itself", "id");
    return withRetry(async () => {
      const entry = await this.kv.get(PARTITION, userKey(id));
      if (!entry) throw new NotFoundError(`no user ${id}`);
      const user = decodeRecord<UserRecord>(entry);
      if (user.enabled === enabled) return user;
      const next = { ...user, enabled };
      await commitOrRace(this.kv, replace(userKey(id), entry.version, next));
      return next;
    });
  }

  /** Sets a password: the system actor, the user itself, or a holder of `global.createUser`. */
  async setPassword(actor: Actor, id: string, password: string): Promise<void> {
    checkId(id, "id");
    checkPassword(password);
    if (actor.system !== true && actor.id !== id) await this.global.assert(actor, "global.createUser");
    const hash = await hashPassword(password);
    // The user must still exist when the hash is written (check on the record's version).
    await withRetry(async () => {
      const current = await this.kv.get(PARTITION, userKey(id));
      if (!current) throw new NotFoundError(`no user ${id}`);
      await commitOrRace(this.kv, [
        { type: "check", key: userKey(id), version: current.version },
        { type: "put", key: passwordKey(id), value: Buffer.from(hash) },
      ]);
    });
  }

  /**
   * Checks a username and password. Answers the same UnauthorizedError for an unknown user, a wrong
   * password and a disabled user, after the same amount of hashing work.
   */
  async authenticate(username: unknown, password: unknown): Promise<UserRecord> {
    const refused = () => new UnauthorizedError("invalid username or password");
    const validName = typeof username === "string" && /^[A-Za-z0-9._@-]{1,64}$/.test(username);
    const pw = typeof password === "string" && password.length <= 1024 ? password : "";
    const [userEntry, hashEntry] = validName
      ? await this.kv.getMany(PARTITION, [userKey(username), passwordKey(username)])
      : [undefined, undefined];
    const ok = await verifyPassword(pw, hashEntry ? hashEntry.value.toString("utf8") : await dummyHash());
    if (!ok || !userEntry || !hashEntry) throw refused();
    const user = decodeRecord<UserRecord>(userEntry);
    if (!user.enabled) throw refused();
    return user;
  }

  /** The Actor a user acts as (its groups included), in one read. UnauthorizedError when missing or disabled. */
  async actorFor(userId: string): Promise<Actor> {
    const entry = typeof userId === "string" && userId !== "" ? await this.kv.get(PARTITION, userKey(userId)) : undefined;
    if (!entry) throw new UnauthorizedError("unknown user");
    const user = decodeRecord<UserRecord>(entry);
    if (!user.enabled) throw new UnauthorizedError("the user is disabled");
    return { id: user.id, groups: user.groups };
  }

  // ---- groups ------------------------------------------------------------------------------------

  async createGroup(actor: Actor, input: NewGroup): Promise<GroupRecord> {
    const id = checkNewId(input?.id, "id");
    const displayName = checkDisplayName(input.displayName);
    const members = input.members ?? [];
    if (!Array.isArray(members) || members.length > MAX_GROUP_MEMBERS) {
      throw new ValidationError(`members must be a list of at most ${MAX_GROUP_MEMBERS} user ids`, "members");
    }
    const seen = new Set<string>();
    members.forEach((m, i) => {
      checkId(m, `members[${i}]`);
      if (seen.has(m)) throw new ValidationError(`${m} is listed twice`, `members[${i}]`);
      seen.add(m);
    });
    await this.global.assert(actor, "global.createGroup");
    const group: GroupRecord = { id, displayName, members: [...members], createdAt: this.#now().toISOString() };
    return withRetry(async () => {
      const entries = members.length ? await this.kv.getMany(PARTITION, members.map(userKey)) : [];
      const ops: Op[] = [...replace(groupKey(id), null, group), { type: "check", key: userKey(id), version: null }];
      entries.forEach((entry, i) => {
        if (!entry) throw new ValidationError(`no user ${members[i]}`, `members[${i}]`);
        const user = decodeRecord<UserRecord>(entry);
        ops.push(...replace(userKey(user.id), entry.version, { ...user, groups: [...user.groups, id] }));
      });
      try {
        await this.kv.commit(PARTITION, ops);
      } catch (e) {
        if (!(e instanceof ConflictError)) throw e;
        const [g, u] = await this.kv.getMany(PARTITION, [groupKey(id), userKey(id)]);
        if (g || u) throw new ConflictError(`the id ${id} is taken by a user or a group`, "id");
        throw new RaceLost(e); // a member changed meanwhile: read again
      }
      return group;
    });
  }

  async getGroup(id: string): Promise<GroupRecord> {
    const entry = await this.kv.get(PARTITION, groupKey(checkId(id, "id")));
    if (!entry) throw new NotFoundError(`no group ${id}`);
    return decodeRecord<GroupRecord>(entry);
  }

  /** Adds a user to a group (no-op when it is a member already). Needs `global.createGroup`. */
  async addMember(actor: Actor, groupId: string, userId: string): Promise<GroupRecord> {
    checkId(groupId, "groupId");
    checkId(userId, "userId");
    await this.global.assert(actor, "global.createGroup");
    return withRetry(async () => {
      const [g, u] = await this.kv.getMany(PARTITION, [groupKey(groupId), userKey(userId)]);
      if (!g) throw new NotFoundError(`no group ${groupId}`);
      if (!u) throw new ValidationError(`no user ${userId}`, "userId");
      const group = decodeRecord<GroupRecord>(g);
      const user = decodeRecord<UserRecord>(u);
      if (group.members.includes(userId)) return group;
      if (group.members.length >= MAX_GROUP_MEMBERS) {
        throw new ValidationError(`a group has at most ${MAX_GROUP_MEMBERS} members`, "userId");
      }
      const next = { ...group, members: [...group.members, userId] };
      await commitOrRace(this.kv, [
        ...replace(groupKey(groupId), g.version, next),
        ...replace(userKey(userId), u.version, { ...user, groups: [...user.groups, groupId] }),
      ]);
      return next;
    });
  }

  async listGroupBytes(actor: Actor, page: PageRequest = {}): Promise<Page<Buffer>> {
    return this.#listBytes(actor, "group", page);
  }

  async listGroups(actor: Actor, page: PageRequest = {}): Promise<Page<GroupRecord>> {
    const raw = await this.listGroupBytes(actor, page);
    return { items: raw.items.map((b) => JSON.parse(b.toString("utf8")) as GroupRecord), nextCursor: raw.nextCursor };
  }

  async #listBytes(actor: Actor, kind: "user" | "group", page: PageRequest): Promise<Page<Buffer>> {
    if (!actor || typeof actor.id !== "string") throw new UnauthorizedError();
    const limit = page.limit ?? DEFAULT_PAGE;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
      throw new ValidationError(`limit must be an integer from 1 to ${MAX_PAGE}`, "limit");
    }
    const res = await this.kv.scan(PARTITION, { prefix: [kind], limit, after: page.cursor ?? null });
    return { items: res.entries.map((e) => e.value), nextCursor: res.cursor };
  }

  /** True when a user or a group has this id. */
  async exists(id: string): Promise<boolean> {
    const [u, g] = await this.kv.getMany(PARTITION, [userKey(id), groupKey(id)]);
    return u !== undefined || g !== undefined;
  }

  // ---- bootstrap ---------------------------------------------------------------------------------

  /**
   * On a store without users, creates `root` with `password` and grants it every global intent.
   * Does nothing when users exist. Refuses (ValidationError) on an empty store without a password.
   * Grants are written before the user, so a crash in between leaves a state the next start repairs.
   */
  async ensureRoot(password: string | undefined): Promise<{ created: boolean }> {
    const any = await this.kv.scan(PARTITION, { prefix: ["user"], limit: 1 });
    if (any.entries.length > 0) return { created: false };
    if (password === undefined || password === "") {
      throw new ValidationError(
        "the store has no users yet: set FLOWSTORE_ROOT_PASSWORD to the password of the root user to create it",
        "FLOWSTORE_ROOT_PASSWORD",
      );
    }
    checkPassword(password, "FLOWSTORE_ROOT_PASSWORD");
    for (const intent of GLOBAL_INTENTS) await this.global.grant(SYSTEM, intent, "root");
    try {
      await this.createUser(SYSTEM, { id: "root", displayName: "root", password });
    } catch (e) {
      if (e instanceof ConflictError) return { created: false }; // another process won the race
      throw e;
    }
    return { created: true };
  }
}

export type { GroupRecord, UserRecord, Page };
