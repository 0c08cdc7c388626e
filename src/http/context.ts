/**
 * What every route plugin can reach: `app.flowstore`, the opened store (every part of `Flowstore`, over
 * the store as the server counts it for metrics) plus what only HTTP has (tokens, metrics), and, inside
 * the authenticated scope, `request.actor`; and the types of a route plugin, whose request types come
 * from its route schemas (Fastify's TypeBox type provider: types only, validation.ts validates).
 */
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyPluginAsync,
  FastifyPluginOptions,
  FastifyTypeProvider,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from "fastify";
import type { Flowstore } from "../compose/index.js";
import type { Tokens } from "../identity/index.js";
import type { Actor } from "../access/actor.js";
import type { Gate } from "./gate.js";
import type { LingeringClose } from "./linger.js";
import type { Metrics } from "./metrics.js";

export interface ServerContext extends Flowstore {
  readonly tokens: Tokens;
  /** Request counts and latencies; store operations when the store was opened with `metrics.wrap`. */
  readonly metrics: Metrics;
  /** Shut while a restore replaces the store (every request then answers 503). */
  readonly gate: Gate;
}

/** What @fastify/type-provider-typebox's provider derives from a schema `S` (Static<S>). */
type TypeBoxRequest<S> = (TypeBoxTypeProvider & { schema: S })["validator"];

/**
 * The request types of a route, from its TypeBox schemas: `request.params`, `query`, `body` and
 * `headers` are what @fastify/type-provider-typebox's provider derives (Static of the schema). Answers
 * are not typed by their schema: many are stored JSON bytes or readonly domain records, and the
 * serializer (serialization.ts) holds every answer to its schema at run time.
 */
export interface RouteTypes extends FastifyTypeProvider {
  validator: TypeBoxRequest<this["schema"]>;
  serializer: unknown;
}

/** A scope whose routes take their request types from their schemas (RouteTypes). */
export type App = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, RouteTypes>;

/** A domain's route plugin (see server.ts), typed by its route schemas. */
export type RoutePlugin<Options extends FastifyPluginOptions = Record<never, never>> = FastifyPluginAsync<Options, RawServerDefault, RouteTypes>;

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
    /** The server's lingering close (linger.ts), seen by the tests. */
    lingering: LingeringClose;
  }
  interface FastifyRequest {
    /** The authenticated caller; set by the auth hook on every route under the authenticated scope. */
    actor: Actor;
  }
}
