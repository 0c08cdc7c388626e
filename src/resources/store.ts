/**
 * The generic operations every declared entity type gets, with no per-type code: create, get, update
 * (and domain commands built on `mutate`), list children, delete (cascade or guarded), history, as-of
 * reads, permissions and ordering. Permission checks live here, so library users get them too.
 *
 * This is the façade; the work is split by concern, one room each: read/ (get, lists, page cache), write/
 * (create, mutate, permissions, ordering; lifecycle: delete, sweeps, purge), audit/ (history,
 * as-of, verify, dump and restore of a whole partition). core/ holds what they
 * share, including the one permission/not-found check.
 */
import { randomUUID } from "node:crypto";
import { ValidationError } from "../errors.js";
import { allPartitions, type Key, type KvStore, type Partition } from "../kv/contract.js";
import type { Actor, Permissions } from "../access/actor.js";
import { Audit, type HistoryOptions, type Verified, type VerifyOptions } from "./audit/audit.js";
import { Core, type CoreOptions, type Page, type PageOptions } from "./core/core.js";
import type { ResourceEvent, VerifyResult } from "./model/events.js";
import type { GlobalPermissions } from "../access/global.js";
import { layout } from "./model/layout.js";
import { Lifecycle, type DeleteOptions } from "./write/lifecycle.js";
import { PartitionDumps, type DumpNames, type DumpSource, type PartitionDump } from "./audit/partition-dump.js";
import { rebuildOrderIndex } from "./audit/order-index.js";
import type { ListQuery } from "./read/query.js";
import { assignmentsOf, type Assignment } from "./indexes/assignments.js";
import { Reads } from "./read/reads.js";
import { buildVisibility } from "./indexes/visibility.js";
import type { Envelope, RedactedEnvelope, Written } from "./model/record.js";
import { locate, type Ref } from "./model/ref.js";
import { GOVERNANCE_FLAG, type DataOf, type Schema, type SchemaDecl } from "./model/schema.js";
import type { PartitionWriter } from "./log/writer.js";
import { Writes, type CreateOptions, type MutateSpec } from "./write/writes.js";

export type { Written } from "./model/record.js";
export type { Page, PageOptions } from "./core/core.js";
export type { ListQuery, SortOrder } from "./read/query.js";
export type { Assignment } from "./indexes/assignments.js";
export type { HistoryOptions, Verified } from "./audit/audit.js";
export type { CreateDecision, CreateOptions, MutateDecision, MutateSpec } from "./write/writes.js";
export type { ChildRow, MutateContext, ReadContext } from "./read/context.js";
export type { DeleteOptions } from "./write/lifecycle.js";
export type { ChainHead, DumpNames, DumpSource, PartitionCounts, PartitionDump } from "./audit/partition-dump.js";

export type ResourceStoreOptions = CoreOptions;

type Listed<S extends SchemaDecl, T extends keyof S> = Envelope<DataOf<S, T>> & { redacted?: true };

const parsePage = <T>(page: Page<Buffer>): Page<T> => ({ items: page.items.map((b) => JSON.parse(b.toString("utf8")) as T), nextCursor: page.nextCursor });

export class ResourceStore<S extends SchemaDecl = SchemaDecl> {
  readonly writer: PartitionWriter;
  readonly global: GlobalPermissions;
  readonly #reads: Reads;
  readonly #writes: Writes;
  readonly #lifecycle: Lifecycle;
  readonly #audit: Audit;
  readonly #dumps: PartitionDumps;
  readonly #core: Core;

  constructor(
    readonly kv: KvStore,
    readonly schema: Schema<S>,
    options: ResourceStoreOptions = {},
  ) {
    const core = (this.#core = new Core(kv, schema, options.newId ?? (() => randomUUID().replace(/-/g, "")), options));
    this.writer = core.writer;
    this.global = core.global;
    this.#reads = new Reads(core, options);
    this.#writes = new Writes(core);
    this.#lifecycle = new Lifecycle(core);
    this.#audit = new Audit(core);
    this.#dumps = new PartitionDumps(core);
    this.#core = core;
  }

  /** Rebuilds a partition's order index (ordering.ts) from its log: for a partition written before the index existed. */
  rebuildOrderIndex(partition: Partition): Promise<void> {
    return rebuildOrderIndex(this.#core, partition);
  }

  /** The event as the actor may read it over REST (history and permission intents), or null (audit.ts). */
  eventFor(actor: Actor, event: ResourceEvent): Promise<ResourceEvent | null> {
    return this.#audit.eventFor(actor, event);
  }

  /** Subscribes to every event committed by this process (the store-wide feed is `writer.feed`). */
  onChange(listener: (partition: Partition, events: readonly ResourceEvent[]) => void): () => void {
    return this.writer.onCommit(listener);
  }

  // ---------------------------------------------------------------- reads

  async get<T extends keyof S & string>(actor: Actor, ref: Ref & { type: T }): Promise<Envelope<DataOf<S, T>>> {
    return (await this.#reads.readable(actor, ref)).view.envelope<DataOf<S, T>>();
  }

  /** The stored public JSON of a resource, ready to serve (with the intents the actor holds on it when asked), and its version (for ETag). */
  getJson(actor: Actor, ref: Ref, options: { allowedIntents?: boolean } = {}): Promise<{ json: Buffer; version: number }> {
    return this.#reads.getJson(actor, ref, options);
  }

  /**
   * What a write answers to its actor: the written resource whole when the actor may view it as written,
   * else its redacted form (id, status, createdAt), as lists show it (issue 16, finding 9); with the
   * intents the actor holds on it when asked (`allowedIntents`, as reads carry them). Decided from the
   * permissions the write returned with the envelope (`Written`); any other envelope has its access read.
   */
  seenBy(actor: Actor, ref: Ref, envelope: Written, options: { allowedIntents?: boolean } = {}): Promise<(Envelope | RedactedEnvelope) & { allowedIntents?: string[] }> {
    return this.#reads.seenBy(actor, ref, envelope, options);
  }

  /** Refuses unless the actor holds `intent` on the resource now, a check before costly work: the one check (404 when it may not know of it, else 403). */
  async assertIntent(actor: Actor, ref: Ref, intent: string): Promise<void> {
    await this.#reads.readable(actor, ref, () => intent);
  }

  /** True when the resource exists (no permission check: for operators and tests). */
  async exists(ref: Ref): Promise<boolean> {
    const { partition, key } = this.stateAddress(ref);
    return (await this.kv.get(partition, key)) !== undefined;
  }

  /** True when the actor may view the resource (for filtering change feeds). */
  canView(actor: Actor, ref: Ref): Promise<boolean> {
    return this.#reads.readable(actor, ref).then(() => true, () => false);
  }

  /**
   * Lists the direct children of a type under `parent` (null for root types), one range read per page.
   * Children whose view intent the actor lacks are listed redacted (id, status, createdAt) in their
   * place; roots are listed to holders of their list or view intent (redacted without view) and left
   * out otherwise. Items are JSON bytes, ready to be joined.
   */
  listChildrenJson(actor: Actor, parent: Ref | null, childType: string, options: PageOptions = {}): Promise<Page<Buffer>> {
    return this.#reads.listChildrenJson(actor, parent, childType, options);
  }

  /**
   * A searched and sorted page of a type's resources under `parent` (null for roots), as the type's
   * `query` declares (query.ts): roots through the caller's index of visible roots, never a scan of all.
   */
  queryChildrenJson(actor: Actor, parent: Ref | null, childType: string, q: ListQuery): Promise<Page<Buffer>> {
    return this.#reads.queryChildrenJson(actor, parent, childType, q);
  }

  async listChildren<T extends keyof S & string>(actor: Actor, parent: Ref | null, childType: T, options: PageOptions = {}): Promise<Page<Listed<S, T>>> {
    return parsePage(await this.listChildrenJson(actor, parent, childType, options));
  }

  /**
   * Lists an ordered child collection in its effective order: the parent's ordering first, then the
   * others by creation time. The cursor is a position in that order.
   */
  listOrderedJson(actor: Actor, parent: Ref, options: PageOptions = {}): Promise<Page<Buffer> & { version: number }> {
    return this.#reads.listOrderedJson(actor, parent, options);
  }

  /**
   * The same list as `listOrderedJson`, rendered as one JSON page (`{"items":[…],"nextCursor":…}`),
   * ready to send. Pages are cached per partition head version and per caller (identity and groups):
   * a repeated read of an unchanged collection costs two point reads.
   */
  listOrderedPage(actor: Actor, parent: Ref, options: PageOptions = {}): Promise<{ json: Buffer; version: number }> {
    return this.#reads.listOrderedPage(actor, parent, options);
  }

  async listOrdered<T extends keyof S & string>(actor: Actor, parent: Ref, options: PageOptions = {}): Promise<Page<Listed<S, T>>> {
    return parsePage(await this.listOrderedJson(actor, parent, options));
  }

  /** The stored ordering of a parent's ordered children (ids as set, possibly naming deleted children). */
  getOrdering(actor: Actor, parent: Ref): Promise<{ ordering: string[]; version: number }> {
    return this.#reads.getOrdering(actor, parent);
  }

  // ---------------------------------------------------------------- audit

  /** One resource's events, one range read of its history index plus one batched read of the log. */
  history(actor: Actor, ref: Ref, options: HistoryOptions = {}): Promise<Page<ResourceEvent>> {
    return this.#audit.history(actor, ref, options);
  }

  /** The resource as it was at `time` (replays its history up to then). */
  asOf(actor: Actor, ref: Ref, time: Date | string): Promise<Envelope | null> {
    return this.#audit.asOf(actor, ref, time);
  }

  /** Verifies a partition's chain, its ledger anchor and every stored key against the replay of its log; reports the first divergence. */
  verify(partition: Partition, options: VerifyOptions = {}): Promise<Verified> {
    return this.#audit.verify(partition, options);
  }

  /**
   * Checks one identity's index of visible roots against the records it names (visibility.ts): the
   * first entry that no longer matches, or null. `verify` of a root's partition checks the other way.
   */
  verifyVisible(identity: string): Promise<{ key: Key; reason: string } | null> {
    return this.#audit.verifyVisible(identity);
  }

  /** `verifyVisible` of every identity's index: one failed result per identity whose index names a root it may not list. */
  async verifyVisibility(): Promise<{ partition: Partition; result: VerifyResult }[]> {
    const out: { partition: Partition; result: VerifyResult }[] = [];
    for await (const partition of allPartitions(this.kv, layout.visibleKind)) {
      if (!layout.isIdentityVisible(partition)) continue;
      const stray = await this.verifyVisible(layout.identityOfVisible(partition));
      if (stray) out.push({ partition, result: { ok: false, checked: 0, firstBad: { seq: 0, reason: stray.reason, family: layout.visibleKind, key: JSON.stringify(stray.key) } } });
    }
    return out;
  }

  /** What is assigned to an identity now (assignments.ts). No permission check: the domain decides who may ask. */
  assignmentsOf(identity: string): Promise<Assignment[]> {
    return assignmentsOf(this.kv, this.schema, identity);
  }

  /** Builds the index of visible roots for a store written before it existed (once; see visibility.ts). */
  buildVisibility(): Promise<number> {
    return buildVisibility(this.kv, [...this.schema.types.values()]);
  }

  /** The partition a resource lives in. */
  partitionOf(ref: Ref): Partition {
    return locate(this.schema, ref).partition;
  }

  /** Where a resource's state is stored (for benchmarks that compare with raw reads of the backend). */
  stateAddress(ref: Ref): { partition: Partition; key: Key } {
    const l = locate(this.schema, ref);
    return { partition: l.partition, key: layout.state(l) };
  }

  /** Where the states of a resource's nested children of a type are stored: one prefix (for benchmarks). */
  childrenAddress(parent: Ref, childType: string): { partition: Partition; prefix: Key } {
    const l = locate(this.schema, parent);
    return { partition: l.partition, prefix: layout.children(l, childType) };
  }

  // ---------------------------------------------------------------- writes

  create<T extends keyof S & string>(actor: Actor, type: T, parent: Ref | null, data: DataOf<S, T>, options: CreateOptions = {}): Promise<Written<DataOf<S, T>>> {
    return this.#writes.create(actor, type, parent, data, options) as Promise<Written<DataOf<S, T>>>;
  }

  /**
   * The one primitive behind update and every domain command: read the resource inside its partition's
   * write path, check the intent and version, let `spec.change` decide (or refuse) from a typed read
   * context, validate the result, write the new state and append the event, atomically.
   */
  mutate(actor: Actor, ref: Ref, spec: MutateSpec): Promise<Written> {
    return this.#writes.mutate(actor, ref, spec);
  }

  async update(actor: Actor, ref: Ref, patch: Record<string, unknown>, options: { ifVersion?: number } = {}): Promise<Envelope> {
    if (patch === null || typeof patch !== "object" || Array.isArray(patch)) throw new ValidationError("an update is an object of fields", "data");
    const t = this.schema.type(ref.type);
    return this.mutate(actor, ref, { intent: t.intents.update, verb: "updated", ifVersion: options.ifVersion, change: () => ({ patch }) });
  }

  listPermissions(actor: Actor, ref: Ref): Promise<Permissions> {
    return this.#reads.listPermissions(actor, ref);
  }

  grant(actor: Actor, ref: Ref, intent: string, identity: string): Promise<Envelope> {
    return this.#writes.changePermission(actor, ref, intent, identity, true);
  }

  revoke(actor: Actor, ref: Ref, intent: string, identity: string): Promise<Envelope> {
    return this.#writes.changePermission(actor, ref, intent, identity, false);
  }

  /**
   * Replaces the ordering of a parent's ordered children, all or nothing. Last writer wins unless
   * `ifVersion` (the parent's version) is given: then a stale write is a ConflictError.
   */
  setOrdering(actor: Actor, parent: Ref, ordering: readonly string[], options: { ifVersion?: number; guard?: (parent: Envelope) => void } = {}): Promise<Envelope> {
    return this.#writes.setOrdering(actor, parent, ordering, options);
  }

  // ---------------------------------------------------------------- lifecycle

  /**
   * Deletes a resource. Its nested descendants go in the same atomic commit (one prefix delete per
   * level). Flat descendants live in partitions of their own: they are recorded for a sweep before the
   * commit and swept after it; `resumeSweeps` finishes sweeps a crash interrupted. The log stays: a
   * deleted partition owner keeps its log (a tombstone) until it is purged.
   */
  delete(actor: Actor, ref: Ref, options: DeleteOptions = {}): Promise<void> {
    return this.#lifecycle.delete(actor, ref, options);
  }

  /**
   * Sets or clears a parent's `governanceDelete` flag (its `<type>.setGovernanceDelete` intent): while it
   * is set, each child of a type declaring `governanceDelete` may be deleted by `governanceDelete`.
   */
  setGovernanceDelete(actor: Actor, ref: Ref, on: boolean, options: { ifVersion?: number } = {}): Promise<Envelope> {
    const t = this.schema.type(ref.type);
    if (!t.intents.governance) throw new ValidationError(`${ref.type} has no governance delete children`, "type");
    return this.mutate(actor, ref, {
      intent: t.intents.governance,
      verb: "governance_delete_set",
      ifVersion: options.ifVersion,
      change: () => ({ patch: { [GOVERNANCE_FLAG]: on ? true : null } }),
    });
  }

  /**
   * Eluvio's governance delete of a flat child: allowed while its parent carries the flag, with no intent
   * of the caller's on the child; otherwise as `delete` (its nested subtree goes, its flat descendants are swept).
   */
  governanceDelete(actor: Actor, ref: Ref, options: Omit<DeleteOptions, "governance"> = {}): Promise<void> {
    return this.#lifecycle.delete(actor, ref, { ...options, governance: true });
  }

  /** Finishes every sweep a crash interrupted. Safe to call at any time; returns how many it ran. */
  resumeSweeps(actor: Actor): Promise<number> {
    return this.#lifecycle.resumeSweeps(actor);
  }

  /** Drops a deleted root's tombstone partition (its log) for good: after archiving or exporting it. */
  purge(actor: Actor, ref: Ref): Promise<void> {
    return this.#lifecycle.purge(actor, ref);
  }

  // ---------------------------------------------------------------- partition dump and restore

  /**
   * A consistent dump of a partition owner's whole partition: its counts, its chain head and its entries
   * as streamed NDJSON (ConflictError when the partition changes meanwhile). No permission check: the
   * domain that dumps decides who may (see partition-dump.ts).
   */
  dumpPartition(ref: Ref, names: DumpNames): Promise<PartitionDump> {
    return this.#dumps.dump(ref, names);
  }

  /** Restores a dump into a partition that does not exist (or holds an interrupted restore); verifies the result. */
  async restorePartition(ref: Ref, source: DumpSource, names: DumpNames): Promise<{ entries: number; verify: VerifyResult }> {
    // The restored partition is verified whole (chain, and every stored key against the replay of its
    // log); one that does not verify is dropped again and the dump refused.
    const partition = this.partitionOf(ref);
    const entries = await this.#dumps.restore(ref, source, names);
    // A dump written before the order index existed lacks it: it is derived data, rebuilt from the log.
    await rebuildOrderIndex(this.#core, partition);
    const verify = await this.verify(partition);
    if (!verify.ok) {
      await this.kv.dropPartition(partition);
      throw new ValidationError(`${names.dump ?? "the dump"} does not verify once restored: ${verify.firstBad?.reason ?? "diverges"}`, names.dumpField ?? "dump");
    }
    return { entries, verify };
  }
}
