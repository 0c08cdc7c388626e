/**
 * The composition root: `openFlowstore(urlOrKv, options)` assembles the whole store over one storage
 * backend (the only place the object graph is built: the HTTP server, the CLI and library users all
 * start here) and owns what runs beside it.
 *
 * Rules:
 * - One clock for every part (workflow, tenancy, archive, process data, identity); tests inject one.
 * - Instrumentation wraps the store before anything is built on it (`instrument`, e.g. the server's
 *   metrics), so every part goes through it.
 * - It only wires: background work (recovery sweeps, feed repair, the notification follower) is
 *   background.ts's, started here and stopped by `close()`; backups and restores are backup.ts's;
 *   verification is resources' (audit/verify-all.ts); the rules about assignees are the workflow's
 *   (assignees.ts).
 * - Who opens closes: `close()` closes the storage backend only when it was opened here from a URL; a
 *   KvStore passed in stays the caller's to close.
 */
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { Archive, loadSealKey, type ArchiveOptions, type SealKeyOptions } from "../archive/index.js";
import { IDENTITY_SPLITS, Identity, type UserRecord } from "../identity/index.js";
import type { KvStore, Partition } from "../kv/contract.js";
import { openKv, type OpenKvOptions } from "../kv/open.js";
import { openProcessData, type ProcessData, type ProcessDataOptions } from "../process-data/service.js";
import { SYSTEM, type Actor } from "../access/actor.js";
import type { VerifyResult } from "../resources/model/events.js";
import { Checkpoints, loadCheckpointKey } from "../resources/audit/checkpoint.js";
import type { GlobalPermissions } from "../access/global.js";
import { ACCESS_SPLITS } from "../access/intents.js";
import { ResourceStore, type Assignment, type Verified } from "../resources/store.js";
import { verifyAll, verifyCheckpoint, type ChainedKind, type VerifiedHead, type VerifyAllResult as BaseVerifyAllResult } from "../resources/audit/verify-all.js";
import type { TenancySchema } from "../tenancy/schema.js";
import { archiveProject, projectArchiveReadPolicy, restoreProject, type ArchivedProject, type RestoredProject } from "../workflow/archive.js";
import { BudgetAnalytics } from "../workflow/analytics.js";
import { Assignees } from "../workflow/assignees.js";
import { Workflow } from "../workflow/commands.js";
import { Documents, type DocumentsOptions } from "../workflow/documents.js";
import { Notifications, type NotificationsOptions } from "../workflow/notifications.js";
import { ExchangeRates } from "../workflow/rates.js";
import { Subscriptions, type SubscriptionsOptions } from "../subscriptions/subscriptions.js";
import { FeedWatcher } from "../resources/log/feed.js";
import { readLedger } from "../resources/log/writer.js";
import { LogCheckpoints } from "../tlog/checkpoint.js";
import { TransparencyLog } from "../tlog/log.js";
import type { WorkflowSchema } from "../workflow/schema.js";
import { Background } from "./background.js";
import { Backups, type StoreExport } from "./backup.js";
import { Erasures, keepErasures, verifyRegisterOf } from "./erasure.js";
import type { ErasureReceipt } from "../resources/store.js";
import { flowstoreIntents } from "./intents.js";
import { listEpochs, replacedView, tallyRecords, verifyEpochs, type EpochsVerified } from "./epochs.js";
import { StoreFence } from "./fence.js";
import { IMPORT_MARKER, KEPT_ON_RESTORE_KINDS, PARTITION_KINDS, SCHEMAS, type PartitionKind } from "./kinds.js";
import type { StagedRestore } from "./restore.js";
import type { Progress } from "./transfer.js";

export type { VerifiedHead } from "../resources/audit/verify-all.js";
export type { EpochsVerified } from "./epochs.js";

/**
 * What `verifyCheckpoint` answers: the partition's verification against the checkpoint, and the
 * restores made since the checkpoint was signed (`restoredSince`, each epoch with who, when and the
 * backup's SHA-256); when the current history does not extend it but the history a restore replaced
 * does, `replacedIn` names that epoch (and the reason says so).
 */
export type CheckpointVerified = VerifyResult & {
  readonly restoredSince?: readonly { readonly epoch: number; readonly by: string; readonly at: string; readonly backup: string }[];
  readonly replacedIn?: number;
};

/** What `verifyAll` answers: the live store's partitions, and the epochs (each restore) with their replaced histories. */
export type VerifyAllResult = BaseVerifyAllResult & {
  /** The record chains (kv/record-chain.ts) of the identity and global-permission partitions and of the inboxes: partitions with a chain, events checked. */
  readonly records: { readonly ok: boolean; readonly partitions: number; readonly events: number };
  readonly epochs: EpochsVerified;
};
export type { StoreExport } from "./backup.js";

/** Half-done archive operations older than this are finished or undone (default 10 minutes). */
export const DEFAULT_ARCHIVE_RECOVERY_AGE_MS = 10 * 60 * 1000;

export interface FlowstoreOptions extends OpenKvOptions {
  /** The clock (epoch ms) of every part; tests inject one. Default Date.now. */
  readonly clock?: () => number;
  /** Wraps the store before anything is built on it (e.g. `metrics.wrap` to count its operations). */
  readonly instrument?: (kv: KvStore) => KvStore;
  /** Cache rendered workflowitem list pages per project version (default true). */
  readonly pageCache?: boolean;
  /**
   * Seal the display names stored plain at open (default true; identity.ts `sealUsers`). A restore's
   * scratch store is opened without: it is checked, never served, and its identity record chain is
   * compared with the live one's as the backup holds it (a sealing event there would fork it).
   */
  readonly sealUsers?: boolean;
  /**
   * Process data: where the key that encrypts access tokens comes from (a 32-byte key, or a data
   * directory holding the key file) and its limits. Without a key a random one is used, and stored
   * tokens are unreadable after a restart.
   */
  readonly processData?: Omit<ProcessDataOptions, "clock">;
  /** The archive's limits and retention (default: 100 MiB per snapshot, keep all), and its recovery. */
  readonly archive?: Omit<ArchiveOptions, "now"> & {
    /**
     * At open and then periodically, half-done archive operations older than this are finished or
     * undone (a killed upload). Keep it above the longest upload when other processes share the store.
     * Default 10 minutes.
     */
    readonly recoverOlderThanMs?: number;
  };
  /**
   * The key of the archive seal (only sealed project archives are restorable): given, or a key file in
   * a data directory (generated on first use, 0600). Default: the directory of an `lmdb:` store; for
   * other stores without it, a random key for the life of the process (archives made then cannot be
   * restored after a restart), so configure it for Redis and PostgreSQL.
   */
  readonly archiveSeal?: SealKeyOptions;
  /**
   * The Ed25519 key that signs checkpoints (resources/checkpoint.ts): a PKCS#8 PEM, or a data directory
   * whose `checkpoint-key.pem` is generated on first use (0600). Default: a key for the life of the process.
   */
  readonly checkpointKey?: { readonly pem?: string; readonly dataDir?: string };
  /** Documents of workflowitems: the size limit of one (default 100 MiB). */
  readonly documents?: Omit<DocumentsOptions, "clock">;
  /**
   * Notifications: retention (keep the newest N per user, default 1000), and whether this process
   * projects them from the feed (`follow`, default false: a server turns it on; several processes may,
   * the projection is idempotent).
   */
  readonly notifications?: NotificationsOptions & { readonly follow?: boolean; readonly pollMs?: number };
  /**
   * Appends to the feed, at open and with the periodic sweep, the commits a killed process left out of
   * it (`PartitionWriter.repairAnchor`), once their last event is `settleMs` old (default 1000 ms: a live
   * writer anchors within milliseconds, so a younger one may still be on its way). Default off (a
   * server turns it on; an import must not have it).
   */
  readonly feedRepair?: false | { readonly settleMs?: number };
  /**
   * Where a restore (`stageRestore`) keeps the export it reads until it is done, and its scratch store.
   * Default: the directory of an `lmdb:` store, else the OS's temporary directory; keep it on a disk
   * that survives a restart, since `flowstore import --resume` needs the file after a crash.
   */
  readonly restoreDir?: string;
  /**
   * The store-wide transparency log (src/tlog): its origin (the checkpoint's first line and the key
   * name of its signature; default derived from the checkpoint key), and whether this process appends
   * the feed to it (`append`, default false: a server turns it on; several processes may, appends are
   * conditional on the tree's head), polling the feed every `pollMs` (default 200) and at least every
   * `intervalMs` (default 1000).
   */
  readonly log?: { readonly origin?: string; readonly append?: boolean; readonly pollMs?: number; readonly intervalMs?: number };
  /**
   * Durable subscriptions (src/subscriptions): their webhooks' lease and retries; with `deliver`, this
   * process delivers webhooks in the background (on in `serve`): whenever the feed's head moves (polled
   * every `pollMs`) and at least every `intervalMs` (retries, a dead deliverer's expired lease).
   */
  readonly subscriptions?: Omit<SubscriptionsOptions, "clock"> & {
    readonly deliver?: boolean;
    readonly pollMs?: number;
    readonly intervalMs?: number;
    /**
     * Refuse to open when the store's webhook secrets were sealed with another key (a ConfigurationError
     * naming FLOWSTORE_WEBHOOK_KEY), and seal secrets kept in clear. Default: when the key is configured or
     * kept in a key file (not a throwaway key for the life of the process).
     */
    readonly requireKey?: boolean;
  };
  /** Where errors of background work (background.ts) go. Default: a process warning. */
  readonly onBackgroundError?: (error: unknown, task: string) => void;
}

export interface Flowstore {
  /** The storage backend every part uses (instrumented when `instrument` was given). */
  readonly kv: KvStore;
  /** The clock every part uses (epoch ms). */
  readonly clock: () => number;
  /** Every partition kind the store writes, with its layer (export, import, verify walk it). */
  readonly kinds: readonly PartitionKind[];
  /** Projects, subprojects and workflowitems: commands with their lifecycle rules. */
  readonly workflow: Workflow;
  /** Documents of workflowitems, their content in the archive's file store. */
  readonly documents: Documents;
  /** Users' notifications, projected from the workflow's committed events. */
  readonly notifications: Notifications;
  /** Exchange rates as dated data (`global.writeExchangeRates` writes them; the ECB's CSV imports). */
  readonly rates: ExchangeRates;
  /** Budget analytics of projects and subprojects, per currency and converted at dated rates (O(buckets) per read). */
  readonly analytics: BudgetAnalytics;
  /** Durable subscriptions to the change feed: pull consumers, signed webhooks, dead letters, the digest. */
  readonly subscriptions: Subscriptions;
  /** The generic resource operations over the workflow schema (history, as-of, verify, ...). */
  readonly resources: ResourceStore<WorkflowSchema>;
  /** The tenancy hierarchy (spaces, providers, tenants, nodes, ...), on the same backend. */
  readonly tenancy: ResourceStore<TenancySchema>;
  /** Users, groups, passwords. */
  readonly identity: Identity;
  /** Global permissions (`global.createProject`, `global.writeArchive`, ...). */
  readonly global: GlobalPermissions;
  /** Immutable snapshots with files, found by unique id and by day. */
  readonly archive: Archive;
  /** Interim data of running business processes (forms, messages), with access tokens sealed. */
  readonly processData: ProcessData;
  /**
   * Stores a closed project (its whole partition) as one snapshot `project:<id>`; with drop, removes
   * the live project. Needs `global.writeArchive` and the project's `project.close`.
   */
  archiveProject(actor: Actor, projectId: string, options?: { drop?: boolean }): Promise<ArchivedProject>;
  /** Restores an archived project where it does not exist. Needs `global.writeArchive` and `global.createProject`. */
  restoreProject(actor: Actor, snapshotId: string): Promise<RestoredProject>;
  /** One cheap read through the backend: resolves when the store answers, throws when it does not. */
  ready(): Promise<void>;
  /**
   * Verifies every partition that has a chain (what `flowstore verify` reports): its hash chain, its
   * anchor in the ledger, and every stored key against the replay of its log. With `since`, a partition
   * for which it answers the head a previous verify left is verified incrementally: the event at that
   * head must still have its hash, and the chain, head and ledger after it are checked (not the stored
   * keys). Each result that is ok carries the head it verified (`head`), the next run's `since`.
   * Then the epochs (epochs.ts): their chain of records, and each replaced history verified whole; the
   * result lists them, so the discontinuity a restore made shows in every verify.
   */
  verifyAll(onResult?: (partition: Partition, result: Verified) => void, options?: { since?: (partition: Partition) => VerifiedHead | undefined }): Promise<VerifyAllResult>;
  /**
   * The store's restore fence (fence.ts): shut by a restore before it reads the upload, honoured by
   * every process over the store; it holds the epoch and the token epoch too.
   */
  readonly fence: StoreFence;
  /** Signs partitions' chain heads (`GET …/checkpoint`); each names the log checkpoint covering it. */
  readonly checkpoints: Checkpoints;
  /**
   * The store-wide transparency log: the tree (`tree`: proofs, the appender's `appendPending`) and its
   * signed checkpoints (`checkpoints`: C2SP notes, cosignatures); `appended()` resolves when this
   * process's appender has no pass in progress.
   */
  readonly log: { readonly tree: TransparencyLog; readonly checkpoints: LogCheckpoints; appended(): Promise<void> };
  /**
   * Proves that a partition's current history extends a checkpoint kept earlier: its signature by the
   * key with `trustedFingerprint` (refused without one: a checkpoint's own key proves nothing), the same
   * hash at its seq, and the partition verified (with `incremental`, only the chain after the
   * checkpoint). Refuses a forged checkpoint. Every restore since the checkpoint shows in the answer
   * (`restoredSince`), and a checkpoint of a history a restore replaced is found in it (`replacedIn`).
   */
  verifyCheckpoint(checkpoint: unknown, options?: { trustedFingerprint?: string; incremental?: boolean }): Promise<CheckpointVerified>;
  /**
   * Disables a user (identity's rule: `global.disableUser`), refused with a ConflictError naming what is
   * still assigned to it (projects, subprojects, workflowitems) unless `force`.
   */
  disableUser(actor: Actor, id: string, options?: { force?: boolean }): Promise<UserRecord>;
  /** What is assigned to a user now: asked by the user itself or a holder of `global.listAssignments`. */
  assignmentsOf(actor: Actor, id: string): Promise<Assignment[]>;
  /**
   * The whole store as an export (transfer.ts's NDJSON), streamed as it is read (backup.ts): needs
   * `global.createBackup` (root always), checked before the first line.
   */
  exportStore(actor: Actor, onProgress?: Progress): Promise<StoreExport>;
  /**
   * Stages a restore of the whole store from an export (as `exportStore` writes it; a function is called
   * for it once the actor may restore): needs `global.restoreBackup` (root always). Writes it to the
   * restore directory and checks it in a scratch store (it imports, its chains verify, it holds root, it
   * opens with this store's process-data key). A bad export is refused with a ValidationError naming
   * why, and this store is not touched. The staged restore's `apply()` then replaces the content
   * (backup.ts): the background work (notifications, recovery sweeps) pauses meanwhile, and the
   * process's chain heads and visibility index are refreshed after.
   */
  stageRestore(actor: Actor, input: Readable | (() => Readable)): Promise<StagedRestore>;
  /**
   * Erases a data subject (erasure.ts): destroys its key, so its personal fields read as erased
   * everywhere, appends an erasure event to each resource that held them, and answers the receipt.
   * Needs `global.eraseSubject` (root always); NotFoundError when no personal data of it was stored.
   */
  eraseSubject(actor: Actor, subject: string): Promise<ErasureReceipt>;
  /** The receipt of a subject's erasure (`global.eraseSubject`); NotFoundError when it was not erased. */
  erasureReceipt(actor: Actor, subject: string): Promise<ErasureReceipt>;
  /**
   * Runs the background work's passes now (the notification follower, the log's appender, the webhook
   * deliverer, those this process runs) and resolves once they are done: the feed as it stood is taken in.
   */
  settle(): Promise<void>;
  /** Stops the root's timers, waits for background work, and closes the backend if it was opened here. */
  close(): Promise<void>;
}

/** Opens flowstore over a store URL (`memory:`, `lmdb:<dir>`, `redis://…`, `redis-cluster://…`) or an open KvStore. */
export async function openFlowstore(store: string | KvStore = "lmdb:./data", options: FlowstoreOptions = {}): Promise<Flowstore> {
  const owned = typeof store === "string" ? await openKv(store, options) : null;
  try {
    return await assemble(owned ?? (store as KvStore), owned !== null, options, typeof store === "string" ? store : null);
  } catch (e) {
    await owned?.close().catch(() => {});
    throw e;
  }
}

/** The name under which the split of the administrators' intents (issue 28) is recorded in the global permissions. */
export const INTENT_SPLITS_MIGRATION = "intent-splits-28";

async function assemble(base: KvStore, ownsKv: boolean, options: FlowstoreOptions, store: string | null): Promise<Flowstore> {
  const clock = options.clock ?? Date.now;
  // Every part writes through the store's restore fence (fence.ts); the restore itself writes around it.
  const unfenced = options.instrument ? options.instrument(base) : base;
  const fence = new StoreFence(unfenced, KEPT_ON_RESTORE_KINDS, clock);
  const kv = fence.fenced(unfenced);
  // One registry of global intents, each domain's declared in its own layer; grants name a known identity.
  const identity = new Identity(kv, { now: () => new Date(clock()), intents: flowstoreIntents(SCHEMAS.workflow, SCHEMAS.tenancy) });
  const { global } = identity;
  const resources = new ResourceStore(kv, SCHEMAS.workflow, { clock, pageCache: options.pageCache, global, identities: identity });
  const tenancy = new ResourceStore(kv, SCHEMAS.tenancy, { clock, global, identities: identity });
  const { recoverOlderThanMs = DEFAULT_ARCHIVE_RECOVERY_AGE_MS, ...archiveOptions } = options.archive ?? {};
  // A project's archive is read by whoever may view the project by its sealed permissions (issue 29, finding 8).
  const archive = new Archive(kv, { ...archiveOptions, now: clock, global, readPolicy: projectArchiveReadPolicy(resources) });
  const pd = options.processData ?? {};
  const keyGiven = pd.encryptionKey !== undefined || pd.dataDir !== undefined;
  // A configured key must be the one the store's tokens were sealed with: refused here, at open.
  const keyOptions = keyGiven ? { requireKey: pd.requireKey ?? true } : { encryptionKey: randomBytes(32) };
  const processData = await openProcessData(kv, { ...pd, ...keyOptions, clock, global });
  const lmdbDir = typeof store === "string" && store.startsWith("lmdb:") ? store.slice("lmdb:".length).replace(/^\/\/(?=\/)/, "") : undefined;
  const sealOptions = options.archiveSeal ?? { dataDir: lmdbDir };
  let sealKey: Promise<Uint8Array> | undefined;
  const deps = { archive, store: resources, sealKey: () => (sealKey ??= loadSealKey(sealOptions)) };
  // Each chained kind is verified (and its feed repaired) by the store of the schema that declares it.
  const storeOf: Record<keyof typeof SCHEMAS, ResourceStore> = { workflow: resources, tenancy };
  const chained = PARTITION_KINDS.filter((k) => k.chained).map((k) => ({ kind: k.kind, store: storeOf[k.layer as keyof typeof SCHEMAS] }));
  const ck = options.checkpointKey ?? {};
  const checkpointKey = await loadCheckpointKey({ env: ck.pem, dataDir: ck.dataDir });
  // Users, groups and grants are anchored as the resources are (issue 29): their record chains' heads in
  // the ledger, their events in the feed, and so in the transparency log, which reads them there.
  identity.anchorWith(resources.writer.records);
  // The exchange rates' record chain is anchored the same way.
  const rates = new ExchangeRates(kv, global, clock, () => resources.writer.records);
  const tree = new TransparencyLog(kv, resources.writer.feed, (p) => identity.recordChained(p) || rates.recordChained(p));
  const logCheckpoints = new LogCheckpoints(tree, checkpointKey.privateKey, options.log?.origin);
  // A partition's checkpoint names the log checkpoint (the current tree) that holds its head, when it does.
  const checkpoints = new Checkpoints(kv, checkpointKey, clock, async (partition, seq) => {
    const index = await tree.indexOf(partition, seq);
    if (index === null) return null;
    const head = await tree.head();
    return { origin: logCheckpoints.origin, size: head.size, root: head.root.toString("base64"), index };
  });

  // Intents split since the store was written (issue 28): their holders keep them, once, recorded (on
  // open, and after a restore of an export written before the split).
  const migrateIntentSplits = () => global.migrateSplits(INTENT_SPLITS_MIGRATION, [...ACCESS_SPLITS, ...IDENTITY_SPLITS], new Date(clock()));

  // The repairs at open below are not run over an unfinished import (the store is not whole, and the import
  // must end byte for byte; `import --resume` runs them): the marker is read once for all of them.
  const importing = Boolean(await kv.get(IMPORT_MARKER.partition, IMPORT_MARKER.key));
  // The index of visible roots (resources/visibility.ts), built once for a store written before it.
  if (!importing) {
    await resources.buildVisibility();
    await tenancy.buildVisibility();
    // Users, groups and grants written before their record chains: adopted into them, once.
    await identity.adoptRecords();
    await rates.adoptRecords(); // exchange rates written before their record chain
    await identity.anchorRecords(); // chains written before their anchors, or a crash in between
    await rates.anchorRecords();
    await resources.buildSums();
    await migrateIntentSplits();
  }

  const documents = new Documents(resources, archive, { ...options.documents, clock });
  const { follow = false, pollMs = 200, ...notificationOptions } = options.notifications ?? {};
  const notifications = new Notifications(kv, resources, identity, notificationOptions);
  // Inboxes written before their record chains: adopted into them, once (not over an unfinished import).
  if (!importing) await notifications.adopt();

  const assignees = new Assignees(resources, identity);
  const {
    deliver = false,
    pollMs: subscriptionPollMs = 200,
    intervalMs: subscriptionIntervalMs = 1000,
    requireKey: requireWebhookKey,
    ...subscriptionOptions
  } = options.subscriptions ?? {};
  const secretKey = subscriptionOptions.secretKey ?? { dataDir: lmdbDir };
  // Webhook secrets are sealed under a key file beside an LMDB store unless a key is given (secrets.ts).
  const subscriptions = new Subscriptions(
    { kv, feed: resources.writer.feed, stores: [resources, tenancy], identity, global, assignees, personal: resources.subjects },
    { ...subscriptionOptions, secretKey, clock },
  );
  // A server's own key (configured or a key file, not a throwaway one) must be the store's: refused at open otherwise.
  if (requireWebhookKey ?? (secretKey.key !== undefined || secretKey.dataDir !== undefined)) await subscriptions.requireKey();

  const background = new Background({
    kv,
    archive,
    documents,
    recoverOlderThanMs,
    chained,
    feedRepair: options.feedRepair ? { settleMs: options.feedRepair.settleMs ?? 1000 } : null,
    follower: follow ? { notifications, feed: resources.writer.feed, watcher: new FeedWatcher(resources.writer.feed, pollMs) } : null,
    webhooks: deliver ? { subscriptions, watcher: new FeedWatcher(resources.writer.feed, subscriptionPollMs), intervalMs: subscriptionIntervalMs } : null,
    appender: options.log?.append ? { log: tree, watcher: new FeedWatcher(resources.writer.feed, options.log.pollMs ?? 200), intervalMs: options.log.intervalMs ?? 1000 } : null,
    onError: options.onBackgroundError ?? ((error: unknown, task: string) => process.emitWarning(`${task} failed: ${error instanceof Error ? error.message : String(error)}`)),
  });
  await background.start();

  const backups = new Backups({
    kv: unfenced,
    fence,
    clock,
    global,
    identity,
    background,
    restoreDir: options.restoreDir ?? lmdbDir ?? join(tmpdir(), "flowstore-restore"),
    // The scratch store of a restore is opened as this one is, for what an open checks (the process-data key).
    openScratch: (scratchKv) => openFlowstore(scratchKv, { clock, processData: options.processData, pageCache: false, sealUsers: false }),
    // What this process keeps of the old content: cached chain heads and whether it recorded its
    // process-data key (pages and lists are keyed by versions, which a partition never hands out
    // twice, dropped or not); the visibility index, which an export may lack.
    async refresh() {
      resources.writer.forgetAll();
      tenancy.writer.forgetAll();
      processData.forgetRecordedKey();
      subscriptions.forgetRecordedKey();
      // The feed was replaced: the log goes on in a new epoch, appending the restored events again.
      await tree.newEpoch();
      await resources.buildVisibility();
      await tenancy.buildVisibility();
      await identity.adoptRecords(); // a backup from before the record chains
      await rates.adoptRecords();
      await identity.anchorRecords(); // or from before their anchors
      await rates.anchorRecords();
      await notifications.adopt();
      await resources.buildSums();
      await migrateIntentSplits();
      // The restore put its erasures back (transfer.ts): a user the backup brought plain or enabled is sealed or disabled again.
      await identity.sealUsers();
    },
  });
  const erasures = new Erasures([resources, tenancy], global, identity);
  // A repair at open: an erasure a kill interrupted after its key went (registered, and its key deleted
  // from the replaced histories), or an import that brought a key back, is finished before anything is served;
  // then display names stored plain (a store or an import from before they were sealed) are sealed, and
  // an erased user an import brought back enabled is disabled again (identity.ts `sealUsers`).
  if (!importing) {
    const kept = await keepErasures(kv);
    if (options.sealUsers !== false) await identity.sealUsers({ registerVerified: kept.registerVerified });
  }
  const verifiers: readonly ChainedKind[] = chained;
  /** The chained kinds' verifiers over another store (a replaced history read as a store of its own: the same schemas verify it). */
  const verifiersOver = (view: KvStore): readonly ChainedKind[] => {
    const stores: Record<keyof typeof SCHEMAS, ResourceStore> = {
      workflow: new ResourceStore(view, SCHEMAS.workflow, { clock, pageCache: false, global, identities: identity }),
      tenancy: new ResourceStore(view, SCHEMAS.tenancy, { clock, global, identities: identity }),
    };
    return PARTITION_KINDS.filter((k) => k.chained).map((k) => ({ kind: k.kind, store: stores[k.layer as keyof typeof SCHEMAS] }));
  };

  /** The record chains over a store (the live one, a replaced history), with their ledger anchors in it. */
  const recordsOver = async (over: KvStore) => [
    ...(await identity.verifyRecords(over, (p) => readLedger(over, p))),
    ...(await notifications.verify(over)),
    ...(await rates.verifyRecords(over, (p) => readLedger(over, p))),
    ...(await verifyRegisterOf(over)), // the register of erasures (not anchored: see docs/security.md)
  ];

  let closed: Promise<void> | null = null;
  return {
    kv,
    clock,
    kinds: PARTITION_KINDS,
    workflow: new Workflow(resources, identity, documents),
    documents,
    notifications,
    rates,
    analytics: new BudgetAnalytics(resources, rates, clock),
    subscriptions,
    resources,
    tenancy,
    identity,
    global,
    archive,
    processData,
    archiveProject: (actor, projectId, opts = {}) => archiveProject(deps, actor, projectId, { drop: opts.drop === true }),
    restoreProject: (actor, snapshotId) => restoreProject(deps, actor, snapshotId),
    async ready() {
      await global.list(SYSTEM);
    },
    async verifyAll(onResult, opts = {}) {
      const live = await verifyAll(kv, verifiers, onResult, opts);
      // Who could do what, who was told what, the exchange rates and the erasures: against their record chains.
      const records = tallyRecords(await recordsOver(kv), onResult);
      const epochs = await verifyEpochs(kv, verifiersOver, recordsOver);
      return {
        ...live,
        ok: live.ok && records.ok && epochs.ok,
        bad: live.bad + records.bad,
        records: { ok: records.ok, partitions: records.partitions, events: records.events },
        epochs,
      };
    },
    fence,
    disableUser: (actor, id, opts = {}) => assignees.disableUser(actor, id, opts),
    assignmentsOf: (actor, id) => assignees.assignmentsOf(actor, id),
    checkpoints,
    log: { tree, checkpoints: logCheckpoints, appended: () => background.appended() },
    async verifyCheckpoint(checkpoint, opts = {}) {
      const live = await verifyCheckpoint(verifiers, checkpoint, opts);
      // The restores since the checkpoint was signed show with it, whatever the answer (epochs.ts).
      const time = typeof (checkpoint as { time?: unknown })?.time === "string" ? Date.parse((checkpoint as { time: string }).time) : Number.NaN;
      const epochs = (await listEpochs(unfenced)).filter((e) => Number.isNaN(time) || Date.parse(e.at) >= time);
      if (epochs.length === 0) return live;
      const restoredSince = epochs.map((e) => ({ epoch: e.epoch, by: e.by, at: e.at, backup: e.backup.sha256 }));
      if (live.ok) return { ...live, restoredSince };
      // Not extended by the current history: is it the history a restore replaced (kept, verified)?
      for (const e of [...epochs].reverse()) {
        const view = replacedView(unfenced, e.epoch);
        const replaced = await verifyCheckpoint(verifiersOver(view), checkpoint, opts);
        if (replaced.ok) {
          const reason = `the history this checkpoint signed was replaced by the restore of epoch ${e.epoch} (by ${e.by} at ${e.at}, backup ${e.backup.sha256}); it is kept, and verifies, in that epoch's replaced history`;
          return { ...live, firstBad: { seq: live.firstBad?.seq ?? 0, reason }, restoredSince, replacedIn: e.epoch };
        }
      }
      return { ...live, restoredSince };
    },
    exportStore: (actor, onProgress) => backups.exportStore(actor, onProgress),
    stageRestore: (actor, input) => backups.stageRestore(actor, input),
    eraseSubject: (actor, subject) => erasures.erase(actor, subject),
    erasureReceipt: (actor, subject) => erasures.receipt(actor, subject),
    settle: () => background.settle(),
    close() {
      closed ??= (async () => {
        await background.stop();
        if (ownsKv) await kv.close();
      })();
      return closed;
    },
  };
}
