/**
 * Request validation. Bodies are validated strictly: no type coercion (a number where a string is
 * declared is a 400, not "123") and no silent removal of unknown properties (a schema with
 * `additionalProperties: false` refuses them). Query strings, params and headers arrive as text, so
 * there scalar types are coerced ("?limit=10" → 10).
 */
import { Ajv, type Options } from "ajv";
import addFormatsImport from "ajv-formats";
import { OptionalKind } from "@sinclair/typebox";
import type { FastifySchemaCompiler } from "fastify";

// ajv-formats is CommonJS; its default export arrives wrapped under NodeNext.
const addFormats = ((addFormatsImport as unknown as { default?: unknown }).default ?? addFormatsImport) as (ajv: Ajv) => Ajv;

const common: Options = { removeAdditional: false, useDefaults: true, allErrors: false, strict: false };

function makeAjv(coerceTypes: boolean): Ajv {
  const ajv = new Ajv({ ...common, coerceTypes });
  addFormats(ajv);
  return ajv;
}

export function validatorCompiler(): FastifySchemaCompiler<unknown> {
  const strict = makeAjv(false);
  const coercing = makeAjv(true);
  return ({ schema, httpPart }) => {
    const validate = (httpPart === "body" ? strict : coercing).compile(schema as object);
    // A body declared Type.Optional(…) may be absent (Fastify hands an absent body over as null): Ajv alone
    // would refuse it as "must be object".
    if (httpPart === "body" && (schema as Record<symbol, unknown>)[OptionalKind] === "Optional") {
      const optional = (data: unknown): boolean => data === null || data === undefined || validate(data);
      return Object.defineProperty(optional, "errors", { get: () => validate.errors });
    }
    return validate;
  };
}
