/**
 * The OpenAPI document names its types: every shape with an `$id` is one entry of
 * `components.schemas`, referred to by `$ref` wherever it is used (http/components.ts), so no object
 * schema is written out twice; an answer that operations give alike (every problem answer among them) is
 * one entry of `components.responses`, referred to the same way (http/openapi.ts). Its operationIds and
 * path parameters are readable (`getWorkflowitem`, `{projectId}`) and held stable here: a generated
 * client's method names are these, so a change to them is a breaking change to see in review.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryKv } from "../../src/kv/memory.js";
import { tenancySchema } from "../../src/tenancy/schema.js";
import { workflowSchema } from "../../src/workflow/schema.js";
import { raw, startServer, type Running } from "./harness.js";
import { answerOf } from "./openapi-spec.js";

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
  let doc: { paths: Record<string, Record<string, Json>>; components: { schemas: Record<string, Json>; responses: Record<string, Json> } };

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

  it("answers every problem with a $ref to its one declaration, which refers to the one Problem", () => {
    let problems = 0;
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        for (const [status, response] of Object.entries((op.responses ?? {}) as Record<string, Json>)) {
          const content = answerOf(doc, response)!.content as Record<string, { schema: unknown }> | undefined;
          const schema = content?.["application/problem+json"]?.schema;
          if (schema === undefined) continue;
          problems++;
          expect(response, `${method} ${path} ${status}`).toEqual({ $ref: expect.stringMatching(/^#\/components\/responses\/[A-Z][A-Za-z]+$/) });
          expect(schema, `${method} ${path} ${status}`).toEqual({ $ref: "#/components/schemas/Problem" });
        }
      }
    }
    expect(problems).toBeGreaterThan(300);
    expect(doc.components.responses.NotFound).toEqual({ description: "Not Found", content: { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } } } });
  });

  it("declares an answer that operations give alike once, in components.responses", () => {
    const inline = new Map<string, string[]>();
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        for (const [status, response] of Object.entries((op.responses ?? {}) as Record<string, Json>)) {
          if (typeof response.$ref === "string") continue;
          const json = JSON.stringify(response);
          inline.set(json, [...(inline.get(json) ?? []), `${method.toUpperCase()} ${path} ${status}`]);
        }
      }
    }
    expect([...inline.values()].filter((where) => where.length > 1)).toEqual([]);
    const declared = Object.values(doc.components.responses).map((r) => JSON.stringify(r));
    expect(new Set(declared).size).toBe(declared.length);
    // Not Modified, the answers with no body, an updated resource with its ETag: shared as the problems are.
    expect(Object.keys(doc.components.responses)).toEqual(expect.arrayContaining(["NotModified", "NoContent", "OKProject", "ServiceUnavailable", "PreconditionFailed"]));
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
    // A create answers its creator the resource itself.
    expect(op.responses).toMatchObject({ 201: { content: { "application/json": { schema: { $ref: "#/components/schemas/Tenant" } } } } });
    const update = doc.components.schemas.WorkflowitemUpdate!.properties as Json;
    for (const owned of ["status", "assignee", "rejectReason"]) expect(Object.keys(update)).not.toContain(owned);
    const created = doc.components.schemas.NewWorkflowitem!.properties as Json;
    expect(Object.keys(created)).toContain("assignee");
    expect(Object.keys(created)).not.toContain("status");
  });

  it("types no write's answer as Redacted: a create answers the resource (201); a write to an existing one the resource (200) or no content (204)", () => {
    const declared = new Set([...workflowSchema.types.keys(), ...tenancySchema.types.keys()].map(cap));
    const creates: string[] = [];
    const writes: string[] = [];
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        if (method === "get" || method === "head") continue;
        const responses = Object.fromEntries(Object.entries(op.responses as Record<string, Json>).map(([status, r]) => [status, answerOf(doc, r)!]));
        expect(JSON.stringify(responses), `${method} ${path}`).not.toContain("#/components/schemas/Redacted");
        const id = String(op.operationId);
        const created = /^create([A-Z]\w*)$/.exec(id)?.[1];
        if (created && declared.has(created)) {
          creates.push(id);
          expect(responses["201"]!.content, id).toEqual({ "application/json": { schema: { $ref: `#/components/schemas/${created}` } } });
        }
        // The writes to an existing resource of a declared type: update, assign, close, budgets, governance flag.
        const written = /^(?:update|assign|close|set|clear|delete)([A-Z][A-Za-z]*?)(?:ProjectedBudget|GovernanceFlag)?$/.exec(id)?.[1];
        if (written && declared.has(written) && responses["200"]) {
          writes.push(id);
          expect(responses["200"].content, id).toEqual({ "application/json": { schema: { $ref: `#/components/schemas/${written}` } } });
          expect(responses["204"], id).toMatchObject({ description: expect.stringMatching(/^No Content: .*may act on the resource but not view it/) });
          expect(responses["204"]!.content, id).toBeUndefined();
          expect(Object.keys(responses["204"]!.headers as Json), id).toEqual(["ETag"]);
        }
      }
    }
    expect(creates).toHaveLength(declared.size);
    // Each level's update, assign and close, the budgets of projects and subprojects, the space's flag, the tenancy types' updates.
    expect(writes).toEqual(
      expect.arrayContaining([
        "updateWorkflowitem",
        "assignWorkflowitem",
        "closeWorkflowitem",
        "closeProject",
        "setSubprojectProjectedBudget",
        "deleteProjectProjectedBudget",
        "setSpaceGovernanceFlag",
        "clearSpaceGovernanceFlag",
        "updateTenant",
      ]),
    );
    expect(writes).toHaveLength(3 * 3 + 2 * 2 + 2 + tenancySchema.types.size);
  });

  it("names every operation readably, and every path parameter by what it names", () => {
    const params = new Set(Object.keys(doc.paths).flatMap((path) => [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!)));
    for (const p of params) expect(p.length, p).toBeGreaterThan(1);
    expect([...params].filter((p) => p.endsWith("Id"))).toEqual(expect.arrayContaining(["projectId", "subprojectId", "workflowitemId"]));
    expect(doc.paths["/api/v1/projects/{projectId}/subprojects/{subprojectId}/workflowitems/{workflowitemId}"]!.get!.operationId).toBe("getWorkflowitem");
    const ids = Object.entries(doc.paths)
      .flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => `${op.operationId} ${method.toUpperCase()} ${path.replace("/api/v1", "")}`))
      .sort();
    expect(ids).toMatchInlineSnapshot(`
      [
        "assignProject POST /projects/{projectId}/assign",
        "assignSubproject POST /projects/{projectId}/subprojects/{subprojectId}/assign",
        "assignWorkflowitem POST /projects/{projectId}/subprojects/{subprojectId}/workflowitems/{workflowitemId}/assign",
        "clearSpaceGovernanceFlag DELETE /tenancy/spaces/{spaceId}/governance-flag",
        "closeProject POST /projects/{projectId}/close",
        "closeSubproject POST /projects/{projectId}/subprojects/{subprojectId}/close",
        "closeWorkflowitem POST /projects/{projectId}/subprojects/{subprojectId}/workflowitems/{workflowitemId}/close",
        "createContentObject POST /tenancy/tenants/{tenantId}/content-objects",
        "createContentObjectVersion POST /tenancy/tenants/{tenantId}/content-objects/{contentObjectId}/content-object-versions",
        "createKms POST /tenancy/tenants/{tenantId}/kms",
        "createNode POST /tenancy/providers/{providerId}/nodes",
        "createProject POST /projects",
        "createProvider POST /tenancy/spaces/{spaceId}/providers",
        "createSpace POST /tenancy/spaces",
        "createSubproject POST /projects/{projectId}/subprojects",
        "createSubscription POST /subscriptions",
        "createTenant POST /tenancy/spaces/{spaceId}/tenants",
        "createWorkflowitem POST /projects/{projectId}/subprojects/{subprojectId}/workflowitems",
        "deleteArchiveSnapshot DELETE /archive/snapshots/{id}",
        "deleteContentObject DELETE /tenancy/tenants/{tenantId}/content-objects/{contentObjectId}",
        "deleteContentObjectVersion DELETE /tenancy/tenants/{tenantId}/content-objects/{contentObjectId}/content-object-versions/{contentObjectVersionId}",
        "deleteGroupMember DELETE /groups/{groupId}/members/{userId}",
        "deleteKms DELETE /tenancy/tenants/{tenantId}/kms/{kmsId}",
        "deleteNode DELETE /tenancy/providers/{providerId}/nodes/{nodeId}",
        "deleteProcessDataByKey DELETE /process-data/{keyspace}/{key}",
        "deleteProcessDataProcessInstance DELETE /process-data/process-instances/{pid}",
        "deleteProject DELETE /projects/{projectId}",
        "deleteProjectProjectedBudget DELETE /projects/{projectId}/projected-budgets/{organization}/{currencyCode}",
        "deleteProjectSubprojectWorkflowitemDocument DELETE /projects/{projectId}/subprojects/{subprojectId}/workflowitems/{workflowitemId}/documents/{documentId}",
        "deleteProvider DELETE /tenancy/providers/{providerId}",
        "deleteSpace DELETE /tenancy/spaces/{spaceId}",
        "deleteSubproject DELETE /projects/{projectId}/subprojects/{subprojectId}",
        "deleteSubprojectProjectedBudget DELETE /projects/{projectId}/subprojects/{subprojectId}/projected-budgets/{organization}/{currencyCode}",
        "deleteSubscription DELETE /subscriptions/{subscriptionId}",
        "deleteTenant DELETE /tenancy/tenants/{tenantId}",
        "deleteWorkflowitem DELETE /projects/{projectId}/subprojects/{subprojectId}/workflowitems/{workflowitemId}",
        "eraseSubject POST /subjects/{subjectId}/erase",
        "getArchiveFile GET /archive/files/{hash}",
        "getArchiveSnapshot GET /archive/snapshots/{id}",
        "getArchiveSnapshotFile GET /archive/snapshots/{id}/files/{name}",
        "getArchiveSnapshots GET /archive/snapshots",
        "getContentObject GET /tenancy/tenants/{tenantId}/content-objects/{contentObjectId}",
        "getContentObjectHistory GET /tenancy/tenants/{tenantId}/content-objects/{contentObjectId}/history",
        "getContentObjectVersion GET /tenancy/tenants/{tenantId}/content-objects/{contentObjectId}/content-object-versions/{contentObjectVersionId}",
        "getContentObjectVersionHistory GET /tenancy/tenants/{tenantId}/content-objects/{contentObjectId}/content-object-versions/{contentObjectVersionId}/history",
        "getEvents GET /events",
        "getExchangeRateAt GET /exchange-rates/{from}/{to}/at/{date}",
        "getGlobalPermissions GET /global/permissions",
        "getGroup GET /groups/{groupId}",
        "getGroups GET /groups",
        "getHealth GET /health",
        "getKms GET /tenancy/tenants/{tenantId}/kms/{kmsId}",
        "getKmsHistory GET /tenancy/tenants/{tenantId}/kms/{kmsId}/history",
        "getLog GET /log",
        "getLogCheckpoint GET /log/checkpoint",
        "getLogCheckpointCosigned GET /log/checkpoint/cosigned",
        "getLogProofConsistency GET /log/proof/consistency",
        "getLogProofInclusion GET /log/proof/inclusion",
        "getMe GET /me",
        "getMetrics GET /metrics",
        "getNode GET /tenancy/providers/{providerId}/nodes/{nodeId}",
        "getNodeHistory GET /tenancy/providers/{providerId}/nodes/{nodeId}/history",
        "getNotifications GET /notifications",
        "getNotificationsCount GET /notifications/count",
        "getProcessData GET /process-data/{keyspace}",
        "getProcessDataByKey GET /process-data/{keyspace}/{key}",
        "getProcessDataProcessInstance GET /process-data/process-instances/{pid}",
        "getProject GET /projects/{projectId}",
        "getProjectAnalytics GET /projects/{projectId}/analytics",
        "getProjectCheckpoint GET /projects/{projectId}/checkpoint",
        "getProjectHistory GET /projects/{projectId}/history",
        "getProjectSubprojectWorkflowitemDocument GET /projects/{projectId}/subprojects/{subprojectId}/workflowitems/{workflowitemId}/documents/{documentId}",
        "getProjectSubprojectWorkflowitemDocuments GET /projects/{projectId}/subprojects/{subprojectId}/workflowitems/{workflowitemId}/documents",
        "getProvider GET /tenancy/providers/{providerId}",
        "getProviderCheckpoint GET /tenancy/providers/{providerId}/checkpoint",
        "getProviderHistory GET /tenancy/providers/{providerId}/history",
        "getReady GET /ready",
        "getSpace GET /tenancy/spaces/{spaceId}",
        "getSpaceCheckpoint GET /tenancy/spaces/{spaceId}/checkpoint",
        "getSpaceHistory GET /tenancy/spaces/{spaceId}/history",
        "getStoreBackup GET /store/backup",
        "getSubjectErasure GET /subjects/{subjectId}/erasure",
        "getSubproject GET /projects/{projectId}/subprojects/{subprojectId}",
        "getSubprojectAnalytics GET /projects/{projectId}/subprojects/{subprojectId}/analytics",
        "getSubprojectHistory GET /projects/{projectId}/subprojects/{subprojectId}/history",
        "getSubscription GET /subscriptions/{subscriptionId}",
        "getSubscriptionDeadLetters GET /subscriptions/{subscriptionId}/dead-letters",
        "getSubscriptionDigest GET /subscriptions/digest",
        "getSubscriptionEvents GET /subscriptions/{subscriptionId}/events",
        "getTenant GET /tenancy/tenants/{tenantId}",
        "getTenantCheckpoint GET /tenancy/tenants/{tenantId}/checkpoint",
        "getTenantHistory GET /tenancy/tenants/{tenantId}/history",
        "getUser GET /users/{userId}",
        "getUserAssignments GET /users/{userId}/assignments",
        "getUsers GET /users",
        "getWorkflowitem GET /projects/{projectId}/subprojects/{subprojectId}/workflowitems/{workflowitemId}",
        "getWorkflowitemHistory GET /projects/{projectId}/subprojects/{subprojectId}/workflowitems/{workflowitemId}/history",
        "getWorkflowitemOrdering GET /projects/{projectId}/subprojects/{subprojectId}/workflowitem-ordering",
        "governanceDeleteProvider POST /tenancy/providers/{providerId}/governance-delete",
        "governanceDeleteTenant POST /tenancy/tenants/{tenantId}/governance-delete",
        "grantContentObjectPermission POST /tenancy/tenants/{tenantId}/content-objects/{contentObjectId}/permissions/grant",
        "grantContentObjectVersionPermission POST /tenancy/tenants/{tenantId}/content-objects/{contentObjectId}/content-object-versions/{contentObjectVersionId}/permissions/grant",
        "grantKmsPermission POST /tenancy/tenants/{tenantId}/kms/{kmsId}/permissions/grant",
        "grantNodePermission POST /tenancy/providers/{providerId}/nodes/{nodeId}/permissions/grant",
        "grantProjectPermission POST /projects/{projectId}/permissions/grant",
        "grantProviderPermission POST /tenancy/providers/{providerId}/permissions/grant",
        "grantSpacePermission POST /tenancy/spaces/{spaceId}/permissions/grant",
        "grantSubprojectPermission POST /projects/{projectId}/subprojects/{subprojectId}/permissions/grant",
        "grantTenantPermission POST /tenancy/tenants/{tenantId}/permissions/grant",
        "grantWorkflowitemPermission POST /projects/{projectId}/subprojects/{subprojectId}/workflowitems/{workflowitemId}/permissions/grant",
        "importEcbExchangeRates POST /exchange-rates/ecb",
        "listContentObjectPermissions GET /tenancy/tenants/{tenantId}/content-objects/{contentObjectId}/permissions",
        "listContentObjectVersionPermissions GET /tenancy/tenants/{tenantId}/content-objects/{contentObjectId}/content-object-versions/{contentObjectVersionId}/permissions",
        "listContentObjectVersions GET /tenancy/tenants/{tenantId}/content-objects/{contentObjectId}/content-object-versions",
        "listContentObjects GET /tenancy/tenants/{tenantId}/content-objects",
        "listExchangeRates GET /exchange-rates/{from}/{to}",
        "listKms GET /tenancy/tenants/{tenantId}/kms",
        "listKmsPermissions GET /tenancy/tenants/{tenantId}/kms/{kmsId}/permissions",
        "listNodePermissions GET /tenancy/providers/{providerId}/nodes/{nodeId}/permissions",
        "listNodes GET /tenancy/providers/{providerId}/nodes",
        "listProjectPermissions GET /projects/{projectId}/permissions",
        "listProjects GET /projects",
        "listProviderPermissions GET /tenancy/providers/{providerId}/permissions",
        "listProviders GET /tenancy/spaces/{spaceId}/providers",
        "listSpacePermissions GET /tenancy/spaces/{spaceId}/permissions",
        "listSpaces GET /tenancy/spaces",
        "listSubprojectPermissions GET /projects/{projectId}/subprojects/{subprojectId}/permissions",
        "listSubprojects GET /projects/{projectId}/subprojects",
        "listSubscriptions GET /subscriptions",
        "listTenantPermissions GET /tenancy/tenants/{tenantId}/permissions",
        "listTenants GET /tenancy/spaces/{spaceId}/tenants",
        "listWorkflowitemPermissions GET /projects/{projectId}/subprojects/{subprojectId}/workflowitems/{workflowitemId}/permissions",
        "listWorkflowitems GET /projects/{projectId}/subprojects/{subprojectId}/workflowitems",
        "postArchiveRestore POST /archive/restore",
        "postArchiveSnapshots POST /archive/snapshots",
        "postAuthLogout POST /auth/logout",
        "postAuthLogoutAll POST /auth/logout-all",
        "postAuthPassword POST /auth/password",
        "postAuthRefresh POST /auth/refresh",
        "postAuthToken POST /auth/token",
        "postGlobalPermissionsGrant POST /global/permissions/grant",
        "postGlobalPermissionsGrantAll POST /global/permissions/grant-all",
        "postGlobalPermissionsRevoke POST /global/permissions/revoke",
        "postGroupMembers POST /groups/{groupId}/members",
        "postGroups POST /groups",
        "postLogCosignatures POST /log/cosignatures",
        "postNotificationsRead POST /notifications/read",
        "postProcessDataFormSchemas POST /process-data/form-schemas",
        "postProcessDataFormSubmissionsProcessDefinitionStartForm POST /process-data/form-submissions/process-definition/{def}/start-form",
        "postProcessDataMessagePayloadsProcessDefinitionStartMessage POST /process-data/message-payloads/process-definition/{def}/start-message",
        "postProjectArchive POST /projects/{projectId}/archive",
        "postProjectSubprojectWorkflowitemDocumentValidate POST /projects/{projectId}/subprojects/{subprojectId}/workflowitems/{workflowitemId}/documents/{documentId}/validate",
        "postProjectSubprojectWorkflowitemDocuments POST /projects/{projectId}/subprojects/{subprojectId}/workflowitems/{workflowitemId}/documents",
        "postStoreRestore POST /store/restore",
        "postUserDisable POST /users/{userId}/disable",
        "postUserEnable POST /users/{userId}/enable",
        "postUsers POST /users",
        "putExchangeRates PUT /exchange-rates",
        "putMePassword PUT /me/password",
        "putProcessDataByKey PUT /process-data/{keyspace}/{key}",
        "putUserPassword PUT /users/{userId}/password",
        "replaySubscriptionDeadLetter POST /subscriptions/{subscriptionId}/dead-letters/{deadLetter}/replay",
        "revokeContentObjectPermission POST /tenancy/tenants/{tenantId}/content-objects/{contentObjectId}/permissions/revoke",
        "revokeContentObjectVersionPermission POST /tenancy/tenants/{tenantId}/content-objects/{contentObjectId}/content-object-versions/{contentObjectVersionId}/permissions/revoke",
        "revokeKmsPermission POST /tenancy/tenants/{tenantId}/kms/{kmsId}/permissions/revoke",
        "revokeNodePermission POST /tenancy/providers/{providerId}/nodes/{nodeId}/permissions/revoke",
        "revokeProjectPermission POST /projects/{projectId}/permissions/revoke",
        "revokeProviderPermission POST /tenancy/providers/{providerId}/permissions/revoke",
        "revokeSpacePermission POST /tenancy/spaces/{spaceId}/permissions/revoke",
        "revokeSubprojectPermission POST /projects/{projectId}/subprojects/{subprojectId}/permissions/revoke",
        "revokeTenantPermission POST /tenancy/tenants/{tenantId}/permissions/revoke",
        "revokeWorkflowitemPermission POST /projects/{projectId}/subprojects/{subprojectId}/workflowitems/{workflowitemId}/permissions/revoke",
        "setProjectProjectedBudget PUT /projects/{projectId}/projected-budgets",
        "setSpaceGovernanceFlag PUT /tenancy/spaces/{spaceId}/governance-flag",
        "setSubprojectProjectedBudget PUT /projects/{projectId}/subprojects/{subprojectId}/projected-budgets",
        "setWorkflowitemOrdering PUT /projects/{projectId}/subprojects/{subprojectId}/workflowitem-ordering",
        "updateContentObject PATCH /tenancy/tenants/{tenantId}/content-objects/{contentObjectId}",
        "updateContentObjectVersion PATCH /tenancy/tenants/{tenantId}/content-objects/{contentObjectId}/content-object-versions/{contentObjectVersionId}",
        "updateKms PATCH /tenancy/tenants/{tenantId}/kms/{kmsId}",
        "updateNode PATCH /tenancy/providers/{providerId}/nodes/{nodeId}",
        "updateProject PATCH /projects/{projectId}",
        "updateProvider PATCH /tenancy/providers/{providerId}",
        "updateSpace PATCH /tenancy/spaces/{spaceId}",
        "updateSubproject PATCH /projects/{projectId}/subprojects/{subprojectId}",
        "updateTenant PATCH /tenancy/tenants/{tenantId}",
        "updateWorkflowitem PATCH /projects/{projectId}/subprojects/{subprojectId}/workflowitems/{workflowitemId}",
        "verifyProject GET /projects/{projectId}/verify",
        "verifyProvider GET /tenancy/providers/{providerId}/verify",
        "verifySpace GET /tenancy/spaces/{spaceId}/verify",
        "verifyTenant GET /tenancy/tenants/{tenantId}/verify",
      ]
    `);
  });
});
