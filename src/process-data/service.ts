/**
 * Process data: the interim storage of a BPM engine's running processes (form submissions, message
 * payloads, signatures) over the storage contract. Every method is what an HTTP route calls with its
 * path and body; see keys.ts for where each record lives.
 *
 * Every public operation takes the acting Actor first and checks a global intent itself: reads need
 * `global.readProcessData`, writes and deletes `global.writeProcessData` (the system actor bypasses
 * both). The TTL sweep is a maintenance operation of the system and takes no actor.
 *
 * Writes of one record, in order (each a separate commit, so a crash leaves only harmless leftovers):
 *   1. instance-owned records: a pointer `[key] → "P"` in the keyspace bucket (a pointer without its
 *      record is skipped by list); records with a TTL: the expiry entry (expiry.ts);
 *   2. the record itself in its home partition.
 * A delete removes the record first, then the pointer. A put racing a delete or the sweep of the same key
 * may leave the record without its pointer (unlisted until its next write; get still finds it).
 */
import { randomUUID } from "node:crypto";
import type { Actor } from "../access/actor.js";
import { GlobalPermissions } from "../access/global.js";
import { IntentRegistry } from "../access/intents.js";
import { ConflictError, NotFoundError, ValidationError } from "../errors.js";
import { allPartitions, scanAll, type Entry, type Key, type KvStore, type Partition } from "../kv/contract.js";
import { TokenCipher, type KeyConfig } from "./crypto.js";
import { formKeyOf } from "./form-schema.js";
import { assertSealingKey, recordSealingKey, replaceSealingKey } from "./sealing-key.js";
import { expiryEntry, expiryPartition, sweepExpiryIndex, type SweepResult } from "./expiry.js";
import { layout } from "./layout.js";
import { bucketOf, keys, KEYSPACES, ownerOf, parseKey, parseKeyspace, prefixBounds, validatePart, validateProcessInstanceId, type Keyspace, type ParsedKey } from "./keys.js";
import {
  DEFAULT_LIMITS,
  decodeRecord,
  encodeRecord,
  isExpired,
  isPointer,
  pointerOwner,
  pointerTo,
  validateFields,
  validateTtl,
  type AnyRecordFields,
  type Limits,
  type RecordFields,
  type StoredRecord,
} from "./records.js";

/** Most extra keys one process-instance delete takes (`alsoKeys`). */
export const MAX_ALSO_KEYS = 100;

/** The global intents process data checks. */
export const PROCESS_DATA_INTENTS = ["global.readProcessData", "global.writeProcessData"] as const;

declare module "../access/intents.js" {
  interface DeclaredIntents {
    processData: (typeof PROCESS_DATA_INTENTS)[number];
  }
}

export interface ProcessDataOptions extends KeyConfig {
  /** Where the intents are checked (default: the global permissions over the same store). */
  global?: GlobalPermissions;
  /** Epoch milliseconds; injectable for tests. Default Date.now. */
  clock?: () => number;
  limits?: Partial<Limits>;
  /**
   * Refuse to open when the store's tokens were sealed with another key (sealing-key.ts): a
   * ConfigurationError at open instead of a 503 at the first read. Default false (a throwaway key, as the
   * CLI's maintenance commands use, never reads a token).
   */
  requireKey?: boolean;
}

export interface ProcessRecord<F = AnyRecordFields> {
  keyspace: Keyspace;
  key: string;
  /** The record's fields; `accessToken` only on a single-record get (or an export that asks for it). */
  fields: F;
  /** Epoch ms, or null when the record does not expire. */
  expiresAt: number | null;
  updatedAt: number;
  /** The store's version of the record (grows with every write). */
  version: number;
}

export interface ListOptions {
  cursor?: string | null;
  /** 1..1000, default 100. */
  limit?: number;
}

export interface ListPage {
  items: ProcessRecord[];
  /** Pass back as `cursor` for the next page; null at the end. */
  nextCursor: string | null;
}

export interface PutOptions {
  /** Time to live in milliseconds; the record is gone from reads once it passes. */
  ttlMs?: number;
  /**
   * The process instance the record is registered under (the platform's `processInstanceId` of a form-data
   * write): a batch signature's root instance (default: the instance in its key). For a key that names its
   * owner it must be that owner; a key no instance owns takes none.
   */
  processInstanceId?: string;
}

const DEFAULT_LIST_LIMIT = 100;
const MAX_LIST_LIMIT = 1000;
/** The default and the largest number of records a caller may ask for in one page of a list. */
export const LIST_LIMIT = { default: DEFAULT_LIST_LIMIT, max: MAX_LIST_LIMIT } as const;
/** A keyspace page visits at most this many buckets before answering with what it has and a cursor. */
const MAX_BUCKETS_PER_PAGE = 64;

export async function openProcessData(kv: KvStore, options: ProcessDataOptions = {}): Promise<ProcessData> {
  const cipher = await TokenCipher.fromConfig(options);
  if (options.requireKey) await assertSealingKey(kv, cipher.keyId);
  return new ProcessData(kv, cipher, options);
}

export class ProcessData {
  readonly #kv: KvStore;
  readonly #cipher: TokenCipher;
  readonly #clock: () => number;
  readonly #limits: Limits;
  readonly #global: GlobalPermissions;
  #keyRecorded = false;

  constructor(kv: KvStore, cipher: TokenCipher, options: ProcessDataOptions = {}) {
    this.#kv = kv;
    this.#global = options.global ?? new GlobalPermissions(kv, { intents: new IntentRegistry(PROCESS_DATA_INTENTS) });
    this.#cipher = cipher;
    this.#clock = options.clock ?? Date.now;
    this.#limits = { ...DEFAULT_LIMITS, ...options.limits };
  }

  /**
   * Forgets that this process recorded its sealing key in the store (after the store's content was
   * replaced: a restore): the next token sealed records it again, or is refused if the store names another.
   */
  forgetRecordedKey(): void {
    this.#keyRecorded = false;
  }

  // ---- single records ------------------------------------------------------------------------------

  #may(actor: Actor, what: "read" | "write"): Promise<void> {
    return this.#global.assert(actor, what === "read" ? "global.readProcessData" : "global.writeProcessData");
  }

  /**
   * Writes (replaces) the record at `key`. The answer carries no access token. A form schema is only
   * replaced here (NotFoundError when there is none: the platform's update); `createFormSchema` creates one.
   */
  async put(actor: Actor, keyspace: string, key: string, fields: unknown, options: PutOptions = {}): Promise<ProcessRecord> {
    await this.#may(actor, "write");
    const p = parseKey(keyspace, key);
    if (p.kind !== "form-schema") return this.#put(p, fields, options);
    if (options.processInstanceId !== undefined) registrationOf(p, options.processInstanceId);
    const valid = validateFields(p, fields, this.#limits);
    const entry = await this.#kv.get(bucketPartition(p), layout.record(p.key));
    if (!entry || !this.#visible(p, entry, false)) throw new NotFoundError(`no form schema ${p.key} to update (create it with POST)`);
    return this.#put(p, valid, options, entry.version);
  }

  /**
   * Creates a form schema (the registry platform's form-schema provider): its key is the form's `name`,
   * lower-cased; a form schema under that key already is a ConflictError naming `formData.name`.
   */
  async createFormSchema(actor: Actor, fields: unknown, options: PutOptions = {}): Promise<ProcessRecord> {
    await this.#may(actor, "write");
    const raw = fields !== null && typeof fields === "object" && !Array.isArray(fields) ? (fields as { formData?: unknown }).formData : undefined;
    if (raw === undefined) throw new ValidationError("formData is required", "formData");
    const p = parseKey("bpm-form-schemas", formKeyOf(raw));
    const valid = validateFields(p, fields, this.#limits);
    const entry = await this.#kv.get(bucketPartition(p), layout.record(p.key));
    if (entry && this.#visible(p, entry, false)) throw new ConflictError(`a form schema ${p.key} exists already (update it with PUT)`, "formData.name");
    return this.#put(p, valid, options, entry?.version ?? null);
  }

  /**
   * Writes the record at `p`. `expected`: the version the record must still have (null: absent), checked in
   * the record's commit, so that a create or an update racing another write is a ConflictError.
   */
  async #put(p: ParsedKey, fields: unknown, options: PutOptions, expected?: number | null): Promise<ProcessRecord> {
    const valid = validateFields(p, fields, this.#limits);
    const ttl = validateTtl(options.ttlMs);
    const owner = registrationOf(p, options.processInstanceId);
    // a batch signature registered anew under another instance leaves its record under the one its pointer named
    const pointer = p.kind === "batch-signature" ? await this.#kv.get(bucketPartition(p), layout.record(p.key)) : undefined;
    const previous = pointer && isPointer(pointer.value) ? (pointerOwner(pointer.value) ?? ownerOf(p)) : owner;
    const now = this.#clock();
    const expiresAt = ttl === null ? null : now + ttl;
    const { accessToken, ...publicFields } = valid as RecordFields & { accessToken?: string };
    const stored: StoredRecord = { f: publicFields, e: expiresAt, u: now };
    if (accessToken !== undefined) {
      if (!this.#keyRecorded) {
        await recordSealingKey(this.#kv, this.#cipher.keyId);
        this.#keyRecorded = true;
      }
      stored.t = this.#cipher.seal(accessToken, aad(p));
    }

    const before: Promise<unknown>[] = [];
    if (owner !== null) {
      const pointer = pointerTo(owner === ownerOf(p) ? null : owner);
      before.push(this.#kv.commit(bucketPartition(p), [{ type: "put", key: layout.record(p.key), value: pointer }]));
    }
    if (expiresAt !== null) before.push(this.#kv.commit(expiryPartition(expiresAt), [expiryEntry(expiresAt, p.keyspace, p.key)]));
    await Promise.all(before);
    const check = expected === undefined ? [] : [{ type: "check" as const, key: layout.record(p.key), version: expected }];
    const { version } = await this.#kv.commit(homeOf(p, owner), [...check, { type: "put", key: layout.record(p.key), value: encodeRecord(stored) }]);
    if (previous !== owner) await this.#kv.commit(layout.instance(previous!), [{ type: "delete", key: layout.record(p.key) }]);
    return { keyspace: p.keyspace, key: p.key, fields: publicFields as AnyRecordFields, expiresAt, updatedAt: now, version };
  }

  /** Reads one record, its access token decrypted. NotFoundError when absent or expired. */
  async get(actor: Actor, keyspace: string, key: string): Promise<ProcessRecord> {
    await this.#may(actor, "read");
    const p = parseKey(keyspace, key);
    const entry = await this.#kv.get(await this.#home(p), layout.record(p.key));
    const record = entry && this.#visible(p, entry, true);
    if (!record) throw new NotFoundError(`no record ${p.key} in ${p.keyspace}`);
    return record;
  }

  /** Deletes one record; false when there was none (or it had expired). */
  async delete(actor: Actor, keyspace: string, key: string): Promise<boolean> {
    await this.#may(actor, "write");
    const p = parseKey(keyspace, key);
    const home = await this.#home(p);
    const entry = await this.#kv.get(home, layout.record(p.key));
    const existed = entry !== undefined && this.#visible(p, entry, false) !== undefined;
    if (entry) await this.#kv.commit(home, [{ type: "delete", key: layout.record(p.key) }]);
    if (ownerOf(p) !== null) await this.#kv.commit(bucketPartition(p), [{ type: "delete", key: layout.record(p.key) }]);
    return existed;
  }

  /** Writes a start-form submission under a generated uuid; answers its key. */
  async createStartForm(actor: Actor, processDefinitionKey: string, fields: unknown, options: PutOptions = {}) {
    await this.#may(actor, "write");
    const uuid = randomUUID();
    const record = await this.#put(parseKey("bpm-form-submissions", keys.startForm(processDefinitionKey, uuid)), fields, options);
    return { key: record.key, uuid, record };
  }

  /** Writes a start-message payload under a generated uuid; answers its key. */
  async createStartMessage(actor: Actor, processDefinitionKey: string, fields: unknown, options: PutOptions = {}) {
    await this.#may(actor, "write");
    const uuid = randomUUID();
    const record = await this.#put(parseKey("bpm-message-payloads", keys.startMessage(processDefinitionKey, uuid)), fields, options);
    return { key: record.key, uuid, record };
  }

  // ---- lists -------------------------------------------------------------------------------------------

  /** Lists a keyspace in key order, without access tokens. */
  async list(actor: Actor, keyspace: string, options: ListOptions = {}): Promise<ListPage> {
    await this.#may(actor, "read");
    return this.#listKeyspace(parseKeyspace(keyspace), options, false);
  }

  /** The form submissions and signature records a process instance owns, in key order. */
  async listByProcessInstance(actor: Actor, processInstanceId: string, options: ListOptions = {}): Promise<ListPage> {
    await this.#may(actor, "read");
    const pid = validateProcessInstanceId(processInstanceId);
    return this.#scanPage(layout.instance(pid), {}, options);
  }

  /**
   * The signature records a process instance owns: `lowcode_{pid}_{child}_…` for each child process and
   * the batch signatures registered under it (`lowcode_{pid or a child}_…_{index}`).
   */
  async listSignatures(actor: Actor, processInstanceId: string, options: ListOptions = {}): Promise<ListPage> {
    await this.#may(actor, "read");
    const pid = validateProcessInstanceId(processInstanceId);
    const { start, end } = prefixBounds("lowcode_");
    return this.#scanPage(layout.instance(pid), { start: layout.record(start), end: layout.record(end) }, options);
  }

  /** The start-form submissions of a process definition, in key order. */
  async listStartForms(actor: Actor, processDefinitionKey: string, options: ListOptions = {}): Promise<ListPage> {
    await this.#may(actor, "read");
    const d = validatePart("processDefinitionKey", processDefinitionKey);
    return this.#scanPage(layout.bucket("bpm-form-submissions", `process-definition/${d}/start-form/`), {}, options);
  }

  /** The start-message payloads of a process definition, in key order. */
  async listStartMessages(actor: Actor, processDefinitionKey: string, options: ListOptions = {}): Promise<ListPage> {
    await this.#may(actor, "read");
    const d = validatePart("processDefinitionKey", processDefinitionKey);
    return this.#scanPage(layout.bucket("bpm-message-payloads", `process-definition/${d}/start-message/`), {}, options);
  }

  // ---- lifecycle --------------------------------------------------------------------------------------

  /**
   * Deletes every form submission and signature record a process instance owns: one dropPartition of
   * the instance's partition (atomic), then its pointers in their buckets, key by key (a range could
   * also catch an external start form `lowcode_{def}_start_form_…` whose definition key equals the id).
   * `alsoKeys` are further form-submission keys the platform passes with the instance (its start form),
   * deleted in the same call; each is validated before anything is deleted, and a key another instance
   * owns is refused. Cost is proportional to the instance's records. Answers how many records went.
   */
  async deleteProcessInstance(actor: Actor, processInstanceId: string, options: { alsoKeys?: readonly string[] } = {}): Promise<{ deleted: number }> {
    await this.#may(actor, "write");
    const pid = validateProcessInstanceId(processInstanceId);
    const also = options.alsoKeys ?? [];
    if (!Array.isArray(also) || also.length > MAX_ALSO_KEYS) throw new ValidationError(`alsoKeys is a list of at most ${MAX_ALSO_KEYS} keys`, "alsoKeys");
    const parsed = also.map((key, i) => {
      try {
        return parseKey("bpm-form-submissions", key);
      } catch (e) {
        if (e instanceof ValidationError) throw new ValidationError(`alsoKeys[${i}]: ${e.message}`, `alsoKeys[${i}]`);
        throw e;
      }
    });
    const owners = await Promise.all(parsed.map((p) => this.#ownerOf(p)));
    const extra = parsed.map((p, i) => {
      const owner = owners[i]!;
      if (owner !== null && owner !== pid) throw new ValidationError(`alsoKeys[${i}] belongs to process instance ${owner}, not ${pid}`, `alsoKeys[${i}]`);
      return p;
    });
    const home: Partition = layout.instance(pid);
    let deleted = 0;
    const pointers = new Map<string, string[]>();
    for await (const entry of scanAll(this.#kv, home, { limit: 500 })) {
      deleted++;
      const p = parseKey("bpm-form-submissions", layout.recordKeyOf(entry.key));
      const bucket = bucketOf(p);
      let list = pointers.get(bucket);
      if (!list) pointers.set(bucket, (list = []));
      list.push(p.key);
    }
    await this.#kv.dropPartition(home);
    await Promise.all(
      [...pointers].map(([bucket, keys]) =>
        this.#kv.commit(
          layout.bucket("bpm-form-submissions", bucket),
          keys.map((key) => ({ type: "delete" as const, key: layout.record(key) })),
        ),
      ),
    );
    for (const p of extra) {
      if (ownerOf(p) !== null) continue; // this instance's own record: gone with its partition (a batch signature's too)
      const entry = await this.#kv.get(homeOf(p), layout.record(p.key));
      if (!entry) continue;
      if (this.#visible(p, entry, false)) deleted++;
      await this.#kv.commit(homeOf(p), [{ type: "delete", key: layout.record(p.key) }]);
    }
    return { deleted };
  }

  /** Reclaims the storage of records expired at `now` (default: the clock), at most `limit` entries a call. */
  async sweepExpired(now: number = this.#clock(), options: { limit?: number } = {}): Promise<SweepResult> {
    const limit = options.limit ?? 10_000;
    return sweepExpiryIndex(this.#kv, now, limit, async (keyspace, key, expiresAt) => {
      let p: ParsedKey;
      try {
        p = parseKey(keyspace, key);
      } catch {
        return false;
      }
      const home = await this.#home(p);
      const entry = await this.#kv.get(home, layout.record(p.key));
      if (!entry || isPointer(entry.value)) return false;
      const stored = decodeRecord(entry.value);
      if (stored.e !== expiresAt || expiresAt > now) return false;
      try {
        await this.#kv.commit(home, [
          { type: "check", key: layout.record(p.key), version: entry.version },
          { type: "delete", key: layout.record(p.key) },
        ]);
      } catch (e) {
        if (e instanceof ConflictError) return false; // rewritten meanwhile: its new expiry rules
        throw e;
      }
      if (ownerOf(p) !== null) await this.#kv.commit(bucketPartition(p), [{ type: "delete", key: layout.record(p.key) }]);
      return true;
    });
  }

  /**
   * Every live record of every keyspace (or of the given ones), in key order, page by page. Access
   * tokens are left out unless `includeAccessTokens` is set.
   */
  async *export(actor: Actor, options: { keyspaces?: readonly string[]; includeAccessTokens?: boolean } = {}): AsyncGenerator<ProcessRecord> {
    await this.#may(actor, "read");
    const spaces = (options.keyspaces ?? KEYSPACES).map(parseKeyspace);
    for (const keyspace of spaces) {
      let cursor: string | null = null;
      do {
        const page: ListPage = await this.#listKeyspace(keyspace, { cursor, limit: 500 }, options.includeAccessTokens === true);
        yield* page.items;
        cursor = page.nextCursor;
      } while (cursor !== null);
    }
  }

  /** The id of the key this service seals tokens with (not the key). */
  get keyId(): string {
    return this.#cipher.keyId;
  }

  /**
   * Re-seals every stored access token sealed with `from` under `to` (default: this service's key), then
   * records `to` as the store's sealing key (a key rotation, or a store moved to another key). A token already
   * under this key is left as it is, so a rotation cut off is finished by running it again. Stop the
   * servers of the store first: one still holding the old key would seal new tokens with it.
   */
  async resealTokens(from: TokenCipher, to: TokenCipher = this.#cipher): Promise<{ resealed: number }> {
    let resealed = 0;
    const kinds = [layout.instanceKind, ...KEYSPACES.map(layout.bucketKind)];
    for (const kind of kinds) {
      for await (const partition of allPartitions(this.#kv, kind)) {
        for await (const entry of scanAll(this.#kv, partition, { limit: 500 })) {
          if (isPointer(entry.value)) continue;
          const stored = decodeRecord(entry.value);
          if (stored.t === undefined || stored.t.split(".")[1] === to.keyId) continue;
          const p = parsedOf(kind, layout.recordKeyOf(entry.key));
          stored.t = to.seal(from.open(stored.t, aad(p)), aad(p));
          await this.#kv.commit(partition, [
            { type: "check", key: entry.key, version: entry.version },
            { type: "put", key: entry.key, value: encodeRecord(stored) },
          ]);
          resealed++;
        }
      }
    }
    await replaceSealingKey(this.#kv, to.keyId);
    this.#keyRecorded = to.keyId === this.#cipher.keyId;
    return { resealed };
  }

  // ---- internals -------------------------------------------------------------------------------------

  /**
   * The instance owning the record at `p` (null: none): the one its key names, or for a batch signature
   * the one its bucket pointer names (the instance in its key when the pointer names none, or there is none).
   */
  async #ownerOf(p: ParsedKey): Promise<string | null> {
    if (p.kind !== "batch-signature") return ownerOf(p);
    const pointer = await this.#kv.get(bucketPartition(p), layout.record(p.key));
    return (pointer && isPointer(pointer.value) ? pointerOwner(pointer.value) : null) ?? p.processInstanceId;
  }

  /** The partition holding the record at `p`. */
  async #home(p: ParsedKey): Promise<Partition> {
    return homeOf(p, await this.#ownerOf(p));
  }

  #visible(p: ParsedKey, entry: Entry, withToken: boolean): ProcessRecord | undefined {
    if (isPointer(entry.value)) return undefined;
    const stored = decodeRecord(entry.value);
    if (isExpired(stored, this.#clock())) return undefined;
    const fields = { ...stored.f } as AnyRecordFields;
    if (withToken && stored.t !== undefined) fields.accessToken = this.#cipher.open(stored.t, aad(p));
    return { keyspace: p.keyspace, key: p.key, fields, expiresAt: stored.e, updatedAt: stored.u, version: entry.version };
  }

  /** Turns bucket or instance entries into visible records, following pointers (one getMany per owner). */
  async #resolve(keyspace: Keyspace, entries: readonly Entry[], withToken: boolean): Promise<ProcessRecord[]> {
    const parsed = entries.map((e) => parseKey(keyspace, layout.recordKeyOf(e.key)));
    const resolved: (Entry | undefined)[] = entries.slice();
    const byOwner = new Map<string, number[]>();
    entries.forEach((e, i) => {
      if (!isPointer(e.value)) return;
      const owner = pointerOwner(e.value) ?? ownerOf(parsed[i]!)!;
      let list = byOwner.get(owner);
      if (!list) byOwner.set(owner, (list = []));
      list.push(i);
    });
    await Promise.all(
      [...byOwner].map(async ([owner, idx]) => {
        const got = await this.#kv.getMany(
          layout.instance(owner),
          idx.map((i) => [parsed[i]!.key]),
        );
        idx.forEach((i, j) => (resolved[i] = got[j]));
      }),
    );
    const out: ProcessRecord[] = [];
    resolved.forEach((entry, i) => {
      const record = entry && this.#visible(parsed[i]!, entry, withToken);
      if (record) out.push(record);
    });
    return out;
  }

  async #scanPage(partition: Partition, range: { start?: Key; end?: Key }, options: ListOptions): Promise<ListPage> {
    const limit = listLimit(options.limit);
    const keyspace: Keyspace = layout.keyspaceOf(partition);
    const items: ProcessRecord[] = [];
    let after = options.cursor ?? null;
    let scanned = 0;
    do {
      const page = await this.#kv.scan(partition, { ...range, limit: limit - items.length, after });
      items.push(...(await this.#resolve(keyspace, page.entries, false)));
      scanned += page.entries.length;
      after = page.cursor;
    } while (after !== null && items.length < limit && scanned < 4 * limit + 1000);
    return { items, nextCursor: after };
  }

  async #listKeyspace(keyspace: Keyspace, options: ListOptions, withToken: boolean): Promise<ListPage> {
    const limit = listLimit(options.limit);
    const kind = layout.bucketKind(keyspace);
    const items: ProcessRecord[] = [];
    let state: KeyspaceCursor | null = options.cursor ? decodeCursor(options.cursor, keyspace) : null;
    const nextBucket = async (after: string | null): Promise<KeyspaceCursor | null> => {
      const page = await this.#kv.listPartitions(kind, { limit: 1, after });
      const partition = page.partitions[0];
      return partition ? { s: keyspace, b: layout.bucketName(partition), k: null, n: page.cursor } : null;
    };
    if (state === null) state = await nextBucket(null);
    let buckets = 0;
    let scanned = 0;
    while (state !== null) {
      const page = await this.#kv.scan(layout.bucket(keyspace, state.b), {
        ...(state.k === null ? {} : { start: layout.afterRecord(state.k) }),
        limit: limit - items.length,
      });
      if (page.entries.length > 0) {
        items.push(...(await this.#resolve(keyspace, page.entries, withToken)));
        state = { ...state, k: layout.recordKeyOf(page.entries[page.entries.length - 1]!.key) };
        scanned += page.entries.length;
      }
      if (page.cursor === null) {
        state = state.n === null ? null : await nextBucket(state.n);
        buckets++;
      }
      if (items.length >= limit || buckets >= MAX_BUCKETS_PER_PAGE || scanned >= 4 * limit + 1000) break;
    }
    return { items, nextCursor: state === null ? null : encodeCursor(state) };
  }
}

// ---- placement helpers -------------------------------------------------------------------------------

function bucketPartition(p: ParsedKey): Partition {
  return layout.bucket(p.keyspace, bucketOf(p));
}

/**
 * The instance a write registers the record at `p` under: the owner its key names, or for a batch
 * signature the instance the write names (its root), by default the one in its key.
 */
function registrationOf(p: ParsedKey, processInstanceId: string | undefined): string | null {
  const named = ownerOf(p);
  if (processInstanceId === undefined) return named;
  const given = validateProcessInstanceId(processInstanceId);
  if (named === null) throw new ValidationError(`no process instance owns a ${p.kind} record: give no processInstanceId`, "processInstanceId");
  if (p.kind !== "batch-signature" && given !== named) {
    throw new ValidationError(`the key ${p.key} belongs to process instance ${named}, not ${given}`, "processInstanceId");
  }
  return given;
}

/** The partition holding the record at `p` owned by `owner` (default: the owner its key names). */
function homeOf(p: ParsedKey, owner: string | null = ownerOf(p)): Partition {
  return owner === null ? bucketPartition(p) : layout.instance(owner);
}

/** The parsed key of a record stored in a partition of `kind` (an instance's records are form submissions). */
function parsedOf(kind: string, key: string): ParsedKey {
  const keyspace =
    KEYSPACES.find((k) => layout.bucketKind(k) === kind) ??
    KEYSPACES.find((k) => {
      try {
        return ownerOf(parseKey(k, key)) !== null;
      } catch {
        return false;
      }
    });
  if (keyspace === undefined) throw new ValidationError(`a stored record key ${JSON.stringify(key)} belongs to no keyspace`, "key");
  return parseKey(keyspace, key);
}

/** The additional authenticated data binding a sealed token to its record. */
function aad(p: ParsedKey): string {
  return `${p.keyspace}\u0000${p.key}`;
}

function listLimit(limit: unknown): number {
  if (limit === undefined) return DEFAULT_LIST_LIMIT;
  if (typeof limit !== "number" || !Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw new ValidationError(`limit must be an integer from 1 to ${MAX_LIST_LIMIT}`, "limit");
  }
  return limit;
}

// ---- keyspace cursor ---------------------------------------------------------------------------------

/** Where a keyspace listing stands: keyspace, bucket, last key read in it, the kv cursor after it. */
interface KeyspaceCursor {
  s: Keyspace;
  b: string;
  k: string | null;
  n: string | null;
}

function encodeCursor(c: KeyspaceCursor): string {
  return Buffer.from(JSON.stringify(c), "utf8").toString("base64url");
}

function decodeCursor(cursor: unknown, keyspace: Keyspace): KeyspaceCursor {
  const bad = () => new ValidationError("invalid cursor", "cursor");
  if (typeof cursor !== "string" || cursor.length > 16_384 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw bad();
  let c: Partial<KeyspaceCursor>;
  try {
    c = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as Partial<KeyspaceCursor>;
  } catch {
    throw bad();
  }
  if (
    typeof c !== "object" ||
    c === null ||
    c.s !== keyspace ||
    typeof c.b !== "string" ||
    !(c.k === null || typeof c.k === "string") ||
    !(c.n === null || typeof c.n === "string") ||
    !c.b.isWellFormed() ||
    (c.k !== null && !c.k.isWellFormed())
  ) {
    throw bad();
  }
  return c as KeyspaceCursor;
}
