/**
 * The permission matrix (issue 5): every route the running server registers has an entry here, and
 * the test fails for a route without one (or an entry without a route). For each route that needs an
 * intent, a caller holding every other intent of the same scope (all other intents of the type on the
 * resource, or all other global intents) is refused with 403 (it knows of the resource) and the store
 * is byte for byte unchanged; the same caller, once granted exactly the needed intent, is served (2xx).
 * Before it holds anything on the resource, the caller gets the very 404 a missing resource answers
 * (no existence oracle, docs/security.md). Routes that need only a valid token, or none, are declared so and checked as such.
 * HEAD routes mirror their GET entry and are checked with it.
 *
 * One server over LMDB (the embedded default): permission checks live in the store's domain layers,
 * identical over every backend; the backend suites prove the backends equal.
 */
import { createHash } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ALL_KINDS } from "../../src/compose/kinds.js";
import type { FlowstoreClient } from "../../src/client/index.js";
import { allPartitions, scanAll, type KvStore } from "../../src/kv/contract.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import type { GlobalIntent } from "../../src/client/index.js";
import { formioForm } from "../process-data/helpers.js";
import { METRICS_TOKEN, raw, startServer, type Running } from "./harness.js";
import { makeTempDirSync, removeTempDirSync } from "../support/temp-dir.js";

const API = "/api/v1";
const TEN = `${API}/tenancy`;
type WorkflowLevel = "project" | "subproject" | "workflowitem";
type TenancyType = "space" | "provider" | "node" | "tenant" | "kms" | "contentObject" | "contentObjectVersion";
type Level = WorkflowLevel | TenancyType;

type Need =
  | { readonly kind: "public" }
  | { readonly kind: "token" }
  /** Acts on the caller's own session (refresh, logout): checked with a fresh session of its own. */
  | { readonly kind: "session" }
  | { readonly kind: "global"; readonly intent: GlobalIntent }
  | { readonly kind: "resource"; readonly intent: string; readonly on: Level }
  /** /metrics: the metrics token or root's access token, no other (issue 29, finding 14). */
  | { readonly kind: "scraper" }
  /** Eluvio's governance delete: a token and the parent's governanceDelete flag, no intent at all. */
  | { readonly kind: "governanceFlag" }
  /** TruBudget's close rule: the resource's assignee only; every intent of the type without it is refused. */
  | { readonly kind: "assignee"; readonly on: Level }
  /** A rule of its own, checked by `check` (the transparency log's routes: public to witnesses, proofs for the event's viewers). */
  | { readonly kind: "own"; readonly rule: string; readonly check: (c: OwnContext) => Promise<void> };

/** What an `own` rule's check works with. */
interface OwnContext {
  call(who: string | undefined, method: string, req: Req): Promise<{ status: number; body: unknown }>;
  readonly eve: string;
  readonly root: string;
  fixture(): Promise<Fixture>;
  grant(path: string, intent: string): Promise<void>;
  /** Brings the transparency log up to the store's writes (the server's appender is off in tests). */
  appendLog(): Promise<void>;
}

interface Req {
  readonly path: string;
  readonly body?: unknown;
  /** A multipart body instead of JSON (made anew for each request). */
  readonly form?: () => FormData;
}

/** A fresh project tree, made by root, for one route; `extra` holds what the entry's setup made. */
interface Fixture {
  readonly p: string;
  /** /api/v1/projects/{p}, …/subprojects/s, …/workflowitems/w; or the tenancy tree's addresses */
  readonly paths: Partial<Record<Level, string>>;
  extra: Record<string, string>;
}

interface Entry {
  readonly need: Need;
  /** Further intents the route needs as well: each one is proven necessary on its own. */
  readonly alsoNeeds?: readonly Need[];
  /** The request to make; `setup` runs first (as root) for what the route needs to exist. */
  readonly request: (f: Fixture) => Req;
  /** What the fixture holds: a project only, a project with an empty subproject, down to one workflowitem, or a tenancy tree. */
  readonly tree?: "project" | "subproject" | "workflowitem" | "tenancy";
  readonly setup?: (root: FlowstoreClient, f: Fixture) => Promise<void | Record<string, string>>;
  /** The HEAD twin of this GET cannot be requested usefully (a stream): check only its 401. */
  readonly streamed?: true;
  /** A POST that only reads (validating a file against a document): served, it changes nothing either. */
  readonly readsOnly?: true;
}

/** A data subject with personal data stored (a workflowitem's description about it), for the erasure routes. */
async function subjectData(root: FlowstoreClient, f: Fixture): Promise<{ subject: string }> {
  const subject = unique("subject-");
  await root.request("POST", `${f.paths.subproject}/workflowitems`, { body: { displayName: "about someone", amountType: "N/A", dataSubject: subject, description: "personal" } });
  return { subject };
}

const pub = (path: string): Entry => ({ need: { kind: "public" }, request: () => ({ path }) });
const token = (path: string, extra: Partial<Entry> = {}): Entry => ({ need: { kind: "token" }, request: () => ({ path }), ...extra });
const global = (intent: GlobalIntent, request: (f: Fixture) => Req, setup?: Entry["setup"]): Entry => ({ need: { kind: "global", intent }, request, ...(setup ? { setup } : {}) });

let serverBase = "";
const base = (): string => serverBase;

let seq = 0;
const unique = (prefix: string): string => `${prefix}${++seq}`;

/** The generic routes of one level, with the intent each needs on the resource it addresses. */
function levelEntries(level: WorkflowLevel, collection: string, item: string): Record<string, Entry> {
  const on = level;
  const res = (intent: string, request: Entry["request"], extra: Partial<Entry> = {}): Entry => ({ need: { kind: "resource", intent, on }, request, ...extra });
  const at = (f: Fixture, suffix = "") => f.paths[level] + suffix;
  const parentLevel: WorkflowLevel | null = level === "project" ? null : level === "subproject" ? "project" : "subproject";
  const newBody = level === "project" ? { displayName: "new" } : level === "subproject" ? { displayName: "new", currency: "EUR" } : { displayName: "new", amountType: "N/A" };
  const entries: Record<string, Entry> = {
    [`GET ${item}`]: res(`${level}.viewDetails`, (f) => ({ path: at(f) })),
    [`PATCH ${item}`]: res(`${level}.update`, (f) => ({ path: at(f), body: { description: "changed" } })),
    [`DELETE ${item}`]: res(`${level}.delete`, (f) => ({ path: at(f) })),
    [`POST ${item}/close`]: {
      need: { kind: "assignee", on },
      request: (f) => ({ path: at(f, "/close"), ...(level === "workflowitem" ? { body: {} } : {}) }),
      tree: level === "project" ? "project" : level === "subproject" ? "subproject" : "workflowitem",
    },
    [`POST ${item}/assign`]: res(`${level}.assign`, (f) => ({ path: at(f, "/assign"), body: { assignee: "root" } })),
    [`GET ${item}/history`]: res(`${level}.viewHistory`, (f) => ({ path: at(f, "/history") })),
    [`GET ${item}/permissions`]: res(`${level}.intent.listPermissions`, (f) => ({ path: at(f, "/permissions") })),
    [`POST ${item}/permissions/grant`]: res(`${level}.intent.grantPermission`, (f) => ({
      path: at(f, "/permissions/grant"),
      body: { intent: `${level}.viewDetails`, identity: "watchers" },
    })),
    [`POST ${item}/permissions/revoke`]: res(`${level}.intent.revokePermission`, (f) => ({
      path: at(f, "/permissions/revoke"),
      body: { intent: `${level}.viewDetails`, identity: "root" },
    })),
  };
  if (parentLevel === null) {
    entries[`POST ${collection}`] = global("global.createProject", () => ({ path: `${API}/projects`, body: { id: unique("created-"), ...newBody } }));
    entries[`GET ${collection}`] = token(`${API}/projects`);
  } else {
    const create = `${parentLevel}.create${level.charAt(0).toUpperCase()}${level.slice(1)}`;
    entries[`POST ${collection}`] = { need: { kind: "resource", intent: create, on: parentLevel }, request: (f) => ({ path: `${f.paths[parentLevel]}/${level}s`, body: newBody }) };
    entries[`GET ${collection}`] = {
      need: { kind: "resource", intent: `${parentLevel}.viewDetails`, on: parentLevel },
      request: (f) => ({ path: `${f.paths[parentLevel]}/${level}s` }),
    };
  }
  if (level !== "workflowitem") {
    entries[`PUT ${item}/projected-budgets`] = res(`${level}.budget.updateProjected`, (f) => ({
      path: at(f, "/projected-budgets"),
      body: { organization: "Other", value: "2", currencyCode: "USD" },
    }));
    entries[`DELETE ${item}/projected-budgets/:organization/:currencyCode`] = res(`${level}.budget.deleteProjected`, (f) => ({ path: at(f, "/projected-budgets/Org/EUR") }));
  }
  return entries;
}

/**
 * The tenancy hierarchy's routes, as the declaration's path rule gives them: a type is created and
 * listed under its parent's address, a root or flat type addressed by its own id, a nested one below
 * its parent's address; partition owners verify.
 */
const TENANCY: Record<TenancyType, { parent: TenancyType | null; collection: string; item: string; body: unknown; patch: unknown }> = {
  space: { parent: null, collection: `${TEN}/spaces`, item: `${TEN}/spaces/:spaceId`, body: { name: "new" }, patch: { description: "changed" } },
  provider: { parent: "space", collection: `${TEN}/spaces/:spaceId/providers`, item: `${TEN}/providers/:providerId`, body: { name: "new" }, patch: { description: "changed" } },
  node: {
    parent: "provider",
    collection: `${TEN}/providers/:providerId/nodes`,
    item: `${TEN}/providers/:providerId/nodes/:nodeId`,
    body: { endpoint: "https://new" },
    patch: { endpoint: "https://changed" },
  },
  tenant: { parent: "space", collection: `${TEN}/spaces/:spaceId/tenants`, item: `${TEN}/tenants/:tenantId`, body: { name: "new" }, patch: { description: "changed" } },
  kms: { parent: "tenant", collection: `${TEN}/tenants/:tenantId/kms`, item: `${TEN}/tenants/:tenantId/kms/:kmsId`, body: { keyRef: "new" }, patch: { keyRef: "changed" } },
  contentObject: {
    parent: "tenant",
    collection: `${TEN}/tenants/:tenantId/content-objects`,
    item: `${TEN}/tenants/:tenantId/content-objects/:contentObjectId`,
    body: { name: "new" },
    patch: { description: "changed" },
  },
  contentObjectVersion: {
    parent: "contentObject",
    collection: `${TEN}/tenants/:tenantId/content-objects/:contentObjectId/content-object-versions`,
    item: `${TEN}/tenants/:tenantId/content-objects/:contentObjectId/content-object-versions/:contentObjectVersionId`,
    body: { hash: "c".repeat(64), size: 1 },
    patch: { size: 2 },
  },
};
const TENANCY_TYPES = Object.keys(TENANCY) as TenancyType[];

function tenancyEntries(): Record<string, Entry> {
  const entries: Record<string, Entry> = {};
  for (const type of TENANCY_TYPES) {
    const { parent, collection, item, body, patch } = TENANCY[type];
    const tree = "tenancy" as const;
    const res = (intent: string, on: TenancyType, request: Entry["request"]): Entry => ({ need: { kind: "resource", intent, on }, request, tree });
    const at = (f: Fixture, suffix = "") => f.paths[type] + suffix;
    entries[`GET ${item}`] = res(`${type}.viewDetails`, type, (f) => ({ path: at(f) }));
    entries[`PATCH ${item}`] = res(`${type}.update`, type, (f) => ({ path: at(f), body: patch }));
    entries[`DELETE ${item}`] = res(`${type}.delete`, type, (f) => ({ path: at(f) }));
    if (type === "space") {
      // The space counts its providers: the fixture's provider is deleted first, or the delete is a 409.
      entries[`DELETE ${item}`] = {
        ...entries[`DELETE ${item}`]!,
        setup: async (root, f) => void expect((await raw(base(), "DELETE", f.paths.provider!, { headers: { authorization: `Bearer ${root.token}` } })).status).toBe(204),
      };
      for (const method of ["PUT", "DELETE"]) entries[`${method} ${item}/governance-flag`] = res("space.setGovernanceDelete", type, (f) => ({ path: at(f, "/governance-flag") }));
    }
    if (type === "provider" || type === "tenant") {
      entries[`POST ${item}/governance-delete`] = { need: { kind: "governanceFlag" }, tree, request: (f) => ({ path: at(f, "/governance-delete") }) };
    }
    entries[`GET ${item}/history`] = res(`${type}.viewHistory`, type, (f) => ({ path: at(f, "/history") }));
    entries[`GET ${item}/permissions`] = res(`${type}.intent.listPermissions`, type, (f) => ({ path: at(f, "/permissions") }));
    entries[`POST ${item}/permissions/grant`] = res(`${type}.intent.grantPermission`, type, (f) => ({
      path: at(f, "/permissions/grant"),
      body: { intent: `${type}.viewDetails`, identity: "watchers" },
    }));
    entries[`POST ${item}/permissions/revoke`] = res(`${type}.intent.revokePermission`, type, (f) => ({
      path: at(f, "/permissions/revoke"),
      body: { intent: `${type}.viewDetails`, identity: "root" },
    }));
    if (parent === null || TENANCY[type].item.split(":").length === 2) {
      entries[`GET ${item}/verify`] = res(`${type}.viewHistory`, type, (f) => ({ path: at(f, "/verify") }));
      entries[`GET ${item}/checkpoint`] = res(`${type}.viewHistory`, type, (f) => ({ path: at(f, "/checkpoint") }));
    }
    if (parent === null) {
      entries[`POST ${collection}`] = global("global.createSpace", () => ({ path: collection, body: { id: unique("space-"), ...(body as object) } }));
      entries[`GET ${collection}`] = token(collection);
    } else {
      const segment = collection.slice(collection.lastIndexOf("/"));
      entries[`POST ${collection}`] = res(`${parent}.create${type.charAt(0).toUpperCase()}${type.slice(1)}`, parent, (f) => ({ path: f.paths[parent] + segment, body }));
      entries[`GET ${collection}`] = res(`${parent}.viewDetails`, parent, (f) => ({ path: f.paths[parent] + segment }));
    }
  }
  return entries;
}

/** As root: a JSON or multipart snapshot request. */
async function rootSnapshot(base: string, root: FlowstoreClient, uniqueId: string, file?: { name: string; text: string }): Promise<string> {
  let init: RequestInit;
  if (file) {
    const form = new FormData();
    form.set("uniqueId", uniqueId);
    form.set("document", JSON.stringify({ items: [1] }));
    form.set("file", new Blob([file.text]), file.name);
    init = { method: "POST", body: form, headers: { authorization: `Bearer ${root.token}` } };
  } else {
    init = { method: "POST", body: JSON.stringify({ uniqueId, document: { items: [1] } }), headers: { authorization: `Bearer ${root.token}`, "content-type": "application/json" } };
  }
  const res = await fetch(`${base}${API}/archive/snapshots`, init);
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

const P = `${API}/projects/:projectId`;
const S = `${P}/subprojects/:subprojectId`;
const W = `${S}/workflowitems/:workflowitemId`;
const PD = `${API}/process-data`;

const MATRIX: Record<string, Entry> = {
  // public: no token
  "GET /health": pub("/health"),
  "GET /ready": pub("/ready"),
  "GET /metrics": { need: { kind: "scraper" }, request: () => ({ path: "/metrics" }) },
  // The transparency log: what witnesses and auditors read is public; a cosignature is taken from a configured witness only.
  [`GET ${API}/log`]: pub(`${API}/log`),
  [`GET ${API}/log/checkpoint`]: pub(`${API}/log/checkpoint`),
  [`GET ${API}/log/proof/consistency`]: pub(`${API}/log/proof/consistency?from=0`),
  [`GET ${API}/log/checkpoint/cosigned`]: {
    need: {
      kind: "own",
      rule: "is public: the checkpoint witnesses cosigned (none here: 404 to anyone, never 401)",
      check: async (c) => {
        await c.appendLog();
        expect((await c.call(undefined, "GET", { path: `${API}/log/checkpoint/cosigned` })).status).toBe(404);
        expect((await c.call(c.eve, "GET", { path: `${API}/log/checkpoint/cosigned` })).status).toBe(404);
      },
    },
    request: () => ({ path: `${API}/log/checkpoint/cosigned` }),
  },
  [`POST ${API}/log/cosignatures`]: {
    need: {
      kind: "own",
      rule: "takes no token and no cosignature but a configured witness's (none here: 403, nothing kept)",
      check: async (c) => {
        const r = await c.call(undefined, "POST", { path: `${API}/log/cosignatures`, body: { cosignature: "— witness AAAA\n" } });
        expect([400, 403]).toContain(r.status);
      },
    },
    request: () => ({ path: `${API}/log/cosignatures` }),
  },
  [`GET ${API}/log/proof/inclusion`]: {
    need: {
      kind: "own",
      rule: "proves an event's inclusion to a caller who may view its history, and answers everyone else as if it did not exist",
      check: async (c) => {
        const f = await c.fixture();
        await c.appendLog();
        const req = { path: `${API}/log/proof/inclusion?kind=project&id=${f.p}&seq=1` };
        expect((await c.call(undefined, "GET", req)).status).toBe(401);
        const unknown = await c.call(c.eve, "GET", req);
        expect(unknown.status).toBe(404);
        expect((await c.call(c.eve, "GET", { path: `${API}/log/proof/inclusion?kind=project&id=${f.p}-missing&seq=1` })).status).toBe(404);
        await c.grant(f.paths.project!, "project.viewDetails");
        expect((await c.call(c.eve, "GET", req)).status).toBe(404);
        await c.grant(f.paths.project!, "project.viewHistory");
        const served = await c.call(c.eve, "GET", req);
        expect(served.status, JSON.stringify(served.body)).toBe(200);
        expect((served.body as { proof: unknown[] }).proof).toBeInstanceOf(Array);
      },
    },
    request: () => ({ path: `${API}/log/proof/inclusion` }),
  },
  "GET /openapi.json": pub("/openapi.json"),
  "GET /": pub("/"),
  "GET /ui/:name": pub("/ui/app.js"),
  "GET /docs": pub("/docs"),
  "HEAD /docs/": pub("/docs/"),
  "GET /docs/json": pub("/docs/json"),
  "GET /docs/yaml": pub("/docs/yaml"),
  "GET /docs/static/index.html": pub("/docs/static/index.html"),
  "GET /docs/static/swagger-initializer.js": pub("/docs/static/swagger-initializer.js"),
  "GET /docs/static/*": pub("/docs/static/swagger-ui.css"),
  [`POST ${API}/auth/refresh`]: { need: { kind: "session" }, request: () => ({ path: `${API}/auth/refresh` }) },
  [`POST ${API}/auth/logout`]: { need: { kind: "session" }, request: () => ({ path: `${API}/auth/logout` }) },
  [`POST ${API}/auth/logout-all`]: { need: { kind: "session" }, request: () => ({ path: `${API}/auth/logout-all` }) },
  [`POST ${API}/auth/token`]: { need: { kind: "public" }, request: () => ({ path: `${API}/auth/token`, body: { username: "eve", password: "eve password" } }) },
  [`POST ${API}/auth/password`]: {
    need: {
      kind: "own",
      rule: "is public and takes the user's current password, as a log in does (401 otherwise)",
      check: async (c) => {
        const req = (currentPassword: string) => ({ path: `${API}/auth/password`, body: { username: "victim", currentPassword, password: "victim password" } });
        expect((await c.call(undefined, "POST", req("a wrong password"))).status).toBe(401);
        expect((await c.call(c.eve, "POST", req("a wrong password"))).status).toBe(401);
        expect((await c.call(undefined, "POST", req("victim password"))).status).toBe(200);
      },
    },
    request: () => ({ path: `${API}/auth/password` }),
  },

  // any valid token
  [`GET ${API}/users`]: token(`${API}/users`),
  [`GET ${API}/me`]: token(`${API}/me`),
  [`GET ${API}/users/:userId`]: token(`${API}/users/root`),
  [`GET ${API}/groups`]: token(`${API}/groups`),
  [`GET ${API}/groups/:groupId`]: token(`${API}/groups/watchers`),
  [`GET ${API}/events`]: token(`${API}/events`, { streamed: true }),

  // global intents
  [`POST ${API}/users`]: global("global.createUser", () => ({ path: `${API}/users`, body: { id: unique("user-"), displayName: "U", password: "a long password" } })),
  [`POST ${API}/users/:userId/disable`]: global("global.disableUser", () => ({ path: `${API}/users/victim/disable` })),
  [`POST ${API}/users/:userId/enable`]: global("global.enableUser", () => ({ path: `${API}/users/victim/enable` })),
  [`PUT ${API}/users/:userId/password`]: global("global.createUser", () => ({ path: `${API}/users/victim/password`, body: { password: "victim password" } })),
  [`GET ${API}/users/:userId/assignments`]: global("global.listAssignments", () => ({ path: `${API}/users/victim/assignments` })),
  [`PUT ${API}/me/password`]: {
    need: { kind: "session" },
    request: () => ({ path: `${API}/me/password`, body: { currentPassword: "a long password", password: "a long password" } }),
  },
  [`DELETE ${API}/groups/:groupId/members/:userId`]: global(
    "global.createGroup",
    (f) => ({ path: `${API}/groups/${f.extra.group!}/members/victim` }),
    async (root) => ({ group: (await root.groups.create({ id: unique("crew-"), displayName: "C", members: ["victim"] })).id }),
  ),
  [`POST ${API}/global/permissions/grant-all`]: global(
    "global.grantAllPermissions",
    (f) => ({ path: `${API}/global/permissions/grant-all`, body: { identity: f.extra.group! } }),
    async (root) => ({ group: (await root.groups.create({ id: unique("all-"), displayName: "A" })).id }),
  ),
  [`POST ${API}/groups`]: global("global.createGroup", () => ({ path: `${API}/groups`, body: { id: unique("group-"), displayName: "G" } })),
  [`POST ${API}/groups/:groupId/members`]: global("global.createGroup", () => ({ path: `${API}/groups/watchers/members`, body: { userId: "victim" } })),
  [`GET ${API}/global/permissions`]: global("global.listPermissions", () => ({ path: `${API}/global/permissions` })),
  [`POST ${API}/global/permissions/grant`]: global("global.grantPermission", () => ({
    path: `${API}/global/permissions/grant`,
    body: { intent: "global.readArchive", identity: "watchers" },
  })),
  [`POST ${API}/global/permissions/revoke`]: global(
    "global.revokePermission",
    () => ({ path: `${API}/global/permissions/revoke`, body: { intent: "global.writeArchive", identity: "watchers" } }),
    (root) => root.globalPermissions.grant("global.writeArchive", "watchers"),
  ),
  [`GET ${PD}/process-instances/:pid`]: global("global.readProcessData", () => ({ path: `${PD}/process-instances/pi-1` })),
  [`DELETE ${PD}/process-instances/:pid`]: global("global.writeProcessData", () => ({ path: `${PD}/process-instances/pi-1` })),
  [`POST ${PD}/form-schemas`]: global("global.writeProcessData", () => {
    const id = unique("schema-");
    return { path: `${PD}/form-schemas`, body: { id, formData: formioForm(id) } };
  }),
  [`POST ${PD}/form-submissions/process-definition/:def/start-form`]: global("global.writeProcessData", () => ({
    path: `${PD}/form-submissions/process-definition/order/start-form`,
    body: { id: "f", data: {} },
  })),
  [`POST ${PD}/message-payloads/process-definition/:def/start-message`]: global("global.writeProcessData", () => ({
    path: `${PD}/message-payloads/process-definition/order/start-message`,
    body: { id: "m", data: {} },
  })),
  [`GET ${PD}/:keyspace`]: global("global.readProcessData", () => ({ path: `${PD}/form-scripts` })),
  // a key as one URL-encoded segment ({key}), and the same key with its slashes sent raw (the hidden `*` route)
  [`PUT ${PD}/:keyspace/:key`]: global("global.writeProcessData", () => ({ path: `${PD}/form-scripts/written`, body: { id: "written", formScript: "return 1" } })),
  [`GET ${PD}/:keyspace/:key`]: global("global.readProcessData", () => ({ path: `${PD}/form-scripts/kept` })),
  [`DELETE ${PD}/:keyspace/:key`]: global(
    "global.writeProcessData",
    () => ({ path: `${PD}/form-scripts/doomed` }),
    async (root) => void (await root.processData.put("form-scripts", "doomed", { id: "doomed", formScript: "x" })),
  ),
  [`PUT ${PD}/:keyspace/*`]: global("global.writeProcessData", () => ({ path: `${PD}/form-submissions/process/pi-9/task/written`, body: { id: "written", data: {} } })),
  [`GET ${PD}/:keyspace/*`]: global("global.readProcessData", () => ({ path: `${PD}/form-submissions/process/pi-9/task/kept` })),
  [`DELETE ${PD}/:keyspace/*`]: global(
    "global.writeProcessData",
    () => ({ path: `${PD}/form-submissions/process/pi-9/task/doomed` }),
    async (root) => void (await root.processData.put("form-submissions", "process/pi-9/task/doomed", { id: "doomed", data: {} })),
  ),

  // the whole store's backup and restore (issue 29)
  [`GET ${API}/store/backup`]: { ...global("global.createBackup", () => ({ path: `${API}/store/backup` })), streamed: true },
  [`POST ${API}/store/restore`]: {
    need: {
      kind: "own",
      rule: "needs global.restoreBackup, checked before the body is looked at (403, then 415 for a body that is not a backup; a real restore is test/http/store-backup.test.ts)",
      check: async (c) => {
        const req = { path: `${API}/store/restore`, body: { not: "a backup" } };
        expect((await c.call(undefined, "POST", req)).status).toBe(401);
        expect((await c.call(c.eve, "POST", req)).status).toBe(403);
        await c.grant(`${API}/global`, "global.restoreBackup");
        try {
          expect((await c.call(c.eve, "POST", req)).status).toBe(415);
        } finally {
          await c.call(c.root, "POST", { path: `${API}/global/permissions/revoke`, body: { intent: "global.restoreBackup", identity: "eve" } });
        }
      },
    },
    request: () => ({ path: `${API}/store/restore` }),
  },

  // erasing a data subject (issue 26): the subject's data is a workflowitem's description, made by root
  [`POST ${API}/subjects/:subjectId/erase`]: {
    ...global(
      "global.eraseSubject",
      (f) => ({ path: `${API}/subjects/${f.extra.subject}/erase` }),
      (root, f) => subjectData(root, f),
    ),
    tree: "subproject",
  },
  [`GET ${API}/subjects/:subjectId/erasure`]: {
    ...global(
      "global.eraseSubject",
      (f) => ({ path: `${API}/subjects/${f.extra.subject}/erasure` }),
      async (root, f) => {
        const made = await subjectData(root, f);
        await root.request("POST", `${API}/subjects/${made.subject}/erase`);
        return made;
      },
    ),
    tree: "subproject",
  },

  // the archive
  [`POST ${API}/archive/snapshots`]: global("global.writeArchive", () => ({ path: `${API}/archive/snapshots`, body: { uniqueId: unique("u-"), document: { items: [1] } } })),
  [`GET ${API}/archive/snapshots`]: global("global.readArchive", () => ({ path: `${API}/archive/snapshots?uniqueId=kept` })),
  [`GET ${API}/archive/snapshots/:id`]: {
    ...global("global.readArchive", (f) => ({ path: `${API}/archive/snapshots/${encodeURIComponent(f.extra.id!)}` })),
    setup: async (root) => ({ id: await rootSnapshot(base(), root, unique("read-")) }),
  },
  [`GET ${API}/archive/snapshots/:id/files/:name`]: {
    ...global("global.readArchive", (f) => ({ path: `${API}/archive/snapshots/${encodeURIComponent(f.extra.id!)}/files/notes.txt` })),
    setup: async (root) => ({ id: await rootSnapshot(base(), root, unique("file-"), { name: "notes.txt", text: "hello" }) }),
  },
  [`GET ${API}/archive/files/:hash`]: {
    // By MD5, the alias Imixs clients use (the sha-256 path is the same route).
    ...global("global.readArchive", () => ({ path: `${API}/archive/files/${createHash("md5").update("by hash").digest("hex")}` })),
    setup: async (root) => ({ id: await rootSnapshot(base(), root, unique("hash-"), { name: "h.txt", text: "by hash" }) }),
  },
  [`DELETE ${API}/archive/snapshots/:id`]: {
    ...global("global.writeArchive", (f) => ({ path: `${API}/archive/snapshots/${encodeURIComponent(f.extra.id!)}` })),
    setup: async (root) => ({ id: await rootSnapshot(base(), root, unique("doomed-")) }),
  },
  [`POST ${P}/archive`]: {
    need: { kind: "global", intent: "global.writeArchive" },
    alsoNeeds: [{ kind: "resource", intent: "project.close", on: "project" }],
    tree: "project",
    setup: async (root, f) => void (await root.project(f.p).close()),
    request: (f) => ({ path: `${f.paths.project}/archive` }),
  },
  [`POST ${API}/archive/restore`]: {
    need: { kind: "global", intent: "global.writeArchive" },
    alsoNeeds: [{ kind: "global", intent: "global.createProject" }],
    tree: "project",
    setup: async (root, f) => {
      // Restoring needs to view the archived project by its sealed permissions (else a 404, as for a reader).
      await root.project(f.p).grant("project.viewDetails", "eve");
      await root.project(f.p).close();
      const archived = await root.request<{ snapshot: { id: string } }>("POST", `${f.paths.project}/archive`, { body: { drop: true } });
      return { id: archived.snapshot.id };
    },
    request: (f) => ({ path: `${API}/archive/restore`, body: { snapshotId: f.extra.id } }),
  },

  // resource intents, per level
  ...levelEntries("project", `${API}/projects`, P),
  ...levelEntries("subproject", `${P}/subprojects`, S),
  ...levelEntries("workflowitem", `${S}/workflowitems`, W),
  [`GET ${P}/verify`]: { need: { kind: "resource", intent: "project.viewHistory", on: "project" }, request: (f) => ({ path: `${f.paths.project}/verify` }) },
  [`GET ${P}/checkpoint`]: { need: { kind: "resource", intent: "project.viewHistory", on: "project" }, request: (f) => ({ path: `${f.paths.project}/checkpoint` }) },
  [`GET ${S}/workflowitem-ordering`]: {
    need: { kind: "resource", intent: "subproject.viewDetails", on: "subproject" },
    request: (f) => ({ path: `${f.paths.subproject}/workflowitem-ordering` }),
  },
  [`PUT ${S}/workflowitem-ordering`]: {
    need: { kind: "resource", intent: "subproject.reorderWorkflowitems", on: "subproject" },
    request: (f) => ({ path: `${f.paths.subproject}/workflowitem-ordering`, body: { ordering: ["w"] } }),
  },

  // budget analytics (issue 26, part 4) and exchange rates
  [`GET ${P}/analytics`]: { need: { kind: "resource", intent: "project.viewDetails", on: "project" }, request: (f) => ({ path: `${f.paths.project}/analytics?currency=EUR` }) },
  [`GET ${S}/analytics`]: {
    need: { kind: "resource", intent: "subproject.viewDetails", on: "subproject" },
    request: (f) => ({ path: `${f.paths.subproject}/analytics?currency=EUR` }),
  },
  [`PUT ${API}/exchange-rates`]: global("global.writeExchangeRates", () => ({
    path: `${API}/exchange-rates`,
    body: { rates: [{ from: "EUR", to: "USD", date: "2025-01-02", rate: "1.0321" }] },
  })),
  [`POST ${API}/exchange-rates/ecb`]: {
    need: {
      kind: "own",
      rule: "needs global.writeExchangeRates, checked before the CSV is read (401, 403, then 200 once granted)",
      check: async (c) => {
        const path = `${API}/exchange-rates/ecb`;
        const send = (who: string) =>
          fetch(base() + path, { method: "POST", headers: { authorization: `Bearer ${who}`, "content-type": "text/csv" }, body: "Date,USD\n2025-01-03,1.0299\n" });
        expect((await c.call(undefined, "POST", { path })).status).toBe(401);
        expect((await send(c.eve)).status).toBe(403);
        await c.grant(`${API}/global`, "global.writeExchangeRates");
        try {
          expect((await send(c.eve)).status).toBe(200);
        } finally {
          await c.call(c.root, "POST", { path: `${API}/global/permissions/revoke`, body: { intent: "global.writeExchangeRates", identity: "eve" } });
        }
      },
    },
    request: () => ({ path: `${API}/exchange-rates/ecb` }),
  },
  [`GET ${API}/exchange-rates/:from/:to`]: token(`${API}/exchange-rates/EUR/USD`),
  // (the rate it finds is written in beforeAll)
  [`GET ${API}/exchange-rates/:from/:to/at/:date`]: token(`${API}/exchange-rates/EUR/GBP/at/2025-02-01`),

  // documents of workflowitems
  [`POST ${W}/documents`]: {
    need: { kind: "resource", intent: "workflowitem.update", on: "workflowitem" },
    request: (f) => ({ path: `${f.paths.workflowitem}/documents`, body: { fileName: "spec", link: "https://example.org/spec" } }),
  },
  [`GET ${W}/documents`]: { need: { kind: "resource", intent: "workflowitem.viewDetails", on: "workflowitem" }, request: (f) => ({ path: `${f.paths.workflowitem}/documents` }) },
  [`GET ${W}/documents/:documentId`]: {
    need: { kind: "resource", intent: "workflowitem.viewDetails", on: "workflowitem" },
    setup: async (root, f) => ({ d: await rootDocument(root, f) }),
    request: (f) => ({ path: `${f.paths.workflowitem}/documents/${f.extra.d}` }),
  },
  [`DELETE ${W}/documents/:documentId`]: {
    need: { kind: "resource", intent: "workflowitem.update", on: "workflowitem" },
    setup: async (root, f) => ({ d: await rootDocument(root, f) }),
    request: (f) => ({ path: `${f.paths.workflowitem}/documents/${f.extra.d}` }),
  },
  [`POST ${W}/documents/:documentId/validate`]: {
    need: { kind: "resource", intent: "workflowitem.viewDetails", on: "workflowitem" },
    setup: async (root, f) => ({ d: await rootDocument(root, f) }),
    request: (f) => ({ path: `${f.paths.workflowitem}/documents/${f.extra.d}/validate`, form: () => documentForm("hello") }),
    readsOnly: true,
  },

  // the caller's own notifications
  [`GET ${API}/notifications`]: token(`${API}/notifications`),
  [`GET ${API}/notifications/count`]: token(`${API}/notifications/count`),
  [`POST ${API}/notifications/read`]: { need: { kind: "token" }, request: () => ({ path: `${API}/notifications/read`, body: { all: true } }) },

  // subscriptions (src/subscriptions): the caller's own; an operator's with global.manageSubscriptions
  [`POST ${API}/subscriptions`]: {
    need: {
      kind: "own",
      rule: "needs a valid token and no intent (201: the subscription is the caller's)",
      check: async (c) => {
        const req = { path: `${API}/subscriptions`, body: { name: "mine" } };
        expect((await c.call(undefined, "POST", req)).status).toBe(401);
        const made = await c.call(c.eve, "POST", req);
        expect(made.status).toBe(201);
        expect(made.body).toMatchObject({ subscription: { owner: "eve", name: "mine" } });
      },
    },
    request: () => ({ path: `${API}/subscriptions` }),
  },
  [`GET ${API}/subscriptions`]: token(`${API}/subscriptions`),
  [`GET ${API}/subscriptions/digest`]: token(`${API}/subscriptions/digest`),
  [`GET ${API}/subscriptions/:subscriptionId`]: subscriptionEntry("GET", "", "managed"),
  [`DELETE ${API}/subscriptions/:subscriptionId`]: subscriptionEntry("DELETE", "", "managed"),
  [`GET ${API}/subscriptions/:subscriptionId/events`]: subscriptionEntry("GET", "/events", "owner"),
  [`GET ${API}/subscriptions/:subscriptionId/dead-letters`]: subscriptionEntry("GET", "/dead-letters", "managed"),
  [`POST ${API}/subscriptions/:subscriptionId/dead-letters/:deadLetter/replay`]: subscriptionEntry("POST", "/dead-letters/1/replay", "no letter"),

  // the tenancy hierarchy, served from its declaration
  ...tenancyEntries(),
};

/**
 * A route of one subscription (made by root for the check): its owner's alone ("owner"), or its owner's
 * and an operator's with global.manageSubscriptions ("managed"; "no letter": a dead letter's, none here,
 * so 404 even to them). Anyone else gets the 404 of a subscription that does not exist.
 */
function subscriptionEntry(method: string, suffix: string, who: "owner" | "managed" | "no letter"): Entry {
  const rule =
    who === "owner"
      ? "is its owner's alone: anyone else gets the 404 of a subscription that does not exist"
      : "is its owner's or global.manageSubscriptions's: anyone else gets the 404 of a subscription that does not exist";
  return {
    need: {
      kind: "own",
      rule,
      check: async (c) => {
        const made = await c.call(c.root, "POST", { path: `${API}/subscriptions`, body: { name: unique("sub-") } });
        expect(made.status).toBe(201);
        const req = { path: `${API}/subscriptions/${(made.body as { subscription: { id: string } }).subscription.id}${suffix}` };
        expect((await c.call(undefined, method, req)).status).toBe(401);
        expect((await c.call(c.eve, method, req)).status).toBe(404);
        if (who === "owner") {
          expect((await c.call(c.root, method, req)).status).toBe(200);
          return;
        }
        await c.grant(`${API}/global`, "global.manageSubscriptions");
        try {
          const served = await c.call(c.eve, method, req);
          if (who === "no letter") expect(served.status).toBe(404);
          else expect(served.status, JSON.stringify(served.body)).toBeLessThan(300);
        } finally {
          await c.call(c.root, "POST", { path: `${API}/global/permissions/revoke`, body: { intent: "global.manageSubscriptions", identity: "eve" } });
        }
      },
    },
    request: () => ({ path: `${API}/subscriptions` }),
  };
}

function documentForm(text: string): FormData {
  const form = new FormData();
  form.set("file", new Blob([text]), "notes.txt");
  return form;
}

/** As root: uploads a small document to the fixture's workflowitem; its id. */
async function rootDocument(root: FlowstoreClient, f: Fixture): Promise<string> {
  return (await root.request<{ id: string }>("POST", `${f.paths.workflowitem}/documents`, { body: documentForm("hello") })).id;
}

/** HEAD twins of GET routes are checked with their GET entry. */
function entryOf(route: string): Entry | undefined {
  return MATRIX[route] ?? (route.startsWith("HEAD ") ? MATRIX[`GET ${route.slice(5)}`] : undefined);
}

/** Every record of every partition, as one comparable map. */
async function dump(kv: KvStore): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const kind of ALL_KINDS) {
    for await (const partition of allPartitions(kv, kind)) {
      for await (const e of scanAll(kv, partition)) out.set(`${JSON.stringify(partition)} ${e.keyBytes.toString("hex")}`, e.value.toString("hex"));
    }
  }
  return out;
}

describe("permission matrix", () => {
  const registered: string[] = [];
  let dir: string;
  let kv: KvStore;
  let s: Running;
  let eve: FlowstoreClient;
  let typeIntents: Record<Level, string[]>;

  const call = async (who: string | undefined, method: string, req: Req) => {
    if (req.form) {
      const res = await fetch(s.base + req.path, { method, headers: who ? { authorization: `Bearer ${who}` } : {}, body: req.form() });
      const text = await res.text();
      const type = res.headers.get("content-type") ?? "";
      return { status: res.status, type, body: type.includes("json") && text !== "" ? (JSON.parse(text) as unknown) : text, headers: res.headers };
    }
    return raw(s.base, method, req.path, {
      headers: { ...(who ? { authorization: `Bearer ${who}` } : {}), ...(req.body === undefined ? {} : { "content-type": "application/json" }) },
      body: req.body === undefined ? undefined : JSON.stringify(req.body),
    });
  };

  /** A space with a provider (and its node) and a tenant (with a kms and a content object with a version). */
  async function tenancyFixture(): Promise<Fixture> {
    const [space, provider, tenant] = [unique("sp-"), unique("pr-"), unique("tn-")];
    const paths: Fixture["paths"] = {
      space: `${TEN}/spaces/${space}`,
      provider: `${TEN}/providers/${provider}`,
      node: `${TEN}/providers/${provider}/nodes/n`,
      tenant: `${TEN}/tenants/${tenant}`,
      kms: `${TEN}/tenants/${tenant}/kms/k`,
      contentObject: `${TEN}/tenants/${tenant}/content-objects/c`,
      contentObjectVersion: `${TEN}/tenants/${tenant}/content-objects/c/content-object-versions/v`,
    };
    for (const type of TENANCY_TYPES) {
      const path = paths[type]!;
      const collection = path.slice(0, path.lastIndexOf("/"));
      const parent = TENANCY[type].parent;
      const under = parent === null ? TEN : paths[parent]!;
      const r = await call(s.root.token, "POST", {
        path: under + collection.slice(collection.lastIndexOf("/")),
        body: { id: path.slice(path.lastIndexOf("/") + 1), ...(TENANCY[type].body as object) },
      });
      expect(r.status, `create ${type}: ${JSON.stringify(r.body)}`).toBe(201);
    }
    return { p: "", paths, extra: {} };
  }

  async function fixture(tree: Entry["tree"] = "workflowitem"): Promise<Fixture> {
    if (tree === "tenancy") return tenancyFixture();
    const p = unique("p-");
    const budgets = [{ organization: "Org", value: "1", currencyCode: "EUR" }];
    const paths = { project: `${API}/projects/${p}`, subproject: `${API}/projects/${p}/subprojects/s`, workflowitem: `${API}/projects/${p}/subprojects/s/workflowitems/w` };
    await s.root.projects.create({ id: p, displayName: p, projectedBudgets: budgets });
    if (tree !== "project") await s.root.project(p).subprojects.create({ id: "s", displayName: "s", currency: "EUR", projectedBudgets: budgets });
    if (tree === "workflowitem") await s.root.project(p).subproject("s").workflowitems.create({ id: "w", displayName: "w", amountType: "N/A" });
    return { p, paths, extra: {} };
  }

  /** Every global intent the server's registry holds. */
  const globalIntents = (): readonly string[] => s.app.flowstore.identity.global.intents.list();

  /** Gives eve every intent of the scope but `intent` (as root, through the API). */
  async function grantAllBut(need: Need, f: Fixture | undefined): Promise<void> {
    if (need.kind === "global") {
      for (const i of globalIntents()) if (i !== need.intent) await s.root.globalPermissions.grant(i as GlobalIntent, "eve");
    } else if (need.kind === "resource") {
      for (const i of typeIntents[need.on]) if (i !== need.intent) await grant(need, f!, i);
    } else if (need.kind === "assignee") {
      for (const i of typeIntents[need.on]) await grant({ kind: "resource", intent: i, on: need.on }, f!, i);
    }
  }

  async function grant(need: Need, f: Fixture | undefined, intent: string): Promise<void> {
    if (need.kind === "global") await s.root.globalPermissions.grant(intent as GlobalIntent, "eve");
    else if (need.kind === "resource") {
      const r = await call(s.root.token, "POST", { path: `${f!.paths[need.on]}/permissions/grant`, body: { intent, identity: "eve" } });
      expect(r.status, `grant ${intent}`).toBe(204);
    } else if (need.kind === "assignee") {
      const r = await call(s.root.token, "POST", { path: `${f!.paths[need.on]}/assign`, body: { assignee: "eve" } });
      expect(r.status, "assign eve").toBe(200);
    }
  }

  beforeAll(async () => {
    dir = makeTempDirSync("matrix");
    kv = LmdbKv.open(dir);
    // The web explorer's files: a fixture, so the public UI routes answer whether or not dist/web is built.
    const webRoot = join(dir, "web-fixture");
    mkdirSync(webRoot);
    writeFileSync(join(webRoot, "index.html"), "<!doctype html><title>explorer</title>");
    writeFileSync(join(webRoot, "app.js"), "");
    s = await startServer(kv, { webRoot, onRoute: (r) => registered.push(...[r.method].flat().map((m) => `${m} ${r.url}`)) });
    serverBase = s.base;
    eve = await s.userClient("eve", "eve password");
    await s.root.users.create({ id: "victim", displayName: "V", password: "victim password" });
    await s.root.groups.create({ id: "watchers", displayName: "W" });
    await s.root.processData.put("form-submissions", "process/pi-1/task/t", { id: "t", data: {} });
    await s.root.processData.put("form-scripts", "kept", { id: "kept", formScript: "x" });
    await s.root.processData.put("form-submissions", "process/pi-9/task/kept", { id: "kept", data: {} });
    await rootSnapshot(s.base, s.root, "kept");
    await s.root.exchangeRates.put([{ from: "EUR", to: "GBP", date: "2025-01-02", rate: "0.83" }]);
    const f = await fixture();
    const keys = async (path: string) => Object.keys((await call(s.root.token, "GET", { path: `${path}/permissions` })).body as object);
    const t = await tenancyFixture();
    typeIntents = { project: await keys(f.paths.project!), subproject: await keys(f.paths.subproject!), workflowitem: await keys(f.paths.workflowitem!) } as Record<
      Level,
      string[]
    >;
    for (const type of TENANCY_TYPES) typeIntents[type] = await keys(t.paths[type]!);
  });
  afterAll(async () => {
    await s?.close();
    await kv?.close();
    removeTempDirSync(dir);
  });

  it("has exactly one entry per registered route (a new route fails here until it is in the matrix)", () => {
    expect(registered.length).toBeGreaterThan(50);
    const missing = registered.filter((r) => entryOf(r) === undefined);
    expect(missing, "routes without a matrix entry").toEqual([]);
    const stale = Object.keys(MATRIX).filter((k) => !registered.includes(k));
    expect(stale, "matrix entries without a route").toEqual([]);
  });

  it("knows every intent of every level (the grants below are exact)", () => {
    for (const level of ["project", "subproject", "workflowitem", ...TENANCY_TYPES] as const) {
      for (const [, e] of Object.entries(MATRIX)) {
        if (e.need.kind === "resource" && e.need.on === level) expect(typeIntents[level], e.need.intent).toContain(e.need.intent);
      }
    }
  });

  for (const [route, entry] of Object.entries(MATRIX)) {
    const [method, template] = route.split(" ") as [string, string];
    const head = method === "GET" && !entry.streamed ? `HEAD ${template}` : null;
    const need = entry.need;

    if (need.kind === "public") {
      it(`${route} is public`, async () => {
        const req = entry.request(undefined as never);
        const r = await call(undefined, method, req);
        expect(r.status, route).toBeGreaterThanOrEqual(200);
        expect(r.status, route).toBeLessThan(300);
        if (head) expect((await call(undefined, "HEAD", req)).status, `HEAD ${template}`).toBe(r.status);
      });
      continue;
    }

    if (need.kind === "session") {
      it(`${route} acts on the caller's own session only`, async () => {
        const req = entry.request(undefined as never);
        const id = unique("self-");
        await s.root.users.create({ id, displayName: id, password: "a long password" });
        const login = await call(undefined, "POST", { path: `${API}/auth/token`, body: { username: id, password: "a long password" } });
        expect(login.status).toBe(200);
        const { token, refreshToken } = login.body as { token: string; refreshToken: string };
        if (template.endsWith("/refresh")) {
          // The refresh token is the credential: a made-up one is refused, the session's own is served once.
          expect((await call(undefined, method, { ...req, body: { refreshToken: `${refreshToken}x` } })).status).toBe(401);
          expect((await call(undefined, method, { ...req, body: { refreshToken } })).status).toBe(200);
          expect((await call(undefined, method, { ...req, body: { refreshToken } })).status).toBe(401);
          return;
        }
        expect((await call(undefined, method, req)).status).toBe(401);
        expect((await call(token, method, req)).status).toBe(204);
        expect((await call(token, "GET", { path: `${API}/me` })).status).toBe(401);
      });
      continue;
    }

    if (need.kind === "own") {
      it(`${route} ${need.rule}`, () =>
        need.check({
          call,
          eve: eve.token!,
          root: s.root.token!,
          fixture: () => fixture(),
          grant: async (path, intent) => {
            const r = await call(s.root.token, "POST", { path: `${path}/permissions/grant`, body: { intent, identity: "eve" } });
            expect(r.status, `grant ${intent}`).toBe(204);
          },
          appendLog: async () => {
            await s.app.flowstore.log.tree.appendPending();
          },
        }));
      continue;
    }

    if (need.kind === "scraper") {
      it(`${route} answers the metrics token and root only`, async () => {
        const req = entry.request(undefined as never);
        expect((await call(undefined, method, req)).status).toBe(401);
        expect((await call(eve.token, method, req)).status).toBe(401);
        expect((await call("not-the-metrics-token", method, req)).status).toBe(401);
        expect((await call(s.root.token, method, req)).status).toBe(200);
        expect((await call(METRICS_TOKEN, method, req)).status).toBe(200);
      });
      continue;
    }

    if (need.kind === "governanceFlag") {
      it(`${route} needs a valid token and the parent's governanceDelete flag, no intent`, async () => {
        const f = await fixture(entry.tree);
        const req = entry.request(f);
        expect((await call(undefined, method, req)).status).toBe(401);
        const before = await dump(kv);
        const denied = await call(eve.token, method, req);
        expect(denied.status, JSON.stringify(denied.body)).toBe(403);
        expect(denied.type).toContain("application/problem+json");
        expect(await dump(kv), "the refused request changed the store").toEqual(before);
        expect((await call(s.root.token, "PUT", { path: `${f.paths.space}/governance-flag` })).status).toBe(200);
        expect((await call(eve.token, method, req)).status).toBe(204);
        expect((await call(s.root.token, "GET", { path: req.path.slice(0, -"/governance-delete".length) })).status).toBe(404);
      });
      continue;
    }

    if (need.kind === "token") {
      it(`${route} needs a valid token and no intent`, async () => {
        const req = entry.request(undefined as never);
        expect((await call(undefined, method, req)).status).toBe(401);
        if (entry.streamed) {
          const ctrl = new AbortController();
          const res = await fetch(s.base + req.path, { headers: { authorization: `Bearer ${eve.token}` }, signal: ctrl.signal });
          expect(res.status).toBe(200);
          ctrl.abort();
          await res.body?.cancel().catch(() => undefined);
          return;
        }
        const r = await call(eve.token, method, req);
        expect(r.status, route).toBe(200);
        if (head) {
          expect((await call(undefined, "HEAD", req)).status).toBe(401);
          expect((await call(eve.token, "HEAD", req)).status).toBe(200);
        }
      });
      continue;
    }

    const needs = [need, ...(entry.alsoNeeds ?? [])];
    const what = needs
      .map((n) =>
        n.kind === "global"
          ? `the global intent ${n.intent}`
          : n.kind === "resource"
            ? `${n.intent} on the ${n.on}`
            : n.kind === "assignee"
              ? `being the ${n.on}'s assignee`
              : n.kind,
      )
      .join(" and ");
    it(`${route} refuses a caller with every other intent, changing nothing, and serves it with ${what}`, async () => {
      // Each needed intent is proven necessary on its own: the caller holds all the others (and every
      // other intent of its scope) and is refused; given it too, the caller is served.
      for (const missing of needs) {
        const f = needs.some((n) => n.kind === "resource" || n.kind === "assignee") || entry.tree ? await fixture(entry.tree) : undefined;
        const extra = await entry.setup?.(s.root, f!);
        if (f && extra) f.extra = extra;
        const req = entry.request(f ?? { p: "", paths: {} as Fixture["paths"], extra: extra ?? {} });
        try {
          expect((await call(undefined, method, req)).status, "without a token").toBe(401);
          for (const other of needs) if (other !== missing) await grant(other, f, other.kind === "global" || other.kind === "resource" ? other.intent : "");
          if (missing.kind === "resource") {
            // Holding nothing on the resource (nor viewing its parent), the caller learns nothing: the
            // answer is the one for a resource that does not exist, detail and all (but for the id).
            const at = f!.paths[missing.on]!;
            expect(req.path.startsWith(at), req.path).toBe(true);
            const unknown = await call(eve.token, method, req);
            const absent = await call(eve.token, method, { ...req, path: `${at}-missing${req.path.slice(at.length)}` });
            expect(absent.status, `${route} on a missing resource: ${JSON.stringify(absent.body)}`).toBe(404);
            expect(unknown.status, `${route} on a resource eve does not know of: ${JSON.stringify(unknown.body)}`).toBe(404);
            expect(JSON.stringify(unknown.body)).toBe(JSON.stringify(absent.body).replace(`${at.slice(at.lastIndexOf("/") + 1)}-missing`, at.slice(at.lastIndexOf("/") + 1)));
            if (head) expect((await call(eve.token, "HEAD", req)).status).toBe(404);
          }
          await grantAllBut(missing, f);
          const before = await dump(kv);
          expect(before.size).toBeGreaterThan(0);
          const denied = await call(eve.token, method, req);
          const label = missing.kind === "global" || missing.kind === "resource" ? missing.intent : "";
          expect(denied.status, `${route} without ${label || missing.kind}: ${JSON.stringify(denied.body)}`).toBe(403);
          expect(denied.type).toContain("application/problem+json");
          if (head) expect((await call(eve.token, "HEAD", req)).status).toBe(403);
          expect(await dump(kv), "the refused request changed the store").toEqual(before);

          await grant(missing, f, label);
          const granted = method === "GET" || entry.readsOnly ? undefined : await dump(kv);
          const served = await call(eve.token, method, req);
          expect(served.status, `${route} with ${label}: ${JSON.stringify(served.body)}`).toBeGreaterThanOrEqual(200);
          expect(served.status).toBeLessThan(300);
          if (head) expect((await call(eve.token, "HEAD", req)).status).toBe(served.status);
          // The same comparison sees the write once it is allowed: "unchanged" above is a real check.
          if (granted) expect(await dump(kv), "the served write changed nothing").not.toEqual(granted);
        } finally {
          if (needs.some((n) => n.kind === "global")) for (const i of globalIntents()) await s.root.globalPermissions.revoke(i as GlobalIntent, "eve");
        }
      }
    });
  }
});
