/**
 * The audit trail: a resource's history (its index into the partition's log), the resource as it was at
 * a time (a replay of its history), and verification of a partition: its hash chain, its anchor in the
 * ledger, and every stored key against the replay of the log.
 */
import { ValidationError } from "../../errors.js";
import { type Entry, scanAll, scanEach, type Key, type Partition } from "../../kv/contract.js";
import { decode, encode, encodeLatin1 } from "../../kv/tuple.js";
import { allows, type Actor, type Permissions } from "../../access/actor.js";
import { pageLimit, MAX_PAGE, type Core, type Page } from "../core/core.js";
import { renderChanges } from "../model/diff.js";
import { fold, linkOf, type ResourceEvent, type VerifyResult } from "../model/events.js";
import { layout } from "../model/layout.js";
import { RecordView, type Envelope } from "../model/record.js";
import { indexEntries } from "../indexes/visibility.js";
import { locate, type Ref } from "../model/ref.js";
import type { CompiledType } from "../model/schema.js";
import { KeyTable } from "./key-table.js";
import { PartitionReplay, ReplayError, sameAsReplayed, valueOf, type ReplayedEntry, type ReplayedValue } from "./replay.js";

export interface HistoryOptions {
  cursor?: string | null;
  limit?: number;
  reverse?: boolean;
  /** Only events of this actor (TruBudget's `publisher`). */
  publisher?: string;
  /** Only events at or after this time (ISO 8601). */
  since?: string;
  /** Only events at or before this time (ISO 8601). */
  until?: string;
  /** Only events of this type (`<resourceType>.<verb>`). */
  type?: string;
  /**
   * Every event that changed the resource's data with its field-level diff (`payload.changes`): events
   * written since diffs are recorded carry theirs; an older one gets it rendered from a replay of the
   * resource's history (diff.ts renderChanges).
   */
  diff?: boolean;
}

function timeOf(value: string | undefined, field: string): number | null {
  if (value === undefined) return null;
  const t = Date.parse(value);
  if (Number.isNaN(t)) throw new ValidationError(`${field} must be an ISO 8601 date-time`, field);
  return t;
}

/** The event filter of a history read (TruBudget's history filter: publisher, time range, event type), or null for none. */
function historyFilter(o: HistoryOptions): ((e: ResourceEvent) => boolean) | null {
  const since = timeOf(o.since, "since");
  const until = timeOf(o.until, "until");
  if (since !== null && until !== null && since > until) throw new ValidationError("since must not be after until", "since");
  if (o.publisher === undefined && o.type === undefined && since === null && until === null) return null;
  return (e) => {
    if (o.publisher !== undefined && e.actor !== o.publisher) return false;
    if (o.type !== undefined && e.type !== o.type) return false;
    const at = Date.parse(e.at);
    return (since === null || at >= since) && (until === null || at <= until);
  };
}

/** A grant or a revoke: shown only to those who may list the resource's permissions. */
/** In the bytes of every event that may hold what only a permission lister sees (a `permissions` map, a `…permission_granted` type). */
const PERMISSION = Buffer.from("permission", "latin1");

/** Whether a resource's record names a data subject (only then may its state and events hold sealed personal data). */
function namesSubject(t: CompiledType, state: Buffer): boolean {
  const subject = t.decl.personal?.subject;
  if (subject === undefined) return false;
  const named = new RecordView(state).envelope().data[subject];
  return typeof named === "string";
}

/** An event that changed the data (a patch) without the diff diffs are recorded with now: written before they were. */
function lacksChanges(e: ResourceEvent): boolean {
  return e.payload.data !== undefined && e.payload.changes === undefined && !e.type.endsWith(".created");
}

function isPermissionChange(e: ResourceEvent): boolean {
  const verb = e.type.slice(e.type.lastIndexOf(".") + 1);
  return verb === "permission_granted" || verb === "permission_revoked";
}

export interface VerifyOptions {
  /** A head kept earlier (a checkpoint's): the log must still hold this hash at this seq. */
  since?: { seq: number; hash: string | null };
  /** With `since`: check the chain from it on only, and not the stored keys (a fast periodic check). */
  incremental?: boolean;
}

/** A verify's result, with the chain head it verified when it succeeded (what an incremental verify starts from next time). */
export type Verified = VerifyResult & { readonly head?: { readonly seq: number; readonly hash: string | null } };

/** The audit trail of a store (ResourceStore.audit): history, as-of reads, verification. */
export class Audit {
  constructor(private readonly core: Core) {}

  /**
   * The seq of the resource's newest event (its history index's last entry), or null when it has none:
   * one entry read, no event parsed and no permission asked (a follower of the system's own, telling
   * whether anything was written to the resource since an event it takes in).
   */
  async newestSeq(ref: Ref): Promise<number | null> {
    const l = locate(this.core.schema, ref);
    const { entries } = await this.core.kv.scan(l.partition, { prefix: layout.history(l), limit: 1, reverse: true });
    return entries[0] ? layout.seqOfHistoryBytes(l)(entries[0].keyBytes) : null;
  }

  /**
   * One range read of the history index, whose entries carry their events (an entry written before they
   * did is read from the log, in one batched read per page). The system actor also reads a deleted resource's.
   */
  async history(actor: Actor, ref: Ref, options: HistoryOptions = {}): Promise<Page<ResourceEvent>> {
    return (await this.#history(actor, ref, options, false)) as Page<ResourceEvent>;
  }

  /**
   * `history` as the stored event bytes, for a response that joins them (the HTTP route): an event is
   * parsed only when a filter is asked or it may hold what the caller may not see (its bytes name a
   * permission and the caller may not list permissions); every other is served as stored.
   */
  async historyJson(actor: Actor, ref: Ref, options: HistoryOptions = {}): Promise<{ items: Buffer[]; nextCursor: string | null }> {
    return (await this.#history(actor, ref, options, true)) as { items: Buffer[]; nextCursor: string | null };
  }

  async #history(actor: Actor, ref: Ref, options: HistoryOptions, bytes: boolean): Promise<{ items: (ResourceEvent | Buffer)[]; nextCursor: string | null }> {
    const { kv } = this.core;
    const l = locate(this.core.schema, ref);
    const read = this.core.reader(l);
    const state = await read(layout.state(l));
    const { access } = state || !actor.system ? await this.core.authorize(read, l, actor, l.type.intents.history, { state, withAccess: true }) : { access: undefined };
    const limit = pageLimit(options.limit);
    // Permission maps and grant events are shown to those who may list the resource's permissions only,
    // as the change feed shows them (eventFor; issue 29, finding 6).
    const seesPermissions = actor.system === true || allows(access?.permissions, actor, l.type.intents.listPermissions);
    const asked = historyFilter(options);
    const keep = seesPermissions ? asked : (e: ResourceEvent) => !isPermissionChange(e) && (asked === null || asked(e));
    const shown = (e: ResourceEvent): ResourceEvent => {
      if (seesPermissions || e.payload.permissions === undefined) return e;
      const { permissions: _, ...payload } = e.payload;
      return { ...e, payload };
    };
    // As stored, unparsed: no filter asked, and nothing to hide (the caller sees permissions, or the
    // event's bytes do not name one: a permission map and a grant or revoke event both do).
    const asStored = (raw: Buffer): boolean => bytes && asked === null && options.diff !== true && (seesPermissions || raw.indexOf(PERMISSION) < 0);
    const parsed: ResourceEvent[] = [];
    // Unfiltered: one page of the index. Filtered: index pages are read on until the page is full or the
    // history ends; the cursor stays a position in the index, so paging on continues after the last read.
    const items: (ResourceEvent | Buffer)[] = [];
    let cursor = options.cursor ?? null;
    const seqOf = layout.seqOfHistoryBytes(l);
    // The events of a page of the index: each entry's own bytes, or (empty: written before entries
    // carried them) the log's, read in one batch.
    const eventsOf = async (entries: readonly Entry[]): Promise<(Buffer | undefined)[]> => {
      const events: (Buffer | undefined)[] = entries.map((e) => e.value);
      const older: number[] = [];
      for (let i = 0; i < entries.length; i++) if (entries[i]!.value.length === 0) older.push(i);
      if (older.length === 0) return events;
      const logs = await kv.getMany(
        l.partition,
        older.map((i) => layout.log(seqOf(entries[i]!.keyBytes))),
      );
      older.forEach((i, j) => (events[i] = logs[j]?.value));
      return events;
    };
    do {
      const page = await kv.scan(l.partition, { prefix: layout.history(l), after: cursor, limit: limit - items.length, reverse: options.reverse === true });
      for (const raw of await eventsOf(page.entries)) {
        if (raw === undefined) continue;
        if (asStored(raw)) {
          items.push(raw);
          continue;
        }
        const event = JSON.parse(raw.toString("utf8")) as ResourceEvent;
        if (keep && !keep(event)) continue;
        if (options.diff === true) parsed.push(shown(event));
        else items.push(bytes ? Buffer.from(JSON.stringify(shown(event))) : shown(event));
      }
      cursor = page.cursor;
    } while (keep && cursor !== null && items.length + parsed.length < limit);
    if (options.diff === true) {
      const rendered = parsed.some(lacksChanges) ? renderChanges(await this.#wholeHistory(actor, ref), l.type.decl.keyedArrays) : null;
      for (const e of parsed) {
        const changes = lacksChanges(e) ? rendered?.get(e.seq) : undefined;
        const event = changes === undefined ? e : { ...e, payload: { ...e.payload, changes } };
        items.push(bytes ? Buffer.from(JSON.stringify(event)) : event);
      }
    }
    // Personal data is sealed in the events as in the state: opened here, or read as erased (personal/subjects.ts).
    // Only a resource that names a data subject holds any (its subject is set at creation and never
    // changes, so a record naming none had none in any event): the events of any other are served as read.
    if (state && !namesSubject(l.type, state)) return { items, nextCursor: cursor };
    const { subjects } = this.core;
    if (bytes) return { items: await subjects.openAll(items as Buffer[], () => ref), nextCursor: cursor };
    return { items: await subjects.openMany(items.map((e) => [ref, e] as const)), nextCursor: cursor };
  }

  /** Every event of a resource's history the actor may read, oldest first. */
  async #wholeHistory(actor: Actor, ref: Ref): Promise<ResourceEvent[]> {
    const events: ResourceEvent[] = [];
    let cursor: string | null = null;
    do {
      const page: Page<ResourceEvent> = await this.history(actor, ref, { cursor, limit: MAX_PAGE });
      events.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor !== null);
    return events;
  }

  /**
   * An event as the actor may read it over REST, or null: every event needs the resource's history
   * intent, a permission change its `intent.listPermissions`; a `created` event's permission map is
   * left out for those who may not list permissions. Null too when the resource is gone (as its
   * history answers 404), except for the system actor. Its personal data is opened as history opens it
   * (plain text, or ERASED_TEXT once the subject was erased), unless `sealed`: for a consumer that keeps
   * what it delivers (a subscription's dead letters), which opens it when it is read.
   */
  async eventFor(actor: Actor, event: ResourceEvent, options: { sealed?: boolean } = {}): Promise<ResourceEvent | null> {
    const visible = await this.#visibleEvent(actor, event);
    return visible === null || options.sealed === true ? visible : this.core.subjects.openEvent(visible);
  }

  async #visibleEvent(actor: Actor, event: ResourceEvent): Promise<ResourceEvent | null> {
    const last = event.path.at(-1);
    if (!last) return null;
    let l;
    try {
      l = locate(this.core.schema, { type: last.type, ids: event.path.map((p) => p.id) });
    } catch {
      return null; // a type of another schema
    }
    if (actor.system) return event;
    const { intents } = l.type;
    const intent = isPermissionChange(event) ? intents.listPermissions : intents.history;
    let access;
    try {
      ({ access } = await this.core.authorize(this.core.reader(l), l, actor, intent, { withAccess: true }));
    } catch {
      return null;
    }
    if (event.payload.permissions === undefined || allows(access?.permissions, actor, intents.listPermissions)) return event;
    const { permissions: _, ...payload } = event.payload;
    return { ...event, payload };
  }

  async asOf(actor: Actor, ref: Ref, time: Date | string): Promise<Envelope | null> {
    const at = new Date(time);
    if (Number.isNaN(at.getTime())) throw new ValidationError("time must be an ISO 8601 date-time", "time");
    const events = (await this.#wholeHistory(actor, ref)).filter((e) => Date.parse(e.at) <= at.getTime());
    const s = fold(events);
    if (!s || s.deleted) return null;
    return {
      id: ref.ids.at(-1)!,
      type: ref.type,
      data: s.data,
      meta: { createdAt: s.createdAt, createdBy: s.createdBy, updatedAt: s.updatedAt, version: s.version },
    };
  }

  /**
   * Verifies a partition: the hash chain of its log; the head, against the log and against the ledger
   * (a cut tail); then every other key, against the replay of the log (replay.ts), in key order. The
   * first divergence fails it: a stored key the replay does not produce (an unknown key, a stray index
   * entry), a key it produces that is missing, or a value that differs (an edited amount, a user added
   * to an access record). `since` (a head kept earlier, e.g. a checkpoint's) also requires the log to
   * hold that hash at that seq: history after it was not rewritten.
   */
  async verify(partition: Partition, options: VerifyOptions = {}): Promise<Verified> {
    const since = options.since;
    // Incremental: the chain is checked from the checkpoint on (its event included); the stored keys are not compared.
    const incremental = options.incremental === true && since !== undefined && since.seq > 0;
    let prev: string | null = null;
    let expected = incremental ? since.seq : 1;
    const replay = incremental ? null : new PartitionReplay(this.core.schema, partition);
    const bad = (seq: number, reason: string, family?: string, key?: Key): VerifyResult => ({
      ok: false,
      checked: expected - 1,
      firstBad: { seq, reason, ...(family ? { family } : {}), ...(key ? { key: JSON.stringify(key) } : {}) },
    });
    const range = incremental ? { start: layout.log(since.seq), end: layout.afterLogs } : { prefix: layout.logs };
    // Page by page, each page's events checked in one synchronous loop (no await per event), each read
    // as a view of the backend's buffer where it has them (nothing of an event's bytes is kept).
    let failed: VerifyResult | null = null;
    await scanEach(this.core.kv, partition, { ...range, limit: VERIFY_PAGE }, (keyBytes, value) => {
      let event: ResourceEvent;
      try {
        event = JSON.parse(value.toString("utf8")) as ResourceEvent;
      } catch {
        failed = bad(expected, "event is not valid JSON", "l");
        return false;
      }
      // The key is the expected one's (compared as bytes: no key is decoded on the way), or named as it is.
      const keySeq = keyBytes.equals(encode(layout.log(expected))) ? expected : layout.seqOfLog(decode(keyBytes));
      if (incremental && expected === since.seq) prev = event.prev; // the checkpoint's own event links to one not re-read
      const link = keySeq !== event.seq ? { reason: `stored under seq ${String(keySeq)} but says ${event.seq}`, bound: false } : linkOf(event, expected, prev, value);
      const reason = link.reason;
      if (reason) {
        failed = bad(expected, reason, "l");
        return false;
      }
      if (since && since.seq > 0 && event.seq === since.seq && event.hash !== since.hash) {
        failed = bad(event.seq, `event ${event.seq} differs from the checkpoint: history was rewritten`, "l");
        return false;
      }
      try {
        replay?.apply(event, value, link.bound);
      } catch (err) {
        if (err instanceof ReplayError) {
          failed = bad(event.seq, err.message, "l");
          return false;
        }
        throw err;
      }
      prev = event.hash;
      expected++;
      return true;
    });
    if (failed) return failed;
    const last = expected - 1;
    if (since && since.seq > last) return bad(last + 1, `the log ends at ${last}, before the checkpoint's seq ${since.seq}: its tail was cut`, "l");
    // A head or anchor record altered so it no longer parses is a divergence to name, not an error to throw.
    const head = await this.core.writer.readHead(partition).catch(() => null);
    if (head === null) return bad(last + 1, "the chain head record is unreadable", "m", layout.head);
    if (head.seq !== last || head.hash !== prev) return bad(last + 1, `chain head says seq ${head.seq}, the log ends at ${last}`, "m", layout.head);
    const anchor = await this.core.writer.readLedger(partition).catch(() => undefined);
    if (anchor === undefined) return bad(last + 1, "the ledger's anchor record is unreadable", "ledger");
    if (anchor && anchor.seq > last) return bad(last + 1, `the ledger anchors seq ${anchor.seq}, the log ends at ${last}: its tail was cut`, "ledger");
    if (anchor && anchor.seq > 0) {
      const at = await this.core.kv.get(partition, layout.log(anchor.seq));
      const hash = at ? (JSON.parse(at.value.toString("utf8")) as ResourceEvent).hash : null;
      if (hash !== anchor.hash) return bad(anchor.seq, `event ${anchor.seq} differs from the ledger's anchor: history was rewritten`, "ledger");
    }
    const verified = { seq: last, hash: prev };
    if (!replay) return { ok: true, checked: last - since!.seq + 1, head: verified };
    // The stored keys are first checked in one pass against the replay (`#matches`); only when they differ
    // is the first divergence in key order looked for (`#compare`), to name it.
    const keys = (await this.#matches(partition, replay.expected())) ? null : ((await this.#compare(partition, replay.byKey())) ?? CHANGED);
    const divergence = keys ?? (await this.#compareVisibility(replay)) ?? (await this.#compareAssignments(replay));
    return divergence ? bad(divergence.seq, divergence.reason, divergence.family, divergence.key) : { ok: true, checked: last, head: verified };
  }

  /** A root's entries in its listers' index of visible roots (visibility.ts) against the replay's owner. */
  async #compareVisibility(replay: PartitionReplay): Promise<{ seq: number; reason: string; family: string; key: Key } | null> {
    const owner = replay.owner();
    if (!owner) return null;
    const t = this.core.schema.type(owner.type);
    const key = layout.visibleRoot(t.name, owner.envelope.id);
    for (const [identity, value] of indexEntries(t, owner.envelope, owner.permissions)) {
      const stored = await this.core.kv.get(layout.visible(identity), key);
      if (!stored)
        return {
          seq: 0,
          reason: `${t.name} ${owner.envelope.id} is missing from the visible roots of ${identity} (its permissions list it)`,
          family: layout.visibleKind,
          key: [...layout.visible(identity), ...key],
        };
      if (!stored.value.equals(value))
        return {
          seq: 0,
          reason: `${t.name} ${owner.envelope.id}'s entry in the visible roots of ${identity} differs from its record`,
          family: layout.visibleKind,
          key: [...layout.visible(identity), ...key],
        };
    }
    return null;
  }

  /**
   * Each live resource's entry in its assignee's assignments index (assignments.ts) against the replay:
   * present, with its empty value. (Entries the index keeps for deleted descendants are a documented hint
   * a read filters out, so only what the log says must be there is checked.)
   */
  async #compareAssignments(replay: PartitionReplay): Promise<{ seq: number; reason: string; family: string; key: Key } | null> {
    if (await this.#assignmentsMatch(replay)) return null;
    // Naming the first divergence: one batched read per identity and page of keys (in the order the replay gives them).
    const byIdentity = new Map<string, Key[]>();
    for (const { identity, key } of replay.assignments()) {
      const keys = byIdentity.get(identity);
      if (keys) keys.push(key);
      else byIdentity.set(identity, [key]);
    }
    for (const [identity, keys] of byIdentity) {
      for (let i = 0; i < keys.length; i += VERIFY_PAGE) {
        const page = keys.slice(i, i + VERIFY_PAGE);
        const stored = await this.core.kv.getMany(layout.assigned(identity), page);
        for (let j = 0; j < page.length; j++) {
          const s = stored[j];
          if (s && s.value.length === 0) continue;
          const key = page[j]!;
          const at = [...layout.assigned(identity), ...key];
          if (!s)
            return { seq: 0, reason: `${key[0]} ${key.slice(1).join("/")} is missing from the assignments of ${identity} (its assignee)`, family: layout.assignedKind, key: at };
          return {
            seq: 0,
            reason: `${key[0]} ${key.slice(1).join("/")}'s entry in the assignments of ${identity} differs from the replay of the log`,
            family: layout.assignedKind,
            key: at,
          };
        }
      }
    }
    return null;
  }

  /**
   * True when every entry the replay expects in the assignments index is there with its empty value:
   * per identity, resource type and partition owner, one scan of the identity's entries under that
   * prefix (their views, no copies), each looked up in the expected ones (entries it holds beyond them,
   * hints of deleted resources, are skipped). Cheaper than a read of each key (the profile of a full
   * verify of 20,000 items found those reads ~5%); `#compareAssignments` names a divergence when not.
   */
  async #assignmentsMatch(replay: PartitionReplay): Promise<boolean> {
    const groups = new Map<string, { identity: string; prefix: Key; want: KeyTable<true> }>();
    for (const { identity, key } of replay.assignments()) {
      const { type, ids } = layout.refOfAssigned(key);
      const at = JSON.stringify([identity, type, ids[0]]);
      let g = groups.get(at);
      if (!g) groups.set(at, (g = { identity, prefix: layout.assignedEntry(type, ids.slice(0, 1)), want: new KeyTable<true>() }));
      g.want.set(encodeLatin1(key), true);
    }
    for (const { identity, prefix, want } of groups.values()) {
      let matched = 0;
      let same = true;
      await scanEach(this.core.kv, layout.assigned(identity), { prefix, limit: VERIFY_PAGE }, (keyBytes, value) => {
        if (want.getBytes(keyBytes) === undefined) return true;
        if (value.length !== 0) return (same = false);
        matched++;
        return true;
      });
      if (!same || matched !== want.size) return false;
    }
    return true;
  }

  /**
   * The other direction, one identity's index of visible roots: every entry must name a root whose
   * record lets that identity list it, with the row its record gives (an entry left behind by a revoke
   * or a delete, or a changed row, is reported). Returns the first divergence, or null.
   */
  async verifyVisible(identity: string): Promise<{ key: Key; reason: string } | null> {
    for await (const e of scanAll(this.core.kv, layout.visible(identity), { limit: 2000 })) {
      const type = e.key[0];
      const id = layout.idOfVisible(e.key);
      const t = typeof type === "string" ? this.core.schema.types.get(type) : undefined;
      if (!t || t.decl.parent !== null || typeof id !== "string" || e.key.length !== 2) continue; // another schema's roots
      const l = locate(this.core.schema, { type: t.name, ids: [id] });
      const [state, access] = await this.core.kv.getMany(l.partition, [layout.state(l), layout.access(l)]);
      const permissions = access ? (JSON.parse(access.value.toString("utf8")) as { permissions: Permissions }).permissions : null;
      const want = state && permissions ? indexEntries(t, new RecordView(state.value).envelope(), permissions).get(identity) : undefined;
      if (!want) return { key: e.key, reason: `${identity}'s visible roots list ${t.name} ${id}, which it may not list` };
      if (!want.equals(e.value)) return { key: e.key, reason: `${identity}'s entry for ${t.name} ${id} differs from its record` };
    }
    return null;
  }

  /**
   * True when the stored keys (the log and the head aside) are exactly the replayed ones, each with the
   * replayed value: one pass in key order, each value made as its key is read; every stored key must be
   * expected and match, and as many must be read as are expected (stored keys are distinct, so then none
   * is missing). It stops at the first difference; `#compare` then names the first divergence.
   */
  async #matches(partition: Partition, want: KeyTable<ReplayedValue>): Promise<boolean> {
    let matched = 0;
    let same = true;
    for (const range of COMPARED_RANGES) {
      // Each stored value is looked at once, as it is read, and not kept: a view where the backend gives them.
      await scanEach(this.core.kv, partition, { ...range, limit: VERIFY_PAGE }, (keyBytes, value) => {
        if (keyBytes.equals(HEAD_KEY)) return true;
        const w = want.getBytes(keyBytes);
        if (w === undefined || !sameAsReplayed(keyBytes, valueOf(w), value)) return (same = false);
        matched++;
        return true;
      });
      if (!same) return false;
    }
    return matched === want.size;
  }

  /**
   * Reads every stored key but the log and the head (the log was read by the chain check) and takes it
   * off the replayed ones (keyed by their bytes, latin1); the first divergence in key order is returned:
   * a stored key the replay lacks or whose value differs, or a replayed key missing before it.
   */
  async #compare(partition: Partition, want: Map<string, ReplayedEntry>): Promise<{ seq: number; reason: string; family: string; key: Key } | null> {
    let first: { entry: Entry; reason: string } | null = null;
    scan: for (const range of COMPARED_RANGES) {
      for await (const e of scanAll(this.core.kv, partition, { ...range, limit: VERIFY_PAGE })) {
        if (e.keyBytes.equals(HEAD_KEY)) continue;
        const k = e.keyBytes.toString("latin1");
        const w = want.get(k);
        if (!w || !sameAsReplayed(e.keyBytes, w.value, e.value)) {
          first = { entry: e, reason: w ? "differs from the replay of the log" : "is stored but the log does not produce it" };
          break scan;
        }
        want.delete(k);
      }
    }
    // What is left was not read: missing, where it sorts before the first divergence (or there is none).
    let missing: ReplayedEntry | null = null;
    for (const w of want.values()) {
      if (first && Buffer.compare(w.keyBytes, first.entry.keyBytes) >= 0) continue;
      if (!missing || Buffer.compare(w.keyBytes, missing.keyBytes) < 0) missing = w;
    }
    if (missing) {
      const key = decode(missing.keyBytes); // as a stored key is named (bytes items as Uint8Array)
      return { seq: seqOf(key), reason: `${describe(key)} is missing (the log produces it)${this.#sumsHint(partition, key)}`, family: String(key[0]), key };
    }
    if (!first) return null;
    const { key } = first.entry;
    return { seq: seqOf(key), reason: `${describe(key)} ${first.reason}${this.#sumsHint(partition, key)}`, family: String(key[0]), key };
  }

  /**
   * For a divergent sums key, the version of the sums declarations it is checked against: a server of an
   * older version that wrote after the upgrade (a fleet not stopped whole) leaves buckets of the older
   * shape, which no later open rebuilds (the marker is already at this version).
   */
  #sumsHint(partition: Partition, key: Key): string {
    if (key[0] !== layout.allSums[0]) return "";
    let version = 1;
    for (const t of this.core.schema.types.values()) if (t.owner === partition[0] && t.decl.sums !== undefined) version = Math.max(version, t.decl.sumsVersion ?? 1);
    return ` (checked against sumsVersion ${version}: a server older than that writing to the store since the upgrade leaves sums of the older shape; stop every server of a fleet before upgrading)`;
  }
}

/** Entries per page of verify's scans. */
const VERIFY_PAGE = 1024;
const HEAD_KEY = encode(layout.head);
/** Past every key of the log family (["l", …]) and before any other: the start of the keys after the log. */
const AFTER_LOG_FAMILY: Key = ["l\u0000"];
/** The ranges of a partition verify compares with the replay: every key before the log, and every key after it. */
const COMPARED_RANGES = [{ end: layout.logs }, { start: AFTER_LOG_FAMILY }];
/** What verify reports when its pass over the stored keys saw a difference its second pass, naming it, no longer finds. */
const CHANGED = { seq: 0, reason: "the stored keys changed while they were verified: verify again", family: "m", key: layout.head };

const FAMILIES: Record<string, string> = {
  s: "state record",
  a: "access record",
  o: "ordering",
  c: "flat child index entry",
  h: "history index entry",
  m: "meta key",
  x: "order index entry",
  g: "sums entry",
};

/** A key as a reader names it: its family and the resource path. */
function describe(key: Key): string {
  const family = String(key[0]);
  const name = FAMILIES[family] ?? `key of unknown family ${JSON.stringify(family)}`;
  return `${name} ${JSON.stringify(key.slice(1))}`;
}

/** The seq a history entry names (0 for other keys: they are state, not events). */
const seqOf = (key: Key): number => (key[0] === "h" && typeof key.at(-1) === "number" ? (key.at(-1) as number) : 0);
