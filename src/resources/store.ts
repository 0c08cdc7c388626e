/**
 * The generic operations every declared entity type gets, with no per-type code: create, get, update
 * (and domain commands built on `mutate`), list children, delete (cascade or guarded), history, as-of
 * reads, permissions and ordering. Permission checks live here, so library users get them too.
 *
 * The front door: the work is split by concern, one room each, and the store exposes each room's object
 * as it is — `reads` (read/: get, lists, page cache), `writes` (write/: create, mutate, update,
 * permissions, ordering), `lifecycle` (write/lifecycle.ts: delete, sweeps, purge), `audit` (audit/:
 * history, as-of, verify) and `dumps` (audit/partition-dump.ts: dump and verified restore of a whole
 * partition). The store itself keeps only what spans them: the store-wide indexes and their checks, the
 * address helpers, the change feed. core/ holds what the rooms share, including the one
 * permission/not-found check.
 */
import { randomUUID } from "node:crypto";
import { allPartitions, type Key, type KvStore, type Partition } from "../kv/contract.js";
import { Audit } from "./audit/audit.js";
import { Core, type CoreOptions } from "./core/core.js";
import type { ResourceEvent, VerifyResult } from "./model/events.js";
import type { GlobalPermissions } from "../access/global.js";
import { layout } from "./model/layout.js";
import { Lifecycle } from "./write/lifecycle.js";
import { PartitionDumps } from "./audit/partition-dump.js";
import { buildSums, rebuildOrderIndex } from "./audit/order-index.js";
import { assignmentsOf, type Assignment } from "./indexes/assignments.js";
import { Reads } from "./read/reads.js";
import { buildVisibility } from "./indexes/visibility.js";
import { locate, type Ref } from "./model/ref.js";
import type { Schema, SchemaDecl } from "./model/schema.js";
import type { PartitionWriter } from "./log/writer.js";
import { Writes } from "./write/writes.js";
import type { Subjects } from "./personal/subjects.js";

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
export type { ChildSums, Reads, SumRow, SumsOptions } from "./read/reads.js";
export type { Writes } from "./write/writes.js";
export type { Lifecycle } from "./write/lifecycle.js";
export type { Audit } from "./audit/audit.js";
export type { PartitionDumps } from "./audit/partition-dump.js";
export { ERASED_TEXT, type ErasedResource, type ErasureReceipt, type Subjects } from "./personal/subjects.js";

export class ResourceStore<S extends SchemaDecl = SchemaDecl> {
  readonly writer: PartitionWriter;
  readonly global: GlobalPermissions;
  /** get, getJson, seenBy, seenByCreator, assertIntent, canView, the lists (children, query, ordered), ordering, permissions. */
  readonly reads: Reads<S>;
  /** create, mutate (behind update and every domain command), update, grant, revoke, setOrdering, setGovernanceDelete. */
  readonly writes: Writes<S>;
  /** delete, governanceDelete, resumeSweeps, purge. */
  readonly lifecycle: Lifecycle;
  /** history, asOf, eventFor, verify, verifyVisible. */
  readonly audit: Audit;
  /** dump and (verified) restore of a partition owner's whole partition. */
  readonly dumps: PartitionDumps;
  /** The data subjects' keys: sealing personal fields, opening them, erasure (personal/subjects.ts). */
  readonly subjects: Subjects;
  readonly #core: Core;

  constructor(
    readonly kv: KvStore,
    readonly schema: Schema<S>,
    options: ResourceStoreOptions = {},
  ) {
    const core = new Core(kv, schema, options.newId ?? (() => randomUUID().replace(/-/g, "")), options);
    this.writer = core.writer;
    this.global = core.global;
    this.reads = new Reads<S>(core, options);
    this.writes = new Writes<S>(core);
    this.lifecycle = new Lifecycle(core);
    this.audit = new Audit(core);
    this.dumps = new PartitionDumps(core, this.audit);
    this.subjects = core.subjects;
    this.#core = core;
  }

  /** A fresh resource id, as a create without one gets (for a caller that must name a resource before creating it). */
  newId(): string {
    return this.#core.newId();
  }

  /** Rebuilds a partition's order index (ordering.ts) from its log: for a partition written before the index existed. */
  rebuildOrderIndex(partition: Partition): Promise<void> {
    return rebuildOrderIndex(this.#core, partition);
  }

  /** Subscribes to every event committed by this process (the store-wide feed is `writer.feed`). */
  onChange(listener: (partition: Partition, events: readonly ResourceEvent[]) => void): () => void {
    return this.writer.onCommit(listener);
  }

  /** True when the resource exists (no permission check: for operators and tests). */
  async exists(ref: Ref): Promise<boolean> {
    const { partition, key } = this.stateAddress(ref);
    return (await this.kv.get(partition, key)) !== undefined;
  }

  // ---------------------------------------------------------------- store-wide indexes

  /** `audit.verifyVisible` of every identity's index: one failed result per identity whose index names a root it may not list. */
  async verifyVisibility(): Promise<{ partition: Partition; result: VerifyResult }[]> {
    const out: { partition: Partition; result: VerifyResult }[] = [];
    for await (const partition of allPartitions(this.kv, layout.visibleKind)) {
      if (!layout.isIdentityVisible(partition)) continue;
      const stray = await this.audit.verifyVisible(layout.identityOfVisible(partition));
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

  /** Gives the partitions of a store written before sums existed their parents' sums (once; see order-index.ts). */
  buildSums(): Promise<number> {
    return buildSums(this.#core);
  }

  // ---------------------------------------------------------------- addresses

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
}
