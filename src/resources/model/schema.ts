/**
 * Entity types declared as data. A schema is a record of type name → declaration; everything else
 * (intents, key layout, partitions, typed data) is derived from it, with no per-type code.
 */
import type { Static, TObject, TSchema } from "@sinclair/typebox";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import { ValidationError } from "../../errors.js";
import { assertJsonDepth } from "../../depth.js";
import { refuseUnsafeId } from "../../ids.js";
import type { SumsDecl } from "./sums.js";
import { RESOURCE_ID_PATTERN } from "./wire.js";

export type IdStyle = "nested" | "flat";

/** The parent's field that lets its governance-delete children be deleted (see `TypeDecl.governanceDelete`). */
export const GOVERNANCE_FLAG = "governanceDelete";

export interface TypeDecl {
  /** The parent type, or null for a root type (a root has a partition of its own). */
  readonly parent: string | null;
  /**
   * `nested`: stored in the parent's partition under the parent's key prefix (ids unique per parent).
   * `flat`: a partition of its own, a globally unique id, an index entry under the parent.
   * Root types are always partitions of their own (declare them `flat`).
   */
  readonly idStyle: IdStyle;
  /** TypeBox object schema of the domain fields (`data`). */
  readonly fields: TObject;
  /** Extra intents of this type beyond the generic ones (e.g. `workflowitem.close`). */
  readonly extraIntents?: readonly string[];
  /** A child type whose collection under this type is manually ordered (as TruBudget orders workflowitems). */
  readonly orderedChildren?: string;
  /**
   * The ordered collection's second effective order, offered as an option of its lists (`order:
   * "closedFirst"`): children whose status field holds `status` first, by the time in their field
   * `at`, then the others in the collection's own order (TruBudget lists workflowitems so).
   */
  readonly closedFirst?: { readonly status: string; readonly at: string };
  /** `cascade` (default): deleting removes the subtree. `refuse`: refuse while children exist (a counter guard). */
  readonly onDelete?: "cascade" | "refuse";
  /**
   * Flat children only: what their parent's delete does to them (Eluvio's two ways for flat ids).
   * `sweep` (default): the delete commits, then removes them partition by partition, resumably.
   * `counted`: the parent keeps a count of them in the same commits as its index of them; its delete is
   * refused while the count is above 0, so they are deleted one by one first.
   */
  readonly parentDelete?: "sweep" | "counted";
  /**
   * Flat children only: Eluvio's governance delete. The parent carries an owned boolean field
   * `governanceDelete`, set and cleared by its `<parent>.setGovernanceDelete` intent; while it is true,
   * `governanceDelete` on one of these children deletes it with no other intent.
   */
  readonly governanceDelete?: boolean;
  /** The data field that holds the status shown in redacted listings (e.g. `status`). */
  readonly statusField?: string;
  /** Cross-field rules checked on every create and update, after the schema; throw ValidationError. */
  readonly rules?: (data: Record<string, unknown>) => void;
  /**
   * Fields a domain command owns (e.g. `status` → close): a generic update may not set them, and a
   * create may only when `initial` (an assignee given at creation). Served bodies derive from this.
   */
  readonly ownedFields?: Readonly<Record<string, OwnedField>>;
  /**
   * The data field naming the identity a resource is assigned to: each identity's assignments are
   * indexed (assignments.ts), so "what is assigned to u" reads that index, not the store.
   */
  readonly assigneeField?: string;
  /**
   * Array fields whose elements are identified by some of their members (projected budgets by
   * organization and currency, documents by id): a diff matches their elements by key, not by place,
   * and does not count a change of their order (diff.ts).
   */
  readonly keyedArrays?: Readonly<Record<string, readonly string[]>>;
  /** Server-side search and sort of this type's lists (query.ts); a root's rows come from the index of visible roots. */
  readonly query?: ListQueryDecl;
  /**
   * Personal data (crypto-shredding, personal/subjects.ts): the string fields in `fields` are a data
   * subject's, named by the resource's field `subject` (an id, set at creation and never changed). While
   * the resource names a subject they are stored sealed under that subject's key (AES-256-GCM), in the
   * state and in every event, so the hash chain covers the ciphertext; erasing the subject destroys the
   * key and they read as erased everywhere. A resource naming no subject holds no personal data.
   */
  readonly personal?: PersonalDecl;
  /**
   * Nested types only: the amounts each resource contributes to its parent's sums (sums.ts), kept in the
   * commit of every write that changes them, so a parent's totals are read in O(buckets).
   */
  readonly sums?: SumsDecl;
  /**
   * The version of `sums`' buckets (default 1): raised when a declaration changes what it contributes, so
   * the partitions of a store built under an older one get their sums again from their logs once, at
   * open (audit/order-index.ts buildSums), and verify's replay agrees with what they hold.
   */
  readonly sumsVersion?: number;
}

export interface PersonalDecl {
  /** The data field naming the data subject (an owned field, set at creation only). */
  readonly subject: string;
  /** The free-text (string) fields that are the subject's personal data. */
  readonly fields: readonly string[];
}

/** A list row, what search and sort see: the id, createdAt, status and the declared fields (none when the caller may not view it). */
export interface ListRow {
  readonly id: string;
  readonly createdAt: string;
  readonly status: string;
  readonly data: Readonly<Record<string, unknown>>;
}

export interface ListQueryDecl {
  /** Data fields copied into a row (a root's are kept in its listers' index of visible roots). */
  readonly fields: readonly string[];
  /** What a list may be sorted by: `id` (natural order), `createdAt`, `status` (the status field) or one of `fields`. */
  readonly sort: readonly string[];
  /** Compiles a search text into a row predicate (throws ValidationError on field "search"). */
  readonly search: (text: string) => (row: ListRow) => boolean;
}

export interface OwnedField {
  /** The command that sets the field, as named to a caller who tries to update it. */
  readonly by: string;
  /** True when a create may set the field (its initial value); false or absent: only the command. */
  readonly initial?: boolean;
}

/** The fields of a type a domain command owns. */
export type OwnedKeys<D> = D extends { readonly ownedFields: infer O } ? keyof O & string : never;
/** The owned fields a create may not set either. */
export type CommandOnlyKeys<D> = D extends { readonly ownedFields: infer O }
  ? { [K in keyof O & string]: O[K] extends { readonly initial: true } ? never : K }[keyof O & string]
  : never;

export type SchemaDecl = Readonly<Record<string, TypeDecl>>;

export type DataOf<S extends SchemaDecl, T extends keyof S> = Static<S[T]["fields"]>;

/** The create intents of a schema's root types (`global.create<Type>`), derived from its declaration: what `globalIntents` holds. */
export type CreateIntentOf<S extends SchemaDecl> = {
  [K in keyof S & string]: null extends S[K]["parent"] ? `global.create${Capitalize<K>}` : never;
}[keyof S & string];

/** The intents of a schema's types (`<type>.<action>`: the generic ones, child creates, declared extras), by type name. */
export type ResourceIntentOf<S extends SchemaDecl> = `${keyof S & string}.${string}`;

/** The generic intents every type has, by role. */
export interface TypeIntents {
  readonly list: string;
  readonly view: string;
  readonly history: string;
  readonly update: string;
  readonly delete: string;
  readonly listPermissions: string;
  readonly grantPermission: string;
  readonly revokePermission: string;
  /** Intent checked on the parent (or globally, for a root) to create one of these. */
  readonly create: string;
  /** Intent checked on this type to reorder its ordered children (when declared). */
  readonly reorder: string | null;
  /** Intent checked on this type to set or clear its `governanceDelete` flag (when a child type declares governance delete). */
  readonly governance: string | null;
  /** Every intent of the type: the creator of a resource gets all of them. */
  readonly all: readonly string[];
}

const cap = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

export interface CompiledType {
  readonly name: string;
  readonly decl: TypeDecl;
  readonly intents: TypeIntents;
  /** This type and its ancestors up to its partition owner (inclusive), owner first. */
  readonly chain: readonly string[];
  /** Depth below the partition owner (0 for the owner itself). */
  readonly depth: number;
  /** The partition owner's type (itself when flat or root). */
  readonly owner: string;
  readonly children: readonly string[];
  /** Its flat child types whose count it keeps (`parentDelete: "counted"`). */
  readonly countedChildren: readonly string[];
  readonly check: TypeCheck<TObject>;
  /**
   * True when `fields` holds no rule over the object as a whole (no count or pattern of its properties,
   * no combinator, additionalProperties false): then a valid object with some declared properties set
   * is valid when each set value passes its own declaration (`Schema.validateSet`).
   */
  readonly fieldwise: boolean;
}

/** JSON Schema keywords of an object that judge it as a whole, beyond each declared property on its own. */
const WHOLE_OBJECT_KEYWORDS = [
  "minProperties",
  "maxProperties",
  "patternProperties",
  "propertyNames",
  "dependencies",
  "dependentRequired",
  "dependentSchemas",
  "unevaluatedProperties",
  "allOf",
  "anyOf",
  "oneOf",
  "not",
  "if",
] as const;

function isFieldwise(fields: TObject): boolean {
  return fields.additionalProperties === false && !WHOLE_OBJECT_KEYWORDS.some((k) => k in fields);
}

export class Schema<S extends SchemaDecl = SchemaDecl> {
  readonly types: ReadonlyMap<string, CompiledType>;
  /** The largest depth of any type below its owner: bounds the per-level deletes of a subtree. */
  readonly maxDepth: number;
  /** The global intents this schema contributes to the registry: the create intents of its root types. */
  readonly globalIntents: readonly CreateIntentOf<S>[];

  constructor(readonly decl: S) {
    const types = new Map<string, CompiledType>();
    const names = Object.keys(decl);
    for (const name of names) {
      if (!/^[a-z][A-Za-z0-9]*$/.test(name)) throw new Error(`type name ${name} must be camelCase letters and digits`);
    }
    const chainOf = (name: string, seen: string[] = []): string[] => {
      const d = decl[name];
      if (!d) throw new Error(`unknown type ${name}`);
      if (seen.includes(name)) throw new Error(`type ${name} is its own ancestor`);
      if (d.parent === null || d.idStyle === "flat") return [name];
      return [...chainOf(d.parent, [...seen, name]), name];
    };
    let maxDepth = 0;
    for (const name of names) {
      const d = decl[name]!;
      if (d.parent !== null && !decl[d.parent]) throw new Error(`type ${name}: unknown parent ${d.parent}`);
      if (d.parent === null && d.idStyle !== "flat") throw new Error(`root type ${name} must be flat`);
      for (const f of Object.keys(d.ownedFields ?? {})) {
        if (!(f in d.fields.properties)) throw new Error(`type ${name}: owned field ${f} is not one of its fields`);
      }
      if (d.assigneeField !== undefined && !(d.assigneeField in d.fields.properties)) throw new Error(`type ${name}: assignee field ${d.assigneeField} is not one of its fields`);
      for (const f of d.query?.fields ?? []) {
        if (!(f in d.fields.properties)) throw new Error(`type ${name}: query field ${f} is not one of its fields`);
      }
      for (const f of d.query?.sort ?? []) {
        if (f !== "id" && f !== "createdAt" && f !== "status" && !d.query!.fields.includes(f)) throw new Error(`type ${name}: sort field ${f} is not one of its query fields`);
      }
      if (d.personal) {
        const { subject, fields } = d.personal;
        if (d.fields.properties[subject]?.type !== "string" || d.ownedFields?.[subject]?.initial !== true) {
          throw new Error(`type ${name}: personal data subject ${subject} must be a string field owned from creation on`);
        }
        for (const f of fields) {
          if (d.fields.properties[f]?.type !== "string" || f === subject) throw new Error(`type ${name}: personal field ${f} must be a string field other than the subject`);
          if (d.query?.fields.includes(f)) throw new Error(`type ${name}: personal field ${f} cannot be searched (it is stored sealed)`);
        }
      }
      if (d.orderedChildren && decl[d.orderedChildren]?.parent !== name) {
        throw new Error(`type ${name}: ordered children ${d.orderedChildren} is not a child type`);
      }
      if ((d.parentDelete !== undefined || d.governanceDelete) && (d.parent === null || d.idStyle !== "flat")) {
        throw new Error(`type ${name}: parentDelete and governanceDelete are options of a flat child type`);
      }
      if (d.sums !== undefined && (d.parent === null || d.idStyle !== "nested")) throw new Error(`type ${name}: sums are an option of a nested child type`);
      const chain = chainOf(name);
      const children = names.filter((n) => decl[n]!.parent === name);
      const governed = children.some((c) => decl[c]!.governanceDelete === true);
      if (governed) {
        const flag = d.fields.properties[GOVERNANCE_FLAG];
        if (!flag || flag.type !== "boolean" || !d.ownedFields?.[GOVERNANCE_FLAG]) {
          throw new Error(`type ${name}: a child type declares governance delete, so ${name} must own a boolean field ${GOVERNANCE_FLAG}`);
        }
      }
      const intents: TypeIntents = (() => {
        const base = {
          list: `${name}.list`,
          view: `${name}.viewDetails`,
          history: `${name}.viewHistory`,
          update: `${name}.update`,
          delete: `${name}.delete`,
          listPermissions: `${name}.intent.listPermissions`,
          grantPermission: `${name}.intent.grantPermission`,
          revokePermission: `${name}.intent.revokePermission`,
          create: d.parent === null ? `global.create${cap(name)}` : `${d.parent}.create${cap(name)}`,
          reorder: d.orderedChildren ? `${name}.reorder${cap(d.orderedChildren)}s` : null,
          governance: governed ? `${name}.setGovernanceDelete` : null,
        };
        const own = [
          base.list,
          base.view,
          base.history,
          base.update,
          base.delete,
          base.listPermissions,
          base.grantPermission,
          base.revokePermission,
          ...children.map((c) => `${name}.create${cap(c)}`),
          ...(base.reorder ? [base.reorder] : []),
          ...(base.governance ? [base.governance] : []),
          ...(d.extraIntents ?? []),
        ];
        return { ...base, all: [...new Set(own)] };
      })();
      types.set(name, {
        name,
        decl: d,
        intents,
        chain,
        depth: chain.length - 1,
        owner: chain[0]!,
        children,
        countedChildren: children.filter((c) => decl[c]!.parentDelete === "counted"),
        check: TypeCompiler.Compile(d.fields),
        fieldwise: isFieldwise(d.fields),
      });
      maxDepth = Math.max(maxDepth, chain.length - 1);
    }
    this.types = types;
    this.maxDepth = maxDepth;
    this.globalIntents = [...types.values()].filter((t) => t.decl.parent === null).map((t) => t.intents.create as CreateIntentOf<S>);
  }

  type(name: string): CompiledType {
    const t = this.types.get(name);
    if (!t) throw new ValidationError(`unknown resource type ${JSON.stringify(name)}`, "type");
    return t;
  }

  /** Validates domain fields against the type's schema and rules; names the first offending field. */
  validate(type: CompiledType, data: unknown): Record<string, unknown> {
    assertJsonDepth(data, "data");
    if (!type.check.Check(data)) refuse(type.check, data, "data");
    type.decl.rules?.(data as Record<string, unknown>);
    return data as Record<string, unknown>;
  }

  /**
   * `data` (which `validate` passed) with the fields of `set` set, validated to agree with `validate` on
   * the result: where the type's fields are judged one by one (`CompiledType.fieldwise`), each field of
   * `set` against its declaration and then the type's rules on the whole, so the fields `data` already
   * had are not checked again (a create's decided defaults, writes.ts CreateDecision); otherwise the
   * result is validated whole.
   */
  validateSet(type: CompiledType, data: Record<string, unknown>, set: Record<string, unknown>): Record<string, unknown> {
    if (!type.fieldwise) return this.validate(type, { ...data, ...set });
    assertJsonDepth(set, "data");
    const { properties, required } = type.decl.fields;
    for (const [name, value] of Object.entries(set)) {
      const field = `data.${name}`;
      const decl = Object.hasOwn(properties, name) ? properties[name]! : undefined;
      if (decl === undefined) throw new ValidationError(`${field} is not a known field`, field);
      // As the object's check: a field left undefined is skipped unless required (it is then left out of
      // the JSON), and a required one is held to its declaration, which may accept undefined (Type.Unknown()).
      if (value === undefined && !required?.includes(name)) continue;
      const check = this.#fieldCheck(type, name, decl);
      if (!check.Check(value)) refuse(check, value, field);
    }
    const next = { ...data, ...set };
    type.decl.rules?.(next);
    return next;
  }

  /** The compiled check of one field's declaration, made on first use. */
  readonly #fieldChecks = new WeakMap<CompiledType, Map<string, TypeCheck<TSchema>>>();

  #fieldCheck(type: CompiledType, name: string, decl: TSchema): TypeCheck<TSchema> {
    let checks = this.#fieldChecks.get(type);
    if (!checks) this.#fieldChecks.set(type, (checks = new Map()));
    let check = checks.get(name);
    if (!check) checks.set(name, (check = TypeCompiler.Compile(decl)));
    return check;
  }
}

/** Throws the ValidationError naming the first place `value` (at `field`) fails `check`. */
function refuse(check: TypeCheck<TSchema>, value: unknown, field: string): never {
  const first = check.Errors(value).First();
  const path = first?.path ? first.path.replace(/^\//, "").replace(/\//g, ".") : "";
  const at = path ? `${field}.${path}` : field;
  const what = first?.schema && "additionalProperties" in first.schema && first.message.includes("Unexpected") ? "is not a known field" : (first?.message ?? "is invalid");
  throw new ValidationError(`${at} ${what}`, at);
}

export function defineSchema<const S extends SchemaDecl>(decl: S): Schema<S> {
  return new Schema(decl);
}

/** Resource ids follow RESOURCE_ID_PATTERN (wire.ts), compiled here from the same text. */
const ID_RE = new RegExp(RESOURCE_ID_PATTERN, "u");

/**
 * Ids found valid lately: every read locates its resource and checks its ids with two regular
 * expressions, a tenth of an in-process get. Validity depends on the string alone; the set is emptied
 * when it grows past its bound.
 */
const validIds = new Set<string>();
const VALID_IDS_MAX = 10_000;

export function assertId(id: unknown, field = "id"): asserts id is string {
  if (typeof id === "string" && validIds.has(id)) return;
  if (typeof id === "string") refuseUnsafeId(id, field);
  if (typeof id !== "string" || !ID_RE.test(id)) {
    throw new ValidationError(`${field} must be 1–128 characters without control characters, surrounding spaces or any of / ? # % \\`, field);
  }
  if (validIds.size >= VALID_IDS_MAX) validIds.clear();
  validIds.add(id);
}
