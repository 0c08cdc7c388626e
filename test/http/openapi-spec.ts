/**
 * The OpenAPI document as third-party tools see it: a validator of answers against it (ajv over the document's
 * own schemas). The types openapi-typescript generates from it are the build's (scripts/openapi-types.ts).
 */
import { Ajv, type ValidateFunction } from "ajv";
import addFormatsImport from "ajv-formats";

type Json = Record<string, any>;

/** A response as the document declares it: itself, or the `components.responses` entry its `$ref` names (src/http/openapi.ts shares an answer given alike). */
export function answerOf(doc: Json, response: Json | undefined): Json | undefined {
  const ref = response?.$ref;
  if (typeof ref !== "string") return response;
  const declared = doc.components?.responses?.[ref.replace(/^#\/components\/responses\//, "")];
  if (declared === undefined) throw new Error(`${ref} is not in the document`);
  return declared;
}

const addFormats = ((addFormatsImport as unknown as { default?: unknown }).default ?? addFormatsImport) as (ajv: Ajv) => Ajv;

/** Why an answer does not match the document (null when it does): status, headers and body. */
export function answerChecker(doc: Json): (method: string, template: string, status: number, headers: Headers, body: unknown) => string | null {
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ $id: "openapi", components: doc.components });
  const compiled = new Map<string, ValidateFunction>();
  const rebase = (schema: unknown): unknown => JSON.parse(JSON.stringify(schema).replace(/"#\/components\//g, '"openapi#/components/'));
  return (method, template, status, headers, body) => {
    const op = doc.paths[template]?.[method.toLowerCase()];
    if (!op) return `${method} ${template} is not in the document`;
    const response = answerOf(doc, op.responses[String(status)]);
    if (!response) return `${method} ${template} answered ${status}, which it does not declare (${Object.keys(op.responses).join(", ")})`;
    const declared = Object.keys(response.headers ?? {}).map((h) => h.toLowerCase());
    for (const h of ["etag", "location", "retry-after"])
      if (headers.has(h) && !declared.includes(h)) return `${method} ${template} ${status} answered ${h}, which it does not declare`;
    const type = (headers.get("content-type") ?? "").split(";")[0]!.trim();
    if (!response.content) return body === undefined || body === "" ? null : `${method} ${template} ${status} declares no body but answered one`;
    const media = response.content[type];
    if (!media) return `${method} ${template} ${status} answered ${type}, declared: ${Object.keys(response.content).join(", ")}`;
    const key = `${method} ${template} ${status} ${type}`;
    let validate = compiled.get(key);
    if (!validate) compiled.set(key, (validate = ajv.compile(rebase(media.schema) as object)));
    return validate(body) ? null : `${key}: ${ajv.errorsText(validate.errors)}`;
  };
}
