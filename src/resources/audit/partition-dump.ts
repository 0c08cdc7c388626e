/**
 * Dump and restore of a whole partition, byte for byte: every resource with its permissions, orderings,
 * history index and the hash-chained log. Restoring a dump into a store where the partition does not
 * exist reproduces it exactly (same keys, same values; kv versions are the new store's), so its chain
 * verifies and reads equal the original's. Domains decide when to dump and where a dump goes (workflow
 * archives closed projects with Imixs-Archive-style snapshots); the mechanics are here.
 *
 * A dump is NDJSON: one line per kv entry in key order, `{"k": base64 key, "v": base64 value}` (keys
 * relative to the partition), streamed page by page — never a whole partition in memory.
 *
 * Consistency: the summary pass and the streamed pass each read the chain head before and after; a moved
 * head (every write of a partition moves it) refuses the dump with a ConflictError.
 *
 * Restoring writes the entries in batches. The first commit (precondition: the partition has no chain
 * head and no restore marker) puts the chain head — so a concurrent create of the same id fails — and the
 * restore marker; the owner's state is held back to the last commit, which also removes the marker, so
 * the owner is invisible (reads 404, lists skip it) until it is whole. Every later commit checks that
 * the marker and the head are still as written. A restore killed half-way leaves the marker; the next
 * restore of that partition drops the leftover and starts over. A failed restore undoes itself unless
 * someone else has written the partition meanwhile.
 *
 * A restore never writes bytes this store would not have written: every key must be of a known family
 * (layout.isKnown), every state record must equal its re-encoding by record.ts (an unknown format byte
 * or a header that disagrees is refused), its envelope's type and id must be its key's, access records
 * and orderings must be the JSON this code writes, history entries empty or an event (the verify after
 * the restore holds each to its event in the log); the chain is recomputed afterwards. The source then
 * judges the owner (e.g. against the summary it was sealed with) and the whole content, before the last
 * commit makes the owner visible.
 */
import { createInterface } from "node:readline";
import type { Readable } from "node:stream";
import { ConflictError, ValidationError } from "../../errors.js";
import { scanAll, type Key, type Op, type Partition } from "../../kv/contract.js";
import { decode, encode } from "../../kv/tuple.js";
import type { Core } from "../core/core.js";
import { layout } from "../model/layout.js";
import { assigneeOf } from "../indexes/assignments.js";
import { indexEntries, visibilityOps } from "../indexes/visibility.js";
import type { Permissions } from "../../access/actor.js";
import { RecordView, type Envelope } from "../model/record.js";
import { locate, type Located, type Ref } from "../model/ref.js";
import type { VerifyResult } from "../model/events.js";
import type { Audit } from "./audit.js";
import { rebuildOrderIndex } from "./order-index.js";

export interface ChainHead {
  readonly seq: number;
  readonly hash: string | null;
}

export interface PartitionCounts {
  /** kv entries of the partition. */
  readonly entries: number;
  /** Bytes of keys plus values. */
  readonly bytes: number;
  /** Live resources by type (state records). */
  readonly resources: Record<string, number>;
  /** Events in the log (the chain head's seq). */
  readonly events: number;
}

export interface PartitionDump {
  readonly counts: PartitionCounts;
  readonly head: ChainHead;
  /** The NDJSON, in pieces; throws a ConflictError at its end when the partition changed meanwhile. */
  readonly content: AsyncIterable<Buffer>;
}

/** What a restore reads: the dump's NDJSON and what its summary promised. */
export interface DumpSource {
  readonly counts: { readonly entries: number };
  readonly head: ChainHead;
  /** Opens the NDJSON (called once the partition is known to be free). */
  open(): Promise<Readable>;
  /** Kept in the restore marker while the restore runs (e.g. the snapshot's id). */
  readonly marker?: Record<string, unknown>;
  /**
   * Called once the whole dump was read and checked, before the owner becomes visible, with the owner's
   * envelope and permissions: throws to refuse the dump (the restore then undoes itself).
   */
  accept?(owner: { envelope: Envelope; permissions: Permissions }): Promise<void> | void;
}

/** How errors name things: the field blamed for the owner's id, the dump (and its field), the activity. */
export interface DumpNames {
  readonly field: string;
  readonly dump?: string;
  readonly dumpField?: string;
  readonly activity?: string;
}

const SUMMARY_ATTEMPTS = 3;
/** Lines are joined into pieces of about this size before they are handed on. */
const PIECE_BYTES = 256 * 1024;
const BATCH_ENTRIES = 1000;
const BATCH_BYTES = 4 * 1024 * 1024;

interface HeadState {
  readonly head: ChainHead;
  /** kv version of the head key (null: no head). */
  readonly version: number | null;
}

/** Dump and restore of partition owners' partitions (ResourceStore.dumps). No permission check: the domain that dumps decides who may. */
export class PartitionDumps {
  constructor(
    private readonly core: Core,
    private readonly audit: Audit,
  ) {}

  async #head(l: Located): Promise<HeadState> {
    const { seq, hash, version } = await this.core.writer.readHead(l.partition);
    return { head: { seq, hash }, version };
  }

  #changed(l: Located, names: DumpNames): ConflictError {
    return new ConflictError(`${l.ref.type} ${l.ref.ids[0]} changed while it was being ${names.activity ?? "dumped"}; try again`, names.field);
  }

  /**
   * A consistent dump of a partition owner's whole partition: its counts, its chain head and its entries
   * as streamed NDJSON (ConflictError when the partition changes meanwhile). Counted in one pass
   * (retried when its head moves).
   */
  async dump(ref: Ref, names: DumpNames): Promise<PartitionDump> {
    const l = this.#owner(ref);
    for (let attempt = 0; attempt < SUMMARY_ATTEMPTS; attempt++) {
      const before = await this.#head(l);
      let entries = 0;
      let bytes = 0;
      const resources: Record<string, number> = {};
      for await (const e of scanAll(this.core.kv, l.partition, { limit: 1000 })) {
        entries++;
        bytes += e.keyBytes.length + e.value.length;
        const type = layout.stateTypeOf(l.partition, e.key);
        if (type !== null) resources[type] = (resources[type] ?? 0) + 1;
      }
      const after = await this.#head(l);
      if (before.version === after.version) {
        return { counts: { entries, bytes, resources, events: after.head.seq }, head: after.head, content: this.#ndjson(l, names, after, entries) };
      }
    }
    throw this.#changed(l, names);
  }

  async *#ndjson(l: Located, names: DumpNames, expected: HeadState, expectedEntries: number): AsyncGenerator<Buffer> {
    let lines: string[] = [];
    let size = 0;
    let entries = 0;
    for await (const e of scanAll(this.core.kv, l.partition, { limit: 1000 })) {
      const line = `{"k":"${e.keyBytes.toString("base64")}","v":"${e.value.toString("base64")}"}\n`;
      lines.push(line);
      size += line.length;
      entries++;
      if (size >= PIECE_BYTES) {
        yield Buffer.from(lines.join(""), "utf8");
        lines = [];
        size = 0;
      }
    }
    if (lines.length > 0) yield Buffer.from(lines.join(""), "utf8");
    if (entries !== expectedEntries || (await this.#head(l)).version !== expected.version) throw this.#changed(l, names);
  }

  #owner(ref: Ref): Located {
    const l = locate(this.core.schema, ref);
    if (l.depth !== 0) throw new ValidationError("only a partition owner's partition can be dumped or restored", "ref");
    return l;
  }

  /**
   * Restores a dump into a partition that does not exist (or holds an interrupted restore) and verifies
   * the result: the restored partition is verified whole (chain, and every stored key against the replay
   * of its log); one that does not verify is dropped again and the dump refused.
   */
  async restore(ref: Ref, source: DumpSource, names: DumpNames): Promise<{ entries: number; verify: VerifyResult }> {
    const partition = this.#owner(ref).partition;
    const entries = await this.#restore(ref, source, names);
    // A dump written before the order index existed lacks it: it is derived data, rebuilt from the log.
    await rebuildOrderIndex(this.core, partition);
    const verify = await this.audit.verify(partition);
    if (!verify.ok) {
      await this.core.kv.dropPartition(partition);
      throw new ValidationError(`${names.dump ?? "the dump"} does not verify once restored: ${verify.firstBad?.reason ?? "diverges"}`, names.dumpField ?? "dump");
    }
    return { entries, verify };
  }

  /** Writes a dump into the owner's partition, which must not exist; returns how many entries it wrote. */
  async #restore(ref: Ref, source: DumpSource, names: DumpNames): Promise<number> {
    const { kv, writer } = this.core;
    const l = this.#owner(ref);
    const partition = l.partition;
    const dump = names.dump ?? "the dump";
    const bad = (what: string): ValidationError => new ValidationError(what, names.dumpField ?? "dump");

    const first = await kv.scan(partition, { limit: 1 });
    if (first.entries.length > 0) {
      if (!(await kv.get(partition, layout.restoreMarker))) {
        throw new ConflictError(`${ref.type} ${ref.ids[0]} exists (or existed: a deleted ${ref.type}'s log stays until it is purged)`, names.field);
      }
      await kv.dropPartition(partition); // the leftover of an interrupted restore
    }
    writer.forget(partition);

    const headBytes = encode(layout.head);
    const ownerBytes = encode(layout.state(l));
    const ownerAccessBytes = encode(layout.access(l));
    let ownerAccess: Buffer | undefined;
    // The restored resources' entries in their assignees' assignments index (assignments.ts), by assignee.
    const assigned = new Map<string, Key[]>();
    const assignedOf = (line: Line): void => {
      const r = layout.refOfState(partition, line.key);
      const t = r && this.core.schema.types.get(r.type);
      const who = t ? assigneeOf(t, new RecordView(line.value).envelope().data) : null;
      if (who !== null) assigned.set(who, [...(assigned.get(who) ?? []), layout.assignedEntry(r!.type, r!.ids)]);
    };
    // The head is written first (it sorts after the log, so take it from the summary); the dump's own
    // head entry must then be exactly these bytes.
    const headValue = Buffer.from(JSON.stringify({ seq: source.head.seq, hash: source.head.hash }));
    const stream = await source.open();
    let marker: number | null = null; // version of the first commit (marker and head)
    let held: { head?: Line; owner?: Line } = {};
    let ops: Op[] = [];
    let batchBytes = 0;
    let entries = 0;

    const flush = async (): Promise<void> => {
      const batch: Op[] = [{ type: "check", key: layout.head, version: marker }, { type: "check", key: layout.restoreMarker, version: marker }, ...ops];
      if (marker === null) {
        batch.push(
          { type: "put", key: layout.restoreMarker, value: Buffer.from(JSON.stringify({ ...source.marker, startedAt: Date.now() })) },
          { type: "put", key: layout.head, value: headValue },
        );
      }
      try {
        const { version } = await kv.commit(partition, batch);
        marker ??= version;
      } catch (e) {
        if (e instanceof ConflictError) throw new ConflictError(`${ref.type} ${ref.ids[0]} was written to while it was being restored`, names.field);
        throw e;
      }
      ops = [];
      batchBytes = 0;
    };

    try {
      let n = 0;
      for await (const text of createInterface({ input: stream, crlfDelay: Infinity })) {
        n++;
        if (text === "") continue;
        const line = parseLine(text, () => bad(`line ${n} of ${dump} is not a partition entry`));
        entries++;
        const refused = refusal(partition, line);
        if (refused !== null) throw bad(`line ${n} of ${dump}: ${refused}`);
        if (line.keyBytes.equals(ownerAccessBytes)) ownerAccess = line.value;
        assignedOf(line);
        if (line.keyBytes.equals(headBytes)) held = { ...held, head: line };
        else if (line.keyBytes.equals(ownerBytes)) held = { ...held, owner: line };
        else {
          ops.push({ type: "put", key: line.key, value: line.value });
          batchBytes += line.keyBytes.length + line.value.length;
          if (ops.length >= BATCH_ENTRIES || batchBytes >= BATCH_BYTES) await flush();
        }
      }
      if (!held.head || !held.owner) throw bad(`${dump} lacks the ${ref.type}'s state or chain head`);
      if (entries !== source.counts.entries) throw bad(`${dump} holds ${entries} entries, the summary says ${source.counts.entries}`);
      if (!held.head.value.equals(headValue)) throw bad(`${dump}'s chain head differs from the summary's`);
      const accessOf = ownerAccess ? (JSON.parse(ownerAccess.toString("utf8")) as { permissions?: Permissions }) : {};
      if (marker === null || ops.length > 0) await flush(); // everything but the owner is written now
      const envelope = new RecordView(held.owner.value).envelope();
      await source.accept?.({ envelope, permissions: accessOf.permissions ?? {} });
      ops.push({ type: "put", key: held.owner.key, value: held.owner.value }, { type: "delete", key: layout.restoreMarker });
      await flush();
      // The restored root enters its listers' index of visible roots (visibility.ts).
      const index = visibilityOps(l.type, envelope.id, new Map(), indexEntries(l.type, envelope, accessOf.permissions ?? {}));
      for (const { partition: p, op } of index) await kv.commit(p, [op]);
      for (const [who, keys] of assigned)
        await kv.commit(
          layout.assigned(who),
          keys.map((key) => ({ type: "put" as const, key, value: Buffer.alloc(0) })),
        );
      // Anchored as restored, so the feed's repair (writer.ts) does not take the restored log for new events.
      const restoredHead = JSON.parse(held.head.value.toString("utf8")) as { seq: number; hash: string };
      await writer.anchor(partition, restoredHead.seq, restoredHead.hash);
    } catch (e) {
      // Undo a partial restore unless someone else has written the partition meanwhile.
      if (marker !== null) {
        const m = await kv.get(partition, layout.restoreMarker).catch(() => undefined);
        if (m && m.version === marker) await kv.dropPartition(partition).catch(() => undefined);
      }
      stream.destroy();
      throw e;
    } finally {
      writer.forget(partition);
    }
    return entries;
  }
}

/** JSON as this code writes it (JSON.stringify), or null. */
function writtenJson(value: Buffer): unknown {
  try {
    const text = value.toString("utf8");
    const parsed: unknown = JSON.parse(text);
    return JSON.stringify(parsed) === text ? parsed : null;
  } catch {
    return null;
  }
}

const OPEN_BRACE = 0x7b;

const isStrings = (x: unknown): boolean => Array.isArray(x) && x.every((s) => typeof s === "string");

/** Why a dump line is not what this store writes, or null when it is. */
function refusal(partition: Partition, line: Line): string | null {
  const { key, value } = line;
  if (!layout.isKnown(key)) return "a key of no known family";
  switch (key[0]) {
    case "s": {
      let view: RecordView;
      try {
        view = new RecordView(value);
        if (!view.reencoded().equals(value)) return "a state record this store would not write";
      } catch (e) {
        return `an unreadable state record (${(e as Error).message})`;
      }
      const envelope = view.envelope();
      const id = key.length === 2 ? partition[1] : key.at(-1);
      return envelope.type === layout.stateTypeOf(partition, key) && envelope.id === id ? null : "a state record under another resource's key";
    }
    case "a": {
      const access = writtenJson(value) as { permissions?: unknown } | null;
      const p = access?.permissions;
      return p !== null && typeof p === "object" && !Array.isArray(p) && Object.values(p).every(isStrings) ? null : "an access record this store would not write";
    }
    case "o":
      return isStrings(writtenJson(value)) ? null : "an ordering this store would not write";
    case "n": {
      const n = writtenJson(value);
      return Number.isSafeInteger(n) && (n as number) > 0 ? null : "a child count this store would not write";
    }
    case "h":
      // Empty (written before entries carried their event) or an event's JSON; the verify after the
      // restore holds it to the log's bytes of its seq (replay.ts sameAsReplayed).
      return value.length === 0 || value[0] === OPEN_BRACE ? null : "a history entry that is no event";
    case "x":
      return value.length > 0 ? null : "an order index entry naming no child";
    case "g": {
      // Derived (rebuilt from the log after the restore, then verified); refused here only when it is no sum this store writes.
      const v = writtenJson(value) as { sum?: unknown; n?: unknown } | null;
      return typeof v?.sum === "string" && Number.isSafeInteger(v.n) && (v.n as number) > 0 ? null : "a sum this store would not write";
    }
    default:
      return null; // the log is recomputed as a chain; the meta entries are compared or plain refs
  }
}

interface Line {
  readonly keyBytes: Buffer;
  readonly key: Key;
  readonly value: Buffer;
}

function parseLine(text: string, bad: () => Error): Line {
  let o: unknown;
  try {
    o = JSON.parse(text);
  } catch {
    throw bad();
  }
  const { k, v } = (o ?? {}) as { k?: unknown; v?: unknown };
  if (typeof k !== "string" || typeof v !== "string") throw bad();
  const keyBytes = Buffer.from(k, "base64");
  let key: Key;
  try {
    key = decode(keyBytes);
  } catch {
    throw bad();
  }
  if (!encode(key).equals(keyBytes)) throw bad();
  return { keyBytes, key, value: Buffer.from(v, "base64") };
}
