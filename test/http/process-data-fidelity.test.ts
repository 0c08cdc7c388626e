/**
 * Fidelity to the registry platform's BPM interim storage over HTTP (issue 20): the external system's
 * start-form key `lowcode_{processDefinitionKey}_start_form_{uuid}`, a process-instance delete that takes
 * the extra keys the platform passes (its start form) in one call, the platform's field name
 * `x-access-token`, form schemas as the form-schema provider keeps them (create vs update, case-insensitive
 * keys, a Form.io form), and batch signatures registered under the root process instance. One server over
 * LMDB: the keys' rules are the same over every backend.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FlowstoreClient, ProblemError } from "../../src/client/index.js";
import { formioForm as form } from "../process-data/helpers.js";
import { raw, startLmdbServer, type Running } from "./harness.js";

const FS = "/api/v1/process-data/form-submissions";
const PI = "/api/v1/process-data/process-instances";
const SCHEMAS = "/api/v1/process-data/form-schemas";

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

  it("form schemas: create refuses a taken key (409), update is a PUT that needs one (404), keys are case-insensitive", async () => {
    const created = await call("POST", SCHEMAS, { formData: form("Add-Lab-Form") });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.key).toBe("add-lab-form");
    expect(created.body.fields).toMatchObject({ id: "add-lab-form", formData: { name: "add-lab-form", title: "Add a lab" } });

    const again = await call("POST", SCHEMAS, { formData: form("ADD-LAB-FORM") });
    expect(again.status).toBe(409);
    expect(again.body.field).toBe("formData.name");

    for (const key of ["add-lab-form", "Add-Lab-Form", "ADD-LAB-FORM"]) {
      const got = await call("GET", `${SCHEMAS}/${key}`);
      expect(got.status, key).toBe(200);
      expect(got.body.key).toBe("add-lab-form");
    }
    const updated = await call("PUT", `${SCHEMAS}/ADD-lab-form`, { formData: form("add-LAB-form", { title: "Add a laboratory" }) });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect((await call("GET", `${SCHEMAS}/add-lab-form`)).body.fields.formData).toMatchObject({ name: "add-lab-form", title: "Add a laboratory" });
    // the body's name must be the key addressed
    const renamed = await call("PUT", `${SCHEMAS}/add-lab-form`, { formData: form("other-form") });
    expect(renamed.status).toBe(400);
    expect(renamed.body.field).toBe("formData.name");

    const absent = await call("PUT", `${SCHEMAS}/no-such-form`, { formData: form("no-such-form") });
    expect(absent.status).toBe(404);
    expect((await call("GET", `${SCHEMAS}/no-such-form`)).status).toBe(404);

    expect((await call("DELETE", `${SCHEMAS}/Add-Lab-Form`)).status).toBe(204);
    expect((await call("GET", `${SCHEMAS}/add-lab-form`)).status).toBe(404);
    expect((await call("POST", SCHEMAS, { formData: form("add-lab-form") })).status).toBe(201);
  });

  it("form schemas: the body is validated as a Form.io form, the field at fault named; nothing is stored", async () => {
    const cases: [unknown, string][] = [
      [undefined, "formData"],
      [[], "formData"],
      [{ ...form("f1"), name: undefined }, "formData.name"],
      [{ ...form("f1"), name: "" }, "formData.name"],
      [{ ...form("f1"), title: undefined }, "formData.title"],
      [{ ...form("f1"), display: undefined }, "formData.display"],
      [{ ...form("f1"), display: "pdf" }, "formData.display"],
      [{ ...form("f1"), type: "resource" }, "formData.type"],
      [{ ...form("f1"), path: 7 }, "formData.path"],
      [{ ...form("f1"), components: undefined }, "formData.components"],
      [{ ...form("f1"), components: {} }, "formData.components"],
      [{ ...form("f1"), components: [1] }, "formData.components[0]"],
      [{ ...form("f1"), components: [{ key: "a" }] }, "formData.components[0].type"],
      [{ ...form("f1"), components: [{ type: "textfield" }] }, "formData.components[0].key"],
      [{ ...form("f1"), components: [{ type: "panel", key: "p", components: [{ type: "textfield", key: "" }] }] }, "formData.components[0].components[0].key"],
      [{ ...form("f1"), components: [{ type: "columns", key: "c", columns: [{ components: [{ key: "x" }] }] }] }, "formData.components[0].columns[0].components[0].type"],
      [{ ...form("f1"), components: [{ type: "table", key: "t", rows: [[{ components: [{ type: "number" }] }]] }] }, "formData.components[0].rows[0][0].components[0].key"],
    ];
    for (const [formData, field] of cases) {
      const r = await call("POST", SCHEMAS, formData === undefined ? {} : { formData });
      expect(r.status, field).toBe(400);
      expect(r.body.field, JSON.stringify(formData)).toBe(field);
    }
    expect((await call("GET", `${SCHEMAS}/f1`)).status).toBe(404);
    await call("POST", SCHEMAS, { formData: form("f1") });
    const bad = await call("PUT", `${SCHEMAS}/f1`, { formData: { ...form("f1"), components: [{ type: "textfield" }] } });
    expect(bad.status).toBe(400);
    expect(bad.body.field).toBe("formData.components[0].key");
    expect((await call("GET", `${SCHEMAS}/f1`)).body.fields.formData.components).toHaveLength(3);
  });

  it("form schemas through the typed client: create, a 409 on a taken key, update, a 404 on an absent one", async () => {
    const client = new FlowstoreClient({ baseUrl: s.base, token: root });
    const created = await client.processData.createFormSchema(form("Client-Form"));
    expect(created.key).toBe("client-form");
    const taken = await client.processData.createFormSchema(form("client-form")).catch((e: unknown) => e);
    expect(taken).toBeInstanceOf(ProblemError);
    expect((taken as ProblemError).status).toBe(409);
    const updated = await client.processData.updateFormSchema("CLIENT-FORM", form("client-form", { title: "Changed" }));
    expect(updated.fields.formData).toMatchObject({ title: "Changed" });
    const absent = await client.processData.updateFormSchema("nothing", form("nothing")).catch((e: unknown) => e);
    expect((absent as ProblemError).status).toBe(404);
    // and the instance delete takes the platform's extra keys
    const external = `lowcode_client_start_form_${randomUUID()}`;
    await client.processData.put("form-submissions", external, { data: {} });
    await client.processData.put("form-submissions", "process/pi-c/task/t", { data: {} });
    expect(await client.processData.deleteInstance("pi-c", [external])).toEqual({ deleted: 2 });
  });

  it("batch signatures are registered under the root process instance the write names, and go with it", async () => {
    // a child instance's batch signatures, put as the platform does: under the execution's root instance
    const childBatch = (i: number) => `lowcode_child-1_system_signature_ceph_key_${i}`;
    for (const i of [0, 1]) {
      const r = await call("PUT", `${FS}/${childBatch(i)}?processInstanceId=root-1`, { data: { row: i }, signature: `sig-${i}` });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    // a root instance's own batch signature: registered under the instance in its key
    await call("PUT", `${FS}/lowcode_root-1_system_signature_ceph_key_0`, { signature: "own" });
    await call("PUT", `${FS}/process/child-1/task/fill`, { data: {} });

    expect((await call("GET", `${FS}/${childBatch(1)}`)).body.fields).toMatchObject({ signature: "sig-1" });
    const ofRoot = (await call("GET", `${PI}/root-1`)).body.items.map((r: { key: string }) => r.key);
    expect(ofRoot).toEqual([childBatch(0), childBatch(1), "lowcode_root-1_system_signature_ceph_key_0"]);
    const ofChild = (await call("GET", `${PI}/child-1`)).body.items.map((r: { key: string }) => r.key);
    expect(ofChild).toEqual(["process/child-1/task/fill"]);
    const listed = (await call("GET", "/api/v1/process-data/form-submissions?limit=1000")).body.items.map((r: { key: string }) => r.key);
    expect(listed).toEqual(expect.arrayContaining([childBatch(0), childBatch(1)]));

    // the child's delete leaves them; another instance cannot take them as extra keys; the root's delete takes them
    expect((await call("DELETE", `${PI}/child-1`)).body).toEqual({ deleted: 1 });
    expect((await call("GET", `${FS}/${childBatch(0)}`)).status).toBe(200);
    const refused = await call("DELETE", `${PI}/child-1?alsoKeys=${encodeURIComponent(childBatch(0))}`);
    expect(refused.status).toBe(400);
    expect(refused.body.field).toBe("alsoKeys[0]");
    expect((await call("DELETE", `${PI}/root-1`)).body).toEqual({ deleted: 3 });
    for (const i of [0, 1]) expect((await call("GET", `${FS}/${childBatch(i)}`)).status).toBe(404);
    const after = (await call("GET", "/api/v1/process-data/form-submissions?limit=1000")).body.items.map((r: { key: string }) => r.key);
    expect(after).not.toContain(childBatch(0));

    // a record whose key names its owner takes no other; a key no instance owns takes none
    const wrong = await call("PUT", `${FS}/process/pi-x/task/t?processInstanceId=pi-y`, { data: {} });
    expect(wrong.status).toBe(400);
    expect(wrong.body.field).toBe("processInstanceId");
    const none = await call("PUT", `${FS}/lowcode_def_start_form_${randomUUID()}?processInstanceId=pi-y`, { data: {} });
    expect(none.status).toBe(400);
    expect(none.body.field).toBe("processInstanceId");

    // registered anew under another root: the record moves, once
    await call("PUT", `${FS}/${childBatch(5)}?processInstanceId=root-2`, { signature: "a" });
    await call("PUT", `${FS}/${childBatch(5)}?processInstanceId=root-3`, { signature: "b" });
    expect((await call("GET", `${PI}/root-2`)).body.items).toEqual([]);
    expect((await call("GET", `${PI}/root-3`)).body.items.map((r: { fields: { signature: string } }) => r.fields.signature)).toEqual(["b"]);
    expect((await call("DELETE", `${FS}/${childBatch(5)}`)).status).toBe(204);
    expect((await call("GET", `${PI}/root-3`)).body.items).toEqual([]);
  });
});
