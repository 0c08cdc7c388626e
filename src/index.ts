/**
 * flowstore as a library: `openFlowstore(url)` opens the whole store over one storage backend.
 *
 *   const fs = await openFlowstore("lmdb:./data");          // or "memory:", "redis://…", "redis-cluster://…"
 *   await fs.workflow.createProject(actor, { displayName: "School" });
 *   await fs.close();
 *
 * Every API checks permissions itself (pass the acting user's `Actor`; `SYSTEM` bypasses checks). The
 * typed HTTP client is the `flowstore/client` subpath.
 */
export * from "./errors.js";
export {
  openFlowstore,
  ALL_KINDS,
  PARTITION_KINDS,
  DEFAULT_ARCHIVE_RECOVERY_AGE_MS,
  type Flowstore,
  type FlowstoreOptions,
  type PartitionKind,
  type VerifyAllResult,
} from "./compose/index.js";
export type { KvStore, Partition, Key, Op, ScanOptions, ScanPage } from "./kv/contract.js";
export { openKv, type OpenKvOptions } from "./kv/open.js";
// access: actors and global permissions
export { SYSTEM, userActor, allows, type Actor, type Permissions } from "./access/actor.js";
export { GlobalPermissions, IntentRegistry, ACCESS_INTENTS, requestedIntent, type IdentityDirectory, type Intent, type DeclaredIntents } from "./access/index.js";
export { flowstoreIntents } from "./compose/intents.js";
// resources and the domains declared over them
export { defineSchema, type TypeDecl, type SchemaDecl, type CreateIntentOf } from "./resources/model/schema.js";
export { ResourceStore, type Page } from "./resources/store.js";
export type { Ref } from "./resources/model/ref.js";
export type { Envelope, Meta } from "./resources/model/record.js";
export type { ResourceEvent, VerifyResult } from "./resources/model/events.js";
export { Workflow, projectRef, subprojectRef, workflowitemRef } from "./workflow/commands.js";
export { workflowSchema, type WorkflowSchema } from "./workflow/schema.js";
export { generateDemo, ensureDemoIdentities } from "./workflow/demo.js";
export type { ArchivedProject, RestoredProject } from "./workflow/archive.js";
export { tenancySchema, type TenancySchema } from "./tenancy/schema.js";
export { Identity, type UserRecord, type GroupRecord, type NewUser, type NewGroup } from "./identity/index.js";
// archive
export {
  Archive,
  type ArchiveOptions,
  type ArchiveDocument,
  type ArchivedFile,
  type FileInput,
  type OpenedFile,
  type Snapshot,
  type SnapshotSummary,
} from "./archive/index.js";
// process data
export { ProcessData, type ProcessDataOptions, type ProcessRecord, type PutOptions, type KeyConfig } from "./process-data/index.js";
export type { ListOptions as ProcessDataListOptions, ListPage as ProcessDataPage } from "./process-data/index.js";
