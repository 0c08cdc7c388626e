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
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { ConflictError, NotFoundError, ValidationError } from "../../errors.js";
import { allPartitions, scanAll, type Entry, type KvStore, type Partition } from "../../kv/contract.js";
import type { Static } from "@sinclair/typebox";
import { kinds, layout } from "../model/layout.js";
import type { ErasedResource as ErasedResourceShape, ErasureReceipt as ErasureReceiptShape } from "../model/wire.js";
import type { Ref } from "../model/ref.js";
import { assertId, type CompiledType, type PersonalDecl } from "../model/schema.js";

export const SEALED_PREFIX = "psd1.";
/** What a sealed value of an erased subject reads as (a string, so every served schema still holds). */
export const ERASED_TEXT = "(erased)";
/** What a sealed value reads as to a reader who may not read it (a subscription's dead letter shown to an operator). */
export const MASKED_TEXT = "(withheld)";
const PREFIX_BYTES = Buffer.from(SEALED_PREFIX);

/**
 * True when JSON bytes may hold a sealed value (a string starting with the prefix): a scan, no parse.
 * It looks for the prefix, then for the quote before it: a search starting with `"`, which JSON is full
 * of, is six times slower (900 µs against 150 µs over a list of 1,000 workflowitems).
 */
export function sealedIn(json: Buffer): boolean {
  for (let at = json.indexOf(PREFIX_BYTES, 1); at > 0; at = json.indexOf(PREFIX_BYTES, at + 1)) if (json[at - 1] === 0x22) return true;
  return false;
}

/** The receipt of an erasure and each resource it names: their one declaration is the wire shape (model/wire.ts). */
export type ErasureReceipt = Static<typeof ErasureReceiptShape>;
export type ErasedResource = Static<typeof ErasedResourceShape>;

const b64 = (s: string): string => Buffer.from(s, "utf8").toString("base64url");
const keyIdOf = (key: Buffer): string => createHash("sha256").update(key).digest("hex").slice(0, 16);

function seal(key: Buffer, subject: string, plain: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  cipher.setAAD(Buffer.from(subject, "utf8"));
  const ct = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
  return `${SEALED_PREFIX}${b64(subject)}.${Buffer.concat([iv, cipher.getAuthTag(), ct]).toString("base64url")}`;
}

/** The subject a sealed value names, or null when the string is not one. */
function subjectOf(value: string): string | null {
  if (!value.startsWith(SEALED_PREFIX)) return null;
  const dot = value.indexOf(".", SEALED_PREFIX.length);
  if (dot < 0) return null;
  return Buffer.from(value.slice(SEALED_PREFIX.length, dot), "base64url").toString("utf8");
}

/** The plain text of a sealed value under `key`, or null when it does not open (another key, altered). */
function open(key: Buffer, subject: string, value: string): string | null {
  const raw = Buffer.from(value.slice(value.lastIndexOf(".") + 1), "base64url");
  if (raw.length < 28) return null;
  try {
    const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12));
    decipher.setAAD(Buffer.from(subject, "utf8"));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
  } catch {
    return null;
  }
}

const decodeKey = (e: Entry): Buffer => Buffer.from((JSON.parse(e.value.toString("utf8")) as { key: string }).key, "base64");

/** The JSON value with each string replaced by `f`'s answer (objects and arrays copied). */
function mapStrings(v: unknown, f: (s: string) => string): unknown {
  if (typeof v === "string") return f(v);
  if (Array.isArray(v)) return v.map((x) => mapStrings(x, f));
  if (v !== null && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, mapStrings(x, f)]));
  return v;
}

/**
 * Refuses written data holding a string that starts with the seal prefix, anywhere in it (ValidationError
 * naming its field, as `data.<path>`): only a write's own sealing makes sealed values, so one in the
 * input is a copy of another's (from an archive file, an export) and is stored nowhere.
 */
export function refuseSealed(value: unknown, field = "data"): void {
  if (typeof value === "string") {
    if (value.startsWith(SEALED_PREFIX)) throw new ValidationError(`${field} is a sealed value (${SEALED_PREFIX}…): sealed values are made by the store, never written`, field);
  } else if (Array.isArray(value)) value.forEach((x, i) => refuseSealed(x, `${field}.${i}`));
  else if (value !== null && typeof value === "object") for (const [k, x] of Object.entries(value)) refuseSealed(x, `${field}.${k}`);
}

/** The resource an event is of (its path), or null when the path names none. */
export function refOfEvent(event: { path?: readonly { type: string; id: string }[] }): Ref | null {
  const last = event.path?.at(-1);
  return last ? { type: last.type, ids: event.path!.map((p) => p.id) } : null;
}

/**
 * Where a served value of a resource holds its personal fields: `data.<field>` of an envelope or a
 * listed item, and of an event `payload.data.<field>` and the `old`/`new` of a change at `/<field>`.
 * `at` is called with each such string and its replacement is put in a copy (the value is not changed).
 */
function personalStrings(value: unknown, fields: readonly string[], at: (s: string) => string | undefined): unknown {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return value;
  const v = value as { data?: unknown; payload?: { data?: unknown; changes?: unknown } };
  const inData = (data: unknown): unknown => {
    if (data === null || typeof data !== "object" || Array.isArray(data)) return data;
    let out: Record<string, unknown> | null = null;
    for (const f of fields) {
      const s = (data as Record<string, unknown>)[f];
      const r = typeof s === "string" ? at(s) : undefined;
      if (r !== undefined && r !== s) (out ??= { ...(data as Record<string, unknown>) })[f] = r;
    }
    return out ?? data;
  };
  const inChanges = (changes: unknown): unknown => {
    if (!Array.isArray(changes)) return changes;
    return changes.map((c: { path?: unknown; old?: unknown; new?: unknown }) => {
      if (c === null || typeof c !== "object" || typeof c.path !== "string" || !fields.includes(c.path.slice(1)) || c.path.indexOf("/", 1) >= 0) return c;
      const old = typeof c.old === "string" ? at(c.old) : undefined;
      const now = typeof c.new === "string" ? at(c.new) : undefined;
      return old === undefined && now === undefined ? c : { ...c, ...(old === undefined ? {} : { old }), ...(now === undefined ? {} : { new: now }) };
    });
  };
  let out: Record<string, unknown> = value as Record<string, unknown>;
  if ("data" in v) out = { ...out, data: inData(v.data) };
  if (v.payload !== null && typeof v.payload === "object")
    out = {
      ...out,
      payload: { ...v.payload, ...("data" in v.payload ? { data: inData(v.payload.data) } : {}), ...("changes" in v.payload ? { changes: inChanges(v.payload.changes) } : {}) },
    };
  return out;
}

/** The data subjects' keys of one store (Core.subjects): sealing on write, opening on read, and erasure. */
export class Subjects {
  constructor(
    private readonly kv: KvStore,
    private readonly now: () => number,
    /** A type's declared personal data (`TypeDecl.personal`): what `open` opens. */
    private readonly personalOf: (type: string) => PersonalDecl | undefined = () => undefined,
  ) {}

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
    const key = await this.#keyFor(subject, ref, `data.${p.subject}`);
    const out = { ...data };
    for (const f of fields) {
      const plain = data[f] as string;
      const was = current?.[f];
      out[f] = typeof was === "string" && subjectOf(was) === subject && open(key, subject, was) === plain ? was : seal(key, subject, plain);
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

  /** The subject's key, made (and the resource recorded) on first use; ConflictError when the subject was erased. */
  async #keyFor(subject: string, ref: Ref, field: string): Promise<Buffer> {
    assertId(subject, field);
    const partition = layout.subject(subject);
    const refKey = layout.subjectRef(ref.type, ref.ids);
    for (;;) {
      const [k, r, erased] = await this.kv.getMany(partition, [layout.subjectKey, refKey, layout.subjectErasure]);
      if (erased) throw new ConflictError(`the data subject ${subject} was erased: no personal data of it can be stored`, field);
      if (k && r) return decodeKey(k);
      const key = k ? decodeKey(k) : randomBytes(32);
      // The key entry is put again with each resource recorded: its version moves, so an erasure that
      // listed the resources before this commit fails its check and lists them again (its receipt misses none).
      const value = k ? k.value : Buffer.from(JSON.stringify({ key: key.toString("base64"), createdAt: new Date(this.now()).toISOString() }));
      try {
        await this.kv.commit(partition, [
          { type: "check", key: layout.subjectKey, version: k?.version ?? null },
          { type: "check", key: layout.subjectErasure, version: null },
          { type: "put", key: layout.subjectKey, value },
          { type: "put", key: refKey, value: Buffer.alloc(0) },
        ]);
        return key;
      } catch (e) {
        if (!(e instanceof ConflictError)) throw e;
        // another write made the key, or an erasure destroyed it, meanwhile: read again
      }
    }
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
      if (ref && fields && fields.length > 0)
        personalStrings(value, fields, (s) => {
          const subject = subjectOf(s);
          if (subject !== null) subjects.add(subject);
          return undefined;
        });
      return { ref, fields, subjects, held: ref && JSON.stringify([ref.type, ...ref.ids]) };
    });
    // Per subject, the resources asked about; then per subject, its key (or erasure) and the resources it records.
    const asked = new Map<string, Map<string, Ref>>();
    for (const f of found) for (const subject of f.subjects) (asked.get(subject) ?? asked.set(subject, new Map()).get(subject)!).set(f.held!, f.ref!);
    if (asked.size === 0) return values.map(([, value]) => value);
    const keys = new Map<string, { key: Buffer | "erased"; recorded: Set<string> }>();
    await Promise.all(
      [...asked].map(async ([subject, refs]) => {
        let partition;
        try {
          partition = layout.subject(subject);
        } catch {
          return;
        }
        const [k, erased, ...recorded] = await this.kv.getMany(partition, [
          layout.subjectKey,
          layout.subjectErasure,
          ...[...refs.values()].map((r) => layout.subjectRef(r.type, r.ids)),
        ]);
        const key = k ? decodeKey(k) : erased ? "erased" : undefined;
        if (key !== undefined) keys.set(subject, { key, recorded: new Set([...refs.keys()].filter((_, i) => recorded[i] !== undefined)) });
      }),
    );
    return values.map(([, value], i) => {
      const { fields, subjects, held } = found[i]!;
      if (subjects.size === 0) return value;
      return personalStrings(value, fields!, (s) => {
        const subject = subjectOf(s);
        const k = subject === null ? undefined : keys.get(subject);
        if (k === undefined || !k.recorded.has(held!)) return s;
        if (k.key === "erased") return ERASED_TEXT;
        return open(k.key, subject!, s) ?? s;
      }) as T;
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
  async receipt(subject: string): Promise<ErasureReceipt | null> {
    assertId(subject, "subjectId");
    const e = await this.kv.get(layout.subject(subject), layout.subjectErasure);
    return e ? (JSON.parse(e.value.toString("utf8")) as ErasureReceipt) : null;
  }

  /**
   * Destroys the subject's key and records the erasure's receipt (incomplete: its events are appended
   * after), in one commit; a subject erased before answers its receipt as it stands. NotFoundError when
   * no personal data of the subject was ever stored. `fieldsOf` names a type's personal fields.
   */
  async destroyKey(subject: string, by: string, fieldsOf: (type: string) => readonly string[]): Promise<ErasureReceipt> {
    assertId(subject, "subjectId");
    const partition = layout.subject(subject);
    for (;;) {
      const [k, erased] = await this.kv.getMany(partition, [layout.subjectKey, layout.subjectErasure]);
      if (erased) return JSON.parse(erased.value.toString("utf8")) as ErasureReceipt;
      if (!k) throw new NotFoundError(`no personal data of the subject ${subject} is stored`);
      const resources: ErasedResource[] = [];
      for await (const e of scanAll(this.kv, partition, { prefix: layout.subjectRefs })) {
        const ref = layout.refOfSubjectRef(e.key);
        resources.push({ ...ref, fields: [...fieldsOf(ref.type)] });
      }
      const receipt: ErasureReceipt = { subject, erasedAt: new Date(this.now()).toISOString(), erasedBy: by, keyId: keyIdOf(decodeKey(k)), resources, complete: false };
      try {
        await this.kv.commit(partition, [
          { type: "check", key: layout.subjectKey, version: k.version },
          { type: "delete", key: layout.subjectKey },
          { type: "put", key: layout.subjectErasure, value: Buffer.from(JSON.stringify(receipt)) },
        ]);
        return receipt;
      } catch (e) {
        if (!(e instanceof ConflictError)) throw e;
      }
    }
  }

  /**
   * Puts an erasure back after a restore or an import brought a copy of the subject's partition from
   * before it (its key with it): the key is deleted again and the receipt put back, in one commit. True
   * when there was anything to do (a key, or no receipt).
   */
  async reinstate(receipt: ErasureReceipt): Promise<boolean> {
    const partition = layout.subject(receipt.subject);
    const [k, erased] = await this.kv.getMany(partition, [layout.subjectKey, layout.subjectErasure]);
    if (!k && erased) return false;
    await this.kv.commit(partition, [
      { type: "delete", key: layout.subjectKey },
      { type: "put", key: layout.subjectErasure, value: Buffer.from(JSON.stringify(receipt)) },
    ]);
    return true;
  }

  /**
   * Deletes the subject key a copy of a subject's partition holds (`copy`: the copy a restore kept in a
   * replaced history, epochs.ts), as `destroyKey` does in the live one. True when there was one.
   */
  async forgetKey(copy: Partition): Promise<boolean> {
    if (!(await this.kv.get(copy, layout.subjectKey))) return false;
    await this.kv.commit(copy, [{ type: "delete", key: layout.subjectKey }]);
    return true;
  }

  /** The receipt of every erased subject this store's subject partitions hold. */
  async *erasures(): AsyncGenerator<ErasureReceipt> {
    for await (const p of allPartitions(this.kv, kinds.subject.kind)) {
      const e = await this.kv.get(p, layout.subjectErasure);
      if (e) yield JSON.parse(e.value.toString("utf8")) as ErasureReceipt;
    }
  }

  /** Records the receipt as it now stands (the erasure's events appended). */
  async record(receipt: ErasureReceipt): Promise<void> {
    await this.kv.commit(layout.subject(receipt.subject), [{ type: "put", key: layout.subjectErasure, value: Buffer.from(JSON.stringify(receipt)) }]);
  }
}
