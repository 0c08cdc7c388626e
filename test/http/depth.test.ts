/**
 * Issue 16 finding 8: JSON nested ~2,400 levels answered 500 (a stack overflow in record encoding). Every
 * route refuses bodies nested deeper than MAX_JSON_DEPTH with a 400 naming the field, and the resources
 * layer refuses such data with a ValidationError, so library users are safe too.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SYSTEM, userActor } from "../../src/access/actor.js";
import { MAX_JSON_DEPTH } from "../../src/depth.js";
import { ValidationError } from "../../src/errors.js";
import { MemoryKv } from "../../src/kv/memory.js";
import { ResourceStore } from "../../src/resources/store.js";
import { workflowSchema } from "../../src/workflow/schema.js";
import { raw, startServer, type Running } from "./harness.js";

const API = "/api/v1";
/** `{"a":{"a":…{}}}` with `levels` objects. */
const nested = (levels: number): string => '{"a":'.repeat(levels - 1) + "{}" + "}".repeat(levels - 1);

describe("JSON depth over HTTP", () => {
  let s: Running;
  let root: string;
  const post = (path: string, body: string) => raw(s.base, "POST", API + path, { headers: { authorization: `Bearer ${root}`, "content-type": "application/json" }, body });
  beforeAll(async () => {
    s = await startServer(new MemoryKv());
    root = s.root.token!;
  });
  afterAll(() => s.close());

  it("refuses additionalData nested 2,400 levels with a 400 naming the field, not a 500", async () => {
    const r = await post("/projects", `{"id":"p","displayName":"P","additionalData":${nested(2400)}}`);
    expect(r.status).toBe(400);
    expect(r.body.field).toMatch(/^body\.additionalData(\.a)+$/);
  });

  it("refuses over-deep bodies on every route, the login and user routes included", async () => {
    for (const path of ["/auth/login", "/users", "/projects", "/global/permissions/grant"]) {
      const r = await post(path, nested(MAX_JSON_DEPTH + 1));
      expect(r.status, path).toBe(400);
      expect(r.body.field, path).toMatch(/^body(\.a)+$/);
    }
  });

  it("keeps data at the limit", async () => {
    const r = await post("/projects", `{"id":"q","displayName":"Q","additionalData":${nested(MAX_JSON_DEPTH - 1)}}`);
    expect(r.status).toBe(201);
  });
});

describe("JSON depth in the library", () => {
  it("the resources layer refuses over-deep data with a ValidationError", async () => {
    const store = new ResourceStore(new MemoryKv(), workflowSchema);
    await store.global.grant(SYSTEM, "global.createProject", "mary");
    const deep = JSON.parse(nested(2400));
    const attempt = store.writes.create(userActor("mary"), "project", null, { displayName: "P", status: "open", additionalData: deep }, { id: "p" });
    await expect(attempt).rejects.toBeInstanceOf(ValidationError);
    await expect(attempt).rejects.toMatchObject({ field: expect.stringMatching(/^data\.additionalData(\.a)+$/) });
  });
});
