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
 *   `global.listPermissions`;
 * - the hierarchy cannot be climbed (issue 29, finding 1): a grant hands out only intents the granter
 *   holds itself, and a revoke takes nothing from an identity that holds an intent the revoker lacks,
 *   nor from root; root and the system actor are exempt (`outranks`).
 */
import { ConflictError, ForbiddenError, ValidationError } from "../errors.js";
import type { KvStore } from "../kv/contract.js";
import { allows, isTop, ROOT_ID, type Actor, type Permissions } from "./actor.js";
import { IntentRegistry, type Intent, type IntentSplit } from "./intents.js";
import { PartitionKind, Subspace } from "../kv/subspace.js";
import { asActor, CHAIN, type RecordChainSpec } from "../kv/record-chain.js";

/** Which identities (users and groups) exist; implemented by identity, read by whoever grants. */
export interface IdentityDirectory {
  exists(id: string): Promise<boolean>;
  /** The identity as an Actor (a user with its groups, a group alone); undefined when it does not exist. */
  actorOf?(id: string): Promise<Actor | undefined>;
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
/** Where a migration of the permissions records that it ran (beside them: a restore of an older store runs it again). */
const MIGRATIONS = new Subspace(["migrations"]);
/**
 * Written with the permissions' first record: the store held the registry's intents as they are now from
 * its start, so no migration of split intents applies to it (each is recorded as done, granting nothing).
 */
const CURRENT_FROM_START = new Subspace(["current-from-start"]).pack();
/** The keys of the partition: the permissions (one record), each migration's record by name, and the mark of a store born after the splits. */
export const GLOBAL_KEYS = { permissions: KEY, migration: (name: string) => MIGRATIONS.pack([name]), currentFromStart: CURRENT_FROM_START } as const;

/** The record chain of the partition (kv/record-chain.ts): every record of it, so `verify` covers who holds which global intent. */
export const GLOBAL_CHAIN: RecordChainSpec = { holds: (p) => GLOBAL.holds(p), covers: (key) => !CHAIN.contains(key) };

/** What a migration of split intents did (its record in the partition). */
export interface SplitMigration {
  readonly name: string;
  readonly at: string;
  /** Intent → the identities it was granted to (each a holder of the intent it was split from). */
  readonly granted: Record<string, string[]>;
}

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

  async has(actor: Actor, intent: Intent): Promise<boolean> {
    if (actor.system) return true;
    return allows((await this.#read()).permissions, actor, intent);
  }

  async assert(actor: Actor, intent: Intent): Promise<void> {
    if (!(await this.has(actor, intent))) throw new ForbiddenError(`${actor.id} lacks the intent ${intent}`);
  }

  /** The registered intents the actor holds, directly or through a group (all of them for the system actor). */
  async held(actor: Actor): Promise<string[]> {
    const intents = this.intents.list();
    if (actor.system) return [...intents];
    const { permissions } = await this.#read();
    return intents.filter((i) => allows(permissions, actor, i));
  }

  /**
   * Refuses (ForbiddenError) unless `actor` outranks `target`: the system actor and root outrank
   * everyone; nobody else outranks root, nor an identity holding a global intent the actor lacks.
   * What administering another account (its password, its enabling, its grants, its groups) needs.
   */
  async assertOutranks(actor: Actor, target: Actor): Promise<void> {
    if (isTop(actor)) return;
    if (target.id === ROOT_ID) throw new ForbiddenError(`only root administers root`);
    const { permissions } = await this.#read();
    const lacking = this.intents.list().find((i) => allows(permissions, target, i) && !allows(permissions, actor, i));
    if (lacking !== undefined) throw new ForbiddenError(`${target.id} holds ${lacking}, which ${actor.id} lacks: only those who hold every intent of an account administer it`);
  }

  /** The identity named as an Actor, from the directory (alone, without groups, when there is none or it is unknown). */
  async #asActor(identity: string): Promise<Actor> {
    return (await this.#identities?.actorOf?.(identity)) ?? { id: identity, groups: [] };
  }

  /** Refuses handing out intents the granter does not hold itself (root and the system actor hold every one). */
  async #assertHolds(actor: Actor, intents: readonly string[]): Promise<void> {
    if (isTop(actor)) return;
    const { permissions } = await this.#read();
    const lacking = intents.find((i) => !allows(permissions, actor, i));
    if (lacking !== undefined) throw new ForbiddenError(`${actor.id} lacks the intent ${lacking}, so it may not grant it`);
  }

  async list(actor: Actor): Promise<Permissions> {
    await this.assert(actor, "global.listPermissions");
    return (await this.#read()).permissions;
  }

  async grant(actor: Actor, intent: Intent, identity: string): Promise<void> {
    await this.assert(actor, "global.grantPermission");
    this.#check(intent, identity);
    await this.#assertHolds(actor, [intent]);
    await assertIdentityExists(this.#identities, identity);
    await asActor(actor, () => this.#update([intent], identity, true));
  }

  /** Grants every registered global intent to an existing user or group at once (global.grantAllPermissions). */
  async grantAll(actor: Actor, identity: string): Promise<readonly string[]> {
    await this.assert(actor, "global.grantAllPermissions");
    this.#check(undefined, identity);
    await assertIdentityExists(this.#identities, identity);
    const all = this.intents.list();
    await this.#assertHolds(actor, all);
    await asActor(actor, () => this.#update(all, identity, true));
    return all;
  }

  async revoke(actor: Actor, intent: Intent, identity: string): Promise<void> {
    await this.assert(actor, "global.revokePermission");
    this.#check(intent, identity);
    await this.assertOutranks(actor, await this.#asActor(identity));
    await asActor(actor, () => this.#update([intent], identity, false));
  }

  /**
   * Grants every registered intent to `identity`, which need not exist yet: bootstraps the root user,
   * whose grants are written before the user so that a crash in between is repaired by the next start.
   * The system actor only.
   */
  async grantAllToNew(actor: Actor, identity: string): Promise<void> {
    if (!actor.system) throw new ForbiddenError(`${actor.id} may not bootstrap global permissions`);
    this.#check(undefined, identity);
    await asActor(actor, () => this.#update(this.intents.list(), identity, true));
  }

  /**
   * Brings a store written before intents were split up to date: every identity holding a split's
   * `from` is granted its `to` (an administrator who had them as part of `from` keeps them). Runs once
   * per `name`: the record of what it granted is written with the grants, in one commit, and a store
   * holding the record is left alone (idempotent); answers the record, and whether this call wrote it.
   */
  async migrateSplits(name: string, splits: readonly IntentSplit[], at: Date = new Date()): Promise<{ ran: boolean; record: SplitMigration }> {
    const recordKey = GLOBAL_KEYS.migration(name);
    for (let attempt = 0; ; attempt++) {
      const [done, current, bornCurrent] = await this.kv.getMany(PARTITION, [recordKey, KEY, CURRENT_FROM_START]);
      if (done) return { ran: false, record: JSON.parse(done.value.toString("utf8")) as SplitMigration };
      // An empty store has nothing to migrate, and opening it writes nothing (an import needs it empty, and
      // an export of it must import byte for byte); its first grant marks it as holding the current intents.
      // A store born with the current intents (its first grant marked it) has nothing to migrate either.
      if (!current || bornCurrent) return { ran: false, record: { name, at: at.toISOString(), granted: {} } };
      const permissions = JSON.parse(current.value.toString("utf8")) as Permissions;
      const next: Permissions = { ...permissions };
      const granted: Record<string, string[]> = {};
      for (const { from, to } of splits) {
        for (const intent of to) {
          const holders = new Set(next[intent] ?? []);
          const added = (permissions[from] ?? []).filter((h) => !holders.has(h));
          if (added.length === 0) continue;
          for (const h of added) holders.add(h);
          next[intent] = [...holders];
          granted[intent] = [...(granted[intent] ?? []), ...added];
        }
      }
      const record: SplitMigration = { name, at: at.toISOString(), granted };
      try {
        await this.kv.commit(PARTITION, [
          { type: "check", key: recordKey, version: null },
          { type: "check", key: KEY, version: current?.version ?? null },
          ...(Object.keys(granted).length > 0 ? [{ type: "put" as const, key: KEY, value: Buffer.from(JSON.stringify(next)) }] : []),
          { type: "put", key: recordKey, value: Buffer.from(JSON.stringify(record)) },
        ]);
        return { ran: true, record };
      } catch (e) {
        if (!(e instanceof ConflictError) || attempt > 20) throw e;
      }
    }
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
          // The first record of a new store: it holds the current intents from its start (migrateSplits).
          ...(version === null ? [{ type: "put" as const, key: CURRENT_FROM_START, value: Buffer.from("{}") }] : []),
        ]);
        return;
      } catch (e) {
        if (!(e instanceof ConflictError) || attempt > 20) throw e;
      }
    }
  }
}
