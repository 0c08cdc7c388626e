/**
 * The permissions on a user account (TruBudget's per-user intents, its authz/intents.ts `userIntents`):
 * who may change the account's password and who may list, grant and revoke these permissions. Each
 * user holds them on itself until they are changed; a changed set is one record per user
 * (`families.userPermissions`).
 *
 * Rules:
 * - `user.changePassword` on an account lets its holder set the account's password (besides the user
 *   itself and holders of `global.createUser`), still only when it outranks the account (identity.ts
 *   `setPassword`: the administrator hierarchy is not climbed by a grant);
 * - listing needs `user.intent.listPermissions` on the account, granting `user.intent.grantPermission`,
 *   revoking `user.intent.revokePermission`; root and the system actor need none (root administers
 *   every account, as TruBudget's root); a grant names an identity that exists, a revoke need not;
 * - `user.authenticate` and `user.list` are shown as TruBudget shows them but are not grantable here:
 *   logging in follows the account being enabled (`global.enableUser` / `global.disableUser`) and every
 *   authenticated user lists users in flowstore; a grant of either is refused naming why.
 */
import { isTop, type Actor, type Permissions } from "../access/actor.js";
import { ForbiddenError, NotFoundError, ValidationError } from "../errors.js";
import type { KvStore } from "../kv/contract.js";
import { checkId } from "./ids.js";
import { asActor } from "../kv/record-chain.js";
import { commitOrRace, families, PARTITION, userKey, withRetry } from "./records.js";

/** The per-user intents that are kept and checked here. */
export const USER_INTENTS = ["user.changePassword", "user.intent.listPermissions", "user.intent.grantPermission", "user.intent.revokePermission"] as const;
export type UserIntent = (typeof USER_INTENTS)[number];

/** TruBudget's per-user intents that follow other rules in flowstore (see the top), with why. */
export const DERIVED_USER_INTENTS: Readonly<Record<string, string>> = {
  "user.authenticate": "logging in follows the account being enabled: use global.enableUser or global.disableUser",
  "user.list": "every authenticated user lists users in flowstore",
};

const permissionsKey = (id: string) => families.userPermissions.pack([id]);

/** The permissions of an account nobody changed: the user holds each intent on itself. */
const defaults = (id: string): Permissions => Object.fromEntries(USER_INTENTS.map((i) => [i, [id]]));

const holds = (permissions: Permissions, actor: Actor, intent: string): boolean =>
  actor.system === true || [actor.id, ...actor.groups].some((x) => permissions[intent]?.includes(x) ?? false);

/** What the per-user permissions need of the identity directory: its store, and whether an identity exists. */
export interface IdentityPort {
  readonly kv: KvStore;
  exists(id: string): Promise<boolean>;
}

export class UserPermissions {
  constructor(private readonly identity: IdentityPort) {}

  async #read(id: string): Promise<{ permissions: Permissions; version: number | null; userVersion: number }> {
    const [user, stored] = await this.identity.kv.getMany(PARTITION, [userKey(id), permissionsKey(id)]);
    if (!user) throw new NotFoundError(`no user ${id}`);
    return stored
      ? { permissions: JSON.parse(stored.value.toString("utf8")) as Permissions, version: stored.version, userVersion: user.version }
      : { permissions: defaults(id), version: null, userVersion: user.version };
  }

  /** The account's permissions as shown to any authenticated user in a user list (TruBudget's user.list shows them so). */
  async shown(id: string): Promise<Permissions> {
    return (await this.#read(checkId(id, "userId"))).permissions;
  }

  /** True when the actor (or one of its groups) holds `intent` on the account (the system actor always). */
  async has(actor: Actor, id: string, intent: UserIntent): Promise<boolean> {
    return holds((await this.#read(checkId(id, "userId"))).permissions, actor, intent);
  }

  /** The account's permissions (intent → identities): `user.intent.listPermissions` on it, root or the system actor. */
  async list(actor: Actor, id: string): Promise<Permissions> {
    const { permissions } = await this.#read(checkId(id, "userId"));
    if (!isTop(actor) && !holds(permissions, actor, "user.intent.listPermissions")) throw new ForbiddenError(`${actor.id} lacks user.intent.listPermissions on ${id}`);
    return permissions;
  }

  async grant(actor: Actor, id: string, intent: string, identity: string): Promise<void> {
    await this.#change(actor, id, intent, identity, true);
  }

  async revoke(actor: Actor, id: string, intent: string, identity: string): Promise<void> {
    await this.#change(actor, id, intent, identity, false);
  }

  async #change(actor: Actor, id: string, intent: string, identity: string, add: boolean): Promise<void> {
    checkId(id, "userId");
    checkId(identity, "identity");
    if (DERIVED_USER_INTENTS[intent] !== undefined) throw new ValidationError(`${intent} cannot be granted or revoked in flowstore: ${DERIVED_USER_INTENTS[intent]}`, "intent");
    if (!(USER_INTENTS as readonly string[]).includes(intent)) throw new ValidationError(`unknown user intent ${JSON.stringify(intent)}`, "intent");
    const needed = add ? "user.intent.grantPermission" : "user.intent.revokePermission";
    if (add && !(await this.identity.exists(identity))) throw new ValidationError(`no user or group ${identity}`, "identity");
    await withRetry(async () => {
      const { permissions, version, userVersion } = await this.#read(id);
      if (!isTop(actor) && !holds(permissions, actor, needed)) throw new ForbiddenError(`${actor.id} lacks ${needed} on ${id}`);
      const holders = new Set(permissions[intent] ?? []);
      if (holders.has(identity) === add) return;
      if (add) holders.add(identity);
      else holders.delete(identity);
      const next = { ...permissions, [intent]: [...holders] };
      await asActor(actor, () =>
        commitOrRace(this.identity.kv, [
          { type: "check", key: userKey(id), version: userVersion },
          { type: "check", key: permissionsKey(id), version },
          { type: "put", key: permissionsKey(id), value: Buffer.from(JSON.stringify(next)) },
        ]),
      );
    });
  }
}
