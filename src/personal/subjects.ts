/**
 * The data subjects' keys and the seal format of personal data (crypto-shredding, issue 26 part 2), below
 * every domain that stores personal data: the resources' declared personal fields
 * (resources/personal/subjects.ts) and the users' display names (identity/identity.ts) are sealed under
 * the same per-subject keys, so erasing a subject erases both.
 *
 * A subject's partition (`subjectLayout.partition`, kind `subject`) holds its key (AES-256-GCM, made on
 * first use), the holders of data sealed under it (a resource's type and ids, or a user: `USER_HOLDER`;
 * the receipt of an erasure names them) and, once erased, the receipt of its erasure. A sealed value is
 * `psd1.<base64url(subject)>.<base64url(iv[12] | tag[16] | ciphertext)>`; its additional authenticated
 * data is the subject, so a value does not open under another subject's key. Erasing deletes the key:
 * every sealed value of the subject then reads as ERASED_TEXT, while the bytes chains hash are unchanged.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { type Static, Type } from "@sinclair/typebox";
import { ConflictError, NotFoundError, ValidationError } from "../errors.js";
import { allPartitions, scanAll, type Entry, type Key, type KvStore, type Partition } from "../kv/contract.js";
import { verifyRecordChain, type RecordChainResult, type RecordChainSpec } from "../kv/record-chain.js";
import { keyFamilies, PartitionKind } from "../kv/subspace.js";

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

/** The kind of the subjects' partitions, declared once (the resources' layout lists it among its kinds). */
export const SUBJECT_KIND = new PartitionKind("subject");
/** A subject partition's families: its key, the holders of data sealed under it, and the receipt of its erasure. */
const SUBJECT = keyFamilies(["key", "ref", "erasure"]);

/** The keys of a subject's partition. */
export const subjectLayout = {
  partition: (subject: string): Partition => SUBJECT_KIND.partition(subject),
  key: SUBJECT.key.pack(),
  erasure: SUBJECT.erasure.pack(),
  refs: SUBJECT.ref.pack(),
  ref: (type: string, ids: readonly string[]): Key => SUBJECT.ref.pack([type, ...ids]),
  refOf: (key: Key): { type: string; ids: string[] } => {
    const [type, ...ids] = SUBJECT.ref.unpack(key);
    return { type: type as string, ids: ids as string[] };
  },
} as const;

/**
 * The register of erasures (partition `["erased"]`, one receipt per erased subject; compose/erasure.ts
 * writes it, and a restore leaves it alone): what identity trusts to keep an erased user's account
 * disabled. A receipt found only in a subject partition (unchained: anyone who can write the store's
 * files can put one there) does not disable an account.
 *
 * The register carries a record chain (REGISTER_CHAIN, kv/record-chain.ts, as the exchange rates' partition
 * does; issue 26): every receipt compose registers appends an event naming it and the SHA-256 of its
 * bytes, as the eraser (or the system, for the repairs at open and after an import). A receipt planted
 * past the store, or one edited there, fails `verify` naming the partition, and identity acts on the
 * register only while its chain verifies (`registerVerified`): such a receipt then disables nothing.
 */
export const ERASED_REGISTER = new PartitionKind("erased");
const REGISTERED = keyFamilies(["subject"]);
export const registerLayout = {
  partition: ERASED_REGISTER.partition(),
  prefix: REGISTERED.subject.pack(),
  key: (subject: string): Key => REGISTERED.subject.pack([subject]),
} as const;

/** The register's record chain: it covers every registered receipt. */
export const REGISTER_CHAIN: RecordChainSpec = { holds: (p) => ERASED_REGISTER.holds(p), covers: (key) => REGISTERED.subject.contains(key) };

/** The register of `kv` (the live store's, or a view's) against its record chain (checked 0: nothing was ever registered). */
export function verifyRegister(kv: KvStore): Promise<RecordChainResult> {
  return verifyRecordChain(kv, registerLayout.partition, REGISTER_CHAIN);
}

/** True when the register's chain verifies: what identity requires before it acts on a registered erasure. */
export async function registerVerified(kv: KvStore): Promise<boolean> {
  return (await verifyRegister(kv)).ok;
}

/** The registered receipt of a subject's erasure, or null (one read; whether the register verifies is the caller's: `registerVerified`). */
export async function registeredErasure(kv: KvStore, subject: string): Promise<ErasureReceipt | null> {
  const e = await kv.get(registerLayout.partition, registerLayout.key(subject));
  return e ? (JSON.parse(e.value.toString("utf8")) as ErasureReceipt) : null;
}

/** Every registered receipt, by subject (one scan of the register; whether it verifies is the caller's: `registerVerified`). */
export async function registeredErasures(kv: KvStore): Promise<Map<string, ErasureReceipt>> {
  const registered = new Map<string, ErasureReceipt>();
  for await (const e of scanAll(kv, registerLayout.partition, { prefix: registerLayout.prefix })) {
    const receipt = JSON.parse(e.value.toString("utf8")) as ErasureReceipt;
    registered.set(receipt.subject, receipt);
  }
  return registered;
}

/** A holder of sealed data: a resource (its type and ids) or a user (`USER_HOLDER`, its id). */
export interface Holder {
  readonly type: string;
  readonly ids: readonly string[];
}

/**
 * The holder type of a user account (its display name sealed under its subject's key, identity.ts). Not a
 * resource type: `$` is in no declared type's name, so an erasure tells a user from a resource by it.
 */
export const USER_HOLDER = "$user";
/** The fields of a user an erasure erases. */
export const USER_PERSONAL_FIELDS = ["displayName", "email"] as const;

/** A holder of a data subject's sealed personal data, in the receipt of the subject's erasure. */
export const ErasedResource = Type.Object(
  {
    type: Type.String({ description: `the resource's type, or ${USER_HOLDER} for a user account` }),
    ids: Type.Array(Type.String(), { description: "the resource's ids, from its partition owner's down (a user: its id)" }),
    fields: Type.Array(Type.String(), { description: "its personal fields, which read as erased" }),
    event: Type.Optional(
      Type.Object(
        { seq: Type.Integer(), hash: Type.String() },
        { description: "the erasure's event in the resource's chain (a user: the identity record chain's, the account disabled): its seq and hash (the chain head right after)" },
      ),
    ),
    gone: Type.Optional(Type.Literal(true, { description: "the resource had been deleted: its events keep the ciphertext, and no event was appended" })),
  },
  { $id: "ErasedResource", additionalProperties: false },
);

/** The receipt of a data subject's erasure: what was erased, when, by whom, and where each chain stood after. */
export const ErasureReceipt = Type.Object(
  {
    subject: Type.String(),
    erasedAt: Type.String({ description: "when the key was destroyed (ISO 8601)" }),
    erasedBy: Type.String({ description: "who erased it" }),
    keyId: Type.String({ description: "the first 16 hex digits of the destroyed key's SHA-256 (names the key, tells nothing of it)" }),
    resources: Type.Array(ErasedResource),
    complete: Type.Boolean({ description: "false while the erasure's events are not all appended (erasing again finishes them)" }),
  },
  { $id: "ErasureReceipt", additionalProperties: false },
);

export type ErasureReceipt = Static<typeof ErasureReceipt>;
export type ErasedResource = Static<typeof ErasedResource>;

const b64 = (s: string): string => Buffer.from(s, "utf8").toString("base64url");
const keyIdOf = (key: Buffer): string => createHash("sha256").update(key).digest("hex").slice(0, 16);

/** `plain` sealed under the subject's key (a random IV; the subject as additional authenticated data). */
export function sealText(key: Buffer, subject: string, plain: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  cipher.setAAD(Buffer.from(subject, "utf8"));
  const ct = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
  return `${SEALED_PREFIX}${b64(subject)}.${Buffer.concat([iv, cipher.getAuthTag(), ct]).toString("base64url")}`;
}

/** The subject a sealed value names, or null when the string is not one. */
export function subjectOf(value: string): string | null {
  if (!value.startsWith(SEALED_PREFIX)) return null;
  const dot = value.indexOf(".", SEALED_PREFIX.length);
  if (dot < 0) return null;
  return Buffer.from(value.slice(SEALED_PREFIX.length, dot), "base64url").toString("utf8");
}

/** The plain text of a sealed value under `key`, or null when it does not open (another key, altered). */
export function openText(key: Buffer, subject: string, value: string): string | null {
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

/**
 * Refuses written data holding a string that starts with the seal prefix, anywhere in it (ValidationError
 * naming its field, as `data.<path>`): only the store's own sealing makes sealed values, so one in the
 * input is a copy of another's (from an archive file, an export) and is stored nowhere.
 */
export function refuseSealed(value: unknown, field = "data"): void {
  const at = sealedAt(value);
  if (at === null) return;
  const path = [field, ...at.reverse()].join(".");
  throw new ValidationError(`${path} is a sealed value (${SEALED_PREFIX}…): sealed values are made by the store, never written`, path);
}

/**
 * The path (innermost key first) to the first sealed string in `value`, or null. The path is put together
 * only when one is found: every create walks its data here, and most data holds none.
 */
function sealedAt(value: unknown): string[] | null {
  if (typeof value === "string") return value.startsWith(SEALED_PREFIX) ? [] : null;
  if (value === null || typeof value !== "object") return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const at = sealedAt(value[i]);
      if (at !== null) return (at.push(String(i)), at);
    }
    return null;
  }
  for (const k in value) {
    if (!Object.hasOwn(value, k)) continue;
    const at = sealedAt((value as Record<string, unknown>)[k]);
    if (at !== null) return (at.push(k), at);
  }
  return null;
}

/** A subject's key as opening finds it: the key, "erased" once destroyed, or undefined (no key, or `holder` not recorded as holding its data). */
export type OpeningKey = Buffer | "erased" | undefined;

/** The opened text of `value` under what `keyOf` finds for its subject: plain text, ERASED_TEXT, or the value as stored (not sealed, not opening). */
export function openWith(value: string, keyOf: (subject: string) => OpeningKey): string {
  const subject = subjectOf(value);
  const key = subject === null ? undefined : keyOf(subject);
  if (key === undefined) return value;
  if (key === "erased") return ERASED_TEXT;
  return openText(key, subject!, value) ?? value;
}

/** The data subjects' keys of one store: made on first use, read for opening, destroyed by an erasure. */
export class SubjectKeys {
  constructor(
    protected readonly kv: KvStore,
    protected readonly now: () => number,
  ) {}

  /**
   * The subject's key, made (and `holder` recorded as holding its data) on first use; ConflictError naming
   * `field` when the subject was erased (it takes no new personal data). The subject is checked by the caller.
   */
  async keyFor(subject: string, holder: Holder, field: string): Promise<Buffer> {
    const partition = subjectLayout.partition(subject);
    const refKey = subjectLayout.ref(holder.type, holder.ids);
    for (;;) {
      const [k, r, erased] = await this.kv.getMany(partition, [subjectLayout.key, refKey, subjectLayout.erasure]);
      if (erased) throw new ConflictError(`the data subject ${subject} was erased: no personal data of it can be stored`, field);
      if (k && r) return decodeKey(k);
      const key = k ? decodeKey(k) : randomBytes(32);
      // The key entry is put again with each holder recorded: its version moves, so an erasure that
      // listed the holders before this commit fails its check and lists them again (its receipt misses none).
      const value = k ? k.value : Buffer.from(JSON.stringify({ key: key.toString("base64"), createdAt: new Date(this.now()).toISOString() }));
      try {
        await this.kv.commit(partition, [
          { type: "check", key: subjectLayout.key, version: k?.version ?? null },
          { type: "check", key: subjectLayout.erasure, version: null },
          { type: "put", key: subjectLayout.key, value },
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
   * The keys that open the subjects' values held by `holder`: a subject's key, "erased" once destroyed;
   * none for a subject whose partition does not record `holder` as holding its data (a sealed value
   * copied elsewhere opens nowhere but where it was written) or whose id names no partition.
   */
  async keysFor(subjects: Iterable<string>, holder: Holder): Promise<Map<string, Buffer | "erased">> {
    const read = await this.keysForHolders(new Map([...new Set(subjects)].map((subject) => [subject, [holder]])));
    const keys = new Map<string, Buffer | "erased">();
    for (const [subject, { key, recorded }] of read) if (recorded[0]) keys.set(subject, key);
    return keys;
  }

  /**
   * For each subject, its key (or "erased") and, for each holder asked about it, whether the subject
   * records that holder: one `getMany` per distinct subject however many holders, so a page of a subject's
   * items is one read, not one a value (a round trip each on Redis or PostgreSQL). A subject with neither
   * a key nor an erasure is left out.
   */
  async keysForHolders(asked: ReadonlyMap<string, readonly Holder[]>): Promise<Map<string, { key: Buffer | "erased"; recorded: boolean[] }>> {
    const keys = new Map<string, { key: Buffer | "erased"; recorded: boolean[] }>();
    await Promise.all(
      [...asked].map(async ([subject, holders]) => {
        let partition: Partition;
        try {
          partition = subjectLayout.partition(subject);
        } catch {
          return;
        }
        const [k, erased, ...recorded] = await this.kv.getMany(partition, [subjectLayout.key, subjectLayout.erasure, ...holders.map((h) => subjectLayout.ref(h.type, h.ids))]);
        const key = k ? decodeKey(k) : erased ? "erased" : undefined;
        if (key !== undefined) keys.set(subject, { key, recorded: recorded.map((r) => r !== undefined) });
      }),
    );
    return keys;
  }

  /** The receipt of a subject's erasure, or null when it was not erased. */
  async receipt(subject: string): Promise<ErasureReceipt | null> {
    const e = await this.kv.get(subjectLayout.partition(subject), subjectLayout.erasure);
    return e ? (JSON.parse(e.value.toString("utf8")) as ErasureReceipt) : null;
  }

  /**
   * Destroys the subject's key and records the erasure's receipt (incomplete: its events are appended
   * after), in one commit; a subject erased before answers its receipt as it stands. NotFoundError when
   * no personal data of the subject was ever stored. `fieldsOf` names a holder type's personal fields.
   * `guard` sees the holders before the key goes (and those of an erasure left incomplete) and may refuse
   * (throw): nothing is erased then. A holder recorded meanwhile moves the key's version, so the commit
   * fails its check and the guard sees every holder again.
   */
  async destroyKey(
    subject: string,
    by: string,
    fieldsOf: (type: string) => readonly string[],
    guard: (holders: readonly ErasedResource[]) => Promise<void> = async () => {},
  ): Promise<ErasureReceipt> {
    const partition = subjectLayout.partition(subject);
    for (;;) {
      const [k, erased] = await this.kv.getMany(partition, [subjectLayout.key, subjectLayout.erasure]);
      if (erased) {
        const receipt = JSON.parse(erased.value.toString("utf8")) as ErasureReceipt;
        if (!receipt.complete) await guard(receipt.resources);
        return receipt;
      }
      if (!k) throw new NotFoundError(`no personal data of the subject ${subject} is stored`);
      const resources: ErasedResource[] = [];
      for await (const e of scanAll(this.kv, partition, { prefix: subjectLayout.refs })) {
        const ref = subjectLayout.refOf(e.key);
        resources.push({ ...ref, fields: [...(ref.type === USER_HOLDER ? USER_PERSONAL_FIELDS : fieldsOf(ref.type))] });
      }
      const receipt: ErasureReceipt = { subject, erasedAt: new Date(this.now()).toISOString(), erasedBy: by, keyId: keyIdOf(decodeKey(k)), resources, complete: false };
      await guard(resources);
      try {
        await this.kv.commit(partition, [
          { type: "check", key: subjectLayout.key, version: k.version },
          { type: "delete", key: subjectLayout.key },
          { type: "put", key: subjectLayout.erasure, value: Buffer.from(JSON.stringify(receipt)) },
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
    const partition = subjectLayout.partition(receipt.subject);
    const [k, erased] = await this.kv.getMany(partition, [subjectLayout.key, subjectLayout.erasure]);
    if (!k && erased) return false;
    await this.kv.commit(partition, [
      { type: "delete", key: subjectLayout.key },
      { type: "put", key: subjectLayout.erasure, value: Buffer.from(JSON.stringify(receipt)) },
    ]);
    return true;
  }

  /**
   * Deletes the subject key a copy of a subject's partition holds (`copy`: the copy a restore kept in a
   * replaced history, compose/epochs.ts), as `destroyKey` does in the live one. True when there was one.
   */
  async forgetKey(copy: Partition): Promise<boolean> {
    if (!(await this.kv.get(copy, subjectLayout.key))) return false;
    await this.kv.commit(copy, [{ type: "delete", key: subjectLayout.key }]);
    return true;
  }

  /** The receipt of every erased subject this store's subject partitions hold. */
  async *erasures(): AsyncGenerator<ErasureReceipt> {
    for await (const p of allPartitions(this.kv, SUBJECT_KIND.kind)) {
      const e = await this.kv.get(p, subjectLayout.erasure);
      if (e) yield JSON.parse(e.value.toString("utf8")) as ErasureReceipt;
    }
  }

  /** Records the receipt as it now stands (the erasure's events appended). */
  async record(receipt: ErasureReceipt): Promise<void> {
    await this.kv.commit(subjectLayout.partition(receipt.subject), [{ type: "put", key: subjectLayout.erasure, value: Buffer.from(JSON.stringify(receipt)) }]);
  }
}
