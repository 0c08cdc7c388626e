/**
 * Short names over the OpenAPI document's generated types (./openapi.ts): a named schema, an operation's
 * query parameters and JSON body. The client declares every type it answers or takes through these.
 */
import type { components, operations } from "./openapi.js";

export type Schemas = components["schemas"];
/** An operation's query parameters. */
export type Query<Op extends keyof operations> = NonNullable<operations[Op]["parameters"]["query"]>;
/** An operation's JSON request body (optional bodies included). */
export type Body<Op extends keyof operations> = NonNullable<operations[Op]["requestBody"]> extends { content: { "application/json": infer B } } ? B : never;
