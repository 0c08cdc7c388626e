/**
 * What every route plugin can reach: `app.flowstore`, the opened store (every part of `Flowstore`, over
 * the store as the server counts it for metrics) plus what only HTTP has (tokens, metrics), and, inside
 * the authenticated scope, `request.actor`.
 */
import type { Flowstore } from "../compose/index.js";
import type { Tokens } from "../identity/index.js";
import type { Actor } from "../access/actor.js";
import type { Gate } from "./gate.js";
import type { Metrics } from "./metrics.js";

export interface ServerContext extends Flowstore {
  readonly tokens: Tokens;
  /** Request counts and latencies; store operations when the store was opened with `metrics.wrap`. */
  readonly metrics: Metrics;
  /** Shut while a restore replaces the store (every request then answers 503). */
  readonly gate: Gate;
}

declare module "fastify" {
  /** What a route states about its HTTP behaviour, from which its OpenAPI entry is derived (openapi.ts). */
  interface FastifyContextConfig {
    /** The route answers an ETag (the resource's version); a GET then answers 304 to a matching If-None-Match. */
    etag?: boolean;
    /** The route takes If-Match (the ETag a GET gave): a stale one answers 412. */
    ifMatch?: boolean;
    /** The route answers 201 with a Location (the created resource's address). */
    location?: boolean;
  }
  interface FastifyInstance {
    flowstore: ServerContext;
  }
  interface FastifyRequest {
    /** The authenticated caller; set by the auth hook on every route under the authenticated scope. */
    actor: Actor;
  }
}
