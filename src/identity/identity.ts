/**
 * Users and groups over a KvStore. Every operation takes the acting Actor and checks global intents
 * through GlobalPermissions (`global.createUser` administers users, `global.createGroup` administers
 * groups); the system actor bypasses the checks. Any authenticated actor may list users and groups.
 *
 * The administrator hierarchy (issue 29, finding 1; docs/security.md): changing another user's
 * password, disabling or enabling it, revoking its tokens, or changing the members of a group needs,
 * besides the intent, that the actor outranks the account (`GlobalPermissions.assertOutranks`): nobody
 * but root administers root, and nobody administers an account (or a group) holding a global intent
 * the actor lacks. A password set by another account is recorded as that account's act (`["reset", id]`)
 * and answered with the user's next logins until the user sets its own.
 */
import { ConflictError, DisabledLoginError, ForbiddenError, NotFoundError, PasswordChangeRequiredError, UnauthorizedError, ValidationError } from "../errors.js";
import type { Entry, KvStore, Op, Partition } from "../kv/contract.js";
import {
  adoptRecords,
  anchorRecords,
  asActor,
  onOneLine,
  outsideActor,
  recordHead,
  verifyRecordChain,
  withRecordChain,
  type RecordAnchor,
  type RecordChainResult,
  type RecordChainSpec,
} from "../kv/record-chain.js";
import { ROOT_ID, SYSTEM, type Actor } from "../access/actor.js";
import { GLOBAL, GLOBAL_CHAIN, GlobalPermissions, type IdentityDirectory } from "../access/global.js";
import { IntentRegistry, type IntentSplit } from "../access/intents.js";
import { UserPermissions } from "./user-permissions.js";
import {
  ERASED_TEXT,
  openWith,
  registeredErasure,
  registeredErasures,
  registerVerified,
  sealedIn,
  sealText,
  SubjectKeys,
  subjectOf,
  USER_HOLDER,
  USER_PERSONAL_FIELDS,
  type ErasedResource,
} from "../personal/subjects.js";

/** A user's personal fields: stored sealed under its subject's key. */
type PersonalField = (typeof USER_PERSONAL_FIELDS)[number];
import { checkDisplayName, checkEmail, checkId, checkNewId, checkOrganization, checkPassword, MAX_GROUP_MEMBERS, type PasswordRule } from "./ids.js";
import { dummyHash, hashPassword, verifyPassword } from "./password.js";
import {
  commitOrRace,
  decodeRecord,
  groupKey,
  families,
  IDENTITY_CHAIN,
  PARTITION,
  passwordKey,
  pendingMemberKey,
  provisioningKey,
  RaceLost,
  replace,
  resetKey,
  revocationOps,
  type PasswordReset,
  tokenStateKey,
  userKey,
  withRetry,
  type GroupRecord,
  type Page,
  tokenVersion,
  type UserRecord,
} from "./records.js";

export interface NewUser {
  readonly id: string;
  readonly displayName: string;
  readonly organization?: string;
  /** Personal data, stored sealed with the display name. */
  readonly email?: string;
  readonly password: string;
}

/** The record without its e-mail address (what a user who does not administer users sees of another). */
function withoutEmail(user: UserRecord): UserRecord {
  if (user.email === undefined) return user;
  const { email: _email, ...rest } = user;
  return rest;
}
/** How a record's e-mail field starts in its JSON bytes. */
const EMAIL_FIELD = Buffer.from('"email":');

export interface NewGroup {
  readonly id: string;
  readonly displayName: string;
  readonly members?: readonly string[];
}

/**
 * What a group does with a member id no user has (yet): `refuse` it (flowstore's rule, the default), or
 * `await` the user (TruBudget's rule: its groups list member ids unchecked): the group lists the id, and
 * a user created with it later starts as a member (the pending membership is kept beside the users).
 * An id that names a group is refused either way.
 */
export type UnknownMembers = "refuse" | "await";

/** The groups awaiting a user that does not exist yet. */
interface PendingMember {
  groups: string[];
}

/** The ops that add `groupId` to (or take it from) the groups awaiting the user `id`, guarded by the entry's version. */
function pendingOps(id: string, entry: Entry | undefined, groupId: string, add: boolean): Op[] {
  const groups = new Set(entry ? decodeRecord<PendingMember>(entry).groups : []);
  if (add) groups.add(groupId);
  else groups.delete(groupId);
  const check: Op = { type: "check", key: pendingMemberKey(id), version: entry?.version ?? null };
  if (groups.size > 0) return [check, { type: "put", key: pendingMemberKey(id), value: Buffer.from(JSON.stringify({ groups: [...groups] } satisfies PendingMember)) }];
  return entry ? [check, { type: "delete", key: pendingMemberKey(id) }] : [check];
}

export interface PageRequest {
  readonly cursor?: string | null;
  readonly limit?: number;
}

export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 1000;

/**
 * The global intents identity checks: administering users (creating them, their passwords, their
 * sessions), administering groups, enabling and disabling users, and reading what is assigned to a user
 * (TruBudget's `global.enableUser`, `global.disableUser`, `global.listAssignments`: each granted alone).
 */
export const IDENTITY_INTENTS = ["global.createUser", "global.createGroup", "global.enableUser", "global.disableUser", "global.listAssignments"] as const;
/** Each by name. */
export const [CREATE_USER, CREATE_GROUP, ENABLE_USER, DISABLE_USER, LIST_ASSIGNMENTS] = IDENTITY_INTENTS;

/**
 * identity's split: enabling, disabling and listing assignments were part of `global.createUser` until
 * issue 28; a store written before holds them through it (migrated on open, compose/open.ts).
 */
export const IDENTITY_SPLITS: readonly IntentSplit[] = [{ from: CREATE_USER, to: [ENABLE_USER, DISABLE_USER, LIST_ASSIGNMENTS] }];

declare module "../access/intents.js" {
  interface DeclaredIntents {
    identity: (typeof IDENTITY_INTENTS)[number];
  }
}

export interface IdentityOptions {
  /**
   * The global permissions to check (and to grant root); default: over the same store, with this
   * identity as its directory and `intents` (default: access's and identity's own) as its registry.
   */
  readonly global?: GlobalPermissions;
  /** The registry of global intents, when `global` is not given. */
  readonly intents?: IntentRegistry;
  readonly now?: () => Date;
}

/** The record chains of the identities: the identity partition's and the global permissions'. */
const RECORD_CHAINS: readonly RecordChainSpec[] = [IDENTITY_CHAIN, GLOBAL_CHAIN];
const CHAINED_PARTITIONS: readonly (readonly [Partition, RecordChainSpec])[] = [
  [PARTITION, IDENTITY_CHAIN],
  [GLOBAL.partition(), GLOBAL_CHAIN],
];

export class Identity implements IdentityDirectory {
  readonly global: GlobalPermissions;
  /** The permissions on each user account (TruBudget's per-user intents: user-permissions.ts). */
  readonly userPermissions: UserPermissions = new UserPermissions(this);
  readonly #now: () => Date;
  /** The store, with every write of a user, a group or a global grant appended to its partition's record chain (`verify` covers them). */
  readonly kv: KvStore;
  /** The store without the chains: what adopting writes through (its event is the chain's own). */
  readonly #base: KvStore;
  /** Where the record chains are anchored (the ledger and the feed), once the composition root hands it over. */
  #anchor: RecordAnchor | undefined;
  /**
   * The data subjects' keys (src/personal): a user's display name is stored sealed under the key of the
   * subject named as the user (its id), so erasing that subject erases it (docs/security.md).
   */
  readonly #subjects: SubjectKeys;

  constructor(kv: KvStore, options: IdentityOptions = {}) {
    this.#now = options.now ?? (() => new Date());
    this.#base = kv;
    this.#subjects = new SubjectKeys(kv, () => this.#now().getTime());
    this.kv = withRecordChain(kv, RECORD_CHAINS, { clock: () => this.#now().getTime(), anchor: () => this.#anchor });
    this.global = options.global ?? new GlobalPermissions(this.kv, { intents: options.intents ?? new IntentRegistry(IDENTITY_INTENTS), identities: this });
  }

  /**
   * Anchors the record chains from now on (kv/record-chain.ts: each change's head in the ledger, its
   * events in the change feed, so the transparency log takes them in); `anchorRecords` anchors what they
   * hold already.
   */
  anchorWith(anchor: RecordAnchor): void {
    this.#anchor = anchor;
  }

  /** Anchors each record chain whose head is past its ledger entry (see `anchorWith`); nothing before an anchor is given. */
  async anchorRecords(): Promise<void> {
    const anchor = this.#anchor;
    if (!anchor) return;
    for (const [partition] of CHAINED_PARTITIONS) await anchorRecords(this.#base, partition, anchor);
  }

  /** True for a partition that carries a record chain of the identities (the transparency log reads its events there). */
  recordChained(partition: Partition): boolean {
    return RECORD_CHAINS.some((c) => c.holds(partition));
  }

  /**
   * Verifies the record chains of the identity and global-permission partitions (kv/record-chain.ts):
   * each chain, its anchor in the ledger (`anchored`, when given: the ledger's head of a partition, over
   * the same store), and every user, group and grant against its replay.
   */
  async verifyRecords(
    kv: KvStore = this.kv,
    anchored?: (partition: Partition) => Promise<{ seq: number; hash: string } | null>,
  ): Promise<{ partition: Partition; result: RecordChainResult }[]> {
    return Promise.all(CHAINED_PARTITIONS.map(async ([partition, spec]) => ({ partition, result: await verifyRecordChain(kv, partition, spec, await anchored?.(partition)) })));
  }

  /**
   * The partitions whose record chain in `other` (a backup's scratch store) is not on one line with this
   * store's (neither a prefix of the other): the identities' history it holds is not the one this store
   * held (rewritten, from another store, or from before the chains).
   */
  async forkedIn(other: KvStore): Promise<Partition[]> {
    const forked: Partition[] = [];
    for (const [partition] of CHAINED_PARTITIONS) if (!(await onOneLine(this.#base, other, partition))) forked.push(partition);
    return forked;
  }

  /** Starts the record chains of partitions written before them (one event adopting their records); nothing on an empty store. */
  async adoptRecords(): Promise<void> {
    for (const [partition, spec] of CHAINED_PARTITIONS) await adoptRecords(this.#base, partition, spec, { clock: () => this.#now().getTime(), anchor: () => this.#anchor });
  }

  // ---- users -------------------------------------------------------------------------------------

  /** Creates a user (`global.createUser`); `passwordRule` "test" accepts any non-empty password (see ids.ts). */
  async createUser(actor: Actor, input: NewUser, options: { passwordRule?: PasswordRule } = {}): Promise<UserRecord> {
    return asActor(actor, async () => {
      const id = checkNewId(input?.id, "id");
      const displayName = checkDisplayName(input.displayName);
      const organization = checkOrganization(input.organization);
      const email = checkEmail(input.email);
      const password = checkPassword(input.password, "password", options.passwordRule);
      await this.global.assert(actor, CREATE_USER);
      const hash = await hashPassword(password);
      // The display name and e-mail address are stored sealed under the user's own subject key (made now); a subject erased takes none (409 on id).
      const personal = await this.#seal(id, { displayName, ...(email !== undefined ? { email } : {}) });
      return withRetry(async () => {
        // Groups that listed the id before the user existed (UnknownMembers "await"): it starts as their member.
        const pending = await this.kv.get(PARTITION, pendingMemberKey(id));
        const groups = pending ? decodeRecord<PendingMember>(pending).groups : [];
        const user: UserRecord = {
          id,
          displayName: personal.displayName,
          ...(organization !== undefined ? { organization } : {}),
          ...(personal.email !== undefined ? { email: personal.email } : {}),
          enabled: true,
          groups,
          createdAt: this.#now().toISOString(),
        };
        try {
          await this.kv.commit(PARTITION, [
            ...replace(userKey(id), null, user),
            { type: "check", key: groupKey(id), version: null },
            { type: "put", key: passwordKey(id), value: Buffer.from(hash) },
            { type: "check", key: pendingMemberKey(id), version: pending?.version ?? null },
            ...(pending ? [{ type: "delete" as const, key: pendingMemberKey(id) }] : []),
          ]);
        } catch (e) {
          if (!(e instanceof ConflictError)) throw e;
          const [u, g] = await this.kv.getMany(PARTITION, [userKey(id), groupKey(id)]);
          if (u || g) throw new ConflictError(`the id ${id} is taken by a user or a group`, "id");
          throw new RaceLost(e); // a group named the id meanwhile: read again
        }
        return { ...user, displayName, ...(email !== undefined ? { email } : {}) };
      });
    });
  }

  /** The user's public record; NotFoundError when there is none. */
  /**
   * The node's provisioning state (TruBudget's system information): "started" after root's
   * provisioning.start, "ended" after its provisioning.end, null before either.
   */
  async provisioning(): Promise<{ state: "started" | "ended"; at: string; by: string } | null> {
    const entry = await this.kv.get(PARTITION, provisioningKey);
    return entry ? decodeRecord<{ state: "started" | "ended"; at: string; by: string }>(entry) : null;
  }

  /** Records that provisioning started or ended; root's alone (TruBudget's NotAuthorized otherwise). */
  async setProvisioning(actor: Actor, state: "started" | "ended"): Promise<void> {
    return asActor(actor, async () => {
      if (actor.id !== "root") throw new ForbiddenError(`only root may record that provisioning ${state}`);
      const record = { state, at: this.#now().toISOString(), by: actor.id };
      await this.kv.commit(PARTITION, [{ type: "put", key: provisioningKey, value: Buffer.from(JSON.stringify(record)) }]);
    });
  }

  /**
   * The user's record as `viewer` may see it, its personal fields opened (plain, or `(erased)`): the
   * e-mail address only to the user itself and to who administers users (`readsEmail`), left out for
   * everyone else and without a viewer (the callers that only need the account). NotFoundError when there is none.
   */
  async getUser(id: string, viewer?: Actor): Promise<UserRecord> {
    const entry = await this.kv.get(PARTITION, userKey(checkId(id, "id")));
    if (!entry) throw new NotFoundError(`no user ${id}`);
    const user = decodeRecord<UserRecord>(entry);
    return viewer === undefined ? this.#open(withoutEmail(user)) : this.#shownTo(viewer, user);
  }

  /**
   * One page of users in id order, as JSON bytes of each record as `actor` may see it (getUser): its
   * personal fields opened, the e-mail address left out of other users' records unless the actor
   * administers users; the stored bytes where nothing changes.
   */
  async listUserBytes(actor: Actor, page: PageRequest = {}): Promise<Page<Buffer>> {
    const raw = await this.#listBytes(actor, "user", page);
    const admin = await this.#readsEmail(actor);
    // `"email":` in the bytes may be a false alarm (inside an escaped string): the record is parsed then, and nothing is lost.
    const changes = (b: Buffer) => sealedIn(b) || (!admin && b.includes(EMAIL_FIELD));
    if (!raw.items.some(changes)) return raw;
    const shown = async (b: Buffer) => {
      const user = JSON.parse(b.toString("utf8")) as UserRecord;
      return Buffer.from(JSON.stringify(await this.#open(admin || user.id === actor.id ? user : withoutEmail(user))));
    };
    const items = await Promise.all(raw.items.map((b) => (changes(b) ? shown(b) : b)));
    return { items, nextCursor: raw.nextCursor };
  }

  /**
   * True when `actor` may read the e-mail addresses of users (of `id` alone, when given): the user itself,
   * the system actor, or who administers users (`global.createUser`, the intent of creating them and of
   * their passwords and sessions). Everyone else sees display names only.
   */
  async #readsEmail(actor: Actor, id?: string): Promise<boolean> {
    return (id !== undefined && actor.system !== true && actor.id === id) || this.global.has(actor, CREATE_USER);
  }

  // ---- personal data: the display name sealed under the user's subject key ----------------------------

  /** The personal fields given, each sealed under the key of the subject `id` (made, with the user recorded as holding its data, on first use). */
  async #seal<T extends Partial<Record<PersonalField, string>>>(id: string, fields: T): Promise<T> {
    const key = await this.#subjects.keyFor(id, { type: USER_HOLDER, ids: [id] }, "id");
    return Object.fromEntries(Object.entries(fields).map(([f, plain]) => [f, sealText(key, id, plain as string)])) as T;
  }

  /** The record as `actor` may see it (getUser). */
  async #shownTo(actor: Actor, user: UserRecord): Promise<UserRecord> {
    return this.#open((await this.#readsEmail(actor, user.id)) ? user : withoutEmail(user));
  }

  /** The record with its personal fields opened: the plain text, `(erased)` once its subject's key is destroyed, or as stored (not sealed). */
  async #open(user: UserRecord): Promise<UserRecord> {
    const subjects = USER_PERSONAL_FIELDS.map((f) => (typeof user[f] === "string" ? subjectOf(user[f]) : null)).filter((s) => s !== null);
    if (subjects.length === 0) return user;
    const keys = await this.#subjects.keysFor(subjects, { type: USER_HOLDER, ids: [user.id] });
    const opened: Record<string, string> = {};
    for (const f of USER_PERSONAL_FIELDS) if (typeof user[f] === "string") opened[f] = openWith(user[f], (s) => keys.get(s));
    return { ...user, ...opened };
  }

  /**
   * True when the user's display name is sealed under a subject whose erasure is registered (the register
   * alone: compose/erasure.ts), in a register whose chain verifies (a receipt planted past the store
   * refuses nothing; `verify` names the register).
   */
  async #erased(user: UserRecord): Promise<boolean> {
    const subject = subjectOf(user.displayName);
    return subject !== null && (await registeredErasure(this.#base, subject)) !== null && (await registerVerified(this.#base));
  }

  /**
   * Refuses (ForbiddenError) erasing the subject of the user `id` to an actor who does not outrank the
   * account: the erasure disables it for good, so it needs what disabling it needs of the hierarchy
   * (`assertOutranks`: root only for root, nobody for an account holding an intent the actor lacks).
   */
  async assertMayErase(actor: Actor, id: string): Promise<void> {
    const entry = await this.kv.get(PARTITION, userKey(id));
    if (entry) await this.global.assertOutranks(actor, { id, groups: decodeRecord<UserRecord>(entry).groups });
  }

  /**
   * The identity side of erasing the subject `user` (compose/erasure.ts, after the key was destroyed):
   * the account is disabled and its tokens revoked (a login under an erased name would serve no one;
   * enabling it again is refused), in one commit through the record chain, as `actor` (the eraser, whom
   * compose checked with `assertMayErase` before the key went); root's account keeps working (the store's
   * last administrator). Answers the holder entry of the receipt: the account's erased field and the
   * identity chain's head right after, or `gone` when no such user exists.
   */
  async eraseUser(holder: ErasedResource, actor: Actor): Promise<ErasedResource> {
    const id = holder.ids[0]!;
    await withRetry(async () => {
      const [entry, tokens] = await this.kv.getMany(PARTITION, [userKey(id), tokenStateKey(id)]);
      if (!entry) return;
      const user = decodeRecord<UserRecord>(entry);
      if (!user.enabled || id === ROOT_ID) return;
      await asActor(actor, () => commitOrRace(this.kv, [...replace(userKey(id), entry.version, { ...user, enabled: false }), ...revocationOps(id, tokens)]));
    });
    const [entry] = await this.kv.getMany(PARTITION, [userKey(id)]);
    if (!entry) return { ...holder, gone: true };
    const head = await recordHead(this.#base, PARTITION);
    return head ? { ...holder, event: head } : holder;
  }

  /**
   * Seals every display name stored plain (a store written before display names were sealed, or an
   * import of such a backup), and disables every account whose subject was erased (a backup from before
   * the erasure brings it enabled): a repair at open and after an import (compose), through the record
   * chain as the system. A display name whose subject was erased and that is still plain is replaced by
   * `(erased)`. Answers how many users it changed; run again, it changes none.
   */
  async sealUsers(known: { registerVerified?: boolean } = {}): Promise<number> {
    const due: string[] = [];
    // An account is erased when the register of erasures says so (one scan), never on a receipt found only in
    // its subject's partition, and only while the register's chain verifies: a receipt planted in the
    // register past the store disables nothing (`verify` names the register instead). The caller may know
    // already (the sweep at open verified it just before).
    const trusted = known.registerVerified ?? (await registerVerified(this.#base));
    const erased = trusted ? await registeredErasures(this.#base) : new Map<string, unknown>();
    let cursor: string | null = null;
    do {
      const page = await this.#base.scan(PARTITION, { prefix: families.user.prefix, limit: 500, after: cursor });
      for (const e of page.entries) {
        const user = decodeRecord<UserRecord>(e);
        if (this.#repairOf(user, erased.has(user.id)) !== null) due.push(user.id);
      }
      cursor = page.cursor;
    } while (cursor !== null);
    if (due.length === 0) return 0;
    // Only over a chain that verifies: a record edited past the store (a plain name written into the files)
    // is left as it is for `verify` to name, never taken into the chain by this repair.
    if (!(await verifyRecordChain(this.#base, PARTITION, IDENTITY_CHAIN)).ok) return 0;
    let changed = 0;
    for (const id of due) if (await this.#sealOne(id, trusted)) changed++;
    return changed;
  }

  /** What `sealUsers` changes in the record: its plain personal fields (to seal, or to erase when `erased`) and whether it is disabled; null when nothing. */
  #repairOf(user: UserRecord, erased: boolean): { plain: Partial<Record<PersonalField, string>>; disable: boolean } | null {
    const plain: Partial<Record<PersonalField, string>> = {};
    // Under an erased subject there is no key: a plain value is replaced by the erased text (once; it stays as such).
    for (const f of USER_PERSONAL_FIELDS) if (typeof user[f] === "string" && subjectOf(user[f]) === null && !(erased && user[f] === ERASED_TEXT)) plain[f] = user[f];
    const disable = erased && user.enabled && user.id !== ROOT_ID;
    return Object.keys(plain).length === 0 && !disable ? null : { plain, disable };
  }

  /** `trusted`: whether the register's chain verified (`sealUsers`); when not, no registered erasure counts. */
  async #sealOne(id: string, trusted: boolean): Promise<boolean> {
    return withRetry(async () => {
      const [entry, tokens] = await this.kv.getMany(PARTITION, [userKey(id), tokenStateKey(id)]);
      if (!entry) return false;
      const user = decodeRecord<UserRecord>(entry);
      const erased = trusted && (await registeredErasure(this.#base, id)) !== null;
      const repair = this.#repairOf(user, erased);
      if (!repair) return false;
      const { plain } = repair;
      let fields: Partial<Record<PersonalField, string>> = {};
      if (erased) fields = Object.fromEntries(Object.keys(plain).map((f) => [f, ERASED_TEXT]));
      else if (Object.keys(plain).length > 0) {
        // A subject partition holding a receipt the register lacks takes no key: the value is left plain (not trusted as erased either).
        const sealed = await this.#seal(id, plain).catch((e: unknown) => {
          if (e instanceof ConflictError) return null;
          throw e;
        });
        if (sealed === null) return false;
        fields = sealed;
      }
      const next = { ...user, ...fields, ...(repair.disable ? { enabled: false } : {}) };
      await outsideActor(() => commitOrRace(this.kv, [...replace(userKey(id), entry.version, next), ...(repair.disable ? revocationOps(id, tokens) : [])]));
      return true;
    });
  }

  async listUsers(actor: Actor, page: PageRequest = {}): Promise<Page<UserRecord>> {
    const raw = await this.listUserBytes(actor, page);
    return { items: raw.items.map((b) => JSON.parse(b.toString("utf8")) as UserRecord), nextCursor: raw.nextCursor };
  }

  async disableUser(actor: Actor, id: string): Promise<UserRecord> {
    return this.#setEnabled(actor, id, false);
  }

  async enableUser(actor: Actor, id: string): Promise<UserRecord> {
    return this.#setEnabled(actor, id, true);
  }

  async #setEnabled(actor: Actor, id: string, enabled: boolean): Promise<UserRecord> {
    return asActor(actor, async () => {
      checkId(id, "id");
      await this.global.assert(actor, enabled ? ENABLE_USER : DISABLE_USER);
      if (!enabled && !actor.system && actor.id === id) throw new ValidationError("a user cannot disable itself", "id");
      return withRetry(async () => {
        const [entry, tokens] = await this.kv.getMany(PARTITION, [userKey(id), tokenStateKey(id)]);
        if (!entry) throw new NotFoundError(`no user ${id}`);
        const user = decodeRecord<UserRecord>(entry);
        await this.global.assertOutranks(actor, { id: user.id, groups: user.groups });
        if (user.enabled === enabled) return this.#shownTo(actor, user);
        // An erased person's account stays disabled: its name reads (erased); create a new account instead.
        if (enabled && (await this.#erased(user))) throw new ConflictError(`the user ${id} was erased (its data subject): its account cannot be enabled again`, "id");
        const next = { ...user, enabled };
        // Disabling revokes the user's tokens: enabling it again does not bring them back.
        await commitOrRace(this.kv, [...replace(userKey(id), entry.version, next), ...(enabled ? [] : revocationOps(id, tokens))]);
        return this.#shownTo(actor, next);
      });
    });
  }

  /**
   * Sets a password: the user itself, or a holder of `global.createUser` or of `user.changePassword` on
   * the account who outranks the user (root only for root); the system actor (an operator's CLI) too. Every token of the user is revoked. A
   * password set by another actor is recorded as its act and shown at the user's next logins
   * (`credentials`); the user setting its own clears that record, unless `afterReset`: the change a
   * reset with `mustChange` requires proves only the reset password, which the administrator knows too,
   * so the record stays (without `mustChange`) until the user sets its own from a session.
   */
  async setPassword(actor: Actor, id: string, password: string, options: { passwordRule?: PasswordRule; mustChange?: boolean; afterReset?: boolean } = {}): Promise<void> {
    return asActor(actor, async () => {
      checkId(id, "id");
      checkPassword(password, "password", options.passwordRule);
      const own = actor.system !== true && actor.id === id;
      // Another account's: an administrator, or a holder of user.changePassword on the account (both only when they outrank it, below).
      if (!own && !(await this.global.has(actor, CREATE_USER)) && !(await this.userPermissions.has(actor, id, "user.changePassword"))) {
        throw new ForbiddenError(`${actor.id} lacks the intent ${CREATE_USER} and user.changePassword on ${id}`);
      }
      const hash = await hashPassword(password);
      // The user must still exist when the hash is written (check on the record's version); every token
      // issued under the old password is revoked in the same commit.
      await withRetry(async () => {
        const [current, tokens, previous] = await this.kv.getMany(PARTITION, [userKey(id), tokenStateKey(id), resetKey(id)]);
        if (!current) throw new NotFoundError(`no user ${id}`);
        const user = decodeRecord<UserRecord>(current);
        if (!own) await this.global.assertOutranks(actor, { id: user.id, groups: user.groups });
        const reset: PasswordReset = { by: actor.id, at: this.#now().toISOString(), ...(options.mustChange === true ? { mustChange: true as const } : {}) };
        const kept =
          own && options.afterReset === true && previous ? JSON.stringify({ ...(JSON.parse(previous.value.toString("utf8")) as PasswordReset), mustChange: undefined }) : null;
        await commitOrRace(this.kv, [
          { type: "check", key: userKey(id), version: current.version },
          { type: "put", key: passwordKey(id), value: Buffer.from(hash) },
          own
            ? kept === null
              ? { type: "delete", key: resetKey(id) }
              : { type: "put", key: resetKey(id), value: Buffer.from(kept) }
            : { type: "put", key: resetKey(id), value: Buffer.from(JSON.stringify(reset)) },
          ...revocationOps(id, tokens),
        ]);
      });
    });
  }

  /**
   * A user changes its own password, proving the current one (a wrong one is refused on field
   * `currentPassword`, after the same hashing work as a login). Every token of the user is revoked.
   */
  async changeOwnPassword(actor: Actor, current: string, password: string): Promise<void> {
    if (actor.system) throw new ValidationError("the system actor has no password", "actor");
    checkPassword(password);
    const entry = await this.kv.get(PARTITION, passwordKey(actor.id));
    const ok = await verifyPassword(typeof current === "string" && current.length <= 1024 ? current : "", entry ? entry.value.toString("utf8") : await dummyHash());
    if (!ok || !entry) throw new ValidationError("currentPassword is not the user's password", "currentPassword");
    await this.setPassword(actor, actor.id, password);
  }

  /** Revokes every token of a user (logout-all): the user itself, the system actor, or a holder of `global.createUser`. */
  async revokeTokens(actor: Actor, id: string): Promise<void> {
    return asActor(actor, async () => {
      checkId(id, "id");
      const own = actor.system !== true && actor.id === id;
      if (!own) await this.global.assert(actor, CREATE_USER);
      await withRetry(async () => {
        const [current, tokens] = await this.kv.getMany(PARTITION, [userKey(id), tokenStateKey(id)]);
        if (!current) throw new NotFoundError(`no user ${id}`);
        if (!own) await this.global.assertOutranks(actor, { id, groups: decodeRecord<UserRecord>(current).groups });
        await commitOrRace(this.kv, revocationOps(id, tokens));
      });
    });
  }

  /**
   * Checks a username and password. Answers the same UnauthorizedError for an unknown user, a wrong
   * password and a disabled user, after the same amount of hashing work.
   */
  async authenticate(username: unknown, password: unknown): Promise<UserRecord> {
    return (await this.credentials(username, password)).user;
  }

  /**
   * authenticate, with what a session opened on these credentials must commit along: checks that the
   * user record, the password and the token version are still those that were read, so a password
   * change or a logout-all racing with the login wins.
   */
  async credentials(
    username: unknown,
    password: unknown,
    options: { changing?: boolean } = {},
  ): Promise<{ user: UserRecord; tokenVersion: number; checks: Op[]; passwordReset?: PasswordReset }> {
    const refused = () => new UnauthorizedError("invalid username or password");
    const validName = typeof username === "string" && /^[A-Za-z0-9._@-]{1,64}$/.test(username);
    const pw = typeof password === "string" && password.length <= 1024 ? password : "";
    const [userEntry, hashEntry, tokens, reset] = validName
      ? await this.kv.getMany(PARTITION, [userKey(username), passwordKey(username), tokenStateKey(username), resetKey(username)])
      : [undefined, undefined, undefined, undefined];
    const ok = await verifyPassword(pw, hashEntry ? hashEntry.value.toString("utf8") : await dummyHash());
    if (!ok || !userEntry || !hashEntry) throw refused();
    const user = await this.#open(decodeRecord<UserRecord>(userEntry));
    if (!user.enabled) throw new DisabledLoginError();
    const checks: Op[] = [
      { type: "check", key: userKey(user.id), version: userEntry.version },
      { type: "check", key: passwordKey(user.id), version: hashEntry.version },
      { type: "check", key: tokenStateKey(user.id), version: tokens?.version ?? null },
    ];
    const passwordReset = reset ? (JSON.parse(reset.value.toString("utf8")) as PasswordReset) : undefined;
    // A reset that requires a new password opens no session on these credentials, only the change (`changing`).
    if (passwordReset?.mustChange && !options.changing) throw new PasswordChangeRequiredError(passwordReset.by);
    return { user, tokenVersion: tokenVersion(tokens), checks, ...(passwordReset ? { passwordReset } : {}) };
  }

  /** The Actor a user acts as (its groups included), in one read. UnauthorizedError when missing or disabled. */
  async actorFor(userId: string): Promise<Actor> {
    const entry = typeof userId === "string" && userId !== "" ? await this.kv.get(PARTITION, userKey(userId)) : undefined;
    if (!entry) throw new UnauthorizedError("unknown user");
    const user = decodeRecord<UserRecord>(entry);
    if (!user.enabled) throw new UnauthorizedError("the user is disabled");
    return { id: user.id, groups: user.groups };
  }

  /** A user (with its groups) or a group (alone) as an Actor, for the hierarchy's checks; undefined when neither exists. */
  async actorOf(id: string): Promise<Actor | undefined> {
    const [u, g] = await this.kv.getMany(PARTITION, [userKey(id), groupKey(id)]);
    if (u) return { id, groups: decodeRecord<UserRecord>(u).groups };
    return g ? { id, groups: [] } : undefined;
  }

  /** Of these user ids, the ones that are disabled or gone, in one batched read (for ending their streams). */
  async disabledAmong(userIds: readonly string[]): Promise<Set<string>> {
    const entries = userIds.length ? await this.kv.getMany(PARTITION, userIds.map(userKey)) : [];
    return new Set(userIds.filter((_, i) => !entries[i] || !decodeRecord<UserRecord>(entries[i]!).enabled));
  }

  // ---- groups ------------------------------------------------------------------------------------

  /** Creates a group (`global.createGroup`) with its first members; a member no user has is refused unless `unknownMembers` is "await". */
  async createGroup(actor: Actor, input: NewGroup, options: { unknownMembers?: UnknownMembers } = {}): Promise<GroupRecord> {
    return asActor(actor, async () => {
      const id = checkNewId(input?.id, "id");
      const displayName = checkDisplayName(input.displayName);
      const members = input.members ?? [];
      if (!Array.isArray(members) || members.length > MAX_GROUP_MEMBERS) {
        throw new ValidationError(`members must be a list of at most ${MAX_GROUP_MEMBERS} user ids`, "members");
      }
      const seen = new Set<string>();
      members.forEach((m, i) => {
        checkId(m, `members[${i}]`);
        if (seen.has(m)) throw new ValidationError(`${m} is listed twice`, `members[${i}]`);
        seen.add(m);
      });
      await this.global.assert(actor, CREATE_GROUP);
      const group: GroupRecord = { id, displayName, members: [...members], createdAt: this.#now().toISOString() };
      return withRetry(async () => {
        const entries = members.length
          ? await this.kv.getMany(
              PARTITION,
              members.flatMap((m) => [userKey(m), groupKey(m), pendingMemberKey(m)]),
            )
          : [];
        const ops: Op[] = [...replace(groupKey(id), null, group), { type: "check", key: userKey(id), version: null }];
        members.forEach((m, i) => {
          const [entry, asGroup, pending] = entries.slice(3 * i, 3 * i + 3);
          if (!entry) {
            if (options.unknownMembers !== "await" || asGroup) throw new ValidationError(`no user ${m}`, `members[${i}]`);
            // TruBudget's unchecked member: listed now, joined when the user is created.
            ops.push({ type: "check", key: userKey(m), version: null }, ...pendingOps(m, pending, id, true));
            return;
          }
          const user = decodeRecord<UserRecord>(entry);
          ops.push(...replace(userKey(user.id), entry.version, { ...user, groups: [...user.groups, id] }));
        });
        try {
          await this.kv.commit(PARTITION, ops);
        } catch (e) {
          if (!(e instanceof ConflictError)) throw e;
          const [g, u] = await this.kv.getMany(PARTITION, [groupKey(id), userKey(id)]);
          if (g || u) throw new ConflictError(`the id ${id} is taken by a user or a group`, "id");
          throw new RaceLost(e); // a member changed meanwhile: read again
        }
        return group;
      });
    });
  }

  async getGroup(id: string): Promise<GroupRecord> {
    const group = await this.findGroup(id);
    if (!group) throw new NotFoundError(`no group ${id}`);
    return group;
  }

  /** The group `id`, or null when there is none (for a caller to whom that is no error: an identity that may be a user). */
  async findGroup(id: string): Promise<GroupRecord | null> {
    const entry = await this.kv.get(PARTITION, groupKey(checkId(id, "id")));
    return entry ? decodeRecord<GroupRecord>(entry) : null;
  }

  /**
   * Adds a user to a group (no-op when it is a member already). Needs `global.createGroup`. An id no user
   * has is refused unless `unknownMembers` is "await" (then the user joins when it is created).
   */
  async addMember(actor: Actor, groupId: string, userId: string, options: { unknownMembers?: UnknownMembers } = {}): Promise<GroupRecord> {
    return this.#changeMembership(actor, groupId, userId, (group, g, u, asGroup, pending) => {
      if (!u && (options.unknownMembers !== "await" || asGroup)) throw new ValidationError(`no user ${userId}`, "userId");
      if (group.members.includes(userId)) return null;
      if (group.members.length >= MAX_GROUP_MEMBERS) {
        throw new ValidationError(`a group has at most ${MAX_GROUP_MEMBERS} members`, "userId");
      }
      const next = { ...group, members: [...group.members, userId] };
      if (!u)
        return {
          next,
          ops: [...replace(groupKey(groupId), g.version, next), { type: "check", key: userKey(userId), version: null }, ...pendingOps(userId, pending, groupId, true)],
        };
      const user = decodeRecord<UserRecord>(u);
      return { next, ops: [...replace(groupKey(groupId), g.version, next), ...replace(userKey(userId), u.version, { ...user, groups: [...user.groups, groupId] })] };
    });
  }

  /** Removes a user from a group (no-op when it is no member). Needs `global.createGroup`. */
  async removeMember(actor: Actor, groupId: string, userId: string): Promise<GroupRecord> {
    return this.#changeMembership(actor, groupId, userId, (group, g, u, _asGroup, pending) => {
      if (!group.members.includes(userId)) return null;
      const next = { ...group, members: group.members.filter((m) => m !== userId) };
      const ops: Op[] = [...replace(groupKey(groupId), g.version, next)];
      if (u) {
        const user = decodeRecord<UserRecord>(u);
        ops.push(...replace(userKey(userId), u.version, { ...user, groups: user.groups.filter((x) => x !== groupId) }));
      } else {
        // a member awaited (never a user yet): it no longer joins this group when created
        ops.push({ type: "check", key: userKey(userId), version: null }, ...pendingOps(userId, pending, groupId, false));
      }
      return { next, ops };
    });
  }

  /**
   * What adding and removing a member share: the ids checked, the intent (global.createGroup), the group
   * and the user read together, and the change committed guarded by both versions (retried on a race).
   * `change` answers the group's next record and the ops, or null when the membership is already so.
   */
  async #changeMembership(
    actor: Actor,
    groupId: string,
    userId: string,
    change: (group: GroupRecord, g: Entry, u: Entry | undefined, asGroup: Entry | undefined, pending: Entry | undefined) => { next: GroupRecord; ops: Op[] } | null,
  ): Promise<GroupRecord> {
    checkId(groupId, "groupId");
    checkId(userId, "userId");
    await this.global.assert(actor, CREATE_GROUP);
    return withRetry(async () => {
      const [g, u, asGroup, pending] = await this.kv.getMany(PARTITION, [groupKey(groupId), userKey(userId), groupKey(userId), pendingMemberKey(userId)]);
      if (!g) throw new NotFoundError(`no group ${groupId}`);
      const group = decodeRecord<GroupRecord>(g);
      // Joining a group hands its intents to the member: only who holds them all changes its members.
      await this.global.assertOutranks(actor, { id: groupId, groups: [] });
      const decided = change(group, g, u, asGroup, pending);
      if (!decided) return group;
      await asActor(actor, () => commitOrRace(this.kv, decided.ops));
      return decided.next;
    });
  }

  async listGroupBytes(actor: Actor, page: PageRequest = {}): Promise<Page<Buffer>> {
    return this.#listBytes(actor, "group", page);
  }

  async listGroups(actor: Actor, page: PageRequest = {}): Promise<Page<GroupRecord>> {
    const raw = await this.listGroupBytes(actor, page);
    return { items: raw.items.map((b) => JSON.parse(b.toString("utf8")) as GroupRecord), nextCursor: raw.nextCursor };
  }

  async #listBytes(actor: Actor, kind: "user" | "group", page: PageRequest): Promise<Page<Buffer>> {
    if (!actor || typeof actor.id !== "string") throw new UnauthorizedError();
    const limit = page.limit ?? DEFAULT_PAGE;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
      throw new ValidationError(`limit must be an integer from 1 to ${MAX_PAGE}`, "limit");
    }
    const res = await this.kv.scan(PARTITION, { prefix: families[kind].prefix, limit, after: page.cursor ?? null });
    return { items: res.entries.map((e) => e.value), nextCursor: res.cursor };
  }

  /** True when a user or a group has this id. */
  async exists(id: string): Promise<boolean> {
    const [u, g] = await this.kv.getMany(PARTITION, [userKey(id), groupKey(id)]);
    return u !== undefined || g !== undefined;
  }

  // ---- bootstrap ---------------------------------------------------------------------------------

  /**
   * On a store without users, creates `root` with `password` and grants it every registered global intent.
   * Does nothing when users exist. Refuses (ValidationError) on an empty store without a password.
   * Grants are written before the user, so a crash in between leaves a state the next start repairs.
   */
  async ensureRoot(password: string | undefined): Promise<{ created: boolean }> {
    const any = await this.kv.scan(PARTITION, { prefix: families.user.prefix, limit: 1 });
    if (any.entries.length > 0) return { created: false };
    if (password === undefined || password === "") {
      throw new ValidationError("the store has no users yet: set FLOWSTORE_ROOT_PASSWORD to the password of the root user to create it", "FLOWSTORE_ROOT_PASSWORD");
    }
    checkPassword(password, "FLOWSTORE_ROOT_PASSWORD");
    await this.global.grantAllToNew(SYSTEM, ROOT_ID);
    try {
      await this.createUser(SYSTEM, { id: ROOT_ID, displayName: ROOT_ID, password });
    } catch (e) {
      if (e instanceof ConflictError) return { created: false }; // another process won the race
      throw e;
    }
    return { created: true };
  }
}

export type { GroupRecord, UserRecord, Page };
