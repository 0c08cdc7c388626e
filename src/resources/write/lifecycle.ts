/**
 * The end of a resource's life: delete (nested subtree in one commit, flat descendants swept after it,
 * resumably), the sweeps, and purge of a deleted owner's tombstone (its log).
 */
import { ConflictError, StaleVersionError, ForbiddenError, NotFoundError, ValidationError } from "../../errors.js";
import type { Key } from "../../kv/contract.js";
import type { Actor } from "../../access/actor.js";
import { decode } from "../../kv/tuple.js";
import type { Authorized, Core } from "../core/core.js";
import { RecordView } from "../model/record.js";
import { INDEX_VERBS } from "../model/events.js";
import { layout } from "../model/layout.js";
import { restSortKey } from "../model/ordering.js";
import { locate, parentRef, pathOf, type Located, type Ref } from "../model/ref.js";
import { GOVERNANCE_FLAG, type CompiledType } from "../model/schema.js";
import { assigneeOf, writeAssignment } from "../indexes/assignments.js";
import { moveSums } from "./sums.js";
import { indexEntries, writeVisibility } from "../indexes/visibility.js";

export interface DeleteOptions {
  /** Refuse with a ConflictError unless the resource is at this version. */
  ifVersion?: number;
  /** Refuse with a ConflictError (field "chain") when the partition's log has grown past this seq. */
  ifChainAt?: number;
  /**
   * Eluvio's governance delete of a flat child (its type declares `governanceDelete`): allowed, with no
   * intent of the caller's, while the child's parent carries the flag `governanceDelete`.
   */
  governance?: boolean;
}

/** The deletes, sweeps and purges of a store (ResourceStore.lifecycle). */
export class Lifecycle {
  constructor(private readonly core: Core) {}

  /**
   * Eluvio's governance delete of a flat child: allowed while its parent carries the flag
   * (`writes.setGovernanceDelete`), with no intent of the caller's on the child; otherwise as `delete`
   * (its nested subtree goes, its flat descendants are swept).
   */
  governanceDelete(actor: Actor, ref: Ref, options: Omit<DeleteOptions, "governance"> = {}): Promise<void> {
    return this.delete(actor, ref, { ...options, governance: true });
  }

  async delete(actor: Actor, ref: Ref, options: DeleteOptions = {}): Promise<void> {
    const { kv, schema } = this.core;
    const l = locate(schema, ref);
    const t = l.type;
    const sweepKey = layout.sweep(l);
    if (options.governance) await this.#assertGovernanceFlag(l);
    // Register the sweep first, so a crash right after the delete commit still finds it.
    const needsSweep = this.#hasFlatDescendantTypes(t);
    if (needsSweep) await this.#registerSweep(l, actor);
    try {
      await this.core.writer.run(l.partition, actor, async (tx) => {
        const { view, access } = options.governance ? await this.#exists(tx, l) : await this.core.authorize((key) => tx.get(key), l, actor, t.intents.delete, { withAccess: true });
        if (options.ifVersion !== undefined && options.ifVersion !== view.version) {
          throw new StaleVersionError(`${ref.type} ${ref.ids.join("/")} is at version ${view.version}, not ${options.ifVersion}`);
        }
        if (options.ifChainAt !== undefined && (await tx.get(layout.log(options.ifChainAt + 1)))) {
          throw new ConflictError(`${ref.type} ${ref.ids.join("/")} changed after event ${options.ifChainAt}`, "chain");
        }
        if (t.decl.onDelete === "refuse") {
          for (const c of t.children) {
            const prefix = schema.type(c).decl.idStyle === "flat" ? layout.flatChildren(l, c) : layout.children(l, c);
            if (await tx.anyUnder(prefix)) throw new ConflictError(`${ref.type} ${ref.ids.join("/")} still has ${c} children`, "children");
          }
        }
        // Counted flat children (at this resource or any nested below it) must have been deleted first.
        for (let depth = l.depth; depth <= schema.maxDepth; depth++) {
          const [first] = await tx.scanPrefix(layout.below("n", l, depth));
          if (first) {
            const childType = decode(first.keyBytes).at(-1) as string;
            const n = JSON.parse(first.value.toString("utf8")) as number;
            throw new ConflictError(`${ref.type} ${ref.ids.join("/")} still has ${n} ${childType} child${n === 1 ? "" : "ren"}: delete them first`, "children");
          }
        }
        tx.delete(layout.state(l));
        tx.delete(layout.access(l));
        // Its contribution leaves its parent's sums; its own sums (and those below it) go with the subtree.
        await moveSums(tx, l, view.envelope(), null);
        // An ordered child leaves its parent's order index (listed by its place in the ordering, or by its sort key).
        const pr = parentRef(schema, l.ref);
        if (pr && schema.type(pr.type).decl.orderedChildren === t.name) {
          const pl = locate(schema, pr);
          const raw = await tx.get(layout.ordering(pl, t.name));
          const at = raw ? (JSON.parse(raw.toString("utf8")) as string[]).indexOf(view.id) : -1;
          tx.delete(at >= 0 ? layout.orderIndexListedEntry(pl, t.name, at) : layout.orderIndexRestEntry(pl, t.name, restSortKey(view)));
        }
        if (l.depth === 0) writeVisibility(tx, t, view.id, indexEntries(t, view.envelope(), access?.permissions ?? null), new Map());
        writeAssignment(tx, l, assigneeOf(t, view.envelope().data), null);
        for (let depth = l.depth + 1; depth <= schema.maxDepth; depth++) {
          tx.deletePrefix(layout.below("s", l, depth));
          tx.deletePrefix(layout.below("a", l, depth));
        }
        for (let depth = l.depth; depth <= schema.maxDepth; depth++) {
          tx.deletePrefix(layout.below("o", l, depth));
          tx.deletePrefix(layout.below("x", l, depth));
          tx.deletePrefix(layout.below("g", l, depth));
        }
        tx.append(`${t.name}.deleted`, pathOf(l), {}, (seq) => layout.historyEntry(l, seq));
      });
    } catch (e) {
      if (needsSweep) await kv.commit(layout.sweeps, [{ type: "delete", key: sweepKey }]).catch(() => undefined);
      throw e;
    }
    if (needsSweep) await this.#sweep(l, sweepKey, actor);
    // A flat resource leaves its parent's index.
    const parent = await this.#ownerParent(l);
    if (parent) await this.core.unlinkFlat(locate(schema, parent), t.name, l.ref.ids[0]!, actor).catch(() => undefined);
  }

  /** The not-found check alone (a governance delete needs no intent). */
  async #exists(tx: { get(key: Key): Promise<Buffer | undefined> }, l: Located): Promise<Authorized> {
    const raw = await tx.get(layout.state(l));
    if (!raw) throw new NotFoundError(`${l.ref.type} ${l.ref.ids.join("/")} not found`);
    return { view: new RecordView(raw), access: null };
  }

  /** A governance delete: the type must declare it and the parent must carry the flag now. */
  async #assertGovernanceFlag(l: Located): Promise<void> {
    if (!l.type.decl.governanceDelete) throw new ValidationError(`${l.ref.type} has no governance delete`, "type");
    if (!(await this.core.record(l))) throw new NotFoundError(`${l.ref.type} ${l.ref.ids.join("/")} not found`);
    const parent = await this.#ownerParent(l);
    const pl = parent ? locate(this.core.schema, parent) : null;
    const state = pl ? await this.core.record(pl) : undefined;
    if (!pl || !state || state.envelope().data[GOVERNANCE_FLAG] !== true) {
      throw new ForbiddenError(`${parent ? `${parent.type} ${parent.ids.join("/")}` : "the parent"} does not carry the flag ${GOVERNANCE_FLAG}`);
    }
  }

  async #registerSweep(l: Located, actor: Actor): Promise<void> {
    const job = { type: l.ref.type, ids: l.ref.ids, actor: actor.id };
    await this.core.kv.commit(layout.sweeps, [{ type: "put", key: layout.sweep(l), value: Buffer.from(JSON.stringify(job)) }]);
  }

  /** A flat resource's parent, from the link kept beside its log (it outlives the state). */
  async #ownerParent(l: Located): Promise<Ref | null> {
    if (l.depth !== 0 || l.type.decl.parent === null) return null;
    const e = await this.core.kv.get(l.partition, layout.parentLink);
    return e ? (JSON.parse(e.value.toString("utf8")) as Ref) : null;
  }

  #hasFlatDescendantTypes(t: CompiledType): boolean {
    return t.children.some((c) => {
      const ct = this.core.schema.type(c);
      return ct.decl.idStyle === "flat" || this.#hasFlatDescendantTypes(ct);
    });
  }

  async #sweep(l: Located, sweepKey: Key, actor: Actor): Promise<void> {
    const { kv, writer, schema } = this.core;
    for (let depth = l.depth + 1; depth <= schema.maxDepth + 1; depth++) {
      for (;;) {
        const page = await kv.scan(l.partition, { prefix: layout.below("c", l, depth), limit: 100 });
        if (page.entries.length === 0) break;
        for (const e of page.entries) {
          const { childType, id } = layout.flatChildOf(e.key);
          await this.#purgeFlat({ type: childType, ids: [id] }, actor);
          await writer.run(l.partition, actor, async (tx) => {
            tx.delete(e.key);
            tx.append(`${l.type.name}.${INDEX_VERBS.swept}`, pathOf(l), { childType, id }, (seq) => layout.historyEntry(l, seq));
          });
        }
      }
    }
    await kv.commit(layout.sweeps, [{ type: "delete", key: sweepKey }]);
  }

  /** Removes a flat resource's whole partition, sweeping its own flat descendants first. */
  async #purgeFlat(ref: Ref, actor: Actor): Promise<void> {
    const l = locate(this.core.schema, ref);
    if (this.#hasFlatDescendantTypes(l.type)) {
      await this.#registerSweep(l, actor);
      await this.#sweep(l, layout.sweep(l), actor);
    }
    await this.#drop(l);
  }

  async #drop(l: Located): Promise<void> {
    await this.core.kv.dropPartition(l.partition);
    this.core.writer.forget(l.partition);
    await this.core.writer.unanchor(l.partition);
  }

  async resumeSweeps(actor: Actor): Promise<number> {
    const { kv, schema } = this.core;
    let n = 0;
    for (;;) {
      const page = await kv.scan(layout.sweeps, { limit: 100 });
      if (page.entries.length === 0) return n;
      for (const e of page.entries) {
        const l = locate(schema, JSON.parse(e.value.toString("utf8")) as Ref);
        if (await this.core.record(l)) {
          // The delete never committed: nothing to sweep.
          await kv.commit(layout.sweeps, [{ type: "delete", key: e.key }]);
          continue;
        }
        await this.#sweep(l, e.key, actor);
        n++;
      }
    }
  }

  async purge(actor: Actor, ref: Ref): Promise<void> {
    if (!actor.system) throw new ForbiddenError("only the system actor may purge a partition");
    const l = locate(this.core.schema, ref);
    if (l.depth !== 0) throw new ValidationError("only a partition owner can be purged", "ref");
    if (await this.core.record(l)) throw new ConflictError(`${ref.type} ${ref.ids[0]} is not deleted`, "id");
    await this.#drop(l);
  }
}
