/**
 * Schemas declared once, referred to everywhere (OpenAPI's `components.schemas`).
 *
 * Rule: a TypeBox schema that carries an `$id` is a named component. It is registered once per scope
 * (with `app.addSchema`) and every route body or response that contains it, at any depth, refers to it
 * (`{"$ref": "<id>#"}`) instead of repeating it. Registration and rewrite happen as routes are added
 * (an onRoute hook), so route code uses the typed schemas themselves and declares nothing twice.
 * Validation (ajv), serialization (fast-json-stringify) and the OpenAPI document (@fastify/swagger, with
 * the `$id` as the component's name) all resolve the references against the same registered schemas.
 * Two different schemas under one name are refused at startup.
 */
import type { TSchema } from "@sinclair/typebox";
import type { FastifyInstance } from "fastify";

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

export const refTo = (id: string): { $ref: string } => ({ $ref: `${id}#` });

/**
 * A copy of `schema` in which every nested schema with an `$id` is a `$ref` to it (the root too unless
 * `keepRoot`). TypeBox's symbol keys (Kind, Optional) are kept: validation.ts reads the Optional marker.
 */
export function referring(schema: unknown, keepRoot = false): unknown {
  const walk = (node: unknown, root: boolean): unknown => {
    if (Array.isArray(node)) return node.map((n) => walk(n, false));
    if (!isObject(node)) return node;
    if (!root && typeof node.$id === "string") return refTo(node.$id);
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) out[k] = k === "const" || k === "default" || k === "examples" ? v : walk(v, false);
    for (const k of Object.getOwnPropertySymbols(node)) (out as Record<symbol, unknown>)[k] = (node as Record<symbol, unknown>)[k];
    return out;
  };
  return walk(schema, keepRoot);
}

/** Every schema with an `$id` inside `schema` (itself included), by id. */
export function componentsIn(schema: unknown, into = new Map<string, TSchema>()): Map<string, TSchema> {
  if (Array.isArray(schema)) for (const s of schema) componentsIn(s, into);
  else if (isObject(schema)) {
    if (typeof schema.$id === "string" && !into.has(schema.$id)) into.set(schema.$id, schema as TSchema);
    for (const [k, v] of Object.entries(schema)) if (k !== "const" && k !== "default") componentsIn(v, into);
  }
  return into;
}

/**
 * Registers the named schemas in `schemas` (and the named schemas nested in them) in this scope, each
 * once: a name already registered here or above is skipped (it must be the same schema).
 */
export function registerComponents(app: FastifyInstance, schemas: readonly TSchema[]): void {
  const known = app.getSchemas() as Record<string, unknown>;
  for (const [id, schema] of componentsIn(schemas)) {
    const named = referring(schema, true) as { $id: string };
    if (!(id in known)) app.addSchema(named);
    else if (JSON.stringify(known[id]) !== JSON.stringify(named)) throw new Error(`two different schemas are named ${id}`);
  }
}

/**
 * Rewrites every route's body and responses to refer to named schemas, registering in the route's
 * scope each named schema it meets there for the first time (see the rule at the top).
 */
export function useComponents(app: FastifyInstance): void {
  app.addHook("onRoute", function (this: FastifyInstance, route) {
    const schema = route.schema as Record<string, unknown> | undefined;
    if (!schema) return;
    const bodies = [schema.body, ...Object.values((schema.response ?? {}) as Record<string, unknown>)];
    registerComponents(this, [...componentsIn(bodies).values()]);
    // An unnamed body keeps its root (validation.ts reads TypeBox's Optional marker on it).
    if (isObject(schema.body)) schema.body = referring(schema.body, typeof schema.body.$id !== "string");
    if (isObject(schema.response)) {
      const response: Record<string, unknown> = {};
      for (const [status, r] of Object.entries(schema.response)) {
        if (isObject(r) && isObject(r.content)) {
          const content: Record<string, unknown> = {};
          for (const [type, c] of Object.entries(r.content)) content[type] = isObject(c) ? { ...c, schema: referring(c.schema) } : c;
          response[status] = { ...r, content };
        } else response[status] = referring(r);
      }
      schema.response = response;
    }
  });
}

/** @fastify/swagger's option that names each component by its `$id` (instead of def-0, def-1, …). */
export const namedComponents = {
  buildLocalReference(json: Record<string, unknown>, _baseUri: unknown, _fragment: unknown, i: number): string {
    return typeof json.$id === "string" ? json.$id : `def-${i}`;
  },
};
