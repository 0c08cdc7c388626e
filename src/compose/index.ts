/**
 * The composition root: open the whole store with `openFlowstore`. The storage contract's types are
 * re-exported for the layers above the root that wrap the store it opens (`FlowstoreOptions.instrument`,
 * e.g. the server's metrics), so those layers name the contract through the root, not the storage layer.
 */
export { openFlowstore, INTENT_SPLITS_MIGRATION, DEFAULT_ARCHIVE_RECOVERY_AGE_MS, type Flowstore, type FlowstoreOptions, type VerifyAllResult } from "./open.js";
export { ALL_KINDS, CHAINED_KINDS, PARTITION_KINDS, SCHEMAS, type PartitionKind } from "./kinds.js";
export type { CommitResult, Entry, Key, KvStore, Op, Partition, PartitionPage, ScanOptions, ScanPage } from "../kv/contract.js";
