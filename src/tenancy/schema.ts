/**
 * The registry platform's tenancy hierarchy, declared with the resources machinery and nothing else:
 * the proof that the resources layer is generic (HTTP serves it from this declaration alone).
 *
 *   space ─┬─ provider (flat: global id, own partition) ── node (nested under provider)
 *          └─ tenant   (flat: global id, own partition) ─┬─ kms (nested)
 *                                                        └─ contentObject (nested) ── contentObjectVersion (nested)
 *
 * Deleting a tenant removes its kms, content objects and versions in one atomic commit (they share its
 * partition). A space's flat children go in the seed's ways, declared per child type:
 *   - providers are counted: the space keeps their count in the same commits as its index of them, and
 *     deleting the space is refused while the count is above 0 (they are deleted one by one first);
 *   - tenants are swept: deleting the space sweeps them, resumably;
 *   - both allow governance delete: while the space carries `governanceDelete` (set by the
 *     `space.setGovernanceDelete` intent), a provider or tenant is deleted with no other intent.
 */
import { Type } from "@sinclair/typebox";
import { type CreateIntentOf, defineSchema } from "../resources/model/schema.js";

const named = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 200 }), description: Type.Optional(Type.String({ maxLength: 2000 })) },
  { additionalProperties: false, $id: "Named" },
);

const spaceFields = Type.Object({ ...named.properties, governanceDelete: Type.Optional(Type.Boolean()) }, { additionalProperties: false });

export const tenancySchema = defineSchema({
  space: {
    parent: null,
    idStyle: "flat",
    fields: spaceFields,
    ownedFields: { governanceDelete: { by: "PUT /spaces/{spaceId}/governance-flag" } },
  },
  provider: { parent: "space", idStyle: "flat", fields: named, parentDelete: "counted", governanceDelete: true },
  node: {
    parent: "provider",
    idStyle: "nested",
    fields: Type.Object({ endpoint: Type.String({ minLength: 1, maxLength: 500 }) }, { additionalProperties: false }),
  },
  tenant: { parent: "space", idStyle: "flat", fields: named, parentDelete: "sweep", governanceDelete: true },
  kms: {
    parent: "tenant",
    idStyle: "nested",
    fields: Type.Object({ keyRef: Type.String({ minLength: 1, maxLength: 500 }) }, { additionalProperties: false }),
  },
  contentObject: { parent: "tenant", idStyle: "nested", fields: named },
  contentObjectVersion: {
    parent: "contentObject",
    idStyle: "nested",
    fields: Type.Object({ hash: Type.String({ pattern: "^[0-9a-f]{64}$" }), size: Type.Integer({ minimum: 0 }) }, { additionalProperties: false }),
  },
});

export type TenancySchema = typeof tenancySchema.decl;

/** The tenancy schema's global intents (the create intent of its root type) join the declared intents. */
declare module "../access/intents.js" {
  interface DeclaredIntents {
    tenancy: CreateIntentOf<TenancySchema>;
  }
}
