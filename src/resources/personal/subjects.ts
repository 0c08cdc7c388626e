/**
 * Personal data under per-subject keys: crypto-shredding (issue 26, part 2). A type declares which of
 * its string fields are a data subject's and which field names the subject (`TypeDecl.personal`). A
 * write seals those fields under the subject's own key (AES-256-GCM, node:crypto) before the state is
 * encoded and the event appended, so the stored record and every event (its data, its diff) hold the
 * ciphertext and the hash chain covers it. Reads open what they serve. Erasing the subject deletes its
 * key: every sealed value of it, wherever a copy went after that (state, history, a project archive,
 * an export), reads as erased, while the bytes the chains and checkpoints hash are unchanged.
 *
 * A subject's partition (`layout.subject`) holds its key, the resources holding data sealed under it
 * (the receipt of an erasure names them) and, once erased, the receipt of its erasure. A sealed value is
 * `psd1.<base64url(subject)>.<base64url(iv[12] | tag[16] | ciphertext)>`; its additional authenticated
 * data is the subject, so a value does not open under another subject's key.
 */
import {
  ERASED_TEXT,
  MASKED_TEXT,
  openText,
  openWith,
  refuseSealed,
  SEALED_PREFIX,
  sealedIn,
  sealText,
  SubjectKeys,
  subjectOf,
  type ErasedResource,
  type ErasureReceipt,
} from "../../personal/subjects.js";
import type { KvStore } from "../../kv/contract.js";
import type { Ref } from "../model/ref.js";
import { assertId, type CompiledType, type PersonalDecl } from "../model/schema.js";

// The seal format, the keys and the receipt live a layer down (src/personal), shared with the users' display names.
export { ERASED_TEXT, MASKED_TEXT, refuseSealed, SEALED_PREFIX, sealedIn, type ErasedResource, type ErasureReceipt };

/** The JSON value with each string replaced by `f`'s answer (objects and arrays copied). */
function mapStrings(v: unknown, f: (s: string) => string): unknown {
  if (typeof v === "string") return f(v);
  if (Array.isArray(v)) return v.map((x) => mapStrings(x, f));
  if (v !== null && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, mapStrings(x, f)]));
  return v;
}

/** The resource an event is of (its path), or null when the path names none. */
export function refOfEvent(event: { path?: readonly { type: string; id: string }[] }): Ref | null {
  const last = event.path?.at(-1);
  return last ? { type: last.type, ids: event.path!.map((p) => p.id) } : null;
}

/** The personal `fields` of a resource's data with `at`'s replacements, in a copy; `data` itself when `at` replaces none. */
function inData(data: unknown, fields: readonly string[], at: (s: string) => string | undefined): unknown {
  if (data === null || typeof data !== "object" || Array.isArray(data)) return data;
  let out: Record<string, unknown> | null = null;
  for (const f of fields) {
    const s = (data as Record<string, unknown>)[f];
    const r = typeof s === "string" ? at(s) : undefined;
    if (r !== undefined && r !== s) (out ??= { ...(data as Record<string, unknown>) })[f] = r;
  }
  return out ?? data;
}

/** An event's changes with the `old`/`new` of each change at `/<field>` replaced by `at`, in a copy; `changes` itself when `at` replaces none. */
function inChanges(changes: unknown, fields: readonly string[], at: (s: string) => string | undefined): unknown {
  if (!Array.isArray(changes)) return changes;
  let out: unknown[] | null = null;
  changes.forEach((c: { path?: unknown; old?: unknown; new?: unknown }, i) => {
    if (c === null || typeof c !== "object" || typeof c.path !== "string" || !fields.includes(c.path.slice(1)) || c.path.indexOf("/", 1) >= 0) return;
    const old = typeof c.old === "string" ? at(c.old) : undefined;
    const now = typeof c.new === "string" ? at(c.new) : undefined;
    if (old !== undefined || now !== undefined) (out ??= [...changes])[i] = { ...c, ...(old === undefined ? {} : { old }), ...(now === undefined ? {} : { new: now }) };
  });
  return out ?? changes;
}

/** Adds the subject a sealed string is sealed under (none for a plain one) to `subjects`; replaces nothing. */
function collectSubject(subjects: Set<string>, s: string): undefined {
  const subject = subjectOf(s);
  if (subject !== null) subjects.add(subject);
  return undefined;
}

/**
 * Where a served value of a resource holds its personal fields: `data.<field>` of an envelope or a
 * listed item, and of an event `payload.data.<field>` and the `old`/`new` of a change at `/<field>`.
 * `at` is called with each such string and its replacement is put in a copy (the value is not changed);
 * the value itself is answered when `at` replaces nothing (no copy for a value with no personal data).
 */
function personalStrings(value: unknown, fields: readonly string[], at: (s: string) => string | undefined): unknown {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return value;
  const v = value as { data?: unknown; payload?: { data?: unknown; changes?: unknown } };
  let out: Record<string, unknown> = value as Record<string, unknown>;
  if ("data" in v) {
    const data = inData(v.data, fields, at);
    if (data !== v.data) out = { ...out, data };
  }
  const payload = v.payload;
  if (payload !== null && typeof payload === "object") {
    const data = "data" in payload ? inData(payload.data, fields, at) : undefined;
    const changes = "changes" in payload ? inChanges(payload.changes, fields, at) : undefined;
    if (data !== payload.data || changes !== payload.changes)
      out = {
        ...out,
        payload: { ...payload, ...("data" in payload ? { data } : {}), ...("changes" in payload ? { changes } : {}) },
      };
  }
  return out;
}

/** The data subjects' keys of one store (Core.subjects): sealing declared personal fields on write, opening them on read, and erasure (SubjectKeys). */
export class Subjects extends SubjectKeys {
  constructor(
    kv: KvStore,
    now: () => number,
    /** A type's declared personal data (`TypeDecl.personal`): what `open` opens. */
    private readonly personalOf: (type: string) => PersonalDecl | undefined = () => undefined,
  ) {
    super(kv, now);
  }

  /**
   * `data` with its personal fields sealed under its subject's key: those `fresh` names (the fields the
   * write sets; null: all), unless the value is what `current` holds sealed already (kept as it is, so an
   * unchanged field is no change in a diff). The subject's key is made on its first use, and the resource
   * is recorded as holding its data. A subject that was erased takes no new personal data (ConflictError).
   */
  async seal(t: CompiledType, ref: Ref, data: Record<string, unknown>, fresh: ReadonlySet<string> | null, current?: Record<string, unknown>): Promise<Record<string, unknown>> {
    const p = t.decl.personal;
    if (!p) return data;
    const subject = data[p.subject];
    if (typeof subject !== "string") return data;
    const fields = p.fields.filter((f) => typeof data[f] === "string" && (fresh === null || fresh.has(f)));
    if (fields.length === 0) return data;
    const field = `data.${p.subject}`;
    assertId(subject, field);
    const key = await this.keyFor(subject, ref, field);
    const out = { ...data };
    for (const f of fields) {
      const plain = data[f] as string;
      const was = current?.[f];
      out[f] = typeof was === "string" && subjectOf(was) === subject && openText(key, subject, was) === plain ? was : sealText(key, subject, plain);
    }
    return out;
  }

  /** The patch an event records: its personal fields as `data` (the state written) holds them, sealed. */
  sealedPatch(t: CompiledType, patch: Record<string, unknown>, data: Record<string, unknown>): Record<string, unknown> {
    const p = t.decl.personal;
    if (!p || typeof data[p.subject] !== "string") return patch;
    const out = { ...patch };
    for (const f of p.fields) if (typeof out[f] === "string") out[f] = data[f];
    return out;
  }

  /** The data to validate in place of `data`: the sealed personal fields a write did not set stand in as a short text (their plain text was validated when written). */
  standIn(t: CompiledType, data: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
    const p = t.decl.personal;
    if (!p) return data;
    const out = { ...data };
    for (const f of p.fields) if (!(f in patch) && typeof out[f] === "string" && subjectOf(out[f] as string) !== null) out[f] = "x";
    return out;
  }

  /**
   * The one opening of personal data, which every read path uses (state, lists, history, diffs, the
   * feed, subscriptions): `value`, an envelope, a listed item or an event of the resource `ref`, with
   * the sealed strings of its type's declared personal fields (`personalStrings`) opened: their plain
   * text, or ERASED_TEXT once their subject was erased. Only a value sealed under a subject whose
   * partition records this resource as holding its data opens (the entry its own sealing write put);
   * any other string, in any other field or resource, is answered as stored. So a sealed value copied
   * elsewhere (from an archive file, an export, a dead letter) opens nowhere but where it was written.
   */
  async open<T>(ref: Ref | null, value: T): Promise<T> {
    return (await this.openMany([[ref, value]]))[0]!;
  }

  /**
   * Each of `values` (a value of the resource its ref names) opened as `open` opens one, the reads shared:
   * one `getMany` per distinct subject for the whole lot (its key, its erasure, and which of these
   * resources it records), however many values name it. A page of a subject's items is one read, not one a
   * value (a round trip each on Redis or PostgreSQL).
   */
  async openMany<T>(values: readonly (readonly [Ref | null, T])[]): Promise<T[]> {
    const found = values.map(([ref, value]) => {
      const fields = ref === null ? undefined : this.personalOf(ref.type)?.fields;
      const subjects = new Set<string>();
      if (ref && fields && fields.length > 0) personalStrings(value, fields, (s) => collectSubject(subjects, s));
      // the resource's name in `asked` and `recorded`, for a value holding sealed data only
      return { ref, fields, subjects, held: ref && subjects.size > 0 ? JSON.stringify([ref.type, ...ref.ids]) : null };
    });
    // Per subject, the resources asked about; then per subject, its key (or erasure) and which of them it records.
    const asked = new Map<string, Map<string, Ref>>();
    for (const f of found) for (const subject of f.subjects) (asked.get(subject) ?? asked.set(subject, new Map()).get(subject)!).set(f.held!, f.ref!);
    if (asked.size === 0) return values.map(([, value]) => value);
    const read = await this.keysForHolders(new Map([...asked].map(([subject, refs]) => [subject, [...refs.values()]])));
    const keys = new Map<string, { key: Buffer | "erased"; recorded: Set<string> }>();
    for (const [subject, { key, recorded }] of read) keys.set(subject, { key, recorded: new Set([...asked.get(subject)!.keys()].filter((_, i) => recorded[i])) });
    return values.map(([, value], i) => {
      const { fields, subjects, held } = found[i]!;
      if (subjects.size === 0) return value;
      return personalStrings(value, fields!, (s) =>
        openWith(s, (subject) => {
          const k = keys.get(subject);
          return k?.recorded.has(held!) ? k.key : undefined;
        }),
      ) as T;
    });
  }

  /** A JSON value with every sealed string in it, wherever it is, replaced by MASKED_TEXT: for a reader who may not read what it holds. */
  masked<T>(value: T): T {
    return mapStrings(value, (s) => (subjectOf(s) === null ? s : MASKED_TEXT)) as T;
  }

  /** An event with its personal data opened (`open`, the resource its path names). */
  openEvent<E extends { path?: readonly { type: string; id: string }[] }>(event: E): Promise<E> {
    return this.open(refOfEvent(event), event);
  }

  /** Events with their personal data opened (`openMany`, each the resource its path names): the reads shared across them. */
  openEvents<E extends { path?: readonly { type: string; id: string }[] }>(events: readonly E[]): Promise<E[]> {
    return this.openMany(events.map((e) => [refOfEvent(e), e] as const));
  }

  /** The JSON bytes of a value of `ref` with its personal data opened (`open`); bytes holding no sealed value are answered as they are, unparsed. */
  async openJson(ref: Ref, json: Buffer): Promise<Buffer> {
    if (!sealedIn(json)) return json;
    const value = JSON.parse(json.toString("utf8")) as unknown;
    const opened = await this.open(ref, value);
    return opened === value ? json : Buffer.from(JSON.stringify(opened));
  }

  /**
   * Each of `items` (JSON bytes of the resource `refOf` names from its id) opened (`openJson`), the reads
   * shared (`openMany`): the same array when none holds a sealed value (the common case: no promise).
   */
  openAll(items: Buffer[], refOf: (id: string) => Ref): Buffer[] | Promise<Buffer[]> {
    if (!items.some(sealedIn)) return items;
    const sealed = items.flatMap((b, i) => {
      if (!sealedIn(b)) return [];
      const value = JSON.parse(b.toString("utf8")) as { id: string };
      return [{ i, value, ref: refOf(value.id) }];
    });
    return this.openMany(sealed.map((x) => [x.ref, x.value] as const)).then((opened) => {
      const out = [...items];
      sealed.forEach((x, n) => {
        if (opened[n] !== x.value) out[x.i] = Buffer.from(JSON.stringify(opened[n]));
      });
      return out;
    });
  }

  /** The receipt of a subject's erasure, or null when it was not erased. */
  override async receipt(subject: string): Promise<ErasureReceipt | null> {
    assertId(subject, "subjectId");
    return super.receipt(subject);
  }

  /** See SubjectKeys.destroyKey; the subject's id is checked first. */
  override async destroyKey(subject: string, by: string, fieldsOf: (type: string) => readonly string[], guard?: Parameters<SubjectKeys["destroyKey"]>[3]): Promise<ErasureReceipt> {
    assertId(subject, "subjectId");
    return super.destroyKey(subject, by, fieldsOf, guard);
  }
}
