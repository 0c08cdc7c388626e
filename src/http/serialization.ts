/**
 * Response serialization: fast-json-stringify, as Fastify's default, with the compiled serializers
 * kept for the process. Fastify compiles every route's response schemas again in every encapsulation
 * scope of every server it builds, and a CPU profile of building four servers put fast-json-stringify at
 * 12.8 s of 27.8 s. A serializer depends only on its schema, the scope's named schemas and the options,
 * so it is compiled once per process and shared, as the validators are (validation.ts).
 */
import fastJsonStringify, { type Options } from "fast-json-stringify";
import type { FastifyServerOptions } from "fastify";

type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions["schemaController"]>["compilersFactory"]>;
type Serializer = (data: unknown) => string;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** Serializers by the named schemas and options of their scope, then by their schema. */
const serializersByScope = new Map<string, Map<string, Serializer>>();

/** Fastify's `schemaController.compilersFactory.buildSerializer`. */
export const serializerCompiler: NonNullable<CompilersFactory["buildSerializer"]> = (externalSchemas = {}, serializerOpts: Options = {}) => {
  if (!isObject(externalSchemas)) throw new Error("the named schemas of a scope are an object");
  const scope = JSON.stringify([externalSchemas, serializerOpts]);
  let compiled = serializersByScope.get(scope);
  if (!compiled) serializersByScope.set(scope, (compiled = new Map()));
  const cache = compiled;
  return ({ schema }) => {
    if (!isObject(schema)) throw new Error("a response schema is an object");
    const key = JSON.stringify(schema);
    let serialize = cache.get(key);
    if (!serialize) {
      // As Fastify's own compiler does: a response schema that is itself a named schema is not also
      // passed among the named ones (fast-json-stringify would refuse the duplicate $id).
      let named = externalSchemas;
      const id = schema.$id;
      if (typeof id === "string" && id in named) {
        named = { ...named };
        delete named[id];
      }
      serialize = fastJsonStringify(schema, { ...serializerOpts, schema: named as Options["schema"] }) as Serializer;
      cache.set(key, serialize);
    }
    return serialize;
  };
};
