/**
 * The flat-child delete modes are declared options of a flat child type (issue 20): the schema refuses
 * them on other types, and a governance-delete child type needs a parent that owns a boolean
 * `governanceDelete`; the parent then has the `<parent>.setGovernanceDelete` intent.
 */
import { Type } from "@sinclair/typebox";
import { describe, expect, it } from "vitest";
import { defineSchema } from "../../src/resources/model/schema.js";
import { tenancySchema } from "../../src/tenancy/schema.js";

const name = Type.Object({ name: Type.String() }, { additionalProperties: false });
const flagged = Type.Object({ name: Type.String(), governanceDelete: Type.Optional(Type.Boolean()) }, { additionalProperties: false });

describe("flat-child delete modes in a schema", () => {
  it("are options of flat child types only", () => {
    expect(() => defineSchema({ root: { parent: null, idStyle: "flat", fields: name, parentDelete: "counted" } })).toThrow("options of a flat child type");
    expect(() =>
      defineSchema({ root: { parent: null, idStyle: "flat", fields: name }, kid: { parent: "root", idStyle: "nested", fields: name, parentDelete: "counted" } }),
    ).toThrow("options of a flat child type");
  });

  it("governance delete needs a parent owning a boolean governanceDelete, and gives it the intent to set it", () => {
    expect(() => defineSchema({ root: { parent: null, idStyle: "flat", fields: name }, kid: { parent: "root", idStyle: "flat", fields: name, governanceDelete: true } })).toThrow(
      "must own a boolean field governanceDelete",
    );
    expect(() =>
      defineSchema({ root: { parent: null, idStyle: "flat", fields: flagged }, kid: { parent: "root", idStyle: "flat", fields: name, governanceDelete: true } }),
    ).toThrow("must own a boolean field governanceDelete");
    const s = defineSchema({
      root: { parent: null, idStyle: "flat", fields: flagged, ownedFields: { governanceDelete: { by: "the flag route" } } },
      kid: { parent: "root", idStyle: "flat", fields: name, governanceDelete: true, parentDelete: "counted" },
    });
    expect(s.type("root").intents.governance).toBe("root.setGovernanceDelete");
    expect(s.type("root").intents.all).toContain("root.setGovernanceDelete");
    expect(s.type("root").countedChildren).toEqual(["kid"]);
    expect(s.type("kid").intents.governance).toBeNull();
  });

  it("the tenancy schema declares the seed's three ways: counted providers, swept tenants, governance delete on both", () => {
    expect(tenancySchema.type("space").countedChildren).toEqual(["provider"]);
    expect(tenancySchema.type("tenant").decl.parentDelete).toBe("sweep");
    expect([tenancySchema.type("provider").decl.governanceDelete, tenancySchema.type("tenant").decl.governanceDelete]).toEqual([true, true]);
  });
});
