/**
 * A third-party client, generated from the document a real server serves: openapi-typescript writes the
 * types, openapi-fetch sends the requests by the document's paths and parameters. It runs a whole
 * session (log in, create a project, a subproject and workflowitems, reorder them, close them, list,
 * read history, store and read process data by its `{key}`), and every answer is checked against the
 * document: its status declared, its declared headers, its body valid against the declared schema (ajv).
 */
import createClient, { type Middleware } from "openapi-fetch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatedTypes } from "../../scripts/openapi-types.js";
import { MemoryKv } from "../../src/kv/memory.js";
import { ROOT_PASSWORD, startServer, type Running } from "./harness.js";
import { answerChecker } from "./openapi-spec.js";

type Json = Record<string, any>;

describe("a client generated from the OpenAPI document", () => {
  let s: Running;
  let doc: Json;
  let types: string;
  const mismatches: string[] = [];
  const answered: string[] = [];

  beforeAll(async () => {
    s = await startServer(new MemoryKv());
    doc = (await (await fetch(`${s.base}/openapi.json`)).json()) as Json;
    types = await generatedTypes(doc);
  });
  afterAll(async () => s?.close());

  it("gets named types and fillable parameters from openapi-typescript", () => {
    for (const name of ["Problem", "Project", "NewProject", "ProjectPage", "Workflowitem", "EventPage", "ProcessRecord", "TokenResponse"]) {
      expect(types, name).toMatch(new RegExp(`\\b${name}: \\{`));
    }
    // Every operation has a name a generator can use, and the process-data key is a parameter it can fill.
    expect(types).toContain('"/api/v1/process-data/{keyspace}/{key}": {');
    expect(types).not.toContain("{*}");
    expect(types).toMatch(/getProcessDataByKey: \{\s*parameters: \{[^]*?path: \{[^}]*\bkeyspace: string;[^}]*\bkey: string;\s*\}/);
    // Closing takes no body unless it rejects: the body is optional.
    expect(types).toMatch(/closeWorkflowitem: \{[\s\S]*?requestBody\?: \{/);
  });

  it("runs a whole session, every answer as the document declares it", async () => {
    const check = answerChecker(doc);
    let token = "";
    const validating: Middleware = {
      onRequest({ request }) {
        if (token) request.headers.set("authorization", `Bearer ${token}`);
        return request;
      },
      async onResponse({ request, response, schemaPath }) {
        const text = await response.clone().text();
        const body = text === "" ? undefined : (response.headers.get("content-type") ?? "").includes("json") ? JSON.parse(text) : text;
        answered.push(`${request.method} ${schemaPath} ${response.status}`);
        const why = check(request.method, schemaPath, response.status, response.headers, body);
        if (why) mismatches.push(why);
      },
    };
    const api = createClient<any>({ baseUrl: s.base });
    api.use(validating);

    const login = await api.POST("/api/v1/auth/token", { body: { username: "root", password: ROOT_PASSWORD } });
    expect(login.response.status).toBe(200);
    token = login.data.token;

    const p = { path: { projectId: "p1" } };
    const sp = { path: { projectId: "p1", subprojectId: "s1" } };
    expect((await api.POST("/api/v1/projects", { body: { id: "p1", displayName: "Schools" } })).response.status).toBe(201);
    const created = await api.POST("/api/v1/projects/{projectId}/subprojects", { params: p, body: { id: "s1", displayName: "Roofs", currency: "EUR" } });
    expect(created.response.headers.get("location")).toBe("/api/v1/projects/p1/subprojects/s1");
    for (const w of ["w1", "w2", "w3"]) {
      const r = await api.POST("/api/v1/projects/{projectId}/subprojects/{subprojectId}/workflowitems", {
        params: sp,
        body: { id: w, displayName: `item ${w}`, amountType: "N/A" },
      });
      expect(r.response.status).toBe(201);
    }

    // A conditional read: the ETag, then 304 while it is current.
    const project = await api.GET("/api/v1/projects/{projectId}", { params: p });
    const etag = project.response.headers.get("etag")!;
    expect(etag).toMatch(/^"\d+"$/);
    const again = await api.GET("/api/v1/projects/{projectId}", { params: { ...p, header: { "If-None-Match": etag } } });
    expect(again.response.status).toBe(304);

    // Reorder with If-Match; a stale If-Match is 412.
    const ordering = await api.GET("/api/v1/projects/{projectId}/subprojects/{subprojectId}/workflowitem-ordering", { params: sp });
    const orderTag = ordering.response.headers.get("etag")!;
    const reordered = await api.PUT("/api/v1/projects/{projectId}/subprojects/{subprojectId}/workflowitem-ordering", {
      params: { ...sp, header: { "If-Match": orderTag } },
      body: { ordering: ["w3", "w1", "w2"] },
    });
    expect(reordered.data).toEqual({ ordering: ["w3", "w1", "w2"] });
    const stale = await api.PUT("/api/v1/projects/{projectId}/subprojects/{subprojectId}/workflowitem-ordering", {
      params: { ...sp, header: { "If-Match": orderTag } },
      body: { ordering: ["w1"] },
    });
    expect(stale.response.status).toBe(412);
    expect(stale.error).toMatchObject({ status: 412, field: "version" });

    // Close every workflowitem (no body) in the subproject's order (it is ordered), then the subproject and the project.
    for (const w of ["w3", "w1", "w2"]) {
      const closed = await api.POST("/api/v1/projects/{projectId}/subprojects/{subprojectId}/workflowitems/{workflowitemId}/close", {
        params: { path: { projectId: "p1", subprojectId: "s1", workflowitemId: w } },
      });
      expect(closed.data.data.status).toBe("closed");
    }
    expect((await api.POST("/api/v1/projects/{projectId}/subprojects/{subprojectId}/close", { params: sp })).response.status).toBe(200);
    expect((await api.POST("/api/v1/projects/{projectId}/close", { params: p })).response.status).toBe(200);

    const list = await api.GET("/api/v1/projects/{projectId}/subprojects/{subprojectId}/workflowitems", { params: { ...sp, query: { limit: 10 } } });
    expect(list.data.items.map((i: { id: string }) => i.id)).toEqual(["w3", "w1", "w2"]);
    const history = await api.GET("/api/v1/projects/{projectId}/subprojects/{subprojectId}/history", { params: { ...sp, query: { order: "desc" } } });
    expect(history.data.items[0].type).toBe("subproject.closed");

    // Process data: the key, slashes and all, is one parameter the client encodes.
    const key = "process/pi-7/task/approve";
    const at = { path: { keyspace: "form-submissions", key } };
    const put = await api.PUT("/api/v1/process-data/{keyspace}/{key}", { params: at, body: { id: "r1", data: { approved: true }, accessToken: "a.b.c" } });
    expect(put.response.status).toBe(200);
    const read = await api.GET("/api/v1/process-data/{keyspace}/{key}", { params: at });
    expect(read.data).toMatchObject({ key, fields: { data: { approved: true } } });
    const instance = await api.GET("/api/v1/process-data/process-instances/{pid}", { params: { path: { pid: "pi-7" } } });
    expect(instance.data.items.map((r: { key: string }) => r.key)).toEqual([key]);
    expect((await api.DELETE("/api/v1/process-data/{keyspace}/{key}", { params: at })).response.status).toBe(204);
    expect((await api.GET("/api/v1/process-data/{keyspace}/{key}", { params: at })).response.status).toBe(404);

    // Errors are answers the document declares too.
    expect((await api.GET("/api/v1/projects/{projectId}", { params: { path: { projectId: "nope" } } })).response.status).toBe(404);
    expect((await api.POST("/api/v1/projects", { body: { displayName: 5 } })).response.status).toBe(400);

    expect(answered.length).toBeGreaterThan(20);
    expect(mismatches).toEqual([]);
  });
});
