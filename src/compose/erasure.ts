/**
 * Erasing a data subject (crypto-shredding, issue 26 part 2): its key is destroyed, so the personal
 * fields sealed under it (resources/personal/subjects.ts) read as erased in the state, the history, a
 * project archive and every export taken after; every chain still verifies, since the bytes it hashes
 * (the ciphertext) are unchanged. Each resource that held the subject's data gets an event
 * `<type>.subject_erased` in its chain (the erasure's trace in the tamper-evident history, with who and
 * when), and the receipt (what was erased, when, by whom, the key's id and each chain's head after its
 * erasure event) is kept in the subject's partition, to be shown to the subject.
 *
 * A user account whose display name was sealed under the subject's key (the subject named as the user,
 * identity.ts) is disabled, its tokens revoked, in the identity partition's record chain, whose head after
 * is the receipt's entry for it (`$user`), committed as the eraser. Erasing it needs, besides the intent,
 * that the actor outranks the account (identity's administrator hierarchy, as disabling it does): checked
 * before the key goes, so a refusal (403) erases nothing.
 *
 * The key goes first, in one commit with the receipt (complete: false): that commit is the erasure. A
 * process killed before the events are all appended leaves the receipt incomplete, and erasing the
 * subject again appends the missing ones. Needs `global.eraseSubject` (root and the system actor may always).
 *
 * An erasure outlives a restore. Its receipt is also kept in the register of erasures (partition
 * `["erased"]`, one receipt per subject: ids, times and hashes, no personal data), a kind a restore
 * leaves alone, as it leaves the epochs and the login guard; the copies of the subject's partition in
 * the replaced histories of earlier restores (epochs.ts) lose their key too (at the next open, when a
 * kill came between). After every import (a restore's, or the CLI's into an empty store) and at every
 * open, `keepErasures` puts each registered erasure back: a backup or export taken before the erasure
 * brings the key, which is deleted again before the import ends (before the store is served), and the
 * receipt with it.
 *
 * The register carries a record chain (personal/subjects.ts REGISTER_CHAIN): `keep` commits each receipt
 * through it, as the eraser (`erase`) or as the system (`keepErasures`, a repair); a register written
 * before the chain is adopted into it by `keepErasures` (at every open, after every import). `verify`
 * checks it (compose/open.ts), and identity acts on the register only while it verifies.
 */
import { ConflictError, NotFoundError, ForbiddenError } from "../errors.js";
import { ROOT_ID, SYSTEM, type Actor } from "../access/actor.js";
import type { GlobalPermissions } from "../access/global.js";
import type { ResourceStore } from "../resources/store.js";
import { Subjects, type ErasedResource, type ErasureReceipt } from "../resources/personal/subjects.js";
import { ERASED_REGISTER, REGISTER_CHAIN, registerLayout, registerVerified, USER_HOLDER, verifyRegister } from "../personal/subjects.js";
import { scanAll, type Entry, type KvStore, type Partition } from "../kv/contract.js";
import { adoptRecords, asActor, outsideActor, withRecordChain, type RecordChainResult } from "../kv/record-chain.js";
import { layout } from "../resources/model/layout.js";
import { replacedCopier, replacedCopies } from "./epochs.js";

/** The register of erasures (personal/subjects.ts): kept on restore (kinds.ts), one receipt per erased subject. */
export const ERASED_KIND = ERASED_REGISTER.kind;
const REGISTER = registerLayout.partition;

/**
 * The register of `over` (the live store; a replaced history holds none, the register being kept on
 * restore) against its record chain, for `verify`: a receipt planted or edited past the store fails it.
 */
export async function verifyRegisterOf(over: KvStore): Promise<{ partition: Partition; result: RecordChainResult }[]> {
  return [{ partition: REGISTER, result: await verifyRegister(over) }];
}

/**
 * Keeps the receipt in the register, and deletes the key from every copy of the subject's partition a
 * restore kept. Each step is skipped where done already, so run again (at open, after an import) it
 * writes nothing; a register entry changed meanwhile (another process recording the same erasure) is
 * left as that process wrote it. True when it wrote anything. A sweep passes what it read already for
 * every subject: the register's entry (`known.registered`, undefined when it has none) and the copies.
 */
async function keep(kv: KvStore, receipt: ErasureReceipt, known?: { registered: Entry | undefined; copies: readonly Partition[] }): Promise<boolean> {
  const key = registerLayout.key(receipt.subject);
  const value = Buffer.from(JSON.stringify(receipt));
  const registered = known ? known.registered : await kv.get(REGISTER, key);
  let wrote = false;
  if (!registered?.value.equals(value)) {
    try {
      // Through the register's record chain, as the actor in scope (the eraser; the system for a repair).
      await withRecordChain(kv, [REGISTER_CHAIN]).commit(REGISTER, [
        { type: "check", key, version: registered?.version ?? null },
        { type: "put", key, value },
      ]);
      wrote = true;
    } catch (e) {
      if (!(e instanceof ConflictError)) throw e;
    }
  }
  const subjects = new Subjects(kv, Date.now);
  for (const copy of known?.copies ?? (await replacedCopies(kv, layout.subject(receipt.subject)))) if (await subjects.forgetKey(copy)) wrote = true;
  return wrote;
}

/**
 * After an import (compose/transfer.ts, before its marker goes), and at every open (compose/open.ts, a
 * repair as the feed's is): registers every erasure the store's subject partitions hold (what an import
 * brought, or an erasure a kill interrupted between destroying its key and `keep`) and deletes its key
 * from every replaced history, then puts every registered erasure back where a copy from before it
 * brought the key (personal/subjects.ts `reinstate`), while the register's chain verifies (see below).
 * Answers the subjects whose key it deleted again from their live partition. Run again, it finds nothing
 * more to do.
 */
export async function keepErasures(kv: KvStore, options: { imported?: boolean } = {}): Promise<KeptErasures> {
  // A repair: what it registers is the system's, whoever's request started it (a restore's).
  return outsideActor(() => keepAll(kv, options));
}

async function keepAll(kv: KvStore, options: { imported?: boolean }): Promise<KeptErasures> {
  // A register written before its record chain is adopted into it first (one event, once). An empty one
  // starts its chain too (an event adopting nothing): a receipt planted in it later is not adopted as one
  // written before the chain, it fails verify.
  await adoptRecords(kv, REGISTER, REGISTER_CHAIN, { empty: true });
  const subjects = new Subjects(kv, Date.now);
  // The register and the epochs are read once for the sweep, not once an erasure (the erasure bench: about
  // two of the four reads and the one scan an erased subject cost at open before).
  const registered = new Map<string, { receipt: ErasureReceipt; entry: Entry }>();
  for await (const e of scanAll(kv, REGISTER, { prefix: registerLayout.prefix })) {
    const receipt = JSON.parse(e.value.toString("utf8")) as ErasureReceipt;
    registered.set(receipt.subject, { receipt, entry: e });
  }
  // In a live store, a receipt that names a user account is registered by its erasure only (`erase`,
  // before the account is touched): found only in a subject partition, which is not chained, it may have
  // been put there past the store, and registered it would get the system to disable the account
  // (identity.ts `sealUsers`). After an import (`imported`) the receipts are what the operator's file
  // brought (an erasure of the store it came from, whose register an export does not carry): all registered.
  // The register itself counts only while its record chain verifies: a receipt planted in it past the
  // store then neither gets the key of its subject deleted nor vouches for a receipt found beside it.
  const verified = await registerVerified(kv);
  const trusted = (receipt: ErasureReceipt) => options.imported === true || (verified && registered.has(receipt.subject)) || !receipt.resources.some((r) => r.type === USER_HOLDER);
  const copiesOf = await replacedCopier(kv);
  for await (const receipt of subjects.erasures())
    if (trusted(receipt)) await keep(kv, receipt, { registered: registered.get(receipt.subject)?.entry, copies: copiesOf(layout.subject(receipt.subject)) });
  const again: string[] = [];
  if (verified) for (const { receipt } of registered.values()) if (await subjects.reinstate(receipt)) again.push(receipt.subject);
  return { reinstated: again, registerVerified: verified };
}

/**
 * What a sweep did: the subjects whose key it deleted again, and whether the register's chain verified
 * (its own commits go through the chain, so it still does after them: the sealing at open that follows
 * takes this answer instead of verifying the register a second time).
 */
export interface KeptErasures {
  readonly reinstated: string[];
  readonly registerVerified: boolean;
}

/** The global intent of erasing a data subject and reading its receipt, declared once here (intents.ts gathers it). */
export const ERASURE_INTENTS = ["global.eraseSubject"] as const;

declare module "../access/intents.js" {
  interface DeclaredIntents {
    erasure: (typeof ERASURE_INTENTS)[number];
  }
}

/** The event verb an erasure appends to each resource that held the subject's data. */
export const ERASED_VERB = "subject_erased";

export class Erasures {
  constructor(
    /** The stores whose schemas may declare personal data; the subjects' keys are shared (one kv). */
    private readonly stores: readonly ResourceStore[],
    private readonly global: GlobalPermissions,
    /** The users' side: a user whose display name was sealed under the subject's key is disabled (identity.ts `eraseUser`). */
    private readonly users: {
      /** Refuses (ForbiddenError) an actor who does not outrank the user `id` (as disabling it would). */
      assertMayErase(actor: Actor, id: string): Promise<void>;
      eraseUser(holder: ErasedResource, actor: Actor): Promise<ErasedResource>;
    },
  ) {}

  async #assertMay(actor: Actor): Promise<void> {
    if (actor.system || actor.id === ROOT_ID) return;
    if (!(await this.global.has(actor, "global.eraseSubject"))) throw new ForbiddenError(`${actor.id} lacks the intent global.eraseSubject`);
  }

  #storeOf(type: string): ResourceStore | undefined {
    return this.stores.find((s) => s.schema.types.has(type));
  }

  /** Erases the subject (see the module's comment) and answers the receipt; a subject erased before answers its receipt, finished if it was not. */
  async erase(actor: Actor, subject: string): Promise<ErasureReceipt> {
    await this.#assertMay(actor);
    const subjects = this.stores[0]!.subjects;
    const fieldsOf = (type: string) => this.#storeOf(type)?.schema.types.get(type)?.decl.personal?.fields ?? [];
    const { kv } = this.stores[0]!;
    // Erasing a user account disables it for good: only who outranks the account may (identity's
    // administrator hierarchy, as for disabling it), checked before the key goes (nothing erased when refused).
    const mayErase = async (holders: readonly ErasedResource[]) => {
      for (const h of holders) if (h.type === USER_HOLDER && !h.event && !h.gone) await this.users.assertMayErase(actor, h.ids[0]!);
    };
    let receipt = await subjects.destroyKey(subject, actor.id, fieldsOf, mayErase);
    await asActor(actor, () => keep(kv, receipt));
    if (receipt.complete) return receipt;
    const resources: ErasedResource[] = [];
    for (const r of receipt.resources) {
      if (r.event || r.gone) {
        resources.push(r);
        continue;
      }
      resources.push(r.type === USER_HOLDER ? await this.users.eraseUser(r, actor) : await this.#mark(actor, r, subject));
    }
    receipt = { ...receipt, resources, complete: true };
    await subjects.record(receipt);
    await asActor(actor, () => keep(kv, receipt));
    return receipt;
  }

  /** Appends the erasure's event to the resource's chain: its seq and hash, or `gone` when the resource was deleted. */
  async #mark(actor: Actor, r: ErasedResource, subject: string): Promise<ErasedResource> {
    const store = this.#storeOf(r.type);
    const ref = { type: r.type, ids: [...r.ids] };
    if (!store) return { ...r, gone: true };
    try {
      await store.writes.mutate(actor, ref, { intent: null, verb: ERASED_VERB, change: () => ({ record: { subject, fields: [...r.fields] } }) });
    } catch (e) {
      if (e instanceof NotFoundError) return { ...r, gone: true };
      throw e;
    }
    const head = await store.audit.history(SYSTEM, ref, { limit: 1, reverse: true });
    const last = head.items[0]!;
    return { ...r, event: { seq: last.seq, hash: last.hash } };
  }

  /** The receipt of a subject's erasure (needs `global.eraseSubject`); NotFoundError when it was not erased. */
  async receipt(actor: Actor, subject: string): Promise<ErasureReceipt> {
    await this.#assertMay(actor);
    const receipt = await this.stores[0]!.subjects.receipt(subject);
    if (!receipt) throw new NotFoundError(`the data subject ${subject} was not erased`);
    return receipt;
  }
}
