/**
 * Global permissions: who holds which global intent (`global.createProject`, `global.createUser`, ...,
 * whatever the registry holds; see intents.ts). They live in one small partition of their own and are
 * checked by the domains themselves, so library users get the same checks as HTTP clients; the system
 * actor bypasses them.
 *
 * Rules:
 * - a grant names a registered intent and an identity the directory knows (when one is given): granting
 *   to an unknown user or group is refused; revoking from one is allowed (cleanup);
 * - changing a permission needs `global.grantPermission` / `global.revokePermission`, reading them
 *   `global.listPermissions`.
 */
import { ConflictError, ForbiddenError, ValidationError } from "../errors.js";
import type { KvStore } from "../kv/contract.js";
import { allows, type Actor, type Permissions } from "./actor.js";
import { IntentRegistry } from "./intents.js";
import { PartitionKind, Subspace } from "../kv/subspace.js";

/** Which identities (users and groups) exist; implemented by identity, read by whoever grants. */
export interface IdentityDirectory {
  exists(id: string): Promise<boolean>;
}

/** Refuses (ValidationError on `identity`) a grant to an identity the directory does not know. */
export async function assertIdentityExists(directory: IdentityDirectory | undefined, identity: string): Promise<void> {
  if (directory && !(await directory.exists(identity))) throw new ValidationError(`no user or group ${identity}`, "identity");
}

export interface GlobalPermissionsOptions {
  /** The grantable intents (default: access's own only). */
  readonly intents?: IntentRegistry;
  /** Where grants look up their identity; without one any identity may be granted to. */
  readonly identities?: IdentityDirectory;
}

/** The partition of the global permissions: the one place the kind "global" is named. */
export const GLOBAL = new PartitionKind("global");
const PARTITION = GLOBAL.partition();
const KEY = new Subspace(["permissions"]).pack();

export class GlobalPermissions {
  /** Every grantable global intent. */
  readonly intents: IntentRegistry;
  readonly #identities: IdentityDirectory | undefined;

  constructor(
    private readonly kv: KvStore,
    options: GlobalPermissionsOptions = {},
  ) {
    this.intents = options.intents ?? new IntentRegistry();
    this.#identities = options.identities;
  }

  async #read(): Promise<{ permissions: Permissions; version: number | null }> {
    const e = await this.kv.get(PARTITION, KEY);
    return e ? { permissions: JSON.parse(e.value.toString("utf8")) as Permissions, version: e.version } : { permissions: {}, version: null };
  }

  async has(actor: Actor, intent: string): Promise<boolean> {
    if (actor.system) return true;
    return allows((await this.#read()).permissions, actor, intent);
  }

  async assert(actor: Actor, intent: string): Promise<void> {
    if (!(await this.has(actor, intent))) throw new ForbiddenError(`${actor.id} lacks the intent ${intent}`);
  }

  /** The registered intents the actor holds, directly or through a group (all of them for the system actor). */
  async held(actor: Actor): Promise<string[]> {
    const intents = this.intents.list();
    if (actor.system) return [...intents];
    const { permissions } = await this.#read();
    return intents.filter((i) => allows(permissions, actor, i));
  }

  async list(actor: Actor): Promise<Permissions> {
    await this.assert(actor, "global.listPermissions");
    return (await this.#read()).permissions;
  }

  async grant(actor: Actor, intent: string, identity: string): Promise<void> {
    await this.assert(actor, "global.grantPermission");
    this.#check(intent, identity);
    await assertIdentityExists(this.#identities, identity);
    await this.#update([intent], identity, true);
  }

  /** Grants every registered global intent to an existing user or group at once (global.grantPermission). */
  async grantAll(actor: Actor, identity: string): Promise<readonly string[]> {
    await this.assert(actor, "global.grantPermission");
    this.#check(undefined, identity);
    await assertIdentityExists(this.#identities, identity);
    const all = this.intents.list();
    await this.#update(all, identity, true);
    return all;
  }

  async revoke(actor: Actor, intent: string, identity: string): Promise<void> {
    await this.assert(actor, "global.revokePermission");
    this.#check(intent, identity);
    await this.#update([intent], identity, false);
  }

  /**
   * Grants every registered intent to `identity`, which need not exist yet: bootstraps the root user,
   * whose grants are written before the user so that a crash in between is repaired by the next start.
   * The system actor only.
   */
  async grantAllToNew(actor: Actor, identity: string): Promise<void> {
    if (!actor.system) throw new ForbiddenError(`${actor.id} may not bootstrap global permissions`);
    this.#check(undefined, identity);
    await this.#update(this.intents.list(), identity, true);
  }

  #check(intent: string | undefined, identity: string): void {
    if (intent !== undefined && (typeof intent !== "string" || !this.intents.has(intent))) {
      throw new ValidationError(`unknown global intent ${JSON.stringify(intent)}`, "intent");
    }
    if (typeof identity !== "string" || identity.length === 0) throw new ValidationError("identity is required", "identity");
  }

  async #update(intents: readonly string[], identity: string, add: boolean): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const { permissions, version } = await this.#read();
      const next = { ...permissions };
      for (const intent of intents) {
        const holders = new Set(permissions[intent] ?? []);
        if (add) holders.add(identity);
        else holders.delete(identity);
        next[intent] = [...holders];
      }
      try {
        await this.kv.commit(PARTITION, [
          { type: "check", key: KEY, version },
          { type: "put", key: KEY, value: Buffer.from(JSON.stringify(next)) },
        ]);
        return;
      } catch (e) {
        if (!(e instanceof ConflictError) || attempt > 20) throw e;
      }
    }
  }
}
