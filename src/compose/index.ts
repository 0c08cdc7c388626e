/** The composition root: open the whole store with `openFlowstore`. */
export { openFlowstore, DEFAULT_ARCHIVE_RECOVERY_AGE_MS, type Flowstore, type FlowstoreOptions, type VerifyAllResult } from "./open.js";
export { ALL_KINDS, CHAINED_KINDS, PARTITION_KINDS, SCHEMAS, type PartitionKind } from "./kinds.js";
