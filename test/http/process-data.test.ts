import { afterAll, beforeAll, expect, it } from "vitest";
import { forEachBackend, httpBackends, type BackendHandle } from "../conformance/backends.js";
import { raw, startServer, type Running } from "./harness.js";
import { formioForm } from "../process-data/helpers.js";

const API = "/api/v1";

forEachBackend((backend) => {
  let h: BackendHandle;
  let s: Running;
  let root: string;
  const call = (token: string, method: string, path: string, body?: unknown) =>
    raw(s.base, method, API + path, {
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  // One server per backend for the file: the tests use keys and users of their own.
  beforeAll(async () => {
    h = await backend.create();
    s = await startServer(h.kv);
    root = s.root.token!;
  });
  afterAll(async () => {
    await s.close();
    await h.destroy();
  });

  it("stores, reads, lists and deletes process data by its key patterns; tokens only on a single get", async () => {
    const put = await call(root, "PUT", "/process-data/form-submissions/process/pi-1/task/approve", {
      id: "r1",
      accessToken: "secret.jwt.token",
      data: { ok: true },
      signature: "sig",
    });
    expect(put.status).toBe(200);
    expect(put.body.fields).not.toHaveProperty("accessToken");
    const got = await call(root, "GET", "/process-data/form-submissions/process/pi-1/task/approve");
    expect(got.body.fields).toMatchObject({ id: "r1", accessToken: "secret.jwt.token", data: { ok: true } });
    await call(root, "PUT", "/process-data/bpm-form-submissions/lowcode_pi-1_system_signature_ceph_key_0", { id: "b0", signature: "s" });
    const created = await call(root, "POST", "/process-data/form-submissions/process-definition/order/start-form", { id: "sf", data: { x: 1 } });
    expect(created.status).toBe(201);
    expect(created.body.key).toMatch(/^process-definition\/order\/start-form\/[0-9a-f-]{36}$/);
    const msg = await call(root, "POST", "/process-data/message-payloads/process-definition/order/start-message", { id: "m", data: {} });
    expect(msg.status).toBe(201);
    const list = await call(root, "GET", "/process-data/form-submissions?limit=10");
    expect(list.body.items.map((r: { key: string }) => r.key)).toHaveLength(3);
    expect(JSON.stringify(list.body)).not.toContain("secret.jwt.token");
    const instance = await call(root, "GET", "/process-data/process-instances/pi-1");
    expect(instance.body.items).toHaveLength(2);
    expect((await call(root, "DELETE", "/process-data/process-instances/pi-1")).body).toEqual({ deleted: 2 });
    expect((await call(root, "GET", "/process-data/form-submissions/process/pi-1/task/approve")).status).toBe(404);
    expect((await call(root, "POST", "/process-data/form-schemas", { id: "order-form", formData: formioForm("order-form") })).status).toBe(201);
    expect((await call(root, "PUT", "/process-data/form-schemas/order-form", { id: "order-form", formData: formioForm("order-form") })).status).toBe(200);
    expect((await call(root, "POST", "/process-data/form-schemas", { formData: { ...formioForm("bad-form"), components: undefined } })).status).toBe(400);
    expect((await call(root, "DELETE", "/process-data/form-schemas/order-form")).status).toBe(204);
    expect((await call(root, "DELETE", "/process-data/form-schemas/order-form")).status).toBe(404);
  });

  it("refuses bad keys and callers without the process-data intents", async () => {
    for (const path of [
      "/process-data/form-submissions/process//task/t",
      "/process-data/form-submissions/process/a%2Fb/task/t",
      "/process-data/form-submissions/nothing-like-a-pattern",
      "/process-data/unknown-keyspace/x",
      "/process-data/form-submissions/process/p%01/task/t",
    ]) {
      const r = await call(root, "PUT", path, { id: "x" });
      expect(r.status, path).toBe(400);
      expect(r.type).toContain("application/problem+json");
    }
    const jane = (await s.userClient("jane")).token!;
    expect((await call(jane, "GET", "/process-data/form-submissions")).status).toBe(403);
    expect((await call(jane, "PUT", "/process-data/form-scripts/s", { id: "s", formScript: "x" })).status).toBe(403);
    await call(root, "POST", "/global/permissions/grant", { intent: "global.readProcessData", identity: "jane" });
    expect((await call(jane, "GET", "/process-data/form-submissions")).status).toBe(200);
    expect((await call(jane, "DELETE", "/process-data/process-instances/p")).status).toBe(403);
  });
}, httpBackends);
