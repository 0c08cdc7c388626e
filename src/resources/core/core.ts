/**
 * What every part of the resource store shares: the kv, the schema, the partition writer, the record and
 * access encodings, the page limit, and the ONE permission/not-found check every operation goes through.
 */
import { ForbiddenError, NotFoundError, ValidationError } from "../../errors.js";
import type { Key, KvStore } from "../../kv/contract.js";
import { allows, type Actor, type Permissions } from "../../access/actor.js";
import { GlobalPermissions, type IdentityDirectory } from "../../access/global.js";
import { IntentRegistry } from "../../access/intents.js";
import { INDEX_VERBS } from "../model/events.js";
import { PAGE_LIMIT, type ListSequence } from "../model/wire.js";
import { layout } from "../model/layout.js";
import { closingBrace } from "../model/page-json.js";
import { encodeRecord, RecordView, type Envelope, type Private } from "../model/record.js";
import { locate, parentRef, pathOf, type Located, type Ref } from "../model/ref.js";
import type { CompiledType, Schema } from "../model/schema.js";
import { listersOf, statusOf } from "../indexes/visibility.js";
import { PartitionWriter, type Clock, type Tx } from "../log/writer.js";
import { Subjects } from "../personal/subjects.js";

export const MAX_PAGE = PAGE_LIMIT.max;

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface PageOptions {
  cursor?: string | null;
  limit?: number;
  /** Each item carries `allowedIntents`: the intents the caller holds on it (what a UI shows buttons for). */
  allowedIntents?: boolean;
  /** An ordered collection's effective order: its own (default), or its declared `closedFirst` option. */
  sequence?: ListSequence;
}

/** The intents of a type the actor holds, given the resource's permissions (every one for the system actor). */
export function allowedIntents(t: CompiledType, permissions: Permissions | undefined, actor: Actor): string[] {
  return t.intents.all.filter((i) => allows(permissions, actor, i));
}

/** A resource's public JSON with `allowedIntents` added as its last member. */
export function withAllowedIntents(json: Buffer, intents: readonly string[] | Buffer): Buffer {
  return Buffer.concat([json.subarray(0, closingBrace(json)), Buffer.isBuffer(intents) ? intents : allowedIntentsTail(intents)]);
}

/** What `withAllowedIntents` puts in place of the closing brace: a list of many items reuses one per distinct entry. */
export const allowedIntentsTail = (intents: readonly string[]): Buffer => Buffer.from(`,"allowedIntents":${JSON.stringify(intents)}}`);

/**
 * `allowedIntentsTail` per (type, actor, access entry bytes), kept for the process: the tail is a function
 * of those three alone (the stored bytes, not a version, are the key, so no write can leave it stale),
 * so a GET or a list of a resource an actor has read before neither parses the access entry nor judges
 * its intents again. An actor's entries are found by the entry's length, then compared byte for byte
 * (no string made of the bytes). Bounded in memory: 8 entries per (actor, type, length), the newest kept,
 * and the whole emptied when its entries' bytes pass `IntentTails.BUDGET` or it holds 1,024 actors
 * (permission maps of different lengths would otherwise add entries without end).
 */
export class IntentTails {
  /** The bytes (access entries and tails) held at the most before the whole is emptied: 8 MiB. */
  static readonly BUDGET = 8 * 1024 * 1024;
  readonly #byActor = new Map<string, Map<string, Map<number, { raw: Buffer; tail: Buffer }[]>>>();
  #bytes = 0;

  /** The bytes held now (for tests of the bound). */
  get bytes(): number {
    return this.#bytes;
  }

  tail(t: CompiledType, raw: Buffer | undefined, actor: Actor): Buffer {
    const who = actor.system ? "s" : actor.groups.length === 0 ? `u${actor.id}` : `u${actor.id}\u0000${actor.groups.join("\u0000")}`;
    const bytes = raw ?? EMPTY;
    let types = this.#byActor.get(who);
    if (!types) {
      if (this.#byActor.size >= 1024) this.#clear();
      this.#byActor.set(who, (types = new Map()));
    }
    let lengths = types.get(t.name);
    if (!lengths) types.set(t.name, (lengths = new Map()));
    let known = lengths.get(bytes.length);
    if (!known) lengths.set(bytes.length, (known = []));
    for (const k of known) if (k.raw.equals(bytes)) return k.tail;
    const tail = allowedIntentsTail(allowedIntents(t, permissionsOf(raw), actor));
    // Over the budget, the whole is emptied before the new entry is kept (a hit never empties it); an
    // entry larger than the whole budget is not kept.
    const size = bytes.length + tail.length;
    if (this.#bytes + size > IntentTails.BUDGET) {
      this.#clear();
      if (size > IntentTails.BUDGET) return tail;
      this.#byActor.set(who, (types = new Map()));
      types.set(t.name, (lengths = new Map()));
      lengths.set(bytes.length, (known = []));
    }
    if (known.length >= 8) {
      const dropped = known.shift()!;
      this.#bytes -= dropped.raw.length + dropped.tail.length;
    }
    known.push({ raw: Buffer.from(bytes), tail });
    this.#bytes += size;
    return tail;
  }

  /**
   * `tail` of each of `raws` (the access entries of a list's items): an entry with the bytes of the one
   * before it (siblings mostly share their inherited permissions) takes its tail with one comparison.
   */
  tails(t: CompiledType, raws: readonly (Buffer | undefined)[], actor: Actor): Buffer[] {
    const out = new Array<Buffer>(raws.length);
    let last: { raw: Buffer | undefined; tail: Buffer } | undefined;
    for (let i = 0; i < raws.length; i++) {
      const raw = raws[i];
      if (!last || (raw === undefined ? last.raw !== undefined : last.raw === undefined || !last.raw.equals(raw))) last = { raw, tail: this.tail(t, raw, actor) };
      out[i] = last.tail;
    }
    return out;
  }

  #clear(): void {
    this.#byActor.clear();
    this.#bytes = 0;
  }
}
const EMPTY = Buffer.alloc(0);

/** The permissions in an access entry's bytes. */
export const permissionsOf = (raw: Buffer | undefined): Permissions => decodeAccess(raw).permissions;

export function pageLimit(limit: number | undefined, dflt: number = PAGE_LIMIT.default): number {
  const n = limit ?? dflt;
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_PAGE) throw new ValidationError(`limit must be between 1 and ${MAX_PAGE}`, "limit");
  return n;
}

/** The record of a resource: its envelope behind a header with its status and the holders of list and view. */
export function encodeResource(t: CompiledType, envelope: Envelope, permissions: Permissions, holders: RecordHolders = recordHolders(t, permissions)): Buffer {
  return encodeRecord(envelope, statusOf(t, envelope.data), holders.listers, holders.viewers);
}

/** The identities a record's header names: those that may list it, and those that may view it. */
export interface RecordHolders {
  readonly listers: readonly string[];
  readonly viewers: readonly string[];
}

/** A record's holders (its header's part), from its type and permissions: `encodeResource` takes them when a caller has them already. */
export const recordHolders = (t: CompiledType, permissions: Permissions): RecordHolders => ({ listers: listersOf(t, permissions), viewers: permissions[t.intents.view] ?? [] });

/** An access record's JSON (`encodeAccess` is its bytes). */
export const accessJson = (priv: Private): string => JSON.stringify(priv);
export const encodeAccess = (priv: Private): Buffer => Buffer.from(accessJson(priv), "utf8");
export const decodeAccess = (raw: Buffer | undefined): Private => (raw ? (JSON.parse(raw.toString("utf8")) as Private) : { permissions: {} });

const notFound = (ref: Ref): NotFoundError => new NotFoundError(`${ref.type} ${ref.ids.join("/")} not found`);

/** Reads one key of the located resource's partition (through a transaction, or from the kv as of now). */
export type ReadKey = (key: Key) => Promise<Buffer | undefined>;

export interface Authorized {
  readonly view: RecordView;
  /** The access entry; read unless the check was the view intent's (answered by the record's header). */
  readonly access: Private | null;
}

export interface CoreOptions {
  clock?: Clock;
  /** Cache rendered ordered-list pages per partition head version (default on; false turns it off). */
  pageCache?: boolean;
  newId?: () => string;
  /** The global permissions to check (default: over the same store, registering the schema's root create intents). */
  global?: GlobalPermissions;
  /** Where grants look up their identity: granting to an unknown user or group is refused. */
  identities?: IdentityDirectory;
}

export class Core {
  readonly writer: PartitionWriter;
  readonly global: GlobalPermissions;
  readonly identities: IdentityDirectory | undefined;
  /** The data subjects' keys: personal fields sealed on write, opened on read (personal/subjects.ts). */
  readonly subjects: Subjects;
  /** Each actor's `allowedIntents` per access entry, as answers carry them. */
  readonly intentTails = new IntentTails();

  constructor(
    readonly kv: KvStore,
    readonly schema: Schema,
    readonly newId: () => string,
    options: CoreOptions,
  ) {
    this.writer = new PartitionWriter(kv, options.clock ?? Date.now);
    this.subjects = new Subjects(kv, options.clock ?? Date.now, (type) => schema.types.get(type)?.decl.personal);
    this.identities = options.identities;
    this.global = options.global ?? new GlobalPermissions(kv, { intents: new IntentRegistry(schema.globalIntents), identities: options.identities });
  }

  /**
   * The one permission/not-found check: the resource's record, or NotFoundError; the actor's `intent` on
   * it, or a refusal. The view intent's holders are in the record's header, so the common read needs
   * no access read and no JSON parse; `withAccess` reads the access entry anyway (a write needs it).
   * `state` is the record when the caller has read it already, and `access` the access entry decoded (a
   * write's check of a parent it has decoded before, writes.ts); a null `intent` checks existence alone.
   *
   * Existence is no oracle (docs/security.md, "Existence"): a refused caller that does not know of the
   * resource gets the same NotFoundError as for one that does not exist; one that knows of it gets
   * ForbiddenError (see `#knowsOf`).
   */
  async authorize(
    read: ReadKey,
    l: Located,
    actor: Actor,
    intent: string | null,
    options: { withAccess?: boolean; state?: Buffer | undefined; access?: Private } = {},
  ): Promise<Authorized> {
    const raw = "state" in options ? options.state : await read(layout.state(l));
    if (!raw) throw notFound(l.ref);
    const view = new RecordView(raw);
    const headerOnly = (intent === null || intent === l.type.intents.view) && !options.withAccess;
    const access = headerOnly ? null : (options.access ?? decodeAccess(await read(layout.access(l))));
    // A null intent: the caller decides who may (a domain rule, e.g. TruBudget's close); the resource need only exist.
    if (intent === null || (access ? allows(access.permissions, actor, intent) : view.viewableBy(actor))) return { view, access };
    throw (await this.#knowsOf(read, l, actor, view, access)) ? new ForbiddenError(`${actor.id} lacks the intent ${intent}`) : notFound(l.ref);
  }

  /**
   * `authorize`'s check of the view intent answered by the record's header alone, synchronously: the
   * record when the actor may view it, else null (absent or refused: `authorize` then tells not found
   * from forbidden, which may need reads). The read fast path.
   */
  viewable(raw: Buffer | undefined, actor: Actor): RecordView | null {
    if (!raw) return null;
    const view = new RecordView(raw);
    return view.viewableBy(actor) ? view : null;
  }

  /**
   * Whether a caller knows of a resource: it holds an intent on it (its list or view intent, which the
   * record's header holds, or any other), or it may view the resource's parent, whose lists show the
   * resource redacted in its place. Only a refusal asks, so the hot path never pays for it.
   */
  async #knowsOf(read: ReadKey, l: Located, actor: Actor, view: RecordView, access: Private | null): Promise<boolean> {
    if (view.visibleTo(actor)) return true;
    const priv = access ?? decodeAccess(await read(layout.access(l)));
    if (Object.keys(priv.permissions).some((intent) => allows(priv.permissions, actor, intent))) return true;
    if (l.type.decl.parent === null) return false;
    // A nested resource's parent is in its partition; a flat one's is named by its access record.
    const nested = parentRef(this.schema, l.ref);
    const parent = nested ?? priv.parent;
    if (!parent) return false;
    const pl = locate(this.schema, parent);
    const state = await (nested ? read : this.reader(pl))(layout.state(pl));
    return state !== undefined && new RecordView(state).viewableBy(actor);
  }

  /** Reads keys of a resource's partition as they are now. */
  reader(l: Located): ReadKey {
    return async (key) => (await this.kv.get(l.partition, key))?.value;
  }

  async record(l: Located): Promise<RecordView | undefined> {
    const e = await this.kv.get(l.partition, layout.state(l));
    return e ? new RecordView(e.value) : undefined;
  }

  /** Removes a flat child's entry from its parent's index (after a failed create, or a delete). */
  async unlinkFlat(pl: Located, childType: string, id: string, actor: Actor): Promise<void> {
    await this.writer.run(pl.partition, actor, async (tx) => {
      if (!(await tx.get(layout.flatChild(pl, childType, id)))) return;
      tx.delete(layout.flatChild(pl, childType, id));
      await countChild(tx, pl, childType, -1);
      tx.append(`${pl.type.name}.${INDEX_VERBS.removed}`, pathOf(pl), { childType, id }, (seq) => layout.historyEntry(pl, seq));
    });
  }
}

/** Reads a parent's count of its flat children of one type (0 when it keeps none). */
export async function childCount(read: ReadKey, pl: Located, childType: string): Promise<number> {
  const raw = await read(layout.childCount(pl, childType));
  return raw ? (JSON.parse(raw.toString("utf8")) as number) : 0;
}

/**
 * Moves a parent's count of a `counted` flat child type by one, in the commit that adds or removes the
 * child's index entry (the count is absent at 0). Other child types keep no count.
 */
export async function countChild(tx: Tx, pl: Located, childType: string, delta: 1 | -1): Promise<void> {
  if (!pl.type.countedChildren.includes(childType)) return;
  const n = (await childCount((key) => tx.get(key), pl, childType)) + delta;
  if (n > 0) tx.put(layout.childCount(pl, childType), Buffer.from(JSON.stringify(n)));
  else tx.delete(layout.childCount(pl, childType));
}
