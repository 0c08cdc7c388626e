/**
 * The generic operations every declared entity type gets, with no per-type code: create, get, update
 * (and domain commands built on `mutate`), list children, delete (cascade or guarded), history, as-of
 * reads, permissions and ordering. Permission checks live here, so library users get them too.
 */
import { randomUUID } from "node:crypto";
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from "../errors.js";
import { cursorBytes, cursorOf, scanAll, type Entry, type Key, type KvStore, type Partition } from "../kv/contract.js";
import { encodeNested } from "../kv/tuple.js";
import { allows, type Actor, type Permissions } from "./actor.js";
import { checkLink, fold, type EventPayload, type PathItem, type ResourceEvent, type VerifyResult } from "./events.js";
import { GlobalPermissions } from "./global.js";
import {
  childRef,
  childrenPrefix,
  flatChildKey,
  flatChildrenPrefix,
  historyKey,
  historyPrefix,
  accessKey,
  HEAD_KEY,
  locate,
  logKey,
  orderingKey,
  stateKey,
  type Located,
  type Ref,
} from "./keys.js";
import { effectiveOrder, validateOrdering } from "./ordering.js";
import { encodeRecord, RecordView, redactedJson, type Envelope, type Private } from "./record.js";
import { assertId, type CompiledType, type DataOf, type Schema, type SchemaDecl } from "./schema.js";
import { PageCache } from "./page-cache.js";
import { pageJson } from "./page-json.js";
import { PartitionWriter, type Clock, type Tx } from "./writer.js";

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface CreateOptions {
  /** The id; generated when absent. */
  id?: string;
  /** Refuse the create (throw) given the parent's current state; runs inside the write. */
  guard?: (parent: { envelope: Envelope; permissions: Permissions } | null, tx: Tx) => void | Promise<void>;
  /** The new resource's permissions, from the creator's defaults (every intent) and the parent's state. */
  initialPermissions?: (defaults: Permissions, parent: { envelope: Envelope; permissions: Permissions } | null) => Permissions;
}

export interface ResourceStoreOptions {
  clock?: Clock;
  /** Cache rendered ordered-list pages per partition head version (default on; false turns it off). */
  pageCache?: boolean;
  newId?: () => string;
}

/** What a domain command does to one resource (see `mutate`). */
export interface MutateSpec {
  /** The intent the actor must hold on the resource. */
  intent: string;
  /** The event verb (`<type>.<verb>`). */
  verb: string;
  /** Refuse with a ConflictError unless the resource is at this version. */
  ifVersion?: number;
  /**
   * Decides the change from the current state (throw to refuse): a data patch (a field set to null is
   * removed) and anything else to record in the event.
   */
  change: (current: Envelope, tx: Tx, located: Located, permissions: Permissions) => Promise<{ patch?: Record<string, unknown>; record?: EventPayload; permissions?: Permissions }> | { patch?: Record<string, unknown>; record?: EventPayload; permissions?: Permissions };
}

const SWEEPS: Partition = ["sweeps"];
const PARENT_KEY: Key = ["m", "parent"];
const MAX_PAGE = 10_000;

function pathOf(l: Located): PathItem[] {
  return l.type.chain.map((type, i) => ({ type, id: l.ref.ids[i]! }));
}

function listersOf(t: CompiledType, permissions: Permissions): string[] {
  return [...new Set<string>([...(permissions[t.intents.list] ?? []), ...(permissions[t.intents.view] ?? [])])];
}

function encodeResource(t: CompiledType, envelope: Envelope, permissions: Permissions): Buffer {
  return encodeRecord(envelope, statusOf(t, envelope.data), listersOf(t, permissions), permissions[t.intents.view] ?? []);
}

const encodeAccess = (priv: Private): Buffer => Buffer.from(JSON.stringify(priv), "utf8");
const decodeAccess = (raw: Buffer | undefined): Private => (raw ? (JSON.parse(raw.toString("utf8")) as Private) : { permissions: {} });

function statusOf(t: CompiledType, data: Record<string, unknown>): string {
  const v = t.decl.statusField ? data[t.decl.statusField] : undefined;
  return typeof v === "string" ? v : "";
}

function applyPatch(data: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const next = { ...data };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete next[k];
    else if (v !== undefined) next[k] = v;
  }
  return next;
}

function pageLimit(limit: number | undefined, dflt = 100): number {
  const n = limit ?? dflt;
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_PAGE) throw new ValidationError(`limit must be between 1 and ${MAX_PAGE}`, "limit");
  return n;
}

export class ResourceStore<S extends SchemaDecl = SchemaDecl> {
  readonly writer: PartitionWriter;
  readonly global: GlobalPermissions;
  readonly #newId: () => string;
  readonly #clock: Clock;
  readonly #pages: PageCache | null;

  constructor(
    readonly kv: KvStore,
    readonly schema: Schema<S>,
    options: ResourceStoreOptions = {},
  ) {
    this.#clock = options.clock ?? Date.now;
    this.#pages = options.pageCache === false ? null : new PageCache();
    this.writer = new PartitionWriter(kv, this.#clock);
    this.global = new GlobalPermissions(
      kv,
      [...schema.types.values()].filter((t) => t.decl.parent === null).map((t) => t.intents.create),
    );
    this.#newId = options.newId ?? (() => randomUUID().replace(/-/g, ""));
  }

  /** Subscribes to every committed event (the change feed). */
  onChange(listener: (partition: Partition, events: readonly ResourceEvent[]) => void): () => void {
    return this.writer.onCommit(listener);
  }

  // ---------------------------------------------------------------- reads

  async #access(l: Located): Promise<Private> {
    return decodeAccess((await this.kv.get(l.partition, accessKey(l)))?.value);
  }

  async #record(l: Located): Promise<RecordView | undefined> {
    const e = await this.kv.get(l.partition, stateKey(l));
    return e ? new RecordView(e.value) : undefined;
  }

  async #readable(actor: Actor, ref: Ref, intentOf: (t: CompiledType) => string): Promise<{ l: Located; view: RecordView }> {
    const l = locate(this.schema, ref);
    const view = await this.#record(l);
    if (!view) throw new NotFoundError(`${ref.type} ${ref.ids.join("/")} not found`);
    const intent = intentOf(l.type);
    // The view intent's holders are in the record's header: the common read needs no JSON parse.
    const allowed = intent === l.type.intents.view ? view.viewableBy(actor) : allows((await this.#access(l)).permissions, actor, intent);
    if (!allowed) throw new ForbiddenError(`${actor.id} lacks the intent ${intent}`);
    return { l, view };
  }

  async get<T extends keyof S & string>(actor: Actor, ref: Ref & { type: T }): Promise<Envelope<DataOf<S, T>>> {
    const { view } = await this.#readable(actor, ref, (t) => t.intents.view);
    return view.envelope<DataOf<S, T>>();
  }

  /** The stored public JSON of a resource, ready to serve, and its version (for ETag). */
  async getJson(actor: Actor, ref: Ref): Promise<{ json: Buffer; version: number }> {
    const { view } = await this.#readable(actor, ref, (t) => t.intents.view);
    return { json: view.publicBytes(), version: view.version };
  }

  /** True when the resource exists (no permission check: for operators and tests). */
  async exists(ref: Ref): Promise<boolean> {
    return (await this.#record(locate(this.schema, ref))) !== undefined;
  }

  /** True when the actor may view the resource (for filtering change feeds). */
  async canView(actor: Actor, ref: Ref): Promise<boolean> {
    try {
      await this.#readable(actor, ref, (t) => t.intents.view);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Lists the direct children of a type under `parent` (null for root types), one range read per page.
   * Children whose view intent the actor lacks are listed redacted (id, status, createdAt) in their
   * place; roots are listed to holders of their list or view intent (redacted without view) and left
   * out otherwise. Items are JSON bytes, ready to be joined.
   */
  async listChildrenJson(actor: Actor, parent: Ref | null, childType: string, options: { cursor?: string | null; limit?: number } = {}): Promise<Page<Buffer>> {
    const t = this.schema.type(childType);
    const limit = pageLimit(options.limit);
    if (t.decl.parent === null) return this.#listRoots(actor, t, options.cursor ?? null, limit);
    if (!parent || parent.type !== t.decl.parent) throw new ValidationError(`${childType} is listed under a ${t.decl.parent}`, "parent");
    const { l } = await this.#readable(actor, parent, (pt) => pt.intents.view);
    if (t.decl.idStyle === "flat") return this.#listFlat(actor, l, t, options.cursor ?? null, limit);
    const page = await this.kv.scan(l.partition, { prefix: childrenPrefix(l, childType), after: options.cursor ?? null, limit });
    const items = page.entries.map((e) => {
      const view = new RecordView(e.value);
      if (view.viewableBy(actor)) return view.publicBytes();
      return Buffer.from(redactedJson(childType, view, t.decl.statusField));
    });
    return { items, nextCursor: page.cursor };
  }

  async listChildren<T extends keyof S & string>(actor: Actor, parent: Ref | null, childType: T, options: { cursor?: string | null; limit?: number } = {}): Promise<Page<Envelope<DataOf<S, T>> & { redacted?: true }>> {
    const page = await this.listChildrenJson(actor, parent, childType, options);
    return { items: page.items.map((b) => JSON.parse(b.toString("utf8"))), nextCursor: page.nextCursor };
  }

  async #listRoots(actor: Actor, t: CompiledType, cursor: string | null, limit: number): Promise<Page<Buffer>> {
    const items: Buffer[] = [];
    let after = cursor;
    // Deleted roots keep a tombstone partition (their log); skip them and invisible ones.
    while (items.length < limit) {
      const page = await this.kv.listPartitions(t.name, { limit: limit - items.length, after });
      const records = await Promise.all(
        page.partitions.map((p) => this.kv.get(p, ["s", 0])),
      );
      for (const e of records) {
        if (!e) continue;
        const view = new RecordView(e.value);
        // A root is listed to holders of its list or view intent; its details only to holders of view.
        if (view.visibleTo(actor)) items.push(view.viewableBy(actor) ? view.publicBytes() : Buffer.from(redactedJson(t.name, view, t.decl.statusField)));
      }
      after = page.cursor;
      if (after === null) break;
    }
    return { items, nextCursor: after };
  }

  async #listFlat(actor: Actor, parent: Located, t: CompiledType, cursor: string | null, limit: number): Promise<Page<Buffer>> {
    const page = await this.kv.scan(parent.partition, { prefix: flatChildrenPrefix(parent, t.name), after: cursor, limit });
    const ids = page.entries.map((e) => e.key.at(-1) as string);
    const records = await Promise.all(ids.map((id) => this.kv.getMany([t.name, id], [["s", 0], PARENT_KEY])));
    const items: Buffer[] = [];
    const mine = JSON.stringify(parent.ref);
    records.forEach(([e, link]) => {
      // A created-then-failed or swept child, or an id reused under another parent: a stale index entry.
      if (!e || link?.value.toString("utf8") !== mine) return;
      const view = new RecordView(e.value);
      items.push(view.viewableBy(actor) ? view.publicBytes() : Buffer.from(redactedJson(t.name, view, t.decl.statusField)));
    });
    return { items, nextCursor: page.cursor };
  }

  /**
   * Lists an ordered child collection in its effective order (seed 002): the parent's ordering first,
   * then the others by creation time. The cursor is a position in that order.
   */
  async listOrderedJson(actor: Actor, parent: Ref, options: { cursor?: string | null; limit?: number } = {}): Promise<Page<Buffer> & { version: number }> {
    const { l, view: parentView } = await this.#readable(actor, parent, (pt) => pt.intents.view);
    const childType = l.type.decl.orderedChildren;
    if (!childType) throw new ValidationError(`${parent.type} has no ordered children`, "parent");
    const t = this.schema.type(childType);
    const limit = pageLimit(options.limit);
    let offset = 0;
    if (options.cursor) {
      const raw = cursorBytes(options.cursor).toString("utf8");
      offset = Number(raw);
      if (!/^\d+$/.test(raw) || !Number.isSafeInteger(offset)) throw new ValidationError("invalid cursor", "cursor");
    }
    const [orderingEntry, children] = await Promise.all([
      this.kv.get(l.partition, orderingKey(l, childType)),
      this.#scanAll(l.partition, childrenPrefix(l, childType)),
    ]);
    const ordering = orderingEntry ? (JSON.parse(orderingEntry.value.toString("utf8")) as string[]) : [];
    const rows = children.map((e) => {
      const view = new RecordView(e.value);
      return { id: view.id, createdAtMs: view.createdAtMs, view };
    });
    const ordered = effectiveOrder(ordering, rows);
    const slice = ordered.slice(offset, offset + limit);
    const items = slice.map((r) => (r.view.viewableBy(actor) ? r.view.publicBytes() : Buffer.from(redactedJson(childType, r.view, t.decl.statusField))));
    const next = offset + limit < ordered.length ? cursorOf(Buffer.from(String(offset + limit))) : null;
    return { items, nextCursor: next, version: parentView.version };
  }

  /**
   * The same list as `listOrderedJson`, rendered as one JSON page (`{"items":[…],"nextCursor":…}`),
   * ready to send. Pages are cached per partition head version and per caller (identity and groups):
   * a repeated read of an unchanged collection costs two point reads.
   */
  async listOrderedPage(actor: Actor, parent: Ref, options: { cursor?: string | null; limit?: number } = {}): Promise<{ json: Buffer; version: number }> {
    const l = locate(this.schema, parent);
    const [state, head] = await this.kv.getMany(l.partition, [stateKey(l), HEAD_KEY]);
    if (!state) throw new NotFoundError(`${parent.type} ${parent.ids.join("/")} not found`);
    const view = new RecordView(state.value);
    if (!view.viewableBy(actor)) throw new ForbiddenError(`${actor.id} lacks the intent ${l.type.intents.view}`);
    const key = head && this.#pages
      ? [
          encodeNested(l.partition).toString("latin1"),
          l.pairs.join("\u0000"),
          head.version,
          actor.system ? "\u0001" : actor.id,
          [...actor.groups].sort().join("\u0000"),
          options.cursor ?? "",
          options.limit ?? "",
        ].join("\u0002")
      : null;
    const cached = key ? this.#pages!.get(key) : undefined;
    if (cached) return { json: cached, version: view.version };
    const page = await this.listOrderedJson(actor, parent, options);
    const json = pageJson(page.items, page.nextCursor);
    if (key) this.#pages!.set(key, json);
    return { json, version: page.version };
  }

  async listOrdered<T extends keyof S & string>(actor: Actor, parent: Ref, options: { cursor?: string | null; limit?: number } = {}): Promise<Page<Envelope<DataOf<S, T>> & { redacted?: true }>> {
    const page = await this.listOrderedJson(actor, parent, options);
    return { items: page.items.map((b) => JSON.parse(b.toString("utf8"))), nextCursor: page.nextCursor };
  }

  async #scanAll(partition: Partition, prefix: Key): Promise<Entry[]> {
    const out: Entry[] = [];
    for await (const e of scanAll(this.kv, partition, { prefix, limit: MAX_PAGE })) out.push(e);
    return out;
  }


  /** The stored ordering of a parent's ordered children (ids as set, possibly naming deleted children). */
  async getOrdering(actor: Actor, parent: Ref): Promise<{ ordering: string[]; version: number }> {
    const { l, view } = await this.#readable(actor, parent, (pt) => pt.intents.view);
    const childType = l.type.decl.orderedChildren;
    if (!childType) throw new ValidationError(`${parent.type} has no ordered children`, "parent");
    const e = await this.kv.get(l.partition, orderingKey(l, childType));
    return { ordering: e ? (JSON.parse(e.value.toString("utf8")) as string[]) : [], version: view.version };
  }

  // ---------------------------------------------------------------- history

  /** One resource's events, one range read of its history index plus one batched read of the log. */
  async history(actor: Actor, ref: Ref, options: { cursor?: string | null; limit?: number; reverse?: boolean } = {}): Promise<Page<ResourceEvent>> {
    const l = locate(this.schema, ref);
    const view = await this.#record(l);
    if (view) {
      const intent = l.type.intents.history;
      if (!allows((await this.#access(l)).permissions, actor, intent)) throw new ForbiddenError(`${actor.id} lacks the intent ${intent}`);
    } else if (!actor.system) {
      throw new NotFoundError(`${ref.type} ${ref.ids.join("/")} not found`);
    }
    const limit = pageLimit(options.limit);
    const page = await this.kv.scan(l.partition, { prefix: historyPrefix(l), after: options.cursor ?? null, limit, reverse: options.reverse === true });
    const seqs = page.entries.map((e) => e.key.at(-1) as number);
    const logs = await this.kv.getMany(l.partition, seqs.map(logKey));
    const items = logs.filter((e) => e !== undefined).map((e) => JSON.parse(e.value.toString("utf8")) as ResourceEvent);
    return { items, nextCursor: page.cursor };
  }

  /** The resource as it was at `time` (replays its history up to then). */
  async asOf(actor: Actor, ref: Ref, time: Date | string): Promise<Envelope | null> {
    const at = new Date(time);
    if (Number.isNaN(at.getTime())) throw new ValidationError("time must be an ISO 8601 date-time", "time");
    const events: ResourceEvent[] = [];
    let cursor: string | null = null;
    do {
      const page: Page<ResourceEvent> = await this.history(actor, ref, { cursor, limit: MAX_PAGE });
      for (const e of page.items) if (Date.parse(e.at) <= at.getTime()) events.push(e);
      cursor = page.nextCursor;
    } while (cursor !== null);
    const s = fold(events);
    if (!s || s.deleted) return null;
    return {
      id: ref.ids.at(-1)!,
      type: ref.type,
      data: s.data,
      meta: { createdAt: s.createdAt, createdBy: s.createdBy, updatedAt: s.updatedAt, version: s.version },
    };
  }

  /** Recomputes a partition's hash chain; reports the first bad link. */
  async verify(partition: Partition): Promise<VerifyResult> {
    let prev: string | null = null;
    let expected = 1;
    for await (const e of scanAll(this.kv, partition, { prefix: ["l"], limit: 2000 })) {
      let event: ResourceEvent;
      try {
        event = JSON.parse(e.value.toString("utf8")) as ResourceEvent;
      } catch {
        return { ok: false, checked: expected - 1, firstBad: { seq: expected, reason: "event is not valid JSON" } };
      }
      const keySeq = e.key[1];
      const reason = keySeq !== event.seq ? `stored under seq ${String(keySeq)} but says ${event.seq}` : checkLink(event, expected, prev);
      if (reason) return { ok: false, checked: expected - 1, firstBad: { seq: expected, reason } };
      prev = event.hash;
      expected++;
    }
    const head = await this.writer.readHead(partition);
    if (head.seq !== expected - 1 || head.hash !== prev) {
      return { ok: false, checked: expected - 1, firstBad: { seq: expected, reason: `chain head says seq ${head.seq}, the log ends at ${expected - 1}` } };
    }
    return { ok: true, checked: expected - 1 };
  }

  /** The partition a resource lives in. */
  partitionOf(ref: Ref): Partition {
    return locate(this.schema, ref).partition;
  }

  // ---------------------------------------------------------------- writes

  async create<T extends keyof S & string>(
    actor: Actor,
    type: T,
    parent: Ref | null,
    data: DataOf<S, T>,
    options: CreateOptions = {},
  ): Promise<Envelope<DataOf<S, T>>> {
    const t = this.schema.type(type);
    const id = options.id ?? this.#newId();
    assertId(id, "id");
    const ref = childRef(this.schema, parent, type, id);
    const l = locate(this.schema, ref);
    const clean = this.schema.validate(t, data);
    const defaults: Permissions = Object.fromEntries(t.intents.all.map((i) => [i, actor.system ? [] : [actor.id]]));
    const decide = async (tx: Tx, parentState: { envelope: Envelope; permissions: Permissions } | null): Promise<Permissions> => {
      await options.guard?.(parentState, tx);
      return options.initialPermissions ? options.initialPermissions(defaults, parentState) : defaults;
    };

    if (t.decl.parent === null) {
      await this.global.assert(actor, t.intents.create);
      return this.writer.run(l.partition, actor, async (tx) => {
        if ((await tx.get(["m", "head"])) || (await tx.get(stateKey(l)))) throw new ConflictError(`${type} ${id} already exists (or existed)`, "id");
        return this.#put(tx, l, clean, await decide(tx, null), null);
      }) as Promise<Envelope<DataOf<S, T>>>;
    }

    const pl = locate(this.schema, parent!);
    if (t.decl.idStyle === "nested") {
      return this.writer.run(l.partition, actor, async (tx) => {
        const parentState = await this.#requireParent(tx, pl, actor, t.intents.create);
        // A deleted resource's history stays under its address: reusing the id would hand it to the new one.
        if ((await tx.get(stateKey(l))) || (await tx.anyUnder(historyPrefix(l)))) {
          throw new ConflictError(`${type} ${id} already exists (or existed)`, "id");
        }
        return this.#put(tx, l, clean, await decide(tx, parentState), null);
      }) as Promise<Envelope<DataOf<S, T>>>;
    }

    // Flat child: index entry in the parent's partition first (so a crash never leaves a child the
    // parent's cascade cannot find), then the child's own partition.
    if (await this.kv.get(l.partition, ["m", "head"])) throw new ConflictError(`${type} ${id} already exists (or existed)`, "id");
    let permissions: Permissions = defaults;
    await this.writer.run(pl.partition, actor, async (tx) => {
      permissions = await decide(tx, await this.#requireParent(tx, pl, actor, t.intents.create));
      if (await tx.get(flatChildKey(pl, type, id))) throw new ConflictError(`${type} ${id} already exists`, "id");
      tx.put(flatChildKey(pl, type, id), Buffer.from(JSON.stringify({ createdAt: tx.now })));
      tx.append(`${pl.type.name}.child_added`, pathOf(pl), { childType: type, id }, (seq) => historyKey(pl, seq));
    });
    try {
      return (await this.writer.run(l.partition, actor, async (tx) => {
        if ((await tx.get(["m", "head"])) || (await tx.get(stateKey(l)))) throw new ConflictError(`${type} ${id} already exists (or existed)`, "id");
        return this.#put(tx, l, clean, permissions, parent);
      })) as Envelope<DataOf<S, T>>;
    } catch (e) {
      await this.#unlinkFlat(pl, type, id, actor).catch(() => undefined);
      throw e;
    }
  }

  async #requireParent(tx: Tx, pl: Located, actor: Actor, intent: string): Promise<{ envelope: Envelope; permissions: Permissions }> {
    const raw = await tx.get(stateKey(pl));
    if (!raw) throw new NotFoundError(`${pl.ref.type} ${pl.ref.ids.join("/")} not found`);
    const { permissions } = decodeAccess(await tx.get(accessKey(pl)));
    if (!allows(permissions, actor, intent)) throw new ForbiddenError(`${actor.id} lacks the intent ${intent}`);
    return { envelope: new RecordView(raw).envelope(), permissions };
  }

  #put(tx: Tx, l: Located, data: Record<string, unknown>, permissions: Permissions, parent: Ref | null): Envelope {
    const envelope: Envelope = {
      id: l.ref.ids.at(-1)!,
      type: l.type.name,
      data,
      meta: { createdAt: tx.now, createdBy: tx.actor.id, updatedAt: tx.now, version: 1 },
    };
    tx.put(stateKey(l), encodeResource(l.type, envelope, permissions));
    tx.put(accessKey(l), encodeAccess({ permissions, parent }));
    if (parent) tx.put(PARENT_KEY, Buffer.from(JSON.stringify(parent)));
    tx.append(`${l.type.name}.created`, pathOf(l), { data, permissions }, (seq) => historyKey(l, seq));
    return envelope;
  }

  async #unlinkFlat(pl: Located, childType: string, id: string, actor: Actor): Promise<void> {
    await this.writer.run(pl.partition, actor, async (tx) => {
      if (!(await tx.get(flatChildKey(pl, childType, id)))) return;
      tx.delete(flatChildKey(pl, childType, id));
      tx.append(`${pl.type.name}.child_removed`, pathOf(pl), { childType, id }, (seq) => historyKey(pl, seq));
    });
  }

  /**
   * The one primitive behind update and every domain command: read the resource inside its partition's
   * write path, check the intent and version, let `spec.change` decide (or refuse), validate the result,
   * write the new state and append the event, atomically.
   */
  async mutate(actor: Actor, ref: Ref, spec: MutateSpec): Promise<Envelope> {
    const l = locate(this.schema, ref);
    return this.writer.run(l.partition, actor, async (tx) => {
      const raw = await tx.get(stateKey(l));
      if (!raw) throw new NotFoundError(`${ref.type} ${ref.ids.join("/")} not found`);
      const view = new RecordView(raw);
      const priv = decodeAccess(await tx.get(accessKey(l)));
      if (!allows(priv.permissions, actor, spec.intent)) throw new ForbiddenError(`${actor.id} lacks the intent ${spec.intent}`);
      const current = view.envelope();
      if (spec.ifVersion !== undefined && spec.ifVersion !== current.meta.version) {
        throw new ConflictError(`${ref.type} ${ref.ids.join("/")} is at version ${current.meta.version}, not ${spec.ifVersion}`, "version");
      }
      const { patch, record, permissions } = await spec.change(current, tx, l, priv.permissions);
      const data = patch ? this.schema.validate(l.type, applyPatch(current.data, patch)) : current.data;
      const perms = permissions ?? priv.permissions;
      const next: Envelope = { ...current, data, meta: { ...current.meta, updatedAt: tx.now, version: current.meta.version + 1 } };
      tx.put(stateKey(l), encodeResource(l.type, next, perms));
      if (permissions) tx.put(accessKey(l), encodeAccess({ ...priv, permissions: perms }));
      tx.append(`${l.type.name}.${spec.verb}`, pathOf(l), { ...(patch ? { data: patch } : {}), ...(record ?? {}) }, (seq) => historyKey(l, seq));
      return next;
    });
  }

  async update(actor: Actor, ref: Ref, patch: Record<string, unknown>, options: { ifVersion?: number } = {}): Promise<Envelope> {
    if (patch === null || typeof patch !== "object" || Array.isArray(patch)) throw new ValidationError("an update is an object of fields", "data");
    const t = this.schema.type(ref.type);
    return this.mutate(actor, ref, { intent: t.intents.update, verb: "updated", ifVersion: options.ifVersion, change: () => ({ patch }) });
  }

  // ---------------------------------------------------------------- permissions

  async listPermissions(actor: Actor, ref: Ref): Promise<Permissions> {
    const { l } = await this.#readable(actor, ref, (t) => t.intents.listPermissions);
    return (await this.#access(l)).permissions;
  }

  async grant(actor: Actor, ref: Ref, intent: string, identity: string): Promise<Envelope> {
    return this.#changePermission(actor, ref, intent, identity, true);
  }

  async revoke(actor: Actor, ref: Ref, intent: string, identity: string): Promise<Envelope> {
    return this.#changePermission(actor, ref, intent, identity, false);
  }

  #changePermission(actor: Actor, ref: Ref, intent: string, identity: string, add: boolean): Promise<Envelope> {
    const t = this.schema.type(ref.type);
    if (typeof intent !== "string" || !t.intents.all.includes(intent)) {
      throw new ValidationError(`${JSON.stringify(intent)} is not an intent of ${t.name}`, "intent");
    }
    assertId(identity, "identity");
    return this.mutate(actor, ref, {
      intent: add ? t.intents.grantPermission : t.intents.revokePermission,
      verb: add ? "permission_granted" : "permission_revoked",
      change: (_current, _tx, _l, permissions) => {
        const holders = new Set(permissions[intent] ?? []);
        if (add) holders.add(identity);
        else holders.delete(identity);
        return { permissions: { ...permissions, [intent]: [...holders] }, record: { intent, identity } };
      },
    });
  }

  // ---------------------------------------------------------------- ordering

  /**
   * Replaces the ordering of a parent's ordered children, all or nothing. Last writer wins unless
   * `ifVersion` (the parent's version) is given: then a stale write is a ConflictError.
   */
  async setOrdering(actor: Actor, parent: Ref, ordering: readonly string[], options: { ifVersion?: number; guard?: (parent: Envelope) => void } = {}): Promise<Envelope> {
    const t = this.schema.type(parent.type);
    const childType = t.decl.orderedChildren;
    if (!childType || !t.intents.reorder) throw new ValidationError(`${parent.type} has no ordered children`, "parent");
    return this.mutate(actor, parent, {
      intent: t.intents.reorder,
      verb: "ordering_set",
      ifVersion: options.ifVersion,
      change: async (current, tx, l) => {
        options.guard?.(current);
        const children = await tx.scanPrefix(childrenPrefix(l, childType));
        const ids = new Set(children.map((c) => new RecordView(c.value).id));
        const valid = validateOrdering(ordering, ids);
        tx.put(orderingKey(l, childType), Buffer.from(JSON.stringify(valid)));
        return { record: { childType, ordering: valid } };
      },
    });
  }

  // ---------------------------------------------------------------- delete

  /**
   * Deletes a resource. Its nested descendants go in the same atomic commit (one prefix delete per
   * level). Flat descendants live in partitions of their own: they are recorded for a sweep before the
   * commit and swept after it; `resumeSweeps` finishes sweeps a crash interrupted. The log stays: a
   * deleted partition owner keeps its log (a tombstone) until it is purged. `guard` runs inside the
   * write, after the permission and version checks; it may throw to refuse the delete.
   */
  async delete(actor: Actor, ref: Ref, options: { ifVersion?: number; guard?: (tx: Tx) => void | Promise<void> } = {}): Promise<void> {
    const l = locate(this.schema, ref);
    const t = l.type;
    const sweepKey: Key = [...l.partition, l.depth, ...l.pairs];
    // Register the sweep first, so a crash right after the delete commit still finds it.
    const needsSweep = this.#hasFlatDescendantTypes(t);
    if (needsSweep) {
      await this.kv.commit(SWEEPS, [{ type: "put", key: sweepKey, value: Buffer.from(JSON.stringify({ type: ref.type, ids: ref.ids, actor: actor.id })) }]);
    }
    try {
      await this.writer.run(l.partition, actor, async (tx) => {
        const raw = await tx.get(stateKey(l));
        if (!raw) throw new NotFoundError(`${ref.type} ${ref.ids.join("/")} not found`);
        const view = new RecordView(raw);
        if (!allows(decodeAccess(await tx.get(accessKey(l))).permissions, actor, t.intents.delete)) throw new ForbiddenError(`${actor.id} lacks the intent ${t.intents.delete}`);
        const env = view.envelope();
        if (options.ifVersion !== undefined && options.ifVersion !== env.meta.version) {
          throw new ConflictError(`${ref.type} ${ref.ids.join("/")} is at version ${env.meta.version}, not ${options.ifVersion}`, "version");
        }
        await options.guard?.(tx);
        if (t.decl.onDelete === "refuse") {
          for (const c of t.children) {
            const ct = this.schema.type(c);
            const prefix = ct.decl.idStyle === "flat" ? flatChildrenPrefix(l, c) : childrenPrefix(l, c);
            if (await tx.anyUnder(prefix)) throw new ConflictError(`${ref.type} ${ref.ids.join("/")} still has ${c} children`, "children");
          }
        }
        tx.delete(stateKey(l));
        tx.delete(accessKey(l));
        for (let depth = l.depth + 1; depth <= this.schema.maxDepth; depth++) {
          tx.deletePrefix(["s", depth, ...l.pairs]);
          tx.deletePrefix(["a", depth, ...l.pairs]);
        }
        for (let depth = l.depth; depth <= this.schema.maxDepth; depth++) tx.deletePrefix(["o", depth, ...l.pairs]);
        tx.append(`${t.name}.deleted`, pathOf(l), {}, (seq) => historyKey(l, seq));
      });
    } catch (e) {
      if (needsSweep) await this.kv.commit(SWEEPS, [{ type: "delete", key: sweepKey }]).catch(() => undefined);
      throw e;
    }
    if (needsSweep) await this.#sweep(l, sweepKey, actor);
    // A flat resource leaves its parent's index.
    const priv = await this.#ownerParent(l);
    if (priv) await this.#unlinkFlat(locate(this.schema, priv), t.name, l.ref.ids[0]!, actor).catch(() => undefined);
  }

  /** A flat resource's parent, from the link kept beside its log (it outlives the state). */
  async #ownerParent(l: Located): Promise<Ref | null> {
    if (l.depth !== 0 || l.type.decl.parent === null) return null;
    const e = await this.kv.get(l.partition, PARENT_KEY);
    return e ? (JSON.parse(e.value.toString("utf8")) as Ref) : null;
  }

  #hasFlatDescendantTypes(t: CompiledType): boolean {
    return t.children.some((c) => {
      const ct = this.schema.type(c);
      return ct.decl.idStyle === "flat" || this.#hasFlatDescendantTypes(ct);
    });
  }

  async #sweep(l: Located, sweepKey: Key, actor: Actor): Promise<void> {
    for (let depth = l.depth + 1; depth <= this.schema.maxDepth + 1; depth++) {
      for (;;) {
        const page = await this.kv.scan(l.partition, { prefix: ["c", depth, ...l.pairs], limit: 100 });
        if (page.entries.length === 0) break;
        for (const e of page.entries) {
          const key = e.key;
          const childType = key.at(-2) as string;
          const id = key.at(-1) as string;
          await this.#purgeFlat({ type: childType, ids: [id] }, actor);
          await this.writer.run(l.partition, actor, async (tx) => {
            tx.delete(key);
            tx.append(`${l.type.name}.child_swept`, pathOf(l), { childType, id }, (seq) => historyKey(l, seq));
          });
        }
      }
    }
    await this.kv.commit(SWEEPS, [{ type: "delete", key: sweepKey }]);
  }

  /** Removes a flat resource's whole partition, sweeping its own flat descendants first. */
  async #purgeFlat(ref: Ref, actor: Actor): Promise<void> {
    const l = locate(this.schema, ref);
    if (this.#hasFlatDescendantTypes(l.type)) {
      const sweepKey: Key = [...l.partition, 0];
      await this.kv.commit(SWEEPS, [{ type: "put", key: sweepKey, value: Buffer.from(JSON.stringify({ type: ref.type, ids: ref.ids, actor: actor.id })) }]);
      await this.#sweep(l, sweepKey, actor);
    }
    await this.kv.dropPartition(l.partition);
    this.writer.forget(l.partition);
  }

  /** Finishes every sweep a crash interrupted. Safe to call at any time; returns how many it ran. */
  async resumeSweeps(actor: Actor): Promise<number> {
    let n = 0;
    for (;;) {
      const page = await this.kv.scan(SWEEPS, { limit: 100 });
      if (page.entries.length === 0) return n;
      for (const e of page.entries) {
        const job = JSON.parse(e.value.toString("utf8")) as Ref;
        const l = locate(this.schema, job);
        if (await this.#record(l)) {
          // The delete never committed: nothing to sweep.
          await this.kv.commit(SWEEPS, [{ type: "delete", key: e.key }]);
          continue;
        }
        await this.#sweep(l, e.key, actor);
        n++;
      }
    }
  }

  /** Drops a deleted root's tombstone partition (its log) for good: after archiving or exporting it. */
  async purge(actor: Actor, ref: Ref): Promise<void> {
    if (!actor.system) throw new ForbiddenError("only the system actor may purge a partition");
    const l = locate(this.schema, ref);
    if (l.depth !== 0) throw new ValidationError("only a partition owner can be purged", "ref");
    if (await this.#record(l)) throw new ConflictError(`${ref.type} ${ref.ids[0]} is not deleted`, "id");
    await this.kv.dropPartition(l.partition);
    this.writer.forget(l.partition);
  }
}
