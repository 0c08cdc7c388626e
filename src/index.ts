/**
 * flowstore as a library: `openStore(url)` gives the typed APIs over one storage backend.
 *
 *   const fs = await openStore("lmdb:./data");          // or "memory:", "redis://…", "redis-cluster://…"
 *   await fs.workflow.createProject(actor, { displayName: "School" });
 *
 * Every API checks permissions itself (pass the acting user's `Actor`; `SYSTEM` bypasses checks).
 */
import type { KvStore } from "./kv/contract.js";
import { openKv, type OpenKvOptions } from "./kv/open.js";
import { Identity } from "./identity/index.js";
import { ResourceStore } from "./resources/store.js";
import { tenancySchema, type TenancySchema } from "./tenancy/schema.js";
import { Workflow } from "./workflow/commands.js";
import { workflowSchema, type WorkflowSchema } from "./workflow/schema.js";

export interface OpenStoreOptions extends OpenKvOptions {
  /** A clock (epoch ms), for tests. */
  readonly clock?: () => number;
}

export interface Flowstore {
  /** The storage backend (the contract every backend implements). */
  readonly kv: KvStore;
  /** Projects, subprojects and workflowitems: commands with their lifecycle rules. */
  readonly workflow: Workflow;
  /** The generic resource operations over the workflow schema (history, as-of, verify, ...). */
  readonly resources: ResourceStore<WorkflowSchema>;
  /** The seed 001 hierarchy (spaces, providers, tenants, ...), on the same backend. */
  readonly tenancy: ResourceStore<TenancySchema>;
  /** Users, groups and passwords. */
  readonly identity: Identity;
  close(): Promise<void>;
}

/** Opens flowstore over a store URL (or an already open KvStore). */
export async function openStore(store: string | KvStore = "lmdb:./data", options: OpenStoreOptions = {}): Promise<Flowstore> {
  const kv = typeof store === "string" ? await openKv(store, options) : store;
  const resources = new ResourceStore(kv, workflowSchema, { clock: options.clock });
  return {
    kv,
    resources,
    workflow: new Workflow(resources),
    tenancy: new ResourceStore(kv, tenancySchema, { clock: options.clock }),
    identity: new Identity(kv),
    close: () => kv.close(),
  };
}

export * from "./errors.js";
export type { KvStore, Partition, Key, Op, ScanOptions, ScanPage } from "./kv/contract.js";
export { openKv } from "./kv/open.js";
export { SYSTEM, userActor, type Actor, type Permissions } from "./resources/actor.js";
export { defineSchema, type TypeDecl, type SchemaDecl } from "./resources/schema.js";
export { ResourceStore, type Page } from "./resources/store.js";
export type { Ref } from "./resources/keys.js";
export type { Envelope, Meta } from "./resources/record.js";
export type { ResourceEvent, VerifyResult } from "./resources/events.js";
export { Workflow, projectRef, subprojectRef, workflowitemRef } from "./workflow/commands.js";
export { workflowSchema } from "./workflow/schema.js";
export { generateDemo } from "./workflow/demo.js";
export { tenancySchema } from "./tenancy/schema.js";
