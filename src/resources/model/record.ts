/**
 * How a resource is stored: its public JSON as bytes, ready to be served or joined into a list, behind a
 * small binary header that holds what filtering and ordering need without parsing the JSON.
 *
 *   u8   format (1)
 *   f64  createdAt (epoch ms)
 *   u32  version (meta.version, for ETags)
 *   u16  id length, id (utf8)             — so lists need not decode keys
 *   u16  status length, status (utf8)     — shown in redacted listings
 *   u32  listers length, "\n"-delimited identities holding the type's list or view intent ("\nalice\nteam\n")
 *   u32  viewers length, the same for the view intent alone (a get checks it without parsing JSON)
 *   ...  public JSON                      — {"id","type","data","meta"}
 */
import type { Actor, Permissions } from "../../access/actor.js";
import type { Ref } from "./ref.js";
import type { Meta } from "./wire.js";

export type { Meta };

/** A resource as answered (wire.ts's `EnvelopeOf` is its schema). */
export interface Envelope<D = Record<string, unknown>> {
  id: string;
  type: string;
  data: D;
  meta: Meta;
}

/**
 * The permissions a write wrote a resource with (or found it with, when nothing changed), carried by
 * the envelope the write returns: what the write's answer shows its caller is decided from them with no
 * read after the write. Not enumerable, so it is never serialized, spread or compared.
 */
export const WRITTEN_WITH: unique symbol = Symbol("flowstore.writtenWith");

/** An envelope as a write returned it, with the permissions it was written with. */
export type Written<D = Record<string, unknown>> = Envelope<D> & { readonly [WRITTEN_WITH]?: Permissions };

/** `envelope`, returned by a write that wrote it with `permissions`. */
export function written<D>(envelope: Envelope<D>, permissions: Permissions): Written<D> {
  return Object.defineProperty(envelope, WRITTEN_WITH, { value: permissions, enumerable: false });
}

export interface Private {
  permissions: Permissions;
  /** The parent of a partition owner (it lives in another partition), for flat children. */
  parent?: Ref | null;
}

const FORMAT = 1;

/** "\n<identity>\n" for the actor and each of its groups, encoded once per actor. */
const needles = new WeakMap<Actor, Buffer[]>();
function needlesOf(actor: Actor): Buffer[] {
  let n = needles.get(actor);
  if (!n) needles.set(actor, (n = [actor.id, ...actor.groups].map((id) => Buffer.from(`\n${id}\n`, "utf8"))));
  return n;
}

/**
 * The length up to which a part of the header is searched in JavaScript (`occursIn`): a list asks each of
 * its records, whose parts are a few identities long, and `lastIndexOf` costs more in its call into C++
 * than a short search costs.
 */
const SHORT_PART = 256;

/** Whether `needle` starts at an offset in [start, last] of `bytes` (as `bytes.lastIndexOf(needle, last) >= start`). */
function occursIn(bytes: Buffer, needle: Buffer, start: number, last: number): boolean {
  const first = needle[0];
  for (let i = last; i >= start; i--) {
    if (bytes[i] !== first) continue;
    let k = 1;
    while (k < needle.length && bytes[i + k] === needle[k]) k++;
    if (k === needle.length) return true;
  }
  return false;
}

/**
 * A header's big-endian u16 and u32, without `readUInt16BE`'s and `readUInt32BE`'s checks and calls (a
 * list of 1,000 constructs 1,000 views: about 80 against 250 µs, measured); a byte past the end reads as 0.
 */
const u16 = (b: Uint8Array, at: number): number => ((b[at]! << 8) | b[at + 1]!) & 0xffff;
const u32 = (b: Uint8Array, at: number): number => ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0;

const identities = (ids: readonly string[]): string => (ids.length ? `\n${ids.join("\n")}\n` : "");

/** One allocation: every part is measured, then written in place. */
export function encodeRecord(envelope: Envelope, status: string, listers: readonly string[], viewers: readonly string[]): Buffer {
  const listersText = identities(listers);
  const viewersText = identities(viewers);
  const json = JSON.stringify(envelope);
  const idLen = Buffer.byteLength(envelope.id, "utf8");
  const statusLen = Buffer.byteLength(status, "utf8");
  const listersLen = Buffer.byteLength(listersText, "utf8");
  const viewersLen = Buffer.byteLength(viewersText, "utf8");
  const out = Buffer.allocUnsafe(1 + 8 + 4 + 2 + idLen + 2 + statusLen + 4 + listersLen + 4 + viewersLen + Buffer.byteLength(json, "utf8"));
  let o = 0;
  out.writeUInt8(FORMAT, o);
  o += 1;
  out.writeDoubleBE(Date.parse(envelope.meta.createdAt), o);
  o += 8;
  out.writeUInt32BE(envelope.meta.version, o);
  o += 4;
  out.writeUInt16BE(idLen, o);
  o += 2;
  o += out.write(envelope.id, o, "utf8");
  out.writeUInt16BE(statusLen, o);
  o += 2;
  o += out.write(status, o, "utf8");
  out.writeUInt32BE(listersLen, o);
  o += 4;
  o += out.write(listersText, o, "utf8");
  out.writeUInt32BE(viewersLen, o);
  o += 4;
  o += out.write(viewersText, o, "utf8");
  out.write(json, o, "utf8");
  return out;
}

/** A read-only view of a stored record; each part is decoded only when asked for. */
export class RecordView {
  readonly createdAtMs: number;
  readonly version: number;
  readonly #idEnd: number;
  readonly #statusEnd: number;
  readonly #listersStart: number;
  readonly #listersEnd: number;
  readonly #viewersStart: number;
  readonly #viewersEnd: number;
  readonly #publicStart: number;
  #id: string | undefined;

  /**
   * A record that cannot be read (an unknown format byte, a truncated header) throws here: one read of it
   * fails alone. Lists use `RecordView.listable`, which skips such a record with a process warning, so
   * that one bad record never turns a list into an error for every caller.
   */
  constructor(readonly bytes: Buffer) {
    if (bytes[0] !== FORMAT) throw new Error(`unknown resource record format ${bytes[0]}`);
    this.createdAtMs = bytes.readDoubleBE(1);
    // The lengths read byte by byte (`u16`, `u32`): a byte past the end reads as 0, and every length read
    // lies before the public JSON's start, so a header cut short puts that start past the end (refused).
    this.version = u32(bytes, 9);
    this.#idEnd = 15 + u16(bytes, 13);
    this.#statusEnd = this.#idEnd + 2 + u16(bytes, this.#idEnd);
    this.#listersStart = this.#statusEnd + 4;
    this.#listersEnd = this.#listersStart + u32(bytes, this.#statusEnd);
    this.#viewersStart = this.#listersEnd + 4;
    this.#viewersEnd = this.#viewersStart + u32(bytes, this.#listersEnd);
    this.#publicStart = this.#viewersEnd;
    if (this.#publicStart > bytes.length) throw new Error("truncated resource record");
  }

  /** The view of a listed record, or null (with a process warning naming `where`) when it cannot be read. */
  static listable(bytes: Buffer, where: string): RecordView | null {
    try {
      return new RecordView(bytes);
    } catch (e) {
      process.emitWarning(`skipped an unreadable resource record in ${where}: ${(e as Error).message}`, "FlowstoreRecordWarning");
      return null;
    }
  }

  /** The record as this code would encode it from its parts (equal bytes: a record this store wrote). */
  reencoded(): Buffer {
    const ids = (start: number, end: number): string[] =>
      this.bytes
        .toString("utf8", start, end)
        .split("\n")
        .filter((s) => s !== "");
    return encodeRecord(this.envelope(), this.status, ids(this.#listersStart, this.#listersEnd), ids(this.#viewersStart, this.#viewersEnd));
  }

  get id(): string {
    // decoded once: a list's ordering and its checks ask for it several times
    return (this.#id ??= this.bytes.toString("utf8", 15, this.#idEnd));
  }

  get status(): string {
    return this.bytes.toString("utf8", this.#idEnd + 2, this.#statusEnd);
  }

  /** True when the actor (or one of its groups) may see this resource in a list (list or view intent). */
  visibleTo(actor: Actor): boolean {
    return this.#holds(actor, this.#listersStart, this.#listersEnd);
  }

  /** True when the actor (or one of its groups) holds the type's view intent. */
  viewableBy(actor: Actor): boolean {
    return this.#holds(actor, this.#viewersStart, this.#viewersEnd);
  }

  #holds(actor: Actor, start: number, end: number): boolean {
    if (actor.system) return true;
    if (start === end) return false;
    // Searched backwards from the end of the part: a search forwards from its start would run through
    // the public JSON after it whenever the needle is not there.
    for (const needle of needlesOf(actor)) {
      const last = end - needle.length;
      if (last >= start && (end - start > SHORT_PART ? this.bytes.lastIndexOf(needle, last) >= start : occursIn(this.bytes, needle, start, last))) return true;
    }
    return false;
  }

  /** The public JSON bytes (a view into the record, not a copy). */
  publicBytes(): Buffer {
    return this.bytes.subarray(this.#publicStart);
  }

  envelope<D = Record<string, unknown>>(): Envelope<D> {
    return JSON.parse(this.bytes.toString("utf8", this.#publicStart)) as Envelope<D>;
  }
}

/** A resource the caller may not view (wire.ts's `Redacted`): id, status and createdAt only. */
export interface RedactedEnvelope {
  id: string;
  type: string;
  redacted: true;
  data: Record<string, string>;
  meta: { createdAt: string };
}

/** The redacted form of a resource: `status` is its status field's value (none when its type has no status field). */
export function redacted(type: string, id: string, statusField: string | undefined, status: string, createdAt: string): RedactedEnvelope {
  return { id, type, redacted: true, data: statusField ? { [statusField]: status } : {}, meta: { createdAt } };
}

/** The public JSON of a resource the caller may not view: id, status and createdAt only. */
export function redactedJson(type: string, view: RecordView, statusField: string | undefined): string {
  return JSON.stringify(redacted(type, view.id, statusField, view.status, new Date(view.createdAtMs).toISOString()));
}
