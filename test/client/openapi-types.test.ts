/**
 * The client's types are the served document's: src/client/openapi.ts is what openapi-typescript writes from
 * the OpenAPI document a server serves today, so a route or wire shape changed without writing the file
 * again (`npx tsx test/client/openapi-types.ts`) fails here, not in a consumer's build.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { OPENAPI_TYPES_FILE, renderOpenApiTypes } from "./openapi-types.js";

describe("the client package's OpenAPI types", () => {
  it("are the served document's, as openapi-typescript writes them", async () => {
    const fresh = await renderOpenApiTypes();
    expect(fresh).toContain("export interface paths");
    expect(readFileSync(OPENAPI_TYPES_FILE, "utf8") === fresh, "src/client/openapi.ts is stale: npx tsx test/client/openapi-types.ts").toBe(true);
  });
});
