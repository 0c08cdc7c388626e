import { SYSTEM } from "../../src/access/actor.js";
import { afterEach, beforeEach, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { ConflictError, NotFoundError, TooLargeError, type ValidationError } from "../../src/errors.js";
import { keys } from "../../src/process-data/keys.js";
import type { ProcessData } from "../../src/process-data/service.js";
import { compareTuples } from "../../src/kv/tuple.js";
import { forEachBackend, type BackendHandle } from "../conformance/backends.js";
import { collect, formioForm, rawDump, service } from "./helpers.js";

const FS = "bpm-form-submissions";

async function errorOf(p: Promise<unknown>): Promise<{ error: unknown; field?: string }> {
  try {
    await p;
  } catch (error) {
    return { error, field: (error as ValidationError).field };
  }
  throw new Error("expected a rejection");
}

const byKey = (a: string, b: string) => compareTuples([a], [b]);

forEachBackend((backend) => {
  let h: BackendHandle;
  let pd: ProcessData;
  beforeEach(async () => {
    h = await backend.create();
    pd = await service(h.kv);
  });
  afterEach(async () => {
    await h.destroy();
  });

  it("puts, gets, replaces and deletes a record of each keyspace", async () => {
    const pid = randomUUID();
    const task = keys.task(pid, "Activity_1");
    const put = await pd.put(SYSTEM, FS, task, { data: { name: "Ada", n: 1 }, signature: "sig", accessToken: "tok" });
    expect(put.fields).toEqual({ id: task, data: { name: "Ada", n: 1 }, signature: "sig" });
    const got = await pd.get(SYSTEM, "form-submissions", task);
    expect(got.fields).toEqual({ id: task, accessToken: "tok", data: { name: "Ada", n: 1 }, signature: "sig" });
    expect(got.expiresAt).toBeNull();

    await pd.put(SYSTEM, FS, task, { data: [1, 2] });
    expect((await pd.get(SYSTEM, FS, task)).fields).toEqual({ id: task, data: [1, 2] });

    await pd.put(SYSTEM, "bpm-message-payloads", keys.startMessage("proc", randomUUID()), { data: { a: 1 } });
    await pd.createFormSchema(SYSTEM, { formData: formioForm("Add-Lab") });
    expect((await pd.get(SYSTEM, "bpm-form-schemas", "ADD-LAB")).fields).toEqual({ id: "add-lab", formData: formioForm("add-lab", { path: "add-lab" }) });
    await pd.put(SYSTEM, "bpm-form-schemas", "add-lab", { formData: formioForm("add-lab", { title: "Changed" }) });
    expect((await pd.get(SYSTEM, "bpm-form-schemas", "add-lab")).fields.formData).toMatchObject({ title: "Changed" });
    expect((await errorOf(pd.put(SYSTEM, "bpm-form-schemas", "absent", { formData: formioForm("absent") }))).error).toBeInstanceOf(NotFoundError);
    const taken = await errorOf(pd.createFormSchema(SYSTEM, { formData: formioForm("ADD-lab") }));
    expect(taken.error).toBeInstanceOf(ConflictError);
    expect(taken.field).toBe("formData.name");
    await pd.put(SYSTEM, "bpm-form-scripts", "lab.js", { formScript: "return 1;" });
    expect((await pd.get(SYSTEM, "bpm-form-scripts", "lab.js")).fields).toEqual({ id: "lab.js", formScript: "return 1;" });

    expect(await pd.delete(SYSTEM, FS, task)).toBe(true);
    expect(await pd.delete(SYSTEM, FS, task)).toBe(false);
    await expect(pd.get(SYSTEM, FS, task)).rejects.toBeInstanceOf(NotFoundError);
    expect((await pd.list(SYSTEM, FS)).items).toEqual([]);
    expect(await pd.delete(SYSTEM, "bpm-form-scripts", "lab.js")).toBe(true);
    await expect(pd.get(SYSTEM, "bpm-form-scripts", "lab.js")).rejects.toBeInstanceOf(NotFoundError);
  });

  it("generates a uuid key for start forms and start messages", async () => {
    const a = await pd.createStartForm(SYSTEM, "add-lab", { data: { x: 1 }, accessToken: "t" });
    const b = await pd.createStartForm(SYSTEM, "add-lab", { data: { x: 2 } });
    expect(a.key).toBe(`process-definition/add-lab/start-form/${a.uuid}`);
    expect(a.uuid).not.toBe(b.uuid);
    expect((await pd.get(SYSTEM, FS, a.key)).fields).toMatchObject({ id: a.uuid, data: { x: 1 }, accessToken: "t" });
    const m = await pd.createStartMessage(SYSTEM, "add-lab", { data: { msg: true } });
    expect(m.key).toBe(`process-definition/add-lab/start-message/${m.uuid}`);
    expect((await pd.get(SYSTEM, "bpm-message-payloads", m.key)).fields).toEqual({ id: m.uuid, data: { msg: true } });
    await pd.createStartForm(SYSTEM, "other", { data: {} });
    const forms = await pd.listStartForms(SYSTEM, "add-lab");
    expect(forms.items.map((i) => i.key)).toEqual([a.key, b.key].sort(byKey));
    expect(forms.items.every((i) => !("accessToken" in i.fields))).toBe(true);
    expect((await pd.listStartMessages(SYSTEM, "add-lab")).items.map((i) => i.key)).toEqual([m.key]);
  });

  it("refuses bad fields naming the field, and writes nothing", async () => {
    const pid = randomUUID();
    const task = keys.task(pid, "t");
    expect((await errorOf(pd.put(SYSTEM, FS, task, { data: 1, extra: 2 }))).field).toBe("extra");
    expect((await errorOf(pd.put(SYSTEM, FS, task, "text"))).field).toBe("fields");
    expect((await errorOf(pd.put(SYSTEM, FS, task, { accessToken: 5 }))).field).toBe("accessToken");
    expect((await errorOf(pd.put(SYSTEM, FS, task, { signature: {} }))).field).toBe("signature");
    expect((await errorOf(pd.put(SYSTEM, FS, task, { data: 1 }, { ttlMs: -5 }))).field).toBe("ttlMs");
    expect((await errorOf(pd.put(SYSTEM, FS, task, { data: 1n }))).field).toBe("data");
    expect((await errorOf(pd.put(SYSTEM, "bpm-message-payloads", keys.startMessage("p", randomUUID()), { signature: "s" }))).field).toBe("signature");
    expect((await errorOf(pd.createFormSchema(SYSTEM, {}))).field).toBe("formData");
    expect((await errorOf(pd.createFormSchema(SYSTEM, { formData: [] }))).field).toBe("formData");
    expect((await errorOf(pd.createFormSchema(SYSTEM, { formData: { ...formioForm("f"), components: undefined } }))).field).toBe("formData.components");
    expect((await errorOf(pd.createFormSchema(SYSTEM, { formData: { ...formioForm("f"), components: [1] } }))).field).toBe("formData.components[0]");
    expect((await errorOf(pd.createFormSchema(SYSTEM, { id: "g", formData: formioForm("f") }))).field).toBe("id");
    expect((await errorOf(pd.put(SYSTEM, "bpm-form-scripts", "s.js", { formScript: 42 }))).field).toBe("formScript");
    const big = await errorOf(pd.put(SYSTEM, "bpm-form-scripts", "s.js", { formScript: "x".repeat(256 * 1024 + 1) }));
    expect(big.error).toBeInstanceOf(TooLargeError);
    expect((big.error as TooLargeError).limit).toBe(256 * 1024);
    expect((await errorOf(pd.put(SYSTEM, FS, "process/a/b/task/t", {}))).field).toBe("key");
    expect((await errorOf(pd.get(SYSTEM, FS, "process/a%2Fb/task/\u0000"))).field).toBe("taskDefinitionKey");
    expect((await errorOf(pd.list(SYSTEM, "nope"))).field).toBe("keyspace");
    expect((await errorOf(pd.list(SYSTEM, FS, { limit: 0 }))).field).toBe("limit");
    expect((await errorOf(pd.list(SYSTEM, FS, { cursor: "!!" }))).field).toBe("cursor");
    expect((await errorOf(pd.list(SYSTEM, FS, { cursor: Buffer.from('{"s":"x"}').toString("base64url") }))).field).toBe("cursor");
    expect((await errorOf(pd.deleteProcessInstance(SYSTEM, "a/b"))).field).toBe("processInstanceId");
    expect(await rawDump(h.kv)).toEqual([]);
  });

  it("lists a keyspace in key order across buckets, page by page, without tokens", async () => {
    const written: string[] = [];
    for (let i = 0; i < 60; i++) {
      const pid = randomUUID();
      const k = [keys.task(pid, `t${i % 3}`), keys.signature(randomUUID(), pid), keys.batchSignature(pid, i), keys.startForm(`def${i % 4}`, randomUUID())][i % 4]!;
      await pd.put(SYSTEM, FS, k, { data: { i }, accessToken: `secret-${i}` });
      written.push(k);
    }
    await pd.createFormSchema(SYSTEM, { formData: formioForm("other-keyspace") });
    const expected = [...written].sort(byKey);
    for (const limit of [1, 7, 100]) {
      const { items, pages } = await collect((cursor) => pd.list(SYSTEM, FS, { cursor, limit }));
      expect(items.map((r) => r.key)).toEqual(expected);
      expect(items.every((r) => r.fields.id !== undefined && !("accessToken" in r.fields))).toBe(true);
      expect(pages).toBeGreaterThanOrEqual(Math.ceil(60 / limit));
    }
    const schemas = await pd.list(SYSTEM, "form-schemas");
    expect(schemas.items.map((r) => r.key)).toEqual(["other-keyspace"]);
    expect(schemas.nextCursor).toBeNull();
  });

  it("lists by process instance and signatures, and deletes an instance's records only", async () => {
    const root = randomUUID();
    const child = randomUUID();
    const other = randomUUID();
    const mine = [keys.task(root, "a"), keys.task(root, "b"), keys.signature(root, child), keys.batchSignature(root, 0), keys.batchSignature(root, 2)];
    const theirs = [keys.task(child, "a"), keys.batchSignature(child, 1), keys.task(other, "x"), keys.signature(other, root)];
    for (const k of [...mine, ...theirs]) await pd.put(SYSTEM, FS, k, { data: { k }, accessToken: "t" });
    const start = await pd.createStartForm(SYSTEM, "def", { data: {} });

    const listed = await collect((cursor) => pd.listByProcessInstance(SYSTEM, root, { cursor, limit: 2 }));
    expect(listed.items.map((r) => r.key)).toEqual([...mine].sort(byKey));
    expect(listed.items.every((r) => !("accessToken" in r.fields))).toBe(true);
    expect((await pd.listSignatures(SYSTEM, root)).items.map((r) => r.key)).toEqual(
      [keys.signature(root, child), keys.batchSignature(root, 0), keys.batchSignature(root, 2)].sort(byKey),
    );

    expect(await pd.deleteProcessInstance(SYSTEM, root)).toEqual({ deleted: mine.length });
    for (const k of mine) await expect(pd.get(SYSTEM, FS, k)).rejects.toBeInstanceOf(NotFoundError);
    for (const k of theirs) expect((await pd.get(SYSTEM, FS, k)).fields.id).toBe(k);
    expect((await pd.listByProcessInstance(SYSTEM, root)).items).toEqual([]);
    const all = await collect((cursor) => pd.list(SYSTEM, FS, { cursor, limit: 3 }));
    expect(all.items.map((r) => r.key)).toEqual([...theirs, start.key].sort(byKey));
    // Nothing of the instance is left in storage: no record, no pointer.
    const raw = await rawDump(h.kv);
    for (const k of mine) expect(raw.filter((r) => r.entry.key.includes(k))).toEqual([]);
    expect(await pd.deleteProcessInstance(SYSTEM, root)).toEqual({ deleted: 0 });
  });

  it("stores keys whose every part has the longest allowed size", async () => {
    const id = (c: string) => c.repeat(63) + "abc"; // 255 UTF-8 bytes, no "_" or "/"
    const root = id("ж");
    const pid = id("ђ");
    const long = [
      keys.task(pid, "т".repeat(127) + "x"),
      keys.signature(root, pid),
      keys.batchSignature(pid, Number.MAX_SAFE_INTEGER),
      keys.startForm("д".repeat(127) + "x", randomUUID()),
    ];
    for (const k of long) await pd.put(SYSTEM, FS, k, { data: 1, accessToken: "t" }, { ttlMs: 1000 });
    await pd.createFormSchema(SYSTEM, { formData: formioForm("ф".repeat(127) + "x") }, { ttlMs: 1000 });
    for (const k of long) expect((await pd.get(SYSTEM, FS, k)).key).toBe(k);
    expect((await collect((cursor) => pd.list(SYSTEM, FS, { cursor, limit: 2 }))).items.map((r) => r.key)).toEqual([...long].sort(byKey));
    expect((await pd.deleteProcessInstance(SYSTEM, pid)).deleted).toBe(2);
    expect((await pd.deleteProcessInstance(SYSTEM, root)).deleted).toBe(1);
    expect(await pd.sweepExpired(Date.UTC(2030, 0, 1))).toMatchObject({ removed: 2 });
  });

  it("exports records without tokens unless asked", async () => {
    const pid = randomUUID();
    await pd.put(SYSTEM, FS, keys.task(pid, "t"), { accessToken: "jwt-abc", data: 1 });
    await pd.put(SYSTEM, "bpm-form-scripts", "s.js", { formScript: "x" });
    const plain = [];
    for await (const r of pd.export(SYSTEM)) plain.push(r);
    expect(plain.map((r) => r.key)).toEqual([keys.task(pid, "t"), "s.js"]);
    expect(JSON.stringify(plain)).not.toContain("jwt-abc");
    const withTokens = [];
    for await (const r of pd.export(SYSTEM, { includeAccessTokens: true })) withTokens.push(r);
    expect(withTokens[0]!.fields).toMatchObject({ accessToken: "jwt-abc" });
  });
});
