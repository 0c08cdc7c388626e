/**
 * Request validation. Bodies are validated strictly: no type coercion (a number where a string is
 * declared is a 400, not "123") and no silent removal of unknown properties (a schema with
 * `additionalProperties: false` refuses them). Query strings, params and headers arrive as text, so
 * there scalar types are coerced ("?limit=10" → 10).
 */
import { Ajv, type AnySchema, type Options, type ValidateFunction } from "ajv";
import addFormatsImport from "ajv-formats";
import { OptionalKind } from "@sinclair/typebox";

// ajv-formats is CommonJS; its default export arrives wrapped under NodeNext.
const addFormats = ((addFormatsImport as unknown as { default?: unknown }).default ?? addFormatsImport) as (ajv: Ajv) => Ajv;

const common: Options = { removeAdditional: false, useDefaults: true, allErrors: false, strict: false };

function makeAjv(coerceTypes: boolean): Ajv {
  const ajv = new Ajv({ ...common, coerceTypes });
  addFormats(ajv);
  return ajv;
}

/** A pair of Ajv instances knowing one set of named schemas, and the validators compiled with them. */
interface Compilers {
  readonly strict: Ajv;
  readonly coercing: Ajv;
  readonly compiled: Map<string, ValidateFunction>;
}

/**
 * Compilers by the named schemas they know. Fastify asks for a compiler per encapsulation scope, and a
 * process may build many servers (the tests build hundreds); compiling every route's schemas again each
 * time was most of a server's start (about 6 of its 7 seconds). A validator depends only on its schema,
 * the named schemas and the options above, so it is compiled once per process and shared.
 */
const compilersBySchemas = new Map<string, Compilers>();

function compilersFor(externalSchemas: Record<string, unknown>): Compilers {
  const fingerprint = JSON.stringify(externalSchemas);
  let c = compilersBySchemas.get(fingerprint);
  if (!c) {
    const strict = makeAjv(false);
    const coercing = makeAjv(true);
    for (const schema of Object.values(externalSchemas)) {
      strict.addSchema(schema as object);
      coercing.addSchema(schema as object);
    }
    c = { strict, coercing, compiled: new Map() };
    compilersBySchemas.set(fingerprint, c);
  }
  return c;
}

/**
 * The compiler of one scope, knowing the named schemas (components.ts) registered there: Fastify's
 * `schemaController.compilersFactory.buildValidator`. Fastify hands the compiler a route definition
 * (`{schema, method, url, httpPart}`), which the factory's declared type calls a schema (an object).
 */
export function validatorCompiler(externalSchemas: Record<string, unknown> = {}): (route: AnySchema) => ValidateFunction {
  const { strict, coercing, compiled } = compilersFor(externalSchemas);
  return (route) => {
    if (typeof route !== "object" || !("schema" in route) || typeof route.httpPart !== "string")
      throw new Error("a validator is compiled for a route definition {schema, httpPart}");
    const schema: unknown = route.schema;
    const body = route.httpPart === "body";
    const key = `${body ? "body" : "coerced"}\u0000${JSON.stringify(schema)}`;
    let validate = compiled.get(key);
    if (!validate) {
      validate = (body ? strict : coercing).compile(schema as object);
      compiled.set(key, validate);
    }
    const v = validate;
    // A body declared Type.Optional(…) may be absent (Fastify hands an absent body over as null): Ajv alone
    // would refuse it as "must be object".
    if (body && (schema as Record<symbol, unknown>)[OptionalKind] === "Optional") {
      const optional = Object.assign((data: unknown): data is unknown => data === null || data === undefined || v(data), { schema: v.schema, schemaEnv: v.schemaEnv });
      return Object.defineProperty(optional, "errors", { get: () => v.errors });
    }
    return v;
  };
}
