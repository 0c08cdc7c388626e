/**
 * Entity types declared as data. A schema is a record of type name → declaration; everything else
 * (intents, key layout, partitions, typed data) is derived from it, with no per-type code.
 */
import type { Static, TObject } from "@sinclair/typebox";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import { ValidationError } from "../errors.js";

export type IdStyle = "nested" | "flat";

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
  /** A child type whose collection under this type is manually ordered (seed 002). */
  readonly orderedChildren?: string;
  /** `cascade` (default): deleting removes the subtree. `refuse`: refuse while children exist (seed 001's counter guard). */
  readonly onDelete?: "cascade" | "refuse";
  /** The data field that holds the status shown in redacted listings (e.g. `status`). */
  readonly statusField?: string;
  /** Cross-field rules checked on every create and update, after the schema; throw ValidationError. */
  readonly rules?: (data: Record<string, unknown>) => void;
}

export type SchemaDecl = Readonly<Record<string, TypeDecl>>;

export type DataOf<S extends SchemaDecl, T extends keyof S> = Static<S[T]["fields"]>;

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
  readonly check: TypeCheck<TObject>;
}

export class Schema<S extends SchemaDecl = SchemaDecl> {
  readonly types: ReadonlyMap<string, CompiledType>;
  /** The largest depth of any type below its owner: bounds the per-level deletes of a subtree. */
  readonly maxDepth: number;

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
      if (d.orderedChildren && decl[d.orderedChildren]?.parent !== name) {
        throw new Error(`type ${name}: ordered children ${d.orderedChildren} is not a child type`);
      }
      const chain = chainOf(name);
      const children = names.filter((n) => decl[n]!.parent === name);
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
        };
        const own = [
          base.list, base.view, base.history, base.update, base.delete,
          base.listPermissions, base.grantPermission, base.revokePermission,
          ...children.map((c) => `${name}.create${cap(c)}`),
          ...(base.reorder ? [base.reorder] : []),
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
        check: TypeCompiler.Compile(d.fields),
      });
      maxDepth = Math.max(maxDepth, chain.length - 1);
    }
    this.types = types;
    this.maxDepth = maxDepth;
  }

  type(name: string): CompiledType {
    const t = this.types.get(name);
    if (!t) throw new ValidationError(`unknown resource type ${JSON.stringify(name)}`, "type");
    return t;
  }

  /** Validates domain fields against the type's schema and rules; names the first offending field. */
  validate(type: CompiledType, data: unknown): Record<string, unknown> {
    if (!type.check.Check(data)) {
      const first = type.check.Errors(data).First();
      const path = first?.path ? first.path.replace(/^\//, "").replace(/\//g, ".") : "";
      const field = path ? `data.${path}` : "data";
      const what = first?.schema && "additionalProperties" in first.schema && first.message.includes("Unexpected")
        ? "is not a known field"
        : first?.message ?? "is invalid";
      throw new ValidationError(`${field} ${what}`, field);
    }
    type.decl.rules?.(data as Record<string, unknown>);
    return data as Record<string, unknown>;
  }
}

export function defineSchema<const S extends SchemaDecl>(decl: S): Schema<S> {
  return new Schema(decl);
}

/** Resource ids: 1–128 characters, no control characters, none of `/ ? # % \`. */
const ID_RE = /^[^\u0000-\u001f\u007f-\u009f/?#%\\]{1,128}$/u;

export function assertId(id: unknown, field = "id"): asserts id is string {
  if (typeof id !== "string" || !ID_RE.test(id) || !id.isWellFormed() || id.trim() !== id) {
    throw new ValidationError(
      `${field} must be 1–128 characters without control characters, surrounding spaces or any of / ? # % \\`,
      field,
    );
  }
}
