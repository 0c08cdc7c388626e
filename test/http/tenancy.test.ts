/**
 * The tenancy hierarchy over HTTP, served from its declaration alone (routes/declared.ts): created,
 * listed, cascade-deleted and verified through a real server over LMDB, and bad input refused as
 * problems naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KvStore } from "../../src/kv/contract.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { layout } from "../../src/resources/model/layout.js";
import { locate } from "../../src/resources/model/ref.js";
import { tenancySchema } from "../../src/tenancy/schema.js";
import { raw, startServer, type Running } from "./harness.js";
import { makeTempDirSync, removeTempDirSync } from "../support/temp-dir.js";

const T = "/api/v1/tenancy";
const HASH = "b".repeat(64);

describe("tenancy over HTTP", () => {
  let dir: string;
  let kv: KvStore;
  let s: Running;
  let gov: string;

  const call = (method: string, path: string, body?: unknown, token = gov, headers: Record<string, string> = {}) =>
    raw(s.base, method, T + path, {
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const created = async (path: string, body: unknown) => {
    const r = await call("POST", path, body);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r;
  };
  const ids = async (path: string) => ((await call("GET", path)).body.items as { id: string }[]).map((i) => i.id);

  beforeAll(async () => {
    dir = makeTempDirSync("tenancy-http");
    kv = LmdbKv.open(dir);
    s = await startServer(kv);
    gov = (await s.userClient("gov")).token!;
    await s.root.globalPermissions.grant("global.createSpace", "gov");
  });
  afterAll(async () => {
    await s?.close();
    await kv?.close();
    removeTempDirSync(dir);
  });

  it("creates the whole hierarchy: nested types under their parent, flat children addressed by their global id", async () => {
    const space = await created("/spaces", { id: "s1", name: "Space one" });
    expect(space.body).toMatchObject({ id: "s1", type: "space", data: { name: "Space one" }, meta: { version: 1, createdBy: "gov" } });
    expect(space.headers.get("etag")).toBe('"1"');
    expect(space.headers.get("location")).toBe(`${T}/spaces/s1`);

    const tenant = await created("/spaces/s1/tenants", { id: "t1", name: "Tenant one" });
    expect(tenant.headers.get("location")).toBe(`${T}/tenants/t1`);
    await created("/spaces/s1/tenants", { id: "t2", name: "Tenant two" });
    await created("/spaces/s1/providers", { id: "pr1", name: "Provider" });
    const node = await created("/providers/pr1/nodes", { id: "n1", endpoint: "https://node.example" });
    expect(node.headers.get("location")).toBe(`${T}/providers/pr1/nodes/n1`);
    await created("/tenants/t1/kms", { id: "k1", keyRef: "vault:key/1" });
    await created("/tenants/t1/content-objects", { id: "c1", name: "Contract" });
    const version = await created("/tenants/t1/content-objects/c1/content-object-versions", { id: "v1", hash: HASH, size: 42 });
    expect(version.headers.get("location")).toBe(`${T}/tenants/t1/content-objects/c1/content-object-versions/v1`);

    expect(await ids("/spaces")).toEqual(["s1"]);
    expect(await ids("/spaces/s1/tenants")).toEqual(["t1", "t2"]);
    expect(await ids("/spaces/s1/providers")).toEqual(["pr1"]);
    expect(await ids("/providers/pr1/nodes")).toEqual(["n1"]);
    expect(await ids("/tenants/t1/kms")).toEqual(["k1"]);
    expect(await ids("/tenants/t1/content-objects/c1/content-object-versions")).toEqual(["v1"]);

    const got = await call("GET", "/tenants/t1/content-objects/c1");
    expect(got.body).toMatchObject({ id: "c1", type: "contentObject", data: { name: "Contract" } });
    const patched = await call("PATCH", "/tenants/t1/content-objects/c1", { description: "signed" }, gov, { "if-match": '"1"' });
    expect(patched.status).toBe(200);
    expect(patched.headers.get("etag")).toBe('"2"');
    expect((await call("PATCH", "/tenants/t1/content-objects/c1", { name: "stale" }, gov, { "if-match": '"1"' })).status).toBe(412);

    const history = await call("GET", "/tenants/t1/content-objects/c1/history?order=desc");
    expect(history.body.items.map((e: { type: string }) => e.type)).toEqual(["contentObject.updated", "contentObject.created"]);
    expect((await call("GET", "/tenants/t1/permissions")).body["tenant.createKms"]).toEqual(["gov"]);
  });

  it("verifies the hash chain of each partition owner (spaces, providers, tenants)", async () => {
    for (const path of ["/spaces/s1", "/tenants/t1", "/providers/pr1"]) {
      const r = await call("GET", `${path}/verify`);
      expect(r.status).toBe(200);
      expect(r.body.ok).toBe(true);
      expect(r.body.checked).toBeGreaterThan(0);
    }
    // Nested types live in their owner's partition: verify is the owner's.
    expect((await call("GET", "/tenants/t1/kms/k1/verify")).status).toBe(404);
  });

  it("deleting a tenant removes its kms, content objects and versions; deleting a space sweeps its tenants", async () => {
    expect((await call("DELETE", "/tenants/t2")).status).toBe(204);
    expect(await ids("/spaces/s1/tenants")).toEqual(["t1"]);

    await created("/spaces", { id: "s2", name: "Space two" });
    await created("/spaces/s2/tenants", { id: "t3", name: "Tenant three" });
    await created("/tenants/t3/kms", { id: "k3", keyRef: "vault:key/3" });
    await created("/tenants/t3/content-objects", { id: "c3", name: "Doc" });
    await created("/tenants/t3/content-objects/c3/content-object-versions", { id: "v3", hash: HASH, size: 1 });
    expect((await call("DELETE", "/tenants/t3", undefined, gov, { "if-match": '"1"' })).status).toBe(204);
    for (const gone of ["/tenants/t3", "/tenants/t3/kms/k3", "/tenants/t3/content-objects/c3", "/tenants/t3/content-objects/c3/content-object-versions/v3"]) {
      expect((await call("GET", gone)).status, gone).toBe(404);
    }

    // Providers are counted (the next test): the space's delete waits until they are gone; tenants are swept.
    expect((await call("DELETE", "/spaces/s1")).status).toBe(409);
    expect((await call("DELETE", "/providers/pr1")).status).toBe(204);
    expect((await call("DELETE", "/spaces/s1")).status).toBe(204);
    for (const gone of ["/spaces/s1", "/tenants/t1", "/tenants/t1/kms/k1", "/tenants/t1/content-objects/c1", "/providers/pr1", "/providers/pr1/nodes/n1"]) {
      expect((await call("GET", gone)).status, gone).toBe(404);
    }
    expect(await ids("/spaces")).toEqual(["s2"]);
  });

  it("counted providers: the space keeps their count in the same commits, refuses its delete while it is above 0, and verify checks it", async () => {
    await created("/spaces", { id: "sc", name: "Counted" });
    await created("/spaces/sc/providers", { id: "pa", name: "A" });
    await created("/spaces/sc/providers", { id: "pb", name: "B" });
    await created("/providers/pb/nodes", { id: "n", endpoint: "https://b.example" });
    const refused = await call("DELETE", "/spaces/sc");
    expect(refused.status).toBe(409);
    expect(refused.type).toContain("application/problem+json");
    expect(refused.body.field).toBe("children");
    expect(refused.body.detail).toContain("2 provider children");
    expect(await ids("/spaces/sc/providers")).toEqual(["pa", "pb"]);

    // The count is state the log rebuilds: verify compares it with the replay, so a tampered count fails.
    const countKey = layout.childCount(locate(tenancySchema, { type: "space", ids: ["sc"] }), "provider");
    expect(JSON.parse((await kv.get(["space", "sc"], countKey))!.value.toString("utf8"))).toBe(2);
    expect((await call("GET", "/spaces/sc/verify")).body.ok).toBe(true);
    await kv.commit(["space", "sc"], [{ type: "put", key: countKey, value: Buffer.from("1") }]);
    expect((await call("GET", "/spaces/sc/verify")).body.ok).toBe(false);
    await kv.commit(["space", "sc"], [{ type: "put", key: countKey, value: Buffer.from("2") }]);

    expect((await call("DELETE", "/providers/pa")).status).toBe(204);
    const still = await call("DELETE", "/spaces/sc");
    expect(still.status).toBe(409);
    expect(still.body.detail).toContain("1 provider child");
    expect((await call("DELETE", "/providers/pb")).status).toBe(204);
    expect(await kv.get(["space", "sc"], countKey)).toBeUndefined();
    expect((await call("GET", "/spaces/sc/verify")).body.ok).toBe(true);
    expect((await call("DELETE", "/spaces/sc")).status).toBe(204);
    for (const gone of ["/spaces/sc", "/providers/pa", "/providers/pb/nodes/n"]) expect((await call("GET", gone)).status, gone).toBe(404);
  });

  it("governance delete: while the space carries governanceDelete, its providers and tenants are deleted with no other intent", async () => {
    const eve = (await s.userClient("gina")).token!;
    await created("/spaces", { id: "sg", name: "Governed" });
    await created("/spaces/sg/tenants", { id: "tg1", name: "One" });
    await created("/spaces/sg/tenants", { id: "tg2", name: "Two" });
    await created("/tenants/tg1/kms", { id: "k", keyRef: "vault:k" });
    await created("/spaces/sg/providers", { id: "pg", name: "P" });

    // Without the flag, a caller without intents is refused; so is setting the flag without space.setGovernanceDelete.
    expect((await call("POST", "/tenants/tg1/governance-delete", undefined, eve)).status).toBe(403);
    // (Eve holds nothing on the space: setting its flag answers as for a space that does not exist.)
    expect((await call("PUT", "/spaces/sg/governance-flag", undefined, eve)).status).toBe(404);
    // The flag is owned by its route: a generic update may not set it.
    const patched = await call("PATCH", "/spaces/sg", { governanceDelete: true });
    expect(patched.status).toBe(400);
    expect(patched.body.field).toBe("body.governanceDelete");

    const flagged = await call("PUT", "/spaces/sg/governance-flag");
    expect(flagged.status).toBe(200);
    expect(flagged.body.data).toEqual({ name: "Governed", governanceDelete: true });
    expect(flagged.headers.get("etag")).toBe('"2"');

    expect((await call("POST", "/tenants/tg1/governance-delete", undefined, eve)).status).toBe(204);
    expect((await call("POST", "/providers/pg/governance-delete", undefined, eve)).status).toBe(204);
    for (const gone of ["/tenants/tg1", "/tenants/tg1/kms/k", "/providers/pg"]) expect((await call("GET", gone)).status, gone).toBe(404);
    expect(await ids("/spaces/sg/tenants")).toEqual(["tg2"]);
    expect(await ids("/spaces/sg/providers")).toEqual([]);

    const cleared = await call("DELETE", "/spaces/sg/governance-flag");
    expect(cleared.status).toBe(200);
    expect(cleared.body.data).toEqual({ name: "Governed" });
    expect((await call("POST", "/tenants/tg2/governance-delete", undefined, eve)).status).toBe(403);
    expect((await call("GET", "/tenants/tg2")).status).toBe(200);
    const types = (await call("GET", "/spaces/sg/history")).body.items.map((e: { type: string }) => e.type);
    expect(types).toEqual(expect.arrayContaining(["space.governance_delete_set", "space.child_removed"]));
    expect((await call("GET", "/spaces/sg/verify")).body.ok).toBe(true);
  });

  it("refuses callers without the intent, and bad input as 400 problems naming the field", async () => {
    const eve = (await s.userClient("eve")).token!;
    await created("/spaces", { id: "s9", name: "Nine" });
    // eve holds nothing on s9: it answers as a missing space would (no existence oracle).
    const denied = await call("POST", "/spaces/s9/tenants", { name: "x" }, eve);
    expect(denied.status).toBe(404);
    expect(denied.type).toContain("application/problem+json");
    expect((await call("POST", "/spaces", { name: "x" }, eve)).status).toBe(403);

    const cases: [string, string, unknown, string][] = [
      ["POST", "/spaces", { name: "" }, "body.name"],
      ["POST", "/spaces", { name: "x", color: "red" }, "body.color"],
      ["POST", "/spaces", {}, "body.name"],
      ["POST", "/spaces/s9/tenants", { name: 7 }, "body.name"],
      ["POST", "/spaces/s9/providers", { id: "x".repeat(129), name: "x" }, "body.id"],
      ["PATCH", "/spaces/s9", {}, "body"],
      ["POST", "/spaces/s9/tenants", { id: "t9", name: "ok" }, ""],
      ["POST", "/tenants/t9/content-objects", { id: "c9", name: "ok" }, ""],
      ["POST", "/tenants/t9/content-objects/c9/content-object-versions", { hash: "not a hash", size: 1 }, "body.hash"],
      ["POST", "/tenants/t9/content-objects/c9/content-object-versions", { hash: HASH, size: -1 }, "body.size"],
      ["GET", "/spaces?limit=0", undefined, "query.limit"],
      ["GET", "/tenants/t9/history?order=sideways", undefined, "query.order"],
      ["POST", "/spaces/s9/permissions/grant", { intent: "space.viewDetails", identity: "nobody" }, "identity"],
      ["POST", "/spaces/s9/permissions/grant", { intent: "project.viewDetails", identity: "eve" }, "intent"],
    ];
    for (const [method, path, body, field] of cases) {
      const r = await call(method, path, body);
      if (field === "") {
        expect(r.status, `${method} ${path}`).toBe(201);
        continue;
      }
      expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBe(400);
      expect(r.type).toContain("application/problem+json");
      expect(r.body.field, `${method} ${path}`).toBe(field);
    }
  });
});
