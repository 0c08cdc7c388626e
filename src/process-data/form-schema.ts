/**
 * A form schema is a Form.io form, checked as the registry platform's form-schema provider checks it
 * before it stores one (its JSON schema of a form, plus the key rule):
 * - `name` (required, non-empty) is the form's key, case-insensitive: stored lower-cased, and on an
 *   update it must equal the key addressed;
 * - `title` is required and non-empty; `display` is required and `"form"`; `type`, when given, is `"form"`;
 * - `components` (Form.io's layout) is an array of components, each an object with a non-empty string
 *   `type` and `key`; the components a component nests (`components`, `columns[].components`,
 *   `rows[][].components`) are checked the same way.
 * Every refusal is a ValidationError naming the field at fault (`formData.components[2].columns[0].components[1].key`).
 */
import { assertJsonDepth } from "../depth.js";
import { ValidationError } from "../errors.js";

export type FormioForm = { name: string; title: string; display: "form"; components: FormioComponent[]; [k: string]: unknown };
export type FormioComponent = { key: string; type: string; [k: string]: unknown };

const FIELD = "formData";

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function requiredString(form: Record<string, unknown>, name: string, path: string): string {
  const v = form[name];
  if (typeof v !== "string" || v === "") throw new ValidationError(`${path}.${name} is required: a non-empty string`, `${path}.${name}`);
  return v;
}

/** The key a form schema is stored under: its `name`, lower-cased (the platform's keys are case-insensitive). */
export function formKeyOf(formData: unknown): string {
  if (!isPlainObject(formData)) throw new ValidationError(`${FIELD} must be a Form.io form: a JSON object`, FIELD);
  return requiredString(formData, "name", FIELD).toLowerCase();
}

/**
 * Validates `formData` as the Form.io form stored under `key` (already lower-cased) and returns it with its
 * name lower-cased.
 */
export function validateFormioForm(formData: unknown, key: string): FormioForm {
  if (!isPlainObject(formData)) throw new ValidationError(`${FIELD} must be a Form.io form: a JSON object`, FIELD);
  assertJsonDepth(formData, FIELD);
  const name = formKeyOf(formData);
  if (name !== key) {
    throw new ValidationError(`${FIELD}.name (${JSON.stringify(formData["name"])}) must equal the form's key ${JSON.stringify(key)}, case aside`, `${FIELD}.name`);
  }
  requiredString(formData, "title", FIELD);
  if (formData["display"] !== "form") throw new ValidationError(`${FIELD}.display is required and must be "form"`, `${FIELD}.display`);
  if (formData["type"] !== undefined && formData["type"] !== "form") {
    throw new ValidationError(`${FIELD}.type must be "form" when given`, `${FIELD}.type`);
  }
  if (formData["path"] !== undefined && (typeof formData["path"] !== "string" || formData["path"] === "")) {
    throw new ValidationError(`${FIELD}.path must be a non-empty string when given`, `${FIELD}.path`);
  }
  checkComponents(formData["components"], `${FIELD}.components`);
  return { ...formData, name } as FormioForm;
}

function checkComponents(components: unknown, path: string): void {
  if (!Array.isArray(components)) throw new ValidationError(`${path} must be an array of Form.io components`, path);
  components.forEach((c: unknown, i) => {
    const at = `${path}[${i}]`;
    if (!isPlainObject(c)) throw new ValidationError(`${at} must be a Form.io component: an object with a key and a type`, at);
    requiredString(c, "type", at);
    requiredString(c, "key", at);
    if (c["components"] !== undefined) checkComponents(c["components"], `${at}.components`);
    if (c["columns"] !== undefined) {
      if (!Array.isArray(c["columns"])) throw new ValidationError(`${at}.columns must be an array of columns`, `${at}.columns`);
      c["columns"].forEach((col: unknown, j) => {
        if (!isPlainObject(col)) throw new ValidationError(`${at}.columns[${j}] must be an object`, `${at}.columns[${j}]`);
        if (col["components"] !== undefined) checkComponents(col["components"], `${at}.columns[${j}].components`);
      });
    }
    if (c["rows"] !== undefined && c["type"] === "table") {
      if (!Array.isArray(c["rows"])) throw new ValidationError(`${at}.rows must be an array of rows`, `${at}.rows`);
      c["rows"].forEach((row: unknown, r) => {
        if (!Array.isArray(row)) throw new ValidationError(`${at}.rows[${r}] must be an array of cells`, `${at}.rows[${r}]`);
        row.forEach((cell: unknown, k) => {
          const cellAt = `${at}.rows[${r}][${k}]`;
          if (!isPlainObject(cell)) throw new ValidationError(`${cellAt} must be an object`, cellAt);
          if (cell["components"] !== undefined) checkComponents(cell["components"], `${cellAt}.components`);
        });
      });
    }
  });
}
