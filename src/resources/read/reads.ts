/**
 * Reads: one resource, its children (nested, flat or roots), an ordered collection in its effective
 * order (TruBudget's workflowitem ordering) with a page cache, the stored ordering and permissions.
 * Children the actor may not view are listed redacted in their place; items are JSON bytes, ready to join.
 */
import { ValidationError } from "../../errors.js";
import { cursorBytes, cursorOf, scanAll, type Entry, type KvStore } from "../../kv/contract.js";
import { encode, encodeNested } from "../../kv/tuple.js";
import { allows, type Actor, type Permissions } from "../../access/actor.js";
import { flatChildRecords } from "./context.js";
import { allowedIntents, pageLimit, permissionsOf, MAX_PAGE, withAllowedIntents, type Core, type IntentTails, type Page, type PageOptions } from "../core/core.js";
import { layout } from "../model/layout.js";
import { rebuildOrderIndex } from "../audit/order-index.js";
import { closedFirstOrder, effectiveOrder } from "../model/ordering.js";
import { PageItems, pageJson } from "../model/page-json.js";
import { PageCache } from "./page-cache.js";
import { listedJson, Queries, type ListQuery } from "./query.js";
import { RecordView, WRITTEN_WITH, type Envelope, type Written } from "../model/record.js";
import { childRef, locate, type Located, type Ref } from "../model/ref.js";
import type { CompiledType, DataOf, SchemaDecl } from "../model/schema.js";
import { sealedIn } from "../personal/subjects.js";
import { decodeSum, fromScaled } from "../model/sums.js";

/** One bucket of a parent's sums (model/sums.ts) as read: the bucket, the exact sum and the count of contributions. */
export interface SumRow {
  readonly bucket: string[];
  readonly sum: string;
  readonly n: number;
}

/**
 * A child of a parent keeping sums, as `childSums` reads it: its record, whether the actor may view it
 * (the domain shows a hidden child's record to no one: it may count its sums in the parent's), its sums.
 */
export interface ChildSums {
  readonly id: string;
  readonly envelope: Envelope;
  readonly viewable: boolean;
  readonly sums: SumRow[];
  /**
   * Names the state of its sums as read: the highest version of its sum entries and how many there are
   * ("" when not read). Versions are the partition's commit sequence and never repeat, so any write of
   * its sums changes it, and an equal one means the same entries: what was derived from them may be
   * cached under it even after writes to its siblings moved the partition's head.
   */
  readonly sumsVersion: string;
}

/** Options of the sums reads: `withSums(head)` false skips the sums' range read (the caller holds what it derived from them at that head). */
export interface SumsOptions {
  readonly withSums?: (head: number | null) => boolean;
}

const listed = listedJson;

/** An ordered page's rows: the items as listed, and the `allowedIntents` tail of each when asked for (core.ts `withAllowedIntents`). */
interface OrderedRows {
  readonly items: Buffer[];
  readonly tails: Buffer[] | null;
}
/**
 * An ordered page's rows copied in place (`#listWholeViews`): each one's bytes as answered, with its tail
 * when asked for, in `items`; `order`, their indexes there in the page's order.
 */
interface PlacedRows {
  readonly items: PageItems;
  readonly order: readonly number[];
}
/** An ordered page before its tails are put in (rows placed have theirs) and its personal data opened. */
type OrderedPage = (OrderedRows | PlacedRows) & { readonly nextCursor: string | null; readonly version: number };

/** A row of the whole list (`#listWhole`): its JSON as listed and, when asked for and read, its access entry's tail. */
interface WholeRow {
  readonly id: string;
  readonly createdAtMs: number;
  readonly json: Buffer;
  readonly tail: Buffer | undefined;
}

/** The stored ordering of a collection (ids, ordering.ts), [] when none was set. */
const orderingOf = (entry: Entry | undefined): string[] => (entry ? (JSON.parse(entry.value.toString("utf8")) as string[]) : []);

/**
 * Pairs the children of a collection with their access entries, both ranges walked together in key
 * order: a child's keys in the two families differ only in the family, so they sort alike (a child
 * without an entry gets none). `compare(j, key, skip)` compares the j-th entry's key after its
 * family's prefix with `key` after `skip` bytes (the entries are Entries, or key tails in one Buffer).
 */
class AccessWalk {
  #j = 0;
  constructor(
    readonly count: number,
    readonly compare: (j: number, key: Buffer, skip: number) => number,
  ) {}

  /** The index of the entry of the child whose key is `key` (children asked in key order), or -1. */
  match(key: Buffer, skip: number): number {
    let order = -1;
    while (this.#j < this.count && (order = this.compare(this.#j, key, skip)) < 0) this.#j++;
    return this.#j < this.count && order === 0 ? this.#j++ : -1;
  }
}

/**
 * `a[aStart, aEnd)` against `b[bStart, bEnd)` as `Buffer#compare` orders them (-1, 0, 1), in JavaScript:
 * a key's tail is a few bytes, compared here in about a third of the time `Buffer#compare` takes to check
 * its offsets and call into C++ (about 40 against 150 ns a call, measured; a list of 1,000 makes 1,000).
 */
function compareBytes(a: Uint8Array, aStart: number, aEnd: number, b: Uint8Array, bStart: number, bEnd: number): number {
  const n = Math.min(aEnd - aStart, bEnd - bStart);
  for (let i = 0; i < n; i++) {
    const d = a[aStart + i]! - b[bStart + i]!;
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  const d = aEnd - aStart - (bEnd - bStart);
  return d < 0 ? -1 : d > 0 ? 1 : 0;
}

/**
 * The `allowedIntents` tail of each access entry of a list: an entry equal to the one before it, as
 * inherited permissions make siblings', takes that one's tail (core.ts IntentTails judges each distinct
 * entry once); `none` is the tail of a child without one. Only an entry that differs is copied.
 */
class TailOf {
  #last: { raw: Buffer; tail: Buffer } | null = null;
  #none: Buffer | null = null;
  constructor(
    readonly intentTails: IntentTails,
    readonly t: CompiledType,
    readonly actor: Actor,
  ) {}

  of(raw: Buffer): Buffer {
    if (!this.#last?.raw.equals(raw)) this.#last = { raw: Buffer.from(raw), tail: this.intentTails.tail(this.t, raw, this.actor) };
    return this.#last.tail;
  }

  get none(): Buffer {
    return (this.#none ??= this.intentTails.tail(this.t, undefined, this.actor));
  }
}

/** The whole list's page from its rows in the effective order: with each row's tail (`none` when it has no entry) when `tails` is given. */
const wholePage = (ordered: readonly WholeRow[], tails: TailOf | null, version: number): OrderedPage => ({
  items: ordered.map((r) => r.json),
  tails: tails ? ordered.map((r) => r.tail ?? tails.none) : null,
  nextCursor: null,
  version,
});

/** From this page size, a first page reads a collection that fits in it whole (`#listWhole`). */
const WHOLE_FROM = 1000;

type Listed<S extends SchemaDecl, T extends keyof S> = Envelope<DataOf<S, T>> & { redacted?: true };

const parsePage = <T>(page: Page<Buffer>): Page<T> => ({ items: page.items.map((b) => JSON.parse(b.toString("utf8")) as T), nextCursor: page.nextCursor });

/** The reads of a store whose schema declares `S` (ResourceStore.reads): every one checks the actor's intent. */
export class Reads<S extends SchemaDecl = SchemaDecl> {
  readonly #queries: Queries;
  /** Rendered ordered-list pages per partition head version (null when the store turned the cache off). */
  readonly #pages: PageCache | null;

  constructor(
    private readonly core: Core,
    options: { pageCache?: boolean } = {},
  ) {
    this.#queries = new Queries(core);
    this.#pages = options.pageCache === false ? null : new PageCache();
  }

  /** A resource the actor may view, typed by its declared type. */
  async get<T extends keyof S & string>(actor: Actor, ref: Ref & { type: T }): Promise<Envelope<DataOf<S, T>>> {
    return this.core.subjects.open(ref, (await this.#readable(actor, ref)).view.envelope<DataOf<S, T>>());
  }

  /** Refuses unless the actor holds `intent` on the resource now, a check before costly work: the one check (404 when it may not know of it, else 403). */
  async assertIntent(actor: Actor, ref: Ref, intent: string): Promise<void> {
    await this.#readable(actor, ref, () => intent);
  }

  /** True when the actor may view the resource (for filtering change feeds). */
  canView(actor: Actor, ref: Ref): Promise<boolean> {
    return this.#readable(actor, ref).then(
      () => true,
      () => false,
    );
  }

  /** `listChildrenJson`'s page with its items parsed and typed. */
  async listChildren<T extends keyof S & string>(actor: Actor, parent: Ref | null, childType: T, options: PageOptions = {}): Promise<Page<Listed<S, T>>> {
    return parsePage(await this.listChildrenJson(actor, parent, childType, options));
  }

  /** `listOrderedJson`'s page with its items parsed and typed. */
  async listOrdered<T extends keyof S & string>(actor: Actor, parent: Ref, options: PageOptions = {}): Promise<Page<Listed<S, T>>> {
    return parsePage(await this.listOrderedJson(actor, parent, options));
  }

  /**
   * A searched and sorted page of a type's resources under `parent` (null for roots), as the type's
   * `query` declares (query.ts): roots through the caller's index of visible roots, never a scan of all.
   */
  async queryChildrenJson(actor: Actor, parent: Ref | null, childType: string, q: ListQuery): Promise<Page<Buffer>> {
    const page = await this.#queries.query(actor, parent, childType, q, (a, ref) => this.#readable(a, ref));
    return this.#opened(await this.#withIds(actor, this.core.schema.type(childType), parent, page, q), parent, childType);
  }

  /** A page of `childType`'s resources under `parent` with the personal data its items hold opened (personal/subjects.ts). */
  async #opened<P extends Page<Buffer>>(page: P, parent: Ref | null, childType: string): Promise<P> {
    const items = this.core.subjects.openAll(page.items, (id) => childRef(this.core.schema, parent, childType, id));
    return Array.isArray(items) ? page : { ...page, items: await items };
  }

  /** A page whose items are JSON objects with an `id`, with `allowedIntents` added when asked. */
  async #withIds(actor: Actor, t: CompiledType, parent: Ref | null, page: Page<Buffer>, options: PageOptions): Promise<Page<Buffer>> {
    if (!options.allowedIntents || page.items.length === 0) return page;
    const views = page.items.map((item) => ({ id: (JSON.parse(item.toString("utf8")) as { id: string }).id }));
    return { items: await this.#withIntents(actor, t, parent, views, page.items, options), nextCursor: page.nextCursor };
  }

  /** Adds `allowedIntents` to listed items (`#tails`). */
  async #withIntents(actor: Actor, t: CompiledType, parent: Ref | null, views: readonly { id: string }[], items: Buffer[], options: PageOptions): Promise<Buffer[]> {
    const tails = await this.#tails(actor, t, parent, views, options);
    return tails ? items.map((item, i) => withAllowedIntents(item, tails[i]!)) : items;
  }

  /**
   * The `allowedIntents` tails of listed resources (null when not asked for): from their access entries,
   * `raws` when the caller read them with the records, else one batched read per partition (a nested page
   * is one partition; flat children and roots one each).
   */
  async #tails(
    actor: Actor,
    t: CompiledType,
    parent: Ref | null,
    views: readonly { id: string }[],
    options: PageOptions,
    raws?: readonly (Buffer | undefined)[],
  ): Promise<Buffer[] | null> {
    if (!options.allowedIntents || views.length === 0) return null;
    // Siblings mostly share their access entry's bytes (inherited permissions): each distinct entry is
    // parsed and judged once (core.ts, IntentTails).
    return this.core.intentTails.tails(t, raws ?? (await this.#accessEntries(t, parent, views)), actor);
  }

  /** The access entries of listed resources, one batched read per partition. */
  async #accessEntries(t: CompiledType, parent: Ref | null, views: readonly { id: string }[]): Promise<(Buffer | undefined)[]> {
    const located = views.map((v) => locate(this.core.schema, childRef(this.core.schema, parent, t.name, v.id)));
    const groups = new Map<string, number[]>();
    located.forEach((l, i) => {
      const k = JSON.stringify(l.partition);
      const g = groups.get(k);
      if (g) g.push(i);
      else groups.set(k, [i]);
    });
    const raws: (Buffer | undefined)[] = new Array(views.length);
    await Promise.all(
      [...groups.values()].map(async (idx) => {
        const entries = await this.core.kv.getMany(
          located[idx[0]!]!.partition,
          idx.map((i) => layout.access(located[i]!)),
        );
        idx.forEach((i, j) => (raws[i] = entries[j]?.value));
      }),
    );
    return raws;
  }

  /** The stored public JSON of a resource the actor may view, with `allowedIntents` when asked, and its version. */
  async getJson(actor: Actor, ref: Ref, options: { allowedIntents?: boolean } = {}): Promise<{ json: Buffer; version: number }> {
    const l = locate(this.core.schema, ref);
    const { kv } = this.core;
    // The access entry only when its intents are asked for; no promise in between where the backend
    // reads synchronously (its reads of one event turn share a snapshot), else one round trip.
    const [state, access] = kv.getSync
      ? [kv.getSync(l.partition, layout.state(l)), options.allowedIntents ? kv.getSync(l.partition, layout.access(l)) : undefined]
      : options.allowedIntents
        ? await kv.getMany(l.partition, [layout.state(l), layout.access(l)])
        : [await kv.get(l.partition, layout.state(l))];
    const view = this.core.viewable(state?.value, actor) ?? (await this.core.authorize(this.core.reader(l), l, actor, l.type.intents.view, { state: state?.value })).view;
    // Personal data opened (personal/subjects.ts) only where the bytes hold a sealed value: no promise otherwise.
    const stored = view.publicBytes();
    const json = sealedIn(stored) ? await this.core.subjects.openJson(ref, stored) : stored;
    return { json: options.allowedIntents ? withAllowedIntents(json, this.core.intentTails.tail(l.type, access?.value, actor)) : json, version: view.version };
  }

  /** The record of a resource the actor holds `intent` on (the view intent by default). */
  async #readable(actor: Actor, ref: Ref, intentOf: (t: CompiledType) => string = (t) => t.intents.view): Promise<{ l: Located; view: RecordView }> {
    const l = locate(this.core.schema, ref);
    const { view } = await this.core.authorize(this.core.reader(l), l, actor, intentOf(l.type));
    return { l, view };
  }

  /**
   * A resource as the actor that wrote it may see it right after the write: whole (its personal data
   * opened), with the intents it holds on it when asked, or null when it may act on it but not view it
   * (a caller learns no more from a write than from a list). Decided from the permissions the write itself
   * wrote (no read after it); an envelope no write of this store returned has its access entry read instead.
   */
  async seenBy(actor: Actor, ref: Ref, envelope: Written, options: { allowedIntents?: boolean } = {}): Promise<(Envelope & { allowedIntents?: string[] }) | null> {
    const { l, permissions } = await this.#writtenWith(ref, envelope);
    return allows(permissions, actor, l.type.intents.view) ? this.#whole(actor, l, permissions, envelope, options) : null;
  }

  /**
   * A new resource as its creator is answered: whole, like `seenBy` to a viewer, even when its permissions
   * leave the creator no view of it (a restricted workflowitem made for another assignee). A create echoes
   * the fields the creator sent, their defaults and the facts of the creation (id, status, meta); the
   * answer holds no permission map.
   */
  async seenByCreator(actor: Actor, ref: Ref, envelope: Written, options: { allowedIntents?: boolean } = {}): Promise<Envelope & { allowedIntents?: string[] }> {
    const { l, permissions } = await this.#writtenWith(ref, envelope);
    return this.#whole(actor, l, permissions, envelope, options);
  }

  async #writtenWith(ref: Ref, envelope: Written): Promise<{ l: Located; permissions: Permissions }> {
    const l = locate(this.core.schema, ref);
    return { l, permissions: envelope[WRITTEN_WITH] ?? permissionsOf((await this.core.kv.get(l.partition, layout.access(l)))?.value) };
  }

  async #whole(actor: Actor, l: Located, permissions: Permissions, envelope: Written, options: { allowedIntents?: boolean }): Promise<Envelope & { allowedIntents?: string[] }> {
    const intents = options.allowedIntents ? { allowedIntents: allowedIntents(l.type, permissions, actor) } : {};
    return { ...(await this.core.subjects.open<Envelope>(l.ref, envelope)), ...intents };
  }

  /**
   * Lists the direct children of a type under `parent` (null for root types), one range read per page.
   * Children whose view intent the actor lacks are listed redacted (id, status, createdAt) in their
   * place; roots are listed to holders of their list or view intent (redacted without view) and left
   * out otherwise. Items are JSON bytes, ready to be joined.
   */
  async listChildrenJson(actor: Actor, parent: Ref | null, childType: string, options: PageOptions = {}): Promise<Page<Buffer>> {
    return this.#opened(await this.#listChildrenJson(actor, parent, childType, options), parent, childType);
  }

  async #listChildrenJson(actor: Actor, parent: Ref | null, childType: string, options: PageOptions): Promise<Page<Buffer>> {
    const t = this.core.schema.type(childType);
    const limit = pageLimit(options.limit);
    if (t.decl.parent === null) return this.#listRoots(actor, t, options.cursor ?? null, limit, options);
    if (!parent || parent.type !== t.decl.parent) throw new ValidationError(`${childType} is listed under a ${t.decl.parent}`, "parent");
    const { l } = await this.#readable(actor, parent);
    if (t.decl.idStyle === "flat") return this.#listFlat(actor, l, t, options.cursor ?? null, limit, options);
    const page = await this.core.kv.scan(l.partition, { prefix: layout.children(l, childType), after: options.cursor ?? null, limit });
    const views = page.entries.map((e) => RecordView.listable(e.value, `${childType} list`)).filter((v) => v !== null);
    return {
      items: await this.#listedWithIntents(actor, t, parent, views, options),
      nextCursor: page.cursor,
    };
  }

  async #listRoots(actor: Actor, t: CompiledType, cursor: string | null, limit: number, options: PageOptions): Promise<Page<Buffer>> {
    // A caller lists through its index of visible roots (visibility.ts); the system actor sees every root.
    if (!actor.system) return this.#withIds(actor, t, null, await this.#queries.visibleRoots(actor, t, cursor, limit), options);
    const items: Buffer[] = [];
    const views: RecordView[] = [];
    let after = cursor;
    // Deleted roots keep a tombstone partition (their log); skip them and invisible ones.
    while (items.length < limit) {
      const page = await this.core.kv.listPartitions(t.name, { limit: limit - items.length, after });
      const records = await Promise.all(page.partitions.map((p) => this.core.kv.get(p, layout.ownerState)));
      for (const e of records) {
        const view = e ? RecordView.listable(e.value, `${t.name} list`) : null;
        if (!view) continue;
        // A root is listed to holders of its list or view intent; its details only to holders of view.
        if (view.visibleTo(actor)) items.push(listed(actor, t, view)), views.push(view);
      }
      after = page.cursor;
      if (after === null) break;
    }
    return { items: await this.#withIntents(actor, t, null, views, items, options), nextCursor: after };
  }

  async #listFlat(actor: Actor, parent: Located, t: CompiledType, cursor: string | null, limit: number, options: PageOptions): Promise<Page<Buffer>> {
    const page = await this.core.kv.scan(parent.partition, { prefix: layout.flatChildren(parent, t.name), after: cursor, limit });
    const views = await flatChildRecords(
      this.core.kv,
      parent,
      t.name,
      page.entries.map((e) => layout.flatChildOf(e.key).id),
    );
    return {
      items: await this.#listedWithIntents(actor, t, parent.ref, views, options),
      nextCursor: page.cursor,
    };
  }

  /**
   * A page of an ordered collection in its effective order: one range read of the order index (kept by
   * every write that changes the order, ordering.ts) and one batched read of the page's records, whatever
   * the collection's size. The cursor names the last index entry served, so a page after it stays put
   * when children are added or removed elsewhere.
   */
  async listOrderedJson(actor: Actor, parent: Ref, options: PageOptions = {}): Promise<Page<Buffer> & { version: number }> {
    return this.#openedOrdered(parent, await this.#listOrderedJson(actor, parent, options));
  }

  /** An ordered page with its tails put in (`withAllowedIntents`) and the personal data its items hold opened. */
  #openedOrdered(parent: Ref, page: OrderedPage): Promise<Page<Buffer> & { version: number }> {
    let items: Buffer[];
    if ("order" in page) {
      const placed = page.items;
      items = page.order.map((i) => placed.item(i));
    } else {
      const { tails } = page;
      items = tails ? page.items.map((item, i) => withAllowedIntents(item, tails[i]!)) : page.items;
    }
    return this.#opened({ items, nextCursor: page.nextCursor, version: page.version }, parent, locate(this.core.schema, parent).type.decl.orderedChildren ?? "");
  }

  async #listOrderedJson(actor: Actor, parent: Ref, options: PageOptions): Promise<OrderedPage> {
    const whole = await this.#listWhole(actor, parent, options);
    if (whole) return whole;
    const { l, view: parentView } = await this.#readable(actor, parent);
    const childType = l.type.decl.orderedChildren;
    if (!childType) throw new ValidationError(`${parent.type} has no ordered children`, "parent");
    const t = this.core.schema.type(childType);
    const limit = pageLimit(options.limit);
    if (options.sequence === "closedFirst") return this.#listClosedFirst(actor, l, t, parent, parentView.version, limit, options);
    const { kv } = this.core;
    let page = await kv.scan(l.partition, { prefix: layout.orderIndex(l, childType), after: options.cursor ?? null, limit: limit + 1 });
    if (page.entries.length === 0 && !options.cursor && (await kv.scan(l.partition, { prefix: layout.children(l, childType), limit: 1 })).entries.length > 0) {
      // Every live child has an index entry, so children without any entry are a partition written
      // before the order index existed: upgrade it once, from its log, and read again.
      await rebuildOrderIndex(this.core, l.partition);
      page = await kv.scan(l.partition, { prefix: layout.orderIndex(l, childType), limit: limit + 1 });
    }
    const entries = page.entries.length > limit ? page.entries.slice(0, limit) : page.entries;
    const states = await kv.getMany(
      l.partition,
      entries.map((e) => layout.child(l, childType, e.value.toString("utf8"))),
    );
    const views: RecordView[] = [];
    for (const e of states) {
      const view = e ? RecordView.listable(e.value, `${childType} list`) : null;
      if (view) views.push(view);
    }
    const next = page.entries.length > limit ? cursorOf(entries.at(-1)!.keyBytes) : null;
    return { ...(await this.#rows(actor, t, parent, views, options)), nextCursor: next, version: parentView.version };
  }

  /** The list rows of `views` (what `actor` may see of each) and, when asked, their allowed intents' tails (`raws`: their access entries, when read already). */
  async #rows(actor: Actor, t: CompiledType, parent: Ref, views: RecordView[], options: PageOptions, raws?: readonly (Buffer | undefined)[]): Promise<OrderedRows> {
    return { items: views.map((view) => listed(actor, t, view)), tails: await this.#tails(actor, t, parent, views, options, raws) };
  }

  /** The list rows of `views` (what `actor` may see of each), with their allowed intents when asked. */
  #listedWithIntents(actor: Actor, t: Parameters<typeof listed>[1], parent: Ref, views: RecordView[], options: PageOptions) {
    return this.#withIntents(
      actor,
      t,
      parent,
      views,
      views.map((view) => listed(actor, t, view)),
      options,
    );
  }

  /**
   * A first page of WHOLE_FROM or more asks for every child of a collection that fits in it (a client
   * reading the whole list): the children's records are then one range read, placed in the effective
   * order in memory from the stored ordering (ordering.ts, the rule the order index is kept by), instead
   * of the index's entries and a read per record. The parent (for the check) with the ordering, and the
   * range, are read at once: two round trips in flight together on a networked backend. Null when it
   * does not apply, or when the collection is larger than the page (then the index serves it: a range
   * of at most `limit` records was read in vain).
   */
  async #listWhole(actor: Actor, parent: Ref, options: PageOptions): Promise<OrderedPage | null> {
    if (options.cursor || options.sequence === "closedFirst" || options.limit === undefined || options.limit < WHOLE_FROM) return null;
    const l = locate(this.core.schema, parent);
    const childType = l.type.decl.orderedChildren;
    if (!childType) return null;
    const t = this.core.schema.type(childType);
    const limit = pageLimit(options.limit);
    const { kv } = this.core;
    if (kv.getSync && kv.scanViews && kv.countSync) {
      const whole = await this.#listWholeViews(actor, l, t, limit, options);
      if (whole !== "copies") return whole;
    }
    const childrenKey = layout.children(l, childType);
    const accessKey = layout.childrenAccess(l, childType);
    const [[state, orderingEntry], range, access] = await Promise.all([
      kv.getMany(l.partition, [layout.state(l), layout.ordering(l, childType)]),
      kv.scan(l.partition, { prefix: childrenKey, limit }),
      // the children's access entries, when their intents are asked for: one range too (not a read per child)
      options.allowedIntents ? kv.scan(l.partition, { prefix: accessKey, limit }) : null,
    ]);
    const { view: parentView } = await this.core.authorize(this.core.reader(l), l, actor, l.type.intents.view, { state: state?.value });
    if (range.cursor !== null) return null;
    const paired = access && access.cursor === null ? access.entries : null;
    const accessSkip = encode(accessKey).length;
    const walk = paired ? new AccessWalk(paired.length, (j, key, skip) => paired[j]!.keyBytes.compare(key, skip, key.length, accessSkip)) : null;
    const tails = new TailOf(this.core.intentTails, t, actor);
    const skip = encode(childrenKey).length;
    const rows: WholeRow[] = [];
    for (const e of range.entries) {
      const view = RecordView.listable(e.value, `${childType} list`);
      if (!view) continue;
      // the scan's values are copies of their own: the row may show a view of one (listed's no-copy form)
      const j = walk ? walk.match(e.keyBytes, skip) : -1;
      rows.push({ id: view.id, createdAtMs: view.createdAtMs, json: listed(actor, t, view), tail: j < 0 ? undefined : tails.of(paired![j]!.value) });
    }
    // more access entries than the page: each child's is read by its key (#tails)
    const ordered = effectiveOrder(orderingOf(orderingEntry), rows);
    if (access && !paired)
      return { items: ordered.map((r) => r.json), tails: await this.#tails(actor, t, parent, ordered, options), nextCursor: null, version: parentView.version };
    return wholePage(ordered, access ? tails : null, parentView.version);
  }

  /**
   * `#listWhole` on a backend that reads synchronously (`getSync`, `scanViews`, `countSync`: memory, LMDB): the parent,
   * its ordering and both ranges are read in one event turn (one snapshot), each record and access entry
   * visited where the backend holds it (LMDB: lmdb-js's read buffer; memory: the stored value, with each
   * key handed over as a Buffer of its own the backend makes). Of a child only what its row shows is
   * copied (its public JSON, or its redacted form), once, with its tail, into `PageItems`' few buffers (no
   * Buffer per row; the page is joined from them in runs), and of an access entry its key's tail (to pair it with
   * its child) and, when it differs from the entry before it, its bytes: no Entry, and (on LMDB) no copy
   * of a whole record or a key per child, as `scan` makes (profile of the uncached list of 1,000, issue
   * 25: the scans' copies, their Buffer objects and the garbage they made were about a quarter of its
   * CPU). The children are counted first (`countSync`), so a collection larger than the page is found
   * before any row is built: null then, as `#listWhole`. "copies" when the access entries
   * outnumber the page (`#listWhole`'s reads then serve it).
   */
  async #listWholeViews(actor: Actor, l: Located, t: CompiledType, limit: number, options: PageOptions): Promise<OrderedPage | null | "copies"> {
    const kv = this.core.kv as Required<Pick<KvStore, "getSync" | "scanViews" | "countSync">>;
    const state = kv.getSync(l.partition, layout.state(l))?.value;
    // Every read below must be of this turn (LMDB's synchronous reads of one turn share one read
    // transaction: one snapshot). That holds because `authorize`, for the view intent alone, decides as
    // `viewable` does (the record's header): it passes exactly what `viewable` passes, so when `viewable`
    // refuses it throws (not found, forbidden) and no read follows its await. Should the two ever differ,
    // the assertion below refuses the list (a 500) rather than read on in a later turn, a later snapshot.
    const parentView = this.core.viewable(state, actor);
    if (!parentView) {
      await this.core.authorize(this.core.reader(l), l, actor, l.type.intents.view, { state });
      throw new Error("listWholeViews: authorize passed a parent viewable refused; the list's reads would span two snapshots");
    }
    const childrenKey = layout.children(l, t.name);
    // The bound first: the children counted (by the backend, no key read into JavaScript), so a
    // collection larger than the page costs no row (the index then serves it).
    if (kv.countSync(l.partition, { prefix: childrenKey, limit: limit + 1 }) > limit) return null;
    const orderingEntry = kv.getSync(l.partition, layout.ordering(l, t.name));
    const where = `${t.name} list`;
    const tails = new TailOf(this.core.intentTails, t, actor);
    // The access entries (when the intents are asked for): each one's key after the family's prefix,
    // copied into `keys` (ends[i] where the i-th ends), and its tail.
    let walk: AccessWalk | null = null;
    const entryTails: Buffer[] = [];
    if (options.allowedIntents) {
      const accessKey = layout.childrenAccess(l, t.name);
      const skip = encode(accessKey).length;
      let keys = Buffer.allocUnsafe(16 * 1024);
      let at = 0;
      const ends: number[] = [];
      const more = kv.scanViews(l.partition, { prefix: accessKey, limit }, (keyBytes, value) => {
        const n = keyBytes.length - skip;
        if (at + n > keys.length) {
          const grown = Buffer.allocUnsafe(Math.max(2 * keys.length, at + n));
          keys.copy(grown, 0, 0, at);
          keys = grown;
        }
        at += keyBytes.copy(keys, at, skip);
        ends.push(at);
        entryTails.push(tails.of(value));
      });
      if (more !== null) return "copies";
      walk = new AccessWalk(ends.length, (j, key, from) => compareBytes(keys, j === 0 ? 0 : ends[j - 1]!, ends[j]!, key, from, key.length));
    }
    const items = new PageItems();
    const rows: { readonly id: string; readonly createdAtMs: number; readonly at: number }[] = [];
    const skip = encode(childrenKey).length;
    kv.scanViews(l.partition, { prefix: childrenKey, limit }, (keyBytes, value) => {
      const view = RecordView.listable(value, where);
      if (!view) return;
      const j = walk ? walk.match(keyBytes, skip) : -1;
      // `value` is the backend's own: what the row shows (a view of it, listed's no-copy form), with its
      // tail, is copied into `items`, the one copy of it before the page's
      const at = items.add(listed(actor, t, view), walk ? (j < 0 ? tails.none : entryTails[j]) : undefined);
      rows.push({ id: view.id, createdAtMs: view.createdAtMs, at });
    });
    return { items, order: effectiveOrder(orderingOf(orderingEntry), rows).map((r) => r.at), nextCursor: null, version: parentView.version };
  }

  /**
   * TruBudget's order (closed children first, by close time, then the effective order): computed from the
   * whole collection on each read, with an offset cursor. The order index serves the native order only.
   */
  async #listClosedFirst(actor: Actor, l: Located, t: CompiledType, parent: Ref, version: number, limit: number, options: PageOptions): Promise<OrderedPage> {
    let offset = 0;
    if (options.cursor) {
      const raw = cursorBytes(options.cursor).toString("utf8");
      offset = Number(raw);
      if (!/^\d+$/.test(raw) || !Number.isSafeInteger(offset)) throw new ValidationError("invalid cursor", "cursor");
    }
    const children: Entry[] = [];
    const [orderingEntry] = await Promise.all([
      this.core.kv.get(l.partition, layout.ordering(l, t.name)),
      (async () => {
        for await (const e of scanAll(this.core.kv, l.partition, { prefix: layout.children(l, t.name), limit: MAX_PAGE })) children.push(e);
      })(),
    ]);
    const ordering = orderingEntry ? (JSON.parse(orderingEntry.value.toString("utf8")) as string[]) : [];
    const rows = children.flatMap((e) => {
      const view = RecordView.listable(e.value, `${t.name} list`);
      return view ? [{ id: view.id, createdAtMs: view.createdAtMs, view, closedAtMs: this.#closedAt(l.type, view) }] : [];
    });
    const pageRows = closedFirstOrder(ordering, rows).slice(offset, offset + limit);
    const next = offset + limit < rows.length ? cursorOf(Buffer.from(String(offset + limit))) : null;
    return {
      ...(await this.#rows(
        actor,
        t,
        parent,
        pageRows.map((r) => r.view),
        options,
      )),
      nextCursor: next,
      version,
    };
  }

  /**
   * The same list as `listOrderedJson`, rendered as one JSON page (`{"items":[…],"nextCursor":…}`),
   * ready to send. Pages are cached per partition head version and per caller (identity and groups):
   * a repeated read of an unchanged collection costs two point reads.
   */
  async listOrderedPage(actor: Actor, parent: Ref, options: PageOptions = {}): Promise<{ json: Buffer; version: number }> {
    const l = locate(this.core.schema, parent);
    const [state, head] = await this.core.kv.getMany(l.partition, [layout.state(l), layout.head]);
    const { view } = await this.core.authorize(this.core.reader(l), l, actor, l.type.intents.view, { state: state?.value });
    const pages = this.#pages;
    const key =
      head && pages
        ? [
            encodeNested(l.partition).toString("latin1"),
            l.pairs.join("\u0000"),
            head.version,
            actor.system ? "\u0001" : actor.id,
            [...actor.groups].sort().join("\u0000"),
            options.cursor ?? "",
            options.limit ?? "",
            options.allowedIntents ? "i" : "",
            options.sequence ?? "",
          ].join("\u0002")
        : null;
    const cached = key ? pages!.get(key) : undefined;
    if (cached) return { json: cached, version: view.version };
    const page = await this.#listOrderedJson(actor, parent, options);
    // The page joined from its items and tails in one copy; when it may hold a sealed value (one scan of
    // the page, not one per item), joined again from its items opened (`listOrderedJson`'s).
    let json = "order" in page ? page.items.page(page.order, page.nextCursor) : pageJson(page.items, page.nextCursor, page.tails);
    if (sealedIn(json)) json = pageJson((await this.#openedOrdered(parent, page)).items, page.nextCursor);
    if (key) pages!.set(key, json);
    return { json, version: page.version };
  }

  /** When a child was closed, by its parent type's declared `closedFirst` option (its JSON is read only for closed children). */
  #closedAt(parentType: CompiledType, view: RecordView): number | null {
    const rule = parentType.decl.closedFirst;
    if (!rule) throw new ValidationError(`${parentType.name} declares no closedFirst order`, "order");
    if (view.status !== rule.status) return null;
    const at = Date.parse(String(view.envelope().data[rule.at]));
    return Number.isNaN(at) ? view.createdAtMs : at;
  }

  /** The stored ordering of a parent's ordered children (ids as set, possibly naming deleted children). */
  async getOrdering(actor: Actor, parent: Ref): Promise<{ ordering: string[]; version: number }> {
    const { l, view } = await this.#readable(actor, parent);
    const childType = l.type.decl.orderedChildren;
    if (!childType) throw new ValidationError(`${parent.type} has no ordered children`, "parent");
    const e = await this.core.kv.get(l.partition, layout.ordering(l, childType));
    return { ordering: e ? (JSON.parse(e.value.toString("utf8")) as string[]) : [], version: view.version };
  }

  /**
   * A resource the actor may view and the sums it keeps of its children's declared amounts (sums.ts):
   * one range read of O(buckets), whatever the number of children. `head` is the version of its
   * partition's chain head, read before anything else: every write to the partition moves it, so what
   * was derived from this read may be cached under it (a newer write moves it past). `withSums(head)`
   * false: the sums are not read (the caller holds what it derived from them at that head).
   */
  async sums(actor: Actor, ref: Ref, options: SumsOptions = {}): Promise<{ envelope: Envelope; sums: SumRow[]; head: number | null }> {
    const l = locate(this.core.schema, ref);
    const head = await this.#head(l);
    const { view } = await this.#readable(actor, ref);
    const sums: SumRow[] = [];
    if (options.withSums?.(head) ?? true) {
      for await (const e of scanAll(this.core.kv, l.partition, { prefix: layout.sums(l), limit: 5000 })) {
        const { sum, n } = decodeSum(e.value);
        sums.push({ bucket: layout.bucketOfSum(e.key, l.depth), sum: fromScaled(sum), n });
      }
    }
    return { envelope: view.envelope(), sums, head };
  }

  /**
   * The nested children of one type under a resource the actor may view, each with the sums it keeps
   * and whether the actor may view it: one range read of the children's records and one of their sums,
   * O(children + buckets), whatever the number of grandchildren. `head` and `withSums` as in `sums`.
   */
  async childSums(actor: Actor, parent: Ref, childType: string, options: SumsOptions = {}): Promise<{ envelope: Envelope; children: ChildSums[]; head: number | null }> {
    const located = locate(this.core.schema, parent);
    const head = await this.#head(located);
    const { l, view } = await this.#readable(actor, parent);
    const t = this.core.schema.type(childType);
    if (t.decl.parent !== l.type.name || t.decl.idStyle !== "nested") throw new ValidationError(`${childType} is no nested child type of ${l.type.name}`, "childType");
    const children = new Map<string, ChildSums>();
    for await (const e of scanAll(this.core.kv, l.partition, { prefix: layout.children(l, childType), limit: 5000 })) {
      const v = new RecordView(e.value);
      children.set(v.id, { id: v.id, envelope: v.envelope(), viewable: v.viewableBy(actor), sums: [], sumsVersion: "" });
    }
    const depth = l.depth + 1;
    if (options.withSums?.(head) ?? true) {
      const versions = new Map<string, { max: number; n: number }>();
      for await (const e of scanAll(this.core.kv, l.partition, { prefix: layout.sumsOfType(depth, l.pairs, childType), limit: 5000 })) {
        const id = layout.pairsOfSum(e.key, depth).at(-1)!;
        const { sum, n } = decodeSum(e.value);
        children.get(id)?.sums.push({ bucket: layout.bucketOfSum(e.key, depth), sum: fromScaled(sum), n });
        const at = versions.get(id) ?? { max: 0, n: 0 };
        versions.set(id, { max: Math.max(at.max, e.version), n: at.n + 1 });
      }
      for (const [id, c] of children) {
        const at = versions.get(id) ?? { max: 0, n: 0 };
        children.set(id, { ...c, sumsVersion: `${at.max}:${at.n}` });
      }
    }
    return { envelope: view.envelope(), children: [...children.values()], head };
  }

  /** The version of a partition's chain head (null: nothing written), read first by the reads whose results a caller caches under it. */
  async #head(l: Located): Promise<number | null> {
    return (await this.core.kv.get(l.partition, layout.head))?.version ?? null;
  }

  /** A resource's permissions: intent → identities (its `listPermissions` intent). */
  async listPermissions(actor: Actor, ref: Ref): Promise<Permissions> {
    const l = locate(this.core.schema, ref);
    const { access } = await this.core.authorize(this.core.reader(l), l, actor, l.type.intents.listPermissions, { withAccess: true });
    return access!.permissions;
  }
}
