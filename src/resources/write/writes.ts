/**
 * Writes: create, the `mutate` primitive behind update and every domain command, permissions (TruBudget's
 * intent grants) and ordering. Each reads and checks inside its partition's write path, so the check and
 * the write are one atomic commit.
 */
import { ConflictError, StaleVersionError, ForbiddenError, ValidationError } from "../../errors.js";
import type { Actor, Permissions } from "../../access/actor.js";
import { assertIdentityExists } from "../../access/global.js";
import type { Intent } from "../../access/intents.js";
import { creationContext, mutateContext, type MutateContext, type ReadContext } from "../read/context.js";
import { countChild, decodeAccess, encodeAccess, encodeResource, type Core } from "../core/core.js";
import { diffData } from "../model/diff.js";
import { INDEX_VERBS, type EventPayload } from "../model/events.js";
import { layout } from "../model/layout.js";
import { restSortKey, validateOrdering } from "../model/ordering.js";
import { written, type Envelope, type Private, type Written } from "../model/record.js";
import { childRef, locate, pathOf, type Located, type Ref } from "../model/ref.js";
import { assertId, GOVERNANCE_FLAG, type DataOf, type SchemaDecl } from "../model/schema.js";
import { refuseSealed } from "../personal/subjects.js";
import { assigneeOf, writeAssignment } from "../indexes/assignments.js";
import { indexEntries, writeVisibility } from "../indexes/visibility.js";
import type { Tx } from "../log/writer.js";
import { moveSums } from "./sums.js";

export type ParentState = { envelope: Envelope; permissions: Permissions };

export interface CreateOptions {
  /** The id; generated when absent. */
  id?: string;
  /** Refuse the create (throw) given the parent's current state (null for a root); runs inside the write. */
  guard?: (parent: Envelope | null, ctx: ReadContext) => void | Promise<void>;
  /**
   * What the new resource starts as, decided inside the write after `guard` from the parent's state
   * (null for a root): fields to set on the given data (e.g. a default taken from the parent; each
   * validated, then the type's rules on the whole) and its permissions (from the creator's defaults,
   * every intent; made when `defaults` is first read, so a decide that does not need them pays nothing).
   * Either may be left out; throw to refuse.
   */
  decide?: (given: { data: Record<string, unknown>; readonly defaults: Permissions; parent: ParentState | null }) => CreateDecision;
  /**
   * The original creation of a resource brought over from another system (a migration): the system
   * actor only. The meta carries it; the `created` event records it beside its own time and actor.
   */
  meta?: { createdAt: string; createdBy: string };
}

/**
 * What `CreateOptions.decide` decided: fields to set on the given data (the given data, validated
 * before the write, is not validated again), and the permissions instead of the defaults.
 */
export interface CreateDecision {
  set?: Record<string, unknown>;
  permissions?: Permissions;
}

/** What a domain command does to one resource (see `mutate`). */
export interface MutateSpec {
  /** The intent the actor must hold on the resource; null when `change` decides who may (the resource must exist). */
  intent: string | null;
  /** The event verb (`<type>.<verb>`). */
  verb: string;
  /** Refuse with a ConflictError unless the resource is at this version. */
  ifVersion?: number;
  /** Decides the change from the current state and what the context reads (throw to refuse). */
  change: (current: Envelope, ctx: MutateContext) => Promise<MutateDecision> | MutateDecision;
}

/** What `MutateSpec.change` decided: a data patch (a field set to null is removed), new permissions, and what else the event records. */
export interface MutateDecision {
  /** Nothing to do (e.g. closing what is closed): nothing is written and the current state is answered. */
  unchanged?: true;
  patch?: Record<string, unknown>;
  record?: EventPayload;
  permissions?: Permissions;
}

function applyPatch(data: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const next = { ...data };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete next[k];
    else if (v !== undefined) next[k] = v;
  }
  return next;
}

/** `value` and everything it holds, frozen. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/** Refuses to reuse an address: a deleted resource's history stays under it. */
function existed(type: string, id: string): ConflictError {
  return new ConflictError(`${type} ${id} already exists (or existed)`, "id");
}

/** The writes of a store whose schema declares `S` (ResourceStore.writes): every one checks the actor's intent inside the write. */
export class Writes<S extends SchemaDecl = SchemaDecl> {
  /**
   * A parent's decoded state and access entry, per the bytes of its record: the creates of one group under
   * one parent read the same bytes (the writer reads a key once per group), so the parent's JSON and access
   * entry are parsed once per group, not per create. Frozen, as every command of the group shares them.
   */
  readonly #parents = new WeakMap<Buffer, { accessRaw: Buffer | undefined; priv: Private; state: ParentState }>();

  constructor(private readonly core: Core) {}

  /** Creates a resource of a declared type under `parent` (null for a root), typed by its declared type. */
  create<T extends keyof S & string>(actor: Actor, type: T, parent: Ref | null, data: DataOf<S, T>, options: CreateOptions = {}): Promise<Written<DataOf<S, T>>> {
    return this.#create(actor, type, parent, data, options) as Promise<Written<DataOf<S, T>>>;
  }

  async #create(actor: Actor, type: string, parent: Ref | null, data: unknown, options: CreateOptions = {}): Promise<Written> {
    const { schema, writer } = this.core;
    const t = schema.type(type);
    const id = options.id ?? this.core.newId();
    assertId(id, "id");
    const l = locate(schema, childRef(schema, parent, type, id));
    let clean = schema.validate(t, data);
    refuseSealed(clean);
    if (options.meta !== undefined && !actor.system) throw new ForbiddenError("only the system actor may set a resource's original creation");
    const meta = options.meta;
    // The creator's defaults, made when asked: a decide that derives the permissions from the parent's
    // (a workflowitem's, once per group of creates: commands.ts #inherited) never reads them.
    const defaultsOf = (): Permissions => Object.fromEntries(t.intents.all.map((i) => [i, actor.system ? [] : [actor.id]]));
    const requireParent = (tx: Tx, pl: Located): Promise<ParentState> => this.#requireParent(tx, pl, actor, t.intents.create);
    const decide = async (tx: Tx, pl: Located | null, parentState: ParentState | null): Promise<Permissions> => {
      await options.guard?.(parentState?.envelope ?? null, creationContext(this.core.kv, schema, tx, type, pl));
      let defaults: Permissions | undefined;
      const decided = options.decide?.({
        data: clean,
        get defaults() {
          return (defaults ??= defaultsOf());
        },
        parent: parentState,
      });
      // A decide written for the former `data` (the whole data to store) would otherwise be ignored silently.
      if (decided != null && "data" in decided) throw new TypeError("CreateDecision has no `data`: return the fields to set on the given data as `set`");
      if (decided?.set) clean = schema.validateSet(t, clean, decided.set);
      return decided?.permissions ?? defaults ?? defaultsOf();
    };
    const fresh = async (tx: Tx): Promise<void> => {
      if ((await tx.get(layout.head)) || (await tx.get(layout.state(l)))) throw existed(type, id);
    };

    // Personal fields are sealed under their subject's key once the data is decided (personal/subjects.ts).
    const sealed = () => this.core.subjects.seal(t, l.ref, clean, null);
    if (t.decl.parent === null) {
      await this.core.global.assert(actor, t.intents.create as Intent); // a root type's create intent, registered from its schema's globalIntents
      return writer.run(l.partition, actor, async (tx) => {
        await fresh(tx);
        const permissions = await decide(tx, null, null);
        return this.#put(tx, l, await sealed(), permissions, null, meta);
      });
    }

    const pl = locate(schema, parent!);
    if (t.decl.idStyle === "nested") {
      return writer.run(l.partition, actor, async (tx) => {
        const parentState = await requireParent(tx, pl);
        if ((await tx.get(layout.state(l))) || (await tx.anyUnder(layout.history(l)))) throw existed(type, id);
        const permissions = await decide(tx, pl, parentState);
        const envelope = this.#put(tx, l, await sealed(), permissions, null, meta);
        await moveSums(tx, l, null, envelope);
        // A new child is never in its parent's ordering (which names existing children, and ids are not reused).
        if (pl.type.decl.orderedChildren === type) {
          tx.put(layout.orderIndexRestEntry(pl, type, restSortKey({ id, createdAtMs: Date.parse(envelope.meta.createdAt) })), Buffer.from(id, "utf8"));
        }
        return envelope;
      });
    }

    // Flat child: index entry in the parent's partition first (so a crash never leaves a child the
    // parent's cascade cannot find), then the child's own partition.
    if (await this.core.kv.get(l.partition, layout.head)) throw existed(type, id);
    let permissions: Permissions = defaultsOf();
    await writer.run(pl.partition, actor, async (tx) => {
      permissions = await decide(tx, pl, await requireParent(tx, pl));
      if (await tx.get(layout.flatChild(pl, type, id))) throw new ConflictError(`${type} ${id} already exists`, "id");
      tx.put(layout.flatChild(pl, type, id), Buffer.from(JSON.stringify({ createdAt: tx.now })));
      await countChild(tx, pl, type, 1);
      tx.append(`${pl.type.name}.${INDEX_VERBS.added}`, pathOf(pl), { childType: type, id }, (seq) => layout.historyEntry(pl, seq));
    });
    try {
      return await writer.run(l.partition, actor, async (tx) => {
        await fresh(tx);
        return this.#put(tx, l, await sealed(), permissions, parent, meta);
      });
    } catch (e) {
      await this.core.unlinkFlat(pl, type, id, actor).catch(() => undefined);
      throw e;
    }
  }

  /** The parent's state, once the actor's `intent` on it is checked (every command checks it: the decoding alone is shared, see #parents). */
  async #requireParent(tx: Tx, pl: Located, actor: Actor, intent: string): Promise<ParentState> {
    const state = await tx.get(layout.state(pl));
    const accessRaw = state ? await tx.get(layout.access(pl)) : undefined;
    let known = state ? this.#parents.get(state) : undefined;
    if (known && known.accessRaw !== accessRaw) known = undefined;
    const priv = known?.priv ?? (state ? decodeAccess(accessRaw) : undefined);
    const { view, access } = await this.core.authorize((key) => tx.get(key), pl, actor, intent, { withAccess: true, state, access: priv });
    if (known) return known.state;
    const parent = deepFreeze({ envelope: view.envelope(), permissions: access!.permissions });
    this.#parents.set(state!, { accessRaw, priv: access!, state: parent });
    return parent;
  }

  #put(tx: Tx, l: Located, data: Record<string, unknown>, permissions: Permissions, parent: Ref | null, origin?: { createdAt: string; createdBy: string }): Written {
    const envelope: Envelope = {
      id: l.ref.ids.at(-1)!,
      type: l.type.name,
      data,
      meta: { createdAt: origin?.createdAt ?? tx.now, createdBy: origin?.createdBy ?? tx.actor.id, updatedAt: tx.now, version: 1 },
    };
    tx.put(layout.state(l), encodeResource(l.type, envelope, permissions));
    tx.put(layout.access(l), encodeAccess({ permissions, parent }));
    if (l.depth === 0) writeVisibility(tx, l.type, envelope.id, new Map(), indexEntries(l.type, envelope, permissions));
    writeAssignment(tx, l, null, assigneeOf(l.type, data));
    if (parent) tx.put(layout.parentLink, Buffer.from(JSON.stringify(parent)));
    // A flat resource's event names its parent: the replay (replay.ts) rebuilds the access record and link from it.
    tx.append(`${l.type.name}.created`, pathOf(l), { data, permissions, ...(parent ? { parent } : {}), ...(origin ? { origin } : {}) }, (seq) => layout.historyEntry(l, seq));
    return written(envelope, permissions);
  }

  /**
   * The one primitive behind update and every domain command: read the resource inside its partition's
   * write path, check the intent and version, let `spec.change` decide (or refuse) from a typed read
   * context, validate the result, write the new state and append the event, atomically.
   */
  mutate(actor: Actor, ref: Ref, spec: MutateSpec): Promise<Written> {
    return this.#mutate(actor, ref, spec);
  }

  /** `mutate`, with `alsoWrite` writing what the layout keeps beside the record (an ordering) in the same commit. */
  async #mutate(actor: Actor, ref: Ref, spec: MutateSpec, alsoWrite?: (tx: Tx, l: Located, decided: MutateDecision) => void): Promise<Written> {
    const l = locate(this.core.schema, ref);
    return this.core.writer.run(l.partition, actor, async (tx) => {
      const { view, access } = await this.core.authorize((key) => tx.get(key), l, actor, spec.intent, { withAccess: true });
      const priv = access!;
      const current = view.envelope();
      if (spec.ifVersion !== undefined && spec.ifVersion !== current.meta.version) {
        throw new StaleVersionError(`${ref.type} ${ref.ids.join("/")} is at version ${current.meta.version}, not ${spec.ifVersion}`);
      }
      const decided = await spec.change(current, mutateContext(this.core.kv, this.core.schema, tx, l, priv.permissions));
      if (decided.unchanged) {
        return written(current, priv.permissions);
      }
      const { patch, record, permissions } = decided;
      alsoWrite?.(tx, l, decided);
      // Validated as plain text: the sealed personal fields the patch leaves stand in for theirs, then the
      // fields it sets are sealed (an unchanged one keeps its ciphertext: no change in the diff).
      const merged = patch ? applyPatch(current.data, patch) : current.data;
      if (patch) {
        refuseSealed(patch);
        this.core.schema.validate(l.type, this.core.subjects.standIn(l.type, merged, patch));
      }
      const data = patch ? await this.core.subjects.seal(l.type, l.ref, merged, new Set(Object.keys(patch)), current.data) : current.data;
      const perms = permissions ?? priv.permissions;
      const next: Envelope = { ...current, data, meta: { ...current.meta, updatedAt: tx.now, version: current.meta.version + 1 } };
      tx.put(layout.state(l), encodeResource(l.type, next, perms));
      if (patch) await moveSums(tx, l, current, next);
      if (permissions) tx.put(layout.access(l), encodeAccess({ ...priv, permissions: perms }));
      if (l.depth === 0) writeVisibility(tx, l.type, next.id, indexEntries(l.type, current, priv.permissions), indexEntries(l.type, next, perms));
      writeAssignment(tx, l, assigneeOf(l.type, current.data), assigneeOf(l.type, data));
      // New permissions decided by a command (a reassignment) are recorded whole, so a replay knows them;
      // a grant or revoke records its intent and identity instead.
      // A data patch records the diff it made (diff.ts): the fields as validated and stored, before and after.
      const payload = {
        ...(patch ? { data: this.core.subjects.sealedPatch(l.type, patch, data), changes: diffData(current.data, data, l.type.decl.keyedArrays) } : {}),
        ...(permissions && record?.intent === undefined ? { permissions } : {}),
        ...(record ?? {}),
      };
      tx.append(`${l.type.name}.${spec.verb}`, pathOf(l), payload, (seq) => layout.historyEntry(l, seq));
      return written(next, perms);
    });
  }

  /** Replaces fields of a resource's data (its `<type>.update` intent); `ifVersion` refuses a stale write. */
  async update(actor: Actor, ref: Ref, patch: Record<string, unknown>, options: { ifVersion?: number } = {}): Promise<Envelope> {
    if (patch === null || typeof patch !== "object" || Array.isArray(patch)) throw new ValidationError("an update is an object of fields", "data");
    const t = this.core.schema.type(ref.type);
    return this.mutate(actor, ref, { intent: t.intents.update, verb: "updated", ifVersion: options.ifVersion, change: () => ({ patch }) });
  }

  /** Grants `intent` on a resource to `identity` (its `<type>.intent.grantPermission` intent). */
  grant(actor: Actor, ref: Ref, intent: string, identity: string): Promise<Envelope> {
    return this.#changePermission(actor, ref, intent, identity, true);
  }

  /** Revokes `intent` on a resource from `identity` (its `<type>.intent.revokePermission` intent). */
  revoke(actor: Actor, ref: Ref, intent: string, identity: string): Promise<Envelope> {
    return this.#changePermission(actor, ref, intent, identity, false);
  }

  /**
   * Sets or clears a parent's `governanceDelete` flag (its `<type>.setGovernanceDelete` intent): while it
   * is set, each child of a type declaring `governanceDelete` may be deleted by `lifecycle.governanceDelete`.
   */
  setGovernanceDelete(actor: Actor, ref: Ref, on: boolean, options: { ifVersion?: number } = {}): Promise<Envelope> {
    const t = this.core.schema.type(ref.type);
    if (!t.intents.governance) throw new ValidationError(`${ref.type} has no governance delete children`, "type");
    return this.mutate(actor, ref, {
      intent: t.intents.governance,
      verb: "governance_delete_set",
      ifVersion: options.ifVersion,
      change: () => ({ patch: { [GOVERNANCE_FLAG]: on ? true : null } }),
    });
  }

  async #changePermission(actor: Actor, ref: Ref, intent: string, identity: string, add: boolean): Promise<Envelope> {
    const t = this.core.schema.type(ref.type);
    if (typeof intent !== "string" || !t.intents.all.includes(intent)) {
      throw new ValidationError(`${JSON.stringify(intent)} is not an intent of ${t.name}`, "intent");
    }
    assertId(identity, "identity");
    if (add) await assertIdentityExists(this.core.identities, identity);
    return this.mutate(actor, ref, {
      intent: add ? t.intents.grantPermission : t.intents.revokePermission,
      verb: add ? "permission_granted" : "permission_revoked",
      change: (_current, { permissions }) => {
        const holders = new Set(permissions[intent] ?? []);
        if (add) holders.add(identity);
        else holders.delete(identity);
        return { permissions: { ...permissions, [intent]: [...holders] }, record: { intent, identity } };
      },
    });
  }

  /**
   * Replaces the ordering of a parent's ordered children, all or nothing. Last writer wins unless
   * `ifVersion` (the parent's version) is given: then a stale write is a ConflictError.
   */
  async setOrdering(actor: Actor, parent: Ref, ordering: readonly string[], options: { ifVersion?: number; guard?: (parent: Envelope) => void } = {}): Promise<Envelope> {
    const t = this.core.schema.type(parent.type);
    const childType = t.decl.orderedChildren;
    if (!childType || !t.intents.reorder) throw new ValidationError(`${parent.type} has no ordered children`, "parent");
    let valid: string[] = [];
    let before: string[] = [];
    let rows = new Map<string, { id: string; createdAtMs: number }>();
    let live = new Set<string>();
    // What the order index lists now (nested children): the entries the commit rewrites.
    let listed: readonly string[] = [];
    const nested = this.core.schema.type(childType).decl.idStyle === "nested";
    return this.#mutate(
      actor,
      parent,
      {
        intent: t.intents.reorder,
        verb: "ordering_set",
        ifVersion: options.ifVersion,
        change: async (current, ctx) => {
          options.guard?.(current);
          before = await ctx.ordering(childType);
          if (nested) {
            // What the ordering names, not the whole collection: the listed part of the order index (the live
            // children the current ordering names, one small entry each), and the record of each id the new
            // ordering adds to it (a child when it exists; its creation time places its entry) or drops from it.
            const listedNow = await ctx.orderIndexListed(childType);
            listed = listedNow;
            live = new Set(listedNow);
            rows = new Map();
            // The records are read at once, not one after another (a round trip each on a remote backend).
            const createdAt = (ids: readonly string[]) => Promise.all(ids.map(async (id) => ({ id, createdAtMs: await ctx.childCreatedAt(childType, id) })));
            const named = Array.isArray(ordering) ? [...new Set(ordering)].filter((id): id is string => typeof id === "string" && !live.has(id)) : [];
            for (const { id, createdAtMs } of await createdAt(named)) {
              if (createdAtMs === undefined) continue;
              live.add(id);
              rows.set(id, { id, createdAtMs });
            }
            valid = validateOrdering(ordering, live);
            const now = new Set(valid);
            for (const { id, createdAtMs } of await createdAt(listedNow.filter((id) => !now.has(id)))) rows.set(id, { id, createdAtMs: createdAtMs! });
          } else {
            rows = new Map((await ctx.children(childType)).map((c) => [c.id, c]));
            live = new Set(rows.keys());
            valid = validateOrdering(ordering, live);
          }
          return { record: { childType, ordering: valid } };
        },
      },
      (tx, l) => {
        tx.put(layout.ordering(l, childType), Buffer.from(JSON.stringify(valid)));
        // The order index: the listed part is rewritten; a child leaving (or joining) the list moves to (or
        // from) the rest. O(old + new ordering), whatever the number of children.
        tx.deletePrefix(layout.orderIndexListed(l, childType));
        valid.forEach((id, i) => tx.put(layout.orderIndexListedEntry(l, childType, i), Buffer.from(id, "utf8")));
        const now = new Set(valid);
        // Nested: what the index lists, whose records were read above. Not the stored ordering: on a backend
        // whose reads of one command are separate round trips (PostgreSQL, Redis), a concurrent reorder can
        // land between the two reads, and an id the ordering lacks but the index lists had no record read
        // (this commit then fails its version check: a 412, not a crash).
        const was = nested ? new Set(listed) : new Set(before.filter((id) => live.has(id)));
        for (const id of was) if (!now.has(id)) tx.put(layout.orderIndexRestEntry(l, childType, restSortKey(rows.get(id)!)), Buffer.from(id, "utf8"));
        for (const id of now) if (!was.has(id)) tx.delete(layout.orderIndexRestEntry(l, childType, restSortKey(rows.get(id)!)));
      },
    );
  }
}
