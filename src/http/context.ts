/**
 * What every route plugin can reach: `app.flowstore` (the store as the server sees it, counted for
 * metrics; identity; tokens; metrics) and, inside the authenticated scope, `request.actor`.
 */
import type { Archive } from "../archive/index.js";
import type { Identity, Tokens } from "../identity/index.js";
import type { KvStore } from "../kv/contract.js";
import type { Actor } from "../resources/actor.js";
import type { Workflow } from "../workflow/commands.js";
import type { ProcessData } from "../process-data/service.js";
import type { Metrics } from "./metrics.js";

export interface ServerContext {
  /** The store, wrapped so that its operations are counted in /metrics. Domains use this one. */
  readonly kv: KvStore;
  readonly identity: Identity;
  readonly tokens: Tokens;
  readonly metrics: Metrics;
  /** Projects, subprojects and workflowitems over the counted store. */
  readonly workflow: Workflow;
  /** Interim data of running business processes (seed 004). */
  readonly processData: ProcessData;
  /** Immutable snapshots with files (seed 003), over the counted store. */
  readonly archive: Archive;
}

declare module "fastify" {
  interface FastifyInstance {
    flowstore: ServerContext;
  }
  interface FastifyRequest {
    /** The authenticated caller; set by the auth hook on every route under the authenticated scope. */
    actor: Actor;
  }
}
