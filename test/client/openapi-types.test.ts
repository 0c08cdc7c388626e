/**
 * The client's types are build output: src/client/openapi.ts is not committed (.gitignore lists it) but written
 * by the build's first step (scripts/openapi-types.ts, run by `npm run build` and so by `npm install`/`npm ci`
 * through `prepare`), before tsc compiles src/ and packages/client from it. This holds the file the build wrote
 * equal to what the generator writes from the document a server serves now, so a route or a wire shape changed
 * without building again fails here, naming the fix, instead of typing the client after the old document.
 * test/package.test.ts installs the client package built from it and type-checks against it.
 */
import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { OPENAPI_TYPES_FILE, renderOpenApiTypes } from "../../scripts/openapi-types.js";

describe("the client package's OpenAPI types, as the build writes them", () => {
  it("are what the generator writes from the served document now (a stale build fails)", async () => {
    const fresh = await renderOpenApiTypes();
    expect(fresh).toContain("export interface paths");
    expect(fresh).toContain("export type Project = components['schemas']['Project'];");
    expect(existsSync(OPENAPI_TYPES_FILE), "src/client/openapi.ts is missing: npm run build writes it").toBe(true);
    expect(readFileSync(OPENAPI_TYPES_FILE, "utf8") === fresh, "src/client/openapi.ts is stale: npm run build writes it again").toBe(true);
  });
});
