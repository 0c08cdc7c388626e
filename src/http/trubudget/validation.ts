/**
 * How TruBudget reads a request body (its api/src/httpd/server.ts): Ajv with `removeAdditional: true`
 * and `coerceTypes: true` runs its route schema first (a property its schema closes off is dropped, a
 * `null` or a number where a string is declared becomes one), then its Joi schema refuses what is left
 * over that it does not know. The adapter's bodies are read the same way, on /api only (the native
 * /api/v1 stays strict, ../validation.ts):
 *
 * - an object marked `dropsUnknown` (TruBudget's route schema closes it) loses properties it does not
 *   declare;
 * - every other object declared closed (`additionalProperties: false`) refuses them, as Joi does, with
 *   the native error (`body.data.x is not a known property`);
 * - scalars are coerced as Ajv's `coerceTypes: true` does (`null` → `""` for a string, `"5"` → 5).
 *
 * What passes is then checked by the domain commands as the native routes' input is, so no field the
 * native command refuses gets through. Query strings are the native coercing validator's.
 */
import { Ajv, type ValidateFunction } from "ajv";
import addFormatsImport from "ajv-formats";
import type { TObject } from "@sinclair/typebox";
import type { FastifySchemaCompiler } from "fastify";
import { validatorCompiler } from "../validation.js";

// ajv-formats is CommonJS; its default export arrives wrapped under NodeNext.
const addFormats = ((addFormatsImport as unknown as { default?: unknown }).default ?? addFormatsImport) as (ajv: Ajv) => Ajv;

/** The keyword marking an object whose unknown properties TruBudget's route schema drops. */
const DROPS = "x-trubudget-drops-unknown";

/** `schema` (an object schema) as one TruBudget's route schema closes off: unknown properties are dropped, not refused. */
export const dropsUnknown = <T extends TObject>(schema: T): T => ({ ...schema, additionalProperties: false, [DROPS]: true });

/** A closed object not marked to drop refuses an unknown property (a schema-valued additionalProperties is kept by `removeAdditional: true`). */
const REFUSE = { not: {} } as const;

function refusing(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(refusing);
  if (schema === null || typeof schema !== "object") return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) out[k] = refusing(v);
  if (out.additionalProperties === false && out[DROPS] !== true) out.additionalProperties = REFUSE;
  return out;
}

/** An Ajv reading as TruBudget's, knowing the named schemas (../components.ts) a route's body refers to; one per set of them. */
const ajvs = new Map<string, { ajv: Ajv; compiled: Map<string, ValidateFunction> }>();
function ajvFor(named: Record<string, unknown>) {
  const fingerprint = JSON.stringify(named);
  let entry = ajvs.get(fingerprint);
  if (!entry) {
    const ajv = new Ajv({ removeAdditional: true, coerceTypes: true, useDefaults: true, allErrors: false, strict: false });
    addFormats(ajv);
    ajv.addKeyword({ keyword: DROPS, schemaType: "boolean" });
    for (const schema of Object.values(named)) ajv.addSchema(refusing(schema) as object);
    entry = { ajv, compiled: new Map() };
    ajvs.set(fingerprint, entry);
  }
  return entry;
}

interface AjvError {
  keyword: string;
  schemaPath: string;
  message?: string;
}

/** The body validator of TruBudget's routes, knowing the scope's named schemas; other parts are the native compiler's. */
export function trubudgetValidatorCompiler(named: Record<string, unknown> = {}): FastifySchemaCompiler<unknown> {
  const native = validatorCompiler(named);
  const { ajv, compiled } = ajvFor(named);
  return (route) => {
    if (route.httpPart !== "body") return native(route);
    const key = JSON.stringify(route.schema);
    let validate = compiled.get(key);
    if (!validate) {
      validate = ajv.compile(refusing(JSON.parse(key)) as object);
      compiled.set(key, validate);
    }
    const v = validate;
    const check = (data: unknown): boolean => v(data);
    // A refused unknown property reads as the native one does ("… is not a known property").
    return Object.defineProperty(check, "errors", {
      get: () =>
        (v.errors as AjvError[] | null | undefined)?.map((e) =>
          e.keyword === "not" && e.schemaPath.endsWith("/additionalProperties/not") ? { ...e, keyword: "additionalProperties" } : e,
        ),
    });
  };
}
