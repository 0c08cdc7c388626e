/**
 * The OpenAPI document names its types: every shape with an `$id` is one entry of
 * `components.schemas`, referred to by `$ref` wherever it is used (http/components.ts), so no object
 * schema is written out twice, and every problem answer refers to the one Problem.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryKv } from "../../src/kv/memory.js";
import { tenancySchema } from "../../src/tenancy/schema.js";
import { workflowSchema } from "../../src/workflow/schema.js";
import { raw, startServer, type Running } from "./harness.js";

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => v !== null && typeof v === "object" && !Array.isArray(v);
const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** Every object schema written out in `node` (not a $ref, not free-form `{type: object}` alone), as JSON. */
function objectSchemas(node: unknown, out: string[] = [], isRoot = false): string[] {
  if (Array.isArray(node)) for (const n of node) objectSchemas(n, out);
  else if (isObject(node)) {
    const bare =
      Object.keys(node).every((k) => k === "type" || k === "additionalProperties") &&
      (node.additionalProperties === undefined || (isObject(node.additionalProperties) && Object.keys(node.additionalProperties).length === 0));
    if (node.type === "object" && !isRoot && !bare) out.push(JSON.stringify(node));
    for (const v of Object.values(node)) objectSchemas(v, out);
  }
  return out;
}

describe("the OpenAPI document", () => {
  let s: Running;
  let doc: { paths: Record<string, Record<string, Json>>; components: { schemas: Record<string, Json> } };

  beforeAll(async () => {
    s = await startServer(new MemoryKv());
    doc = (await raw(s.base, "GET", "/openapi.json")).body;
  });
  afterAll(async () => s?.close());

  it("names the shared shapes and every declared type's shapes as components", () => {
    const names = Object.keys(doc.components.schemas);
    for (const shared of ["Problem", "Meta", "Redacted", "Event", "EventPage", "VerifyResult", "Permissions", "User", "Group"]) expect(names).toContain(shared);
    for (const type of [...workflowSchema.types.keys(), ...tenancySchema.types.keys()]) {
      for (const name of [cap(type), `New${cap(type)}`, `${cap(type)}Update`, `${cap(type)}Page`]) expect(names, type).toContain(name);
    }
    expect(names.filter((n) => /^def-\d+$/.test(n))).toEqual([]);
    expect(doc.components.schemas.Project!.properties).toMatchObject({ meta: { $ref: "#/components/schemas/Meta" } });
  });

  it("answers every problem with a $ref to the one Problem", () => {
    let problems = 0;
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        for (const [status, response] of Object.entries((op.responses ?? {}) as Record<string, Json>)) {
          const content = response.content as Record<string, { schema: unknown }> | undefined;
          const schema = content?.["application/problem+json"]?.schema;
          if (schema === undefined) continue;
          problems++;
          expect(schema, `${method} ${path} ${status}`).toEqual({ $ref: "#/components/schemas/Problem" });
        }
      }
    }
    expect(problems).toBeGreaterThan(300);
  });

  it("writes out no object schema more than once", () => {
    const written = [...objectSchemas(doc.paths), ...Object.values(doc.components.schemas).flatMap((c) => objectSchemas(c, [], true))];
    const counts = new Map<string, number>();
    for (const w of written) counts.set(w, (counts.get(w) ?? 0) + 1);
    expect([...counts].filter(([, n]) => n > 1).map(([w]) => w)).toEqual([]);
  });

  it("serves the declared types' bodies and answers by reference", () => {
    const op = doc.paths["/api/v1/tenancy/spaces/{spaceId}/tenants"]!.post!;
    expect(op.tags).toEqual(["tenants"]);
    expect(op.requestBody).toMatchObject({ content: { "application/json": { schema: { $ref: "#/components/schemas/NewTenant" } } } });
    // A write answers the resource, or its redacted form to a caller who may act on it but not view it.
    expect(op.responses).toMatchObject({
      201: { content: { "application/json": { schema: { anyOf: [{ $ref: "#/components/schemas/Tenant" }, { $ref: "#/components/schemas/Redacted" }] } } } },
    });
    const update = doc.components.schemas.WorkflowitemUpdate!.properties as Json;
    for (const owned of ["status", "assignee", "rejectReason"]) expect(Object.keys(update)).not.toContain(owned);
    const created = doc.components.schemas.NewWorkflowitem!.properties as Json;
    expect(Object.keys(created)).toContain("assignee");
    expect(Object.keys(created)).not.toContain("status");
  });
});
