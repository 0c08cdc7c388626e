/**
 * The seed 001 hierarchy, declared with the resources machinery and nothing else: the proof that the
 * resources layer is generic.
 *
 *   space ─┬─ provider (flat: global id, own partition) ── node (nested under provider)
 *          └─ tenant   (flat: global id, own partition) ─┬─ kms (nested)
 *                                                        └─ contentObject (nested) ── contentObjectVersion (nested)
 *
 * Deleting a tenant removes its kms, content objects and versions in one atomic commit (they share its
 * partition); deleting a space sweeps its providers and tenants, resumably.
 */
import { Type } from "@sinclair/typebox";
import { defineSchema } from "../resources/schema.js";

const named = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 200 }), description: Type.Optional(Type.String({ maxLength: 2000 })) },
  { additionalProperties: false },
);

export const tenancySchema = defineSchema({
  space: { parent: null, idStyle: "flat", fields: named },
  provider: { parent: "space", idStyle: "flat", fields: named },
  node: {
    parent: "provider",
    idStyle: "nested",
    fields: Type.Object({ endpoint: Type.String({ minLength: 1, maxLength: 500 }) }, { additionalProperties: false }),
  },
  tenant: { parent: "space", idStyle: "flat", fields: named },
  kms: {
    parent: "tenant",
    idStyle: "nested",
    fields: Type.Object({ keyRef: Type.String({ minLength: 1, maxLength: 500 }) }, { additionalProperties: false }),
  },
  contentObject: { parent: "tenant", idStyle: "nested", fields: named },
  contentObjectVersion: {
    parent: "contentObject",
    idStyle: "nested",
    fields: Type.Object(
      { hash: Type.String({ pattern: "^[0-9a-f]{64}$" }), size: Type.Integer({ minimum: 0 }) },
      { additionalProperties: false },
    ),
  },
});

export type TenancySchema = typeof tenancySchema.decl;
