/**
 * What a domain command may read while it decides, inside the write of its partition: typed reads about
 * the resource and its neighbours instead of raw keys. Reads within the partition go through the
 * transaction (they see the group's earlier writes, and the commit's precondition on the chain head
 * covers them); a flat resource's parent and a flat child's state live in other partitions and are read
 * as they are at that moment.
 */
import { ValidationError } from "../../errors.js";
import { scanAll, type Key, type KvStore, type Partition } from "../../kv/contract.js";
import { decode } from "../../kv/tuple.js";
import type { Actor, Permissions } from "../../access/actor.js";
import { layout } from "../model/layout.js";
import { RecordView, type Envelope } from "../model/record.js";
import { childRef, locate, parentRef, type Located, type Ref } from "../model/ref.js";
import type { Schema } from "../model/schema.js";
import type { Tx } from "../log/writer.js";

/** A child as a rule about closing or ordering needs it, read from the record header alone. */
export interface ChildRow {
  readonly id: string;
  readonly createdAtMs: number;
  readonly status: string;
  readonly version: number;
}

export interface ReadContext {
  readonly actor: Actor;
  /** The time of this command (ISO 8601). */
  readonly now: string;
  /** The envelope of the resource's parent; null for a root. */
  parent(): Promise<Envelope | null>;
  /** The resource's direct children of a type, in key order. */
  children(childType: string): Promise<ChildRow[]>;
  /** The stored ordering of the resource's children of a type (ids as set; [] when none was set). */
  ordering(childType: string): Promise<string[]>;
  /**
   * The listed part of the order index of the resource's ordered children of a type (layout's `x` family,
   * one small entry per child): the ids of the live children the stored ordering names, in its order. The
   * rest of the index (the children it does not name) is not read: its size is the collection's.
   */
  orderIndexListed(childType: string): Promise<string[]>;
  /** The creation time of one child (its record's header), undefined when there is no such child (an id no child can have included). */
  childCreatedAt(childType: string, id: string): Promise<number | undefined>;
  /** The children of the resource's parent of the resource's own type (itself included). */
  siblings(): Promise<ChildRow[]>;
  /** The parent's stored ordering of the resource's own type. */
  siblingOrdering(): Promise<string[]>;
}

/** A mutate's context: the reads, and the resource's current permissions. */
export interface MutateContext extends ReadContext {
  readonly permissions: Permissions;
}

const rowOf = (view: RecordView): ChildRow => ({ id: view.id, createdAtMs: view.createdAtMs, status: view.status, version: view.version });

/**
 * The states of a parent's flat children named by its index, skipping stale entries: a created-then-failed
 * or swept child, or an id reused under another parent.
 */
export async function flatChildRecords(kv: KvStore, parent: Located, childType: string, ids: readonly string[]): Promise<RecordView[]> {
  const records = await Promise.all(ids.map((id) => kv.getMany([childType, id], [layout.ownerState, layout.parentLink])));
  const mine = JSON.stringify(parent.ref);
  const out: RecordView[] = [];
  for (const [e, link] of records) {
    const view = e && link?.value.toString("utf8") === mine ? RecordView.listable(e.value, `${childType} list`) : null;
    if (view) out.push(view);
  }
  return out;
}

/** Point and prefix reads of one partition: a transaction's, or the store's as of now. */
type Reader = Pick<Tx, "get" | "scanPrefix">;

function kvReader(kv: KvStore, partition: Partition): Reader {
  return {
    get: async (key) => (await kv.get(partition, key))?.value,
    async scanPrefix(prefix) {
      const out: { keyBytes: Buffer; value: Buffer }[] = [];
      for await (const e of scanAll(kv, partition, { prefix, limit: 1000 })) out.push({ keyBytes: e.keyBytes, value: e.value });
      return out;
    },
  };
}

/** Reads about one existing resource through a reader of its partition. */
class ResourceReads {
  constructor(
    readonly kv: KvStore,
    readonly schema: Schema,
    readonly r: Reader,
    readonly at: Located,
  ) {}

  async envelope(): Promise<Envelope | null> {
    const raw = await this.r.get(layout.state(this.at));
    return raw ? new RecordView(raw).envelope() : null;
  }

  async children(childType: string): Promise<ChildRow[]> {
    if (this.schema.type(childType).decl.idStyle === "nested") {
      return (await this.r.scanPrefix(layout.children(this.at, childType))).map((e) => rowOf(new RecordView(e.value)));
    }
    const index = await this.r.scanPrefix(layout.flatChildren(this.at, childType));
    const ids = index.map((e) => layout.flatChildOf(decode(e.keyBytes)).id);
    return (await flatChildRecords(this.kv, this.at, childType, ids)).map(rowOf);
  }

  async ordering(childType: string): Promise<string[]> {
    const raw = await this.r.get(layout.ordering(this.at, childType));
    return raw ? (JSON.parse(raw.toString("utf8")) as string[]) : [];
  }

  async orderIndexListed(childType: string): Promise<string[]> {
    // [...prefix, 0, place] → id, in place order; the value holds the id, so no key is decoded.
    return (await this.r.scanPrefix(layout.orderIndexListed(this.at, childType))).map((e) => e.value.toString("utf8"));
  }

  async childCreatedAt(childType: string, id: string): Promise<number | undefined> {
    let key: Key;
    try {
      key = layout.state(locate(this.schema, childRef(this.schema, this.at.ref, childType, id)));
    } catch (e) {
      if (e instanceof ValidationError) return undefined; // an id no child can have
      throw e;
    }
    const raw = await this.r.get(key);
    return raw ? new RecordView(raw).createdAtMs : undefined;
  }
}

/**
 * The reads of a context, as methods of one object (a command makes one per write): `self` reads about the
 * resource (null: one about to be created), `parent` about its parent, asked for at most once.
 */
class Context implements ReadContext {
  #parent: Promise<ResourceReads | null> | undefined;

  constructor(
    readonly actor: Actor,
    readonly now: string,
    private readonly type: string,
    private readonly parentReads: () => Promise<ResourceReads | null>,
    private readonly self: ResourceReads | null,
  ) {}

  #parentOnce(): Promise<ResourceReads | null> {
    return (this.#parent ??= this.parentReads());
  }

  async parent(): Promise<Envelope | null> {
    return (await (await this.#parentOnce())?.envelope()) ?? null;
  }

  async children(childType: string): Promise<ChildRow[]> {
    return this.self ? this.self.children(childType) : [];
  }

  async ordering(childType: string): Promise<string[]> {
    return this.self ? this.self.ordering(childType) : [];
  }

  async orderIndexListed(childType: string): Promise<string[]> {
    return this.self ? this.self.orderIndexListed(childType) : [];
  }

  async childCreatedAt(childType: string, id: string): Promise<number | undefined> {
    return this.self ? this.self.childCreatedAt(childType, id) : undefined;
  }

  async siblings(): Promise<ChildRow[]> {
    return (await (await this.#parentOnce())?.children(this.type)) ?? [];
  }

  async siblingOrdering(): Promise<string[]> {
    return (await (await this.#parentOnce())?.ordering(this.type)) ?? [];
  }
}

/** A mutate's context: a read context with the resource's permissions. */
class MutateReads extends Context implements MutateContext {
  constructor(
    actor: Actor,
    now: string,
    type: string,
    parentReads: () => Promise<ResourceReads | null>,
    self: ResourceReads | null,
    readonly permissions: Permissions,
  ) {
    super(actor, now, type, parentReads, self);
  }
}

/** How the reads of a resource's parent are made: in the same partition for a nested resource; a flat one's is named by the link beside its log. */
function parentReadsOf(kv: KvStore, schema: Schema, tx: Tx, l: Located): () => Promise<ResourceReads | null> {
  return async () => {
    if (l.type.decl.parent === null) return null;
    const p = parentRef(schema, l.ref);
    if (p) return new ResourceReads(kv, schema, tx, locate(schema, p));
    const link = await tx.get(layout.parentLink);
    if (!link) return null;
    const pl = locate(schema, JSON.parse(link.toString("utf8")) as Ref);
    return new ResourceReads(kv, schema, kvReader(kv, pl.partition), pl);
  };
}

/**
 * The read context of an existing resource `l` inside `tx` (a write of `l`'s partition). A nested
 * resource's parent is in the same partition; a flat one's is named by the link beside its log.
 */
export function readContext(kv: KvStore, schema: Schema, tx: Tx, l: Located): ReadContext {
  return new Context(tx.actor, tx.now, l.type.name, parentReadsOf(kv, schema, tx, l), new ResourceReads(kv, schema, tx, l));
}

/** `readContext` with the resource's current permissions (a mutate's). */
export function mutateContext(kv: KvStore, schema: Schema, tx: Tx, l: Located, permissions: Permissions): MutateContext {
  return new MutateReads(tx.actor, tx.now, l.type.name, parentReadsOf(kv, schema, tx, l), new ResourceReads(kv, schema, tx, l), permissions);
}

/** The read context of a resource of `type` about to be created under `parent` (null: a root), inside `tx` (a write of the parent's partition). */
export function creationContext(kv: KvStore, schema: Schema, tx: Tx, type: string, parent: Located | null): ReadContext {
  const reads = parent ? new ResourceReads(kv, schema, tx, parent) : null;
  return new Context(tx.actor, tx.now, type, async () => reads, null);
}
