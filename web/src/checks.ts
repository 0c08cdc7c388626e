/**
 * What the server accepts, checked in the forms before sending, and what a refusal means in words.
 *
 * The request schemas are the server's own (the TypeBox declarations of src/…/wire.ts and
 * src/workflow/schema.ts, served as JSON Schema in its OpenAPI document, /openapi.json): the explorer
 * reads them once and checks a form's body against the part of JSON Schema they use (type, required,
 * minLength, maxLength, pattern, enum/const/anyOf, items, maxItems, minimum, maximum). A field's
 * message is built from its schema (the pattern's description says what is expected), so the check
 * before sending and a refusal by the server read the same.
 *
 * Not ajv: it compiles validators with `new Function`, which the page's Content-Security-Policy
 * (script-src 'self') forbids.
 */

type Schema = Record<string, any>;

/** How a reader calls a field (by its path, list indexes as `*`); others are spelt from their name. */
const LABELS: Record<string, string> = {
  id: "Id",
  displayName: "Name",
  "projectedBudgets.*.value": "Budget value",
  "projectedBudgets.*.currencyCode": "Budget currency",
  "projectedBudgets.*.organization": "Budget organization",
  currencyCode: "Currency",
  identity: "User or group",
  intent: "Permission",
  userId: "User",
  fileName: "Name",
  workflowMode: "Mode",
};

/** `projectedBudgets.0.value` → "Budget value"; `dueDate` → "Due date". */
export function labelOf(field: string): string {
  const key = field.replace(/\.\d+(?=\.|$)/g, ".*");
  const known = LABELS[key] ?? LABELS[key.slice(key.lastIndexOf(".") + 1)];
  if (known) return known;
  const last =
    key
      .split(".")
      .filter((s) => s !== "*")
      .at(-1) ?? field;
  const words = last.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** What a pattern's description says is expected: 'a decimal number as a string, e.g. "1200.50"' → "a decimal number like 1200.50". */
function expected(schema: Schema): string {
  const d = typeof schema.description === "string" ? schema.description : "";
  if (!d) return "in the expected form";
  return d
    .split(";")[0]!
    .replace(/ as a string/g, "")
    .replace(/,? e\.g\. "([^"]*)"/, " like $1")
    .trim();
}

function quoteList(values: unknown[]): string {
  return values.map((v) => String(v)).join(", ");
}

/** The message for a field whose value breaks `keyword` of its schema. */
export function messageFor(field: string, schema: Schema, keyword: string): string {
  const label = labelOf(field);
  switch (keyword) {
    case "required":
      return `${label} is required`;
    case "minLength":
      return schema.minLength <= 1 ? `${label} is required` : `${label} must be at least ${schema.minLength} characters long`;
    case "maxLength":
      return `${label} must be at most ${schema.maxLength} characters long`;
    case "pattern":
      return `${label} must be ${expected(schema)}`;
    case "enum":
      return `${label} must be one of: ${quoteList(choicesOf(schema) ?? [])}`;
    case "maxItems":
      return `${label} may have at most ${schema.maxItems} entries`;
    case "uniqueItems":
      return `${label} must not repeat an entry`;
    case "minimum":
      return `${label} must be at least ${schema.minimum}`;
    case "maximum":
      return `${label} must be at most ${schema.maximum}`;
    case "additionalProperties":
      return `${label} is not a field the server knows`;
    default:
      return `${label} must be ${schema.type === "string" ? "text" : schema.type === "integer" ? "a whole number" : (schema.type ?? "valid")}`;
  }
}

/** The constant choices of an enum, a const, or an anyOf of consts; undefined for anything else. */
function choicesOf(schema: Schema): unknown[] | undefined {
  if (Array.isArray(schema.enum)) return schema.enum;
  if (schema.const !== undefined) return [schema.const];
  if (Array.isArray(schema.anyOf) && schema.anyOf.every((s: Schema) => s.const !== undefined)) return schema.anyOf.map((s: Schema) => s.const);
  return undefined;
}

export interface FieldProblem {
  /** The field as the forms name it: `projectedBudgets.0.value`. */
  readonly field: string;
  readonly message: string;
}

/** Resolves a local `$ref` of the OpenAPI document. */
function deref(doc: Schema, schema: Schema | undefined): Schema | undefined {
  let s = schema;
  for (let i = 0; s?.$ref && i < 10; i++) {
    const path = String(s.$ref).replace(/^#\//, "").split("/");
    s = path.reduce<any>((node, key) => node?.[key], doc);
  }
  return s;
}

/** The length JSON Schema counts (code points, as ajv does). */
const lengthOf = (s: string) => [...s].length;

function walk(doc: Schema, raw: Schema | undefined, value: unknown, path: string, out: FieldProblem[]) {
  const schema = deref(doc, raw);
  if (!schema) return;
  const fail = (keyword: string, field = path, at: Schema = schema): void => {
    out.push({ field, message: messageFor(field, at, keyword) });
  };
  const choices = choicesOf(schema);
  if (choices) {
    if (!choices.includes(value)) fail("enum");
    return;
  }
  if (Array.isArray(schema.anyOf)) {
    // A union of shapes: fine when one of them takes the value.
    const tries = schema.anyOf.map((s: Schema) => {
      const o: FieldProblem[] = [];
      walk(doc, s, value, path, o);
      return o;
    });
    if (!tries.some((o: FieldProblem[]) => o.length === 0)) out.push(tries[0]![0]!);
    return;
  }
  switch (schema.type) {
    case "string":
      if (typeof value !== "string") return fail("type");
      if (typeof schema.minLength === "number" && lengthOf(value) < schema.minLength) return fail("minLength");
      if (typeof schema.maxLength === "number" && lengthOf(value) > schema.maxLength) return fail("maxLength");
      if (typeof schema.pattern === "string" && !new RegExp(schema.pattern, "u").test(value)) return fail("pattern");
      return;
    case "integer":
    case "number":
      if (typeof value !== "number" || (schema.type === "integer" && !Number.isInteger(value))) return fail("type");
      if (typeof schema.minimum === "number" && value < schema.minimum) return fail("minimum");
      if (typeof schema.maximum === "number" && value > schema.maximum) return fail("maximum");
      return;
    case "array":
      if (!Array.isArray(value)) return fail("type");
      if (typeof schema.maxItems === "number" && value.length > schema.maxItems) return fail("maxItems");
      value.forEach((v, i) => walk(doc, schema.items, v, path ? `${path}.${i}` : String(i), out));
      return;
    case "object": {
      if (typeof value !== "object" || value === null || Array.isArray(value)) return fail("type");
      const record = value as Record<string, unknown>;
      const at = (k: string) => (path ? `${path}.${k}` : k);
      for (const k of (schema.required ?? []) as string[]) if (record[k] === undefined) fail("required", at(k), deref(doc, schema.properties?.[k]) ?? {});
      for (const [k, v] of Object.entries(record)) {
        if (v === undefined) continue;
        const sub = schema.properties?.[k];
        if (sub) walk(doc, sub, v, at(k), out);
        else if (schema.additionalProperties === false) fail("additionalProperties", at(k), {});
      }
      return;
    }
  }
}

/** The schema of a field inside a body schema: `projectedBudgets.0.value` → the Decimal schema. */
function schemaAt(doc: Schema, root: Schema | undefined, field: string): Schema | undefined {
  let s = deref(doc, root);
  for (const part of field.split(".").filter(Boolean)) {
    if (!s) return undefined;
    if (Array.isArray(s.anyOf))
      s = deref(
        doc,
        s.anyOf.find((x: Schema) => deref(doc, x)?.properties?.[part] || deref(doc, x)?.items),
      );
    s = deref(doc, /^\d+$/.test(part) ? s?.items : s?.properties?.[part]);
  }
  return s;
}

let openapi: Promise<Schema | null> | null = null;

/** The server's OpenAPI document (read once), or null when it serves none. */
function document_(): Promise<Schema | null> {
  openapi ??= fetch("/openapi.json", { headers: { accept: "application/json" } })
    .then((r) => (r.ok ? (r.json() as Promise<Schema>) : null))
    .catch(() => null);
  return openapi;
}

/** An operation, its path with `{}` where a parameter goes: "POST /api/v1/projects/{}/subprojects". */
export type Operation = `${"POST" | "PUT" | "PATCH"} /api/v1/${string}`;

const shapeOf = (path: string) => path.replace(/\{[^}]*\}/g, "{}");

/** The JSON body schema of an operation, with the document it lives in. */
async function bodyOf(op: Operation): Promise<{ doc: Schema; schema: Schema } | null> {
  const doc = await document_();
  if (!doc) return null;
  const [method, path] = op.split(" ") as [string, string];
  const entry = Object.entries(doc.paths ?? {}).find(([p]) => shapeOf(p) === path)?.[1] as Schema | undefined;
  const schema = entry?.[method.toLowerCase()]?.requestBody?.content?.["application/json"]?.schema;
  return schema ? { doc, schema } : null;
}

/** Every field of `body` the operation's schema refuses, one message a field (none when the schema is unknown). */
export async function check(op: Operation, body: unknown): Promise<FieldProblem[]> {
  const found = await bodyOf(op);
  if (!found) return [];
  const out: FieldProblem[] = [];
  walk(found.doc, found.schema, body, "", out);
  const seen = new Set<string>();
  return out.filter((p) => !seen.has(p.field) && seen.add(p.field));
}

/** The keyword an ajv message of the server names ("must match pattern …" → pattern). */
function keywordOf(detail: string): string | null {
  if (/must match pattern/.test(detail)) return "pattern";
  if (/must NOT have fewer than/.test(detail)) return "minLength";
  if (/must NOT have more than \d+ characters/.test(detail)) return "maxLength";
  if (/must NOT have more than \d+ items/.test(detail)) return "maxItems";
  if (/ is required$/.test(detail)) return "required";
  if (/must be equal to (one of the allowed values|constant)|must match a schema in anyOf/.test(detail)) return "enum";
  if (/is not a known property/.test(detail)) return "additionalProperties";
  if (/must be (string|integer|number|object|array|boolean)$/.test(detail)) return "type";
  return null;
}

/**
 * A refusal in words: a schema refusal (the server's ajv message) is said from the field's schema; a
 * domain rule's own sentence is kept, its field path replaced by the field's label.
 */
export async function explain(op: Operation | undefined, field: string, detail: string): Promise<string> {
  const keyword = keywordOf(detail);
  const found = op ? await bodyOf(op) : null;
  const schema = found ? schemaAt(found.doc, found.schema, field) : undefined;
  if (keyword && (schema || keyword === "required")) return messageFor(field, schema ?? {}, keyword);
  // "data.projectedBudgets.0.currencyCode "XYZ" is not…", "body.amount must…", "amount must…"
  const raw = /^(?:body\.|data\.)?[A-Za-z0-9_.[\]]+/.exec(detail)?.[0] ?? "";
  const same = raw.replace(/^(body|data)\./, "").replace(/\[(\d+)\]/g, ".$1") === field;
  const text = same ? labelOf(field) + detail.slice(raw.length) : detail;
  return text.charAt(0).toUpperCase() + text.slice(1);
}
