/**
 * Lists of roots through the index of visible roots (visibility.ts), and server-side search and sort of
 * a type's lists (its declared `query`).
 *
 * - The plain list of roots for a caller (not the system actor) merges the index ranges of the caller
 *   and its groups from the cursor on: a page costs `limit + 1` index entries per identity and one
 *   point read per root listed, however many roots the caller may not see.
 * - A search or sort reads the caller's rows (for roots: its identities' index entries; for nested
 *   children: the parent's children), filters them with the type's search predicate and orders them by
 *   (sort key, id). Rows of resources the caller may not view are redacted (id, createdAt, status), so
 *   neither the filter nor the order reveals a hidden field. The cursor is the last row's (sort key, id):
 *   a page continues after it whatever was created or deleted meanwhile, and it is bound to its sort.
 */
import { ValidationError } from "../../errors.js";
import { cursorBytes, cursorOf, scanAll, allPartitions, type Entry } from "../../kv/contract.js";
import type { Actor } from "../../access/actor.js";
import { flatChildRecords } from "./context.js";
import { pageLimit, type Core, type Page } from "../core/core.js";
import { layout } from "../model/layout.js";
import { RecordView, redactedJson } from "../model/record.js";
import { locate, type Ref } from "../model/ref.js";
import type { CompiledType, ListRow } from "../model/schema.js";
import { rowOf, rowOfEntry } from "../indexes/visibility.js";

export type SortOrder = "asc" | "desc";

export interface ListQuery {
  /** Search text, in the type's syntax (its `query.search`). */
  search?: string;
  /** One of the type's `query.sort` fields. */
  sort?: string;
  order?: SortOrder;
  cursor?: string | null;
  limit?: number;
  /** Each item carries `allowedIntents` (as PageOptions). */
  allowedIntents?: boolean;
}

/** The most characters a search text may hold (the routes' query schema derives from it). */
export const SEARCH_MAX = 500;

/** The order of a query that names no sort. */
export const DEFAULT_SORT = "createdAt";

/** The public JSON of a listed resource: whole for a viewer (a view of the record's bytes), redacted (id, status, createdAt) otherwise. */
export function listedJson(actor: Actor, t: CompiledType, view: RecordView): Buffer {
  if (view.viewableBy(actor)) return view.publicBytes();
  return Buffer.from(redactedJson(t.name, view, t.decl.statusField));
}

const redactedRow = (view: RecordView): ListRow => ({ id: view.id, createdAt: new Date(view.createdAtMs).toISOString(), status: view.status, data: {} });

/** An id as a reader orders it: case-insensitively, and runs of digits by their value (item-2 before item-10). */
const naturalKey = (id: string): string => id.toLowerCase().replace(/\d+/g, (digits) => digits.replace(/^0+(?=\d)/, "").padStart(24, "0"));

/**
 * The key a row is sorted by: text compares case-insensitively, a list by its joined items, an absent
 * field first; `id` (when a type declares it sortable) in natural order.
 */
function sortKey(row: ListRow, sort: string): string {
  if (sort === "id") return naturalKey(row.id);
  const v = sort === "createdAt" ? row.createdAt : sort === "status" ? row.status : row.data[sort];
  if (v === undefined || v === null) return "";
  return (Array.isArray(v) ? v.join("\u0000") : String(v)).toLowerCase();
}

interface Keyed {
  key: string;
  id: string;
}

const compare = (a: Keyed, b: Keyed): number => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

function encodeCursor(sort: string, order: SortOrder, last: Keyed): string {
  return cursorOf(Buffer.from(JSON.stringify([sort, order, last.key, last.id]), "utf8"));
}

function decodeCursor(cursor: string, sort: string, order: SortOrder): Keyed {
  let parsed: unknown;
  try {
    parsed = JSON.parse(cursorBytes(cursor).toString("utf8"));
  } catch {
    throw new ValidationError("invalid cursor", "cursor");
  }
  if (!Array.isArray(parsed) || parsed.length !== 4 || !parsed.every((x) => typeof x === "string")) throw new ValidationError("invalid cursor", "cursor");
  const [s, o, key, id] = parsed as string[];
  if (s !== sort || o !== order) throw new ValidationError(`the cursor belongs to a list sorted by ${s} ${o}, not ${sort} ${order}`, "cursor");
  return { key: key!, id: id! };
}

/** At most this many callers' sorted lists are kept per store. */
const SORTED_CACHE_MAX = 256;

/** A row to list, its sort key, and its record when already read. */
interface Candidate extends Keyed {
  readonly row: ListRow;
  readonly view: RecordView | null;
}

/** Candidates in ascending (sort key, id) order. */
function sortCandidates(rows: readonly { row: ListRow; view: RecordView | null }[], sort: string): Candidate[] {
  return rows.map((r) => ({ row: r.row, view: r.view, key: sortKey(r.row, sort), id: r.row.id })).sort(compare);
}

/** At most this many index rows are kept parsed per store (about 200 bytes each). */
const ROW_CACHE_MAX = 500_000;

/** A root id cursor of the plain list (the last id listed). */
const idCursor = (id: string): string => cursorOf(Buffer.from(id, "utf8"));

export class Queries {
  /** Parsed index rows by root type and identity, with the version they were read at (least recently used first). */
  /** Sorted candidates by root type, sort and caller's identities, with the index versions they were sorted at. */
  readonly #sortedCache = new Map<string, { versions: string; sorted: readonly Candidate[] }>();
  readonly #rowCache = new Map<string, { version: number; rows: { row: ListRow; view: boolean }[] }>();
  #cachedRows = 0;

  constructor(private readonly c: Core) {}

  /** The identities whose index entries make up a caller's roots. */
  #identities(actor: Actor): string[] {
    return [...new Set([actor.id, ...actor.groups])];
  }

  /** The plain list of the roots a caller may list, in id order, through the index (not for the system actor). */
  async visibleRoots(actor: Actor, t: CompiledType, cursor: string | null, limit: number): Promise<Page<Buffer>> {
    const after = cursor ? cursorBytes(cursor).toString("utf8") : null;
    const range = after === null ? { prefix: layout.visibleRoots(t.name) } : { start: layout.visibleRoot(t.name, after), end: [...layout.visibleRoots(t.name), true] };
    const pages = await Promise.all(this.#identities(actor).map((identity) => this.c.kv.scan(layout.visible(identity), { ...range, limit: limit + 1 })));
    const ids = new Set<string>();
    for (const p of pages) for (const e of p.entries) ids.add(layout.idOfVisible(e.key));
    const sorted = [...ids].filter((id) => after === null || id > after).sort();
    const more = sorted.length > limit || pages.some((p) => p.cursor !== null);
    const chosen = sorted.slice(0, limit);
    const views = await this.#roots(t, chosen);
    const items = views.filter((v) => v !== null && v.visibleTo(actor)).map((v) => listedJson(actor, t, v!));
    return { items, nextCursor: more && chosen.length > 0 ? idCursor(chosen.at(-1)!) : null };
  }

  /** The records of roots by id (null for one gone). */
  async #roots(t: CompiledType, ids: readonly string[]): Promise<(RecordView | null)[]> {
    const entries = await Promise.all(ids.map((id) => this.c.kv.get(locate(this.c.schema, { type: t.name, ids: [id] }).partition, layout.ownerState)));
    return entries.map((e) => (e ? RecordView.listable(e.value, `${t.name} list`) : null));
  }

  /** A searched and sorted page of a type's resources under `parent` (null for roots). */
  async query(actor: Actor, parent: Ref | null, childType: string, q: ListQuery, readable: (actor: Actor, ref: Ref) => Promise<unknown>): Promise<Page<Buffer>> {
    const t = this.c.schema.type(childType);
    const decl = t.decl.query;
    if (!decl) throw new ValidationError(`a list of ${childType} cannot be searched or sorted`, q.search !== undefined ? "search" : "sort");
    const sort = q.sort ?? DEFAULT_SORT;
    if (!decl.sort.includes(sort)) throw new ValidationError(`sort must be one of ${decl.sort.join(", ")}`, "sort");
    const order: SortOrder = q.order ?? "asc";
    if (order !== "asc" && order !== "desc") throw new ValidationError("order must be asc or desc", "order");
    const limit = pageLimit(q.limit);
    const after = q.cursor ? decodeCursor(q.cursor, sort, order) : null;
    if (q.search !== undefined && (typeof q.search !== "string" || q.search.length > SEARCH_MAX))
      throw new ValidationError(`search must be text of at most ${SEARCH_MAX} characters`, "search");
    const match = q.search !== undefined && q.search.trim() !== "" ? decl.search(q.search) : null;

    // The candidates in ascending (sort key, id) order, each with its record when already read (nested
    // children) or to read (roots, through the index: the sorted rows are cached while the index is unchanged).
    let sorted: readonly Candidate[];
    if (t.decl.parent === null) {
      if (parent !== null) throw new ValidationError(`${childType} is a root type and has no parent`, "parent");
      sorted = actor.system ? sortCandidates(await this.#allRoots(t), sort) : await this.#sortedIndexed(actor, t, sort);
    } else {
      if (!parent || parent.type !== t.decl.parent) throw new ValidationError(`${childType} is listed under a ${t.decl.parent}`, "parent");
      await readable(actor, parent);
      const rows = (await this.#children(parent, t)).map((view) => ({ row: view.viewableBy(actor) ? rowOf(t, view.envelope(), true) : redactedRow(view), view }));
      sorted = sortCandidates(rows, sort);
    }
    // Walk from the cursor's place (a binary search) in the asked order, keeping matches until one past the page.
    const asc = order === "asc";
    let i = 0;
    if (after) {
      let lo = 0;
      let hi = sorted.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (compare(sorted[mid]!, after) <= 0) lo = mid + 1;
        else hi = mid;
      }
      // asc: the first after the cursor; desc: the last before it.
      i = asc ? lo : lo - 1;
      if (!asc && lo > 0 && compare(sorted[lo - 1]!, after) === 0) i = lo - 2;
    } else if (!asc) i = sorted.length - 1;
    const chosen: Candidate[] = [];
    let more = false;
    for (; asc ? i < sorted.length : i >= 0; i += asc ? 1 : -1) {
      const c = sorted[i]!;
      if (match !== null && !match(c.row)) continue;
      if (chosen.length === limit) {
        more = true;
        break;
      }
      chosen.push(c);
    }
    const nextCursor = more ? encodeCursor(sort, order, chosen.at(-1)!) : null;
    const missing = chosen.filter((c) => c.view === null).map((c) => c.id);
    const read = new Map<string, RecordView | null>();
    if (missing.length > 0) (await this.#roots(t, missing)).forEach((v, i) => read.set(missing[i]!, v));
    const items: Buffer[] = [];
    for (const c of chosen) {
      const view = c.view ?? read.get(c.id) ?? null;
      // An index entry a crash left behind is checked against the record's own header.
      if (view && view.visibleTo(actor)) items.push(listedJson(actor, t, view));
    }
    return { items, nextCursor };
  }

  /**
   * The roots a caller may list, sorted ascending by (sort key, id), from its identities' index entries
   * (a row is whole when one of them may view). Cached per caller's identities and sort while the
   * versions of those identities' indexes are unchanged: a repeated search re-sorts nothing.
   */
  async #sortedIndexed(actor: Actor, t: CompiledType, sort: string): Promise<readonly Candidate[]> {
    const identities = this.#identities(actor);
    const lists = await Promise.all(identities.map((identity) => this.#rowsOf(identity, t)));
    const key = [t.name, sort, ...identities].join("\u0000");
    const versions = lists.map((l) => l.version).join(",");
    const hit = this.#sortedCache.get(key);
    if (hit && hit.versions === versions) return hit.sorted;
    const rows = new Map<string, { row: ListRow; view: boolean }>();
    for (const list of lists) {
      for (const r of list.rows) {
        const seen = rows.get(r.row.id);
        if (!seen || (!seen.view && r.view)) rows.set(r.row.id, r);
      }
    }
    const sorted = sortCandidates(
      [...rows.values()].map((r) => ({ row: r.row, view: null })),
      sort,
    );
    this.#sortedCache.delete(key);
    this.#sortedCache.set(key, { versions, sorted });
    if (this.#sortedCache.size > SORTED_CACHE_MAX) this.#sortedCache.delete(this.#sortedCache.keys().next().value!);
    return sorted;
  }

  /**
   * One identity's parsed rows of a root type, cached by the version of its index's version key (every
   * index commit puts it): an unchanged index costs one point read, whoever changed it last.
   */
  async #rowsOf(identity: string, t: CompiledType): Promise<{ version: number; rows: readonly { row: ListRow; view: boolean }[] }> {
    const partition = layout.visible(identity);
    const version = (await this.c.kv.get(partition, layout.visibleVersion))?.version ?? 0;
    const key = `${t.name}\u0000${identity}`;
    const cached = this.#rowCache.get(key);
    if (cached && cached.version === version) {
      this.#rowCache.delete(key); // most recently used last
      this.#rowCache.set(key, cached);
      return cached;
    }
    const rows: { row: ListRow; view: boolean }[] = [];
    for await (const e of scanAll(this.c.kv, partition, { prefix: layout.visibleRoots(t.name), limit: 5000 })) rows.push(rowOfEntry(layout.idOfVisible(e.key), e.value));
    this.#rowCache.delete(key);
    this.#rowCache.set(key, { version, rows });
    this.#cachedRows += rows.length - (cached?.rows.length ?? 0);
    for (const [k, v] of this.#rowCache) {
      if (this.#cachedRows <= ROW_CACHE_MAX) break;
      this.#rowCache.delete(k);
      this.#cachedRows -= v.rows.length;
    }
    return { version, rows };
  }

  /** Every root of a type, read from its records (the system actor's search: it sees them all). */
  async #allRoots(t: CompiledType): Promise<{ row: ListRow; view: RecordView }[]> {
    const out: { row: ListRow; view: RecordView }[] = [];
    for await (const p of allPartitions(this.c.kv, t.name)) {
      const e = await this.c.kv.get(p, layout.ownerState);
      const view = e ? RecordView.listable(e.value, `${t.name} list`) : null;
      if (view) out.push({ row: rowOf(t, view.envelope(), true), view });
    }
    return out;
  }

  /** Every child of a type under a parent (nested: one range; flat: its index and their records). */
  async #children(parent: Ref, t: CompiledType): Promise<RecordView[]> {
    const l = locate(this.c.schema, parent);
    if (t.decl.idStyle === "flat") {
      const ids: string[] = [];
      for await (const e of scanAll(this.c.kv, l.partition, { prefix: layout.flatChildren(l, t.name), limit: 5000 })) ids.push(layout.flatChildOf(e.key).id);
      return flatChildRecords(this.c.kv, l, t.name, ids);
    }
    const entries: Entry[] = [];
    for await (const e of scanAll(this.c.kv, l.partition, { prefix: layout.children(l, t.name), limit: 5000 })) entries.push(e);
    return entries.map((e) => RecordView.listable(e.value, `${t.name} list`)).filter((v) => v !== null);
  }
}
