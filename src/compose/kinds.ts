/**
 * The registry of partition kinds: every kind flowstore writes, each with the layer that writes it and
 * whether its partitions carry a hash-chained log. Nothing here is written down twice: each layer
 * declares its own kinds (`*_KINDS` beside its code, the owner types of each schema), and this module
 * only gathers them. Export/import, verify and the tests that dump a whole store walk this list; a test
 * checks that no layer writes a kind missing here.
 */
import type { Key, Partition } from "../kv/contract.js";
import { keyFamilies, PartitionKind as KindOfPartitions } from "../kv/subspace.js";
import { ARCHIVE_KINDS } from "../archive/kinds.js";
import { IDENTITY_KINDS, LOGIN_GUARD_KINDS } from "../identity/kinds.js";
import { PROCESS_DATA_KINDS } from "../process-data/kinds.js";
import { RESOURCE_KINDS } from "../resources/model/kinds.js";
import type { Schema } from "../resources/model/schema.js";
import { tenancySchema } from "../tenancy/schema.js";
import { SUBSCRIPTION_KINDS } from "../subscriptions/layout.js";
import { TLOG_KINDS } from "../tlog/log.js";
import { NOTIFICATION_KINDS } from "../workflow/notifications.js";
import { RATES_KINDS } from "../workflow/rates.js";
import { workflowSchema } from "../workflow/schema.js";
import { EPOCHS_KIND, REPLACED_KIND } from "./epochs.js";
import { ERASED_KIND } from "./erasure.js";
import { FENCE_KIND } from "./fence.js";

export interface PartitionKind {
  /** The first element of every partition tuple of this kind. */
  readonly kind: string;
  /** The layer (or schema) that writes it. */
  readonly layer: string;
  /** True when its partitions hold a hash-chained log (resource owner partitions): `verifyAll` checks them. */
  readonly chained: boolean;
  /**
   * True for a kind that a restore leaves alone: export does not carry it, the restore's wipe does not
   * drop it, import does not fill it, and the restore fence does not hold its writes. The restore's own
   * records (the fence, the epochs, the replaced histories) and the store-wide logs that must outlive a
   * restore (appended to, never truncated) are such kinds.
   */
  readonly keptOnRestore?: boolean;
}

/** The schemas served over one store, by name; the owner type of each names a chained partition kind. */
export const SCHEMAS = { workflow: workflowSchema, tenancy: tenancySchema } as const;

function ownerKinds(schema: Schema): string[] {
  return [...new Set([...schema.types.values()].map((t) => t.owner))];
}

/**
 * The import marker's kind (the CLI's transfer): present while an import runs or after one was killed;
 * a store holding it is not served and does not verify. Never exported, never counted as content.
 */
const IMPORT = new KindOfPartitions("import");
export const IMPORT_KIND = IMPORT.kind;
const IMPORT_KEYS = keyFamilies(["marker", "wipe", "source", "restore"]);

/**
 * Where the import marker is: its partition and key (compose/transfer.ts writes it; openFlowstore reads
 * it), beside it the flag of a restore whose wipe of the old content is not done yet (`wipe`), the
 * export a restore reads (`source`, a file path), both written with the marker, and the epoch of a
 * restore that is not finished (`restore`): written with the marker too, it outlives it until the
 * credentials are kept and the fence opens on that epoch (backup.ts `finishRestore`).
 */
export const IMPORT_MARKER: { readonly partition: Partition; readonly key: Key; readonly wipe: Key; readonly source: Key; readonly restore: Key } = {
  partition: IMPORT.partition(),
  key: IMPORT_KEYS.marker.pack(),
  wipe: IMPORT_KEYS.wipe.pack(),
  source: IMPORT_KEYS.source.pack(),
  restore: IMPORT_KEYS.restore.pack(),
};

const declared: PartitionKind[] = [
  ...Object.entries(SCHEMAS).flatMap(([layer, schema]) => ownerKinds(schema).map((kind) => ({ kind, layer, chained: true }))),
  ...RESOURCE_KINDS.map((kind) => ({ kind, layer: "resources", chained: false })),
  ...IDENTITY_KINDS.map((kind) => ({ kind, layer: "identity", chained: false })),
  // The login guard's counters outlive a restore: rolling them back would hand an attacker fresh guesses.
  ...LOGIN_GUARD_KINDS.map((kind) => ({ kind, layer: "identity", chained: false, keptOnRestore: true })),
  ...ARCHIVE_KINDS.map((kind) => ({ kind, layer: "archive", chained: false })),
  ...PROCESS_DATA_KINDS.map((kind) => ({ kind, layer: "process-data", chained: false })),
  ...NOTIFICATION_KINDS.map((kind) => ({ kind, layer: "workflow", chained: false })),
  ...RATES_KINDS.map((kind) => ({ kind, layer: "workflow", chained: false })),
  ...SUBSCRIPTION_KINDS.map((kind) => ({ kind, layer: "subscriptions", chained: false })),
  ...TLOG_KINDS.map((kind) => ({ kind, layer: "tlog", chained: false, keptOnRestore: true })),
  { kind: IMPORT_KIND, layer: "transfer", chained: false },
  { kind: FENCE_KIND, layer: "compose", chained: false, keptOnRestore: true },
  { kind: EPOCHS_KIND, layer: "compose", chained: false, keptOnRestore: true },
  { kind: REPLACED_KIND, layer: "compose", chained: false, keptOnRestore: true },
  // Erasures outlive a restore: a backup from before one must not bring the subject's key back (erasure.ts).
  { kind: ERASED_KIND, layer: "compose", chained: false, keptOnRestore: true },
];

/** Every partition kind, once (the first layer to declare a kind names it). */
export const PARTITION_KINDS: readonly PartitionKind[] = declared.filter((k, i) => declared.findIndex((o) => o.kind === k.kind) === i);

/** The kind names alone, in registry order. */
export const ALL_KINDS: readonly string[] = PARTITION_KINDS.map((k) => k.kind);

/** The kinds a restore leaves alone (`keptOnRestore`). */
export const KEPT_ON_RESTORE_KINDS: readonly string[] = PARTITION_KINDS.filter((k) => k.keptOnRestore === true).map((k) => k.kind);

/** The kinds that hold a store's content (what export carries, a restore replaces and import fills): all but the import marker and the kinds kept on restore. */
export const CONTENT_KINDS: readonly string[] = ALL_KINDS.filter((k) => k !== IMPORT_KIND && !KEPT_ON_RESTORE_KINDS.includes(k));

/** The kinds whose partitions carry a hash chain. */
export const CHAINED_KINDS: readonly string[] = PARTITION_KINDS.filter((k) => k.chained).map((k) => k.kind);
