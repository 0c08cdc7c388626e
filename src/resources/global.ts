/**
 * Global permissions: the intents that are not about one resource (`global.createProject`,
 * `global.createUser`, `global.createGroup`, ...). They live in one small partition of their own and
 * are checked in the store, so library users get the same checks as HTTP clients.
 */
import { ForbiddenError, ValidationError } from "../errors.js";
import type { KvStore } from "../kv/contract.js";
import { ConflictError } from "../errors.js";
import { allows, type Actor, type Permissions } from "./actor.js";

export const GLOBAL_INTENTS = [
  "global.createProject",
  "global.createUser",
  "global.createGroup",
  "global.listPermissions",
  "global.grantPermission",
  "global.revokePermission",
  "global.readProcessData",
  "global.writeProcessData",
  "global.readArchive",
  "global.writeArchive",
] as const;
export type GlobalIntent = (typeof GLOBAL_INTENTS)[number];

const PARTITION = ["global"] as const;
const KEY = ["permissions"] as const;

export class GlobalPermissions {
  /** Every grantable global intent: the built-in ones and the create intents of a schema's root types. */
  readonly intents: readonly string[];

  constructor(
    private readonly kv: KvStore,
    extraIntents: readonly string[] = [],
  ) {
    this.intents = [...new Set([...GLOBAL_INTENTS, ...extraIntents])];
  }

  async #read(): Promise<{ permissions: Permissions; version: number | null }> {
    const e = await this.kv.get(PARTITION, KEY);
    return e ? { permissions: JSON.parse(e.value.toString("utf8")) as Permissions, version: e.version } : { permissions: {}, version: null };
  }

  async has(actor: Actor, intent: GlobalIntent | (string & {})): Promise<boolean> {
    if (actor.system) return true;
    return allows((await this.#read()).permissions, actor, intent);
  }

  async assert(actor: Actor, intent: GlobalIntent | (string & {})): Promise<void> {
    if (!(await this.has(actor, intent))) throw new ForbiddenError(`${actor.id} lacks the intent ${intent}`);
  }

  async list(actor: Actor): Promise<Permissions> {
    await this.assert(actor, "global.listPermissions");
    return (await this.#read()).permissions;
  }

  async grant(actor: Actor, intent: string, identity: string): Promise<void> {
    await this.assert(actor, "global.grantPermission");
    await this.#update(intent, identity, true);
  }

  async revoke(actor: Actor, intent: string, identity: string): Promise<void> {
    await this.assert(actor, "global.revokePermission");
    await this.#update(intent, identity, false);
  }

  async #update(intent: string, identity: string, add: boolean): Promise<void> {
    if (!this.intents.includes(intent)) {
      throw new ValidationError(`unknown global intent ${JSON.stringify(intent)}`, "intent");
    }
    if (typeof identity !== "string" || identity.length === 0) throw new ValidationError("identity is required", "identity");
    for (let attempt = 0; ; attempt++) {
      const { permissions, version } = await this.#read();
      const holders = new Set(permissions[intent] ?? []);
      if (add) holders.add(identity);
      else holders.delete(identity);
      const next = { ...permissions, [intent]: [...holders] };
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
