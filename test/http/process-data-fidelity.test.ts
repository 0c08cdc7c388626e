/**
 * Fidelity to the registry platform's BPM interim storage over HTTP (issue 20): the external system's
 * start-form key `lowcode_{processDefinitionKey}_start_form_{uuid}`, a process-instance delete that takes
 * the extra keys the platform passes (its start form) in one call, and the platform's field name
 * `x-access-token`. One server over LMDB: the keys' rules are the same over every backend.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { raw, startLmdbServer, type Running } from "./harness.js";

const FS = "/api/v1/process-data/form-submissions";
const PI = "/api/v1/process-data/process-instances";

describe("process data fidelity to the registry platform", () => {
  let s: Running;
  let root: string;

  const call = (method: string, path: string, body?: unknown) =>
    raw(s.base, method, path, {
      headers: { authorization: `Bearer ${root}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  beforeAll(async () => {
    s = await startLmdbServer("pd-fidelity");
    root = s.root.token!;
  });
  afterAll(async () => {
    await s?.close();
  });

  it("accepts the external system's start-form key; no instance owns it", async () => {
    const key = `lowcode_add_lab_process_start_form_${randomUUID()}`;
    const put = await call("PUT", `${FS}/${key}`, { data: { name: "lab" } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect((await call("GET", `${FS}/${key}`)).body.fields).toEqual({ id: key, data: { name: "lab" } });
    expect((await call("GET", "/api/v1/process-data/form-submissions?limit=100")).body.items.map((r: { key: string }) => r.key)).toContain(key);

    const bad: [string, string][] = [
      [`lowcode_add_lab_start_form_${randomUUID().toUpperCase()}`, "uuid"],
      ["lowcode__start_form_" + randomUUID(), "processDefinitionKey"],
    ];
    for (const [k, field] of bad) {
      const r = await call("PUT", `${FS}/${k}`, { data: {} });
      expect(r.status, k).toBe(400);
      expect(r.body.field, k).toBe(field);
    }
  });

  it("deletes an instance's data and the extra keys the platform passes in one call, refusing another instance's key", async () => {
    const external = `lowcode_order_start_form_${randomUUID()}`;
    // A start form whose definition key equals the instance id: not the instance's, and not caught by its delete.
    const lookalike = `lowcode_pi-7_start_form_${randomUUID()}`;
    await call("PUT", `${FS}/${external}`, { data: { a: 1 } });
    await call("PUT", `${FS}/${lookalike}`, { data: { b: 1 } });
    const inner = (await call("POST", `${FS}/process-definition/order/start-form`, { data: {} })).body.key as string;
    await call("PUT", `${FS}/process/pi-7/task/approve`, { data: {} });
    await call("PUT", `${FS}/lowcode_pi-7_child-1_system_signature_ceph_key`, { signature: "s" });
    await call("PUT", `${FS}/process/pi-8/task/approve`, { data: {} });

    const refused = await call("DELETE", `${PI}/pi-7?alsoKeys=${encodeURIComponent(external)}&alsoKeys=${encodeURIComponent("process/pi-8/task/approve")}`);
    expect(refused.status).toBe(400);
    expect(refused.body.field).toBe("alsoKeys[1]");
    expect((await call("GET", `${FS}/process/pi-7/task/approve`)).status).toBe(200);
    expect((await call("GET", `${FS}/${external}`)).status).toBe(200);

    const done = await call("DELETE", `${PI}/pi-7?alsoKeys=${encodeURIComponent(external)}&alsoKeys=${encodeURIComponent(inner)}`);
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body).toEqual({ deleted: 4 });
    for (const gone of [external, inner, "process/pi-7/task/approve", "lowcode_pi-7_child-1_system_signature_ceph_key"]) {
      expect((await call("GET", `${FS}/${gone}`)).status, gone).toBe(404);
    }
    expect((await call("GET", `${FS}/${lookalike}`)).status).toBe(200);
    expect((await call("GET", `${FS}/process/pi-8/task/approve`)).status).toBe(200);
    const listed = (await call("GET", "/api/v1/process-data/form-submissions?limit=100")).body.items.map((r: { key: string }) => r.key);
    expect(listed).toContain(lookalike);
    expect(listed).not.toContain(external);
    expect((await call("DELETE", `${PI}/pi-7?alsoKeys=not%20a%20key`)).body.field).toBe("alsoKeys[0]");
  });

  it("takes the platform's x-access-token as the accessToken field", async () => {
    const put = await call("PUT", `${FS}/process/pi-9/task/sign`, { "x-access-token": "jwt.from.platform", data: {} });
    expect(put.status).toBe(200);
    expect(put.body.fields).not.toHaveProperty("accessToken");
    expect((await call("GET", `${FS}/process/pi-9/task/sign`)).body.fields.accessToken).toBe("jwt.from.platform");
    const both = await call("PUT", `${FS}/process/pi-9/task/sign`, { "x-access-token": "a", accessToken: "b" });
    expect(both.status).toBe(400);
    expect(both.body.field).toBe("accessToken");
  });
});
