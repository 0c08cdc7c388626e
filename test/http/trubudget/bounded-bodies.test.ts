/**
 * Issue 29, finding 4, through a real server on 127.0.0.1: no logged-in user can make the server hold a
 * large body. A multipart file is checked against the caller's permission before a byte of it is read
 * and then streamed into the file store, never buffered; a JSON body carries at most one largest
 * document's worth of base64; the text parts of a form are bounded by the server's body limit; and a
 * body over the server's limit takes one of a few slots (per user, per server) while it is read.
 *
 * The "before a byte is read" claims are shown by answers that arrive while the client is still sending
 * (the request is never ended), not by timing.
 */
import { createHash } from "node:crypto";
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LARGE_BODIES } from "../../../src/http/body-limits.js";
import { expectError, startTruBudget, TB, type Answer, type TbRunning } from "./harness.js";

const BODY_LIMIT = 64 * 1024;
const MAX_DOCUMENT = 2 * 1024 * 1024;
const BOUNDARY = "----flowstore-test-boundary";

/** A multipart upload sent by hand, chunked, left open until `end`: its answer may come before the body is done. */
function openUpload(base: string, token: string, intent: string, fields: Record<string, string>) {
  const url = new URL(`${base}${TB}/${intent}`);
  const req = httpRequest({
    host: url.hostname,
    port: url.port,
    path: url.pathname,
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": `multipart/form-data; boundary=${BOUNDARY}`, "transfer-encoding": "chunked" },
  });
  req.on("error", () => undefined); // the server may close the connection after answering early
  const answer = new Promise<Answer>((resolve, reject) => {
    req.on("response", (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => {
        text += c;
      });
      res.on("end", () => resolve({ status: res.statusCode!, type: String(res.headers["content-type"] ?? ""), body: text ? JSON.parse(text) : text, headers: new Headers() }));
      res.on("error", reject);
    });
  });
  for (const [k, v] of Object.entries(fields)) req.write(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`);
  return {
    answer,
    startFile(name: string, bytes: Buffer) {
      req.write(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="documents"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n`);
      req.write(bytes);
    },
    write(bytes: Buffer) {
      req.write(bytes);
    },
    end() {
      req.end(`\r\n--${BOUNDARY}--\r\n`);
    },
    destroy() {
      req.destroy();
    },
  };
}

describe("bounded request bodies on TruBudget's API", () => {
  let s: TbRunning;
  let mary: string;
  let jane: string;
  let olga: string;
  let ids: { projectId: string; subprojectId: string; workflowitemId: string };
  const docs = async () => (await s.call("workflowitem.viewDetails", { token: mary, query: ids })).body.data.workflowitem.data.documents ?? [];

  beforeAll(async () => {
    s = await startTruBudget(undefined, { bodyLimit: BODY_LIMIT, documents: { maxBytes: MAX_DOCUMENT } });
    [mary, jane, olga] = [await s.user("mary"), await s.user("jane"), await s.user("olga")];
    await s.call("global.grantPermission", { data: { identity: "mary", intent: "global.createProject" } });
    const projectId = (await s.call("global.createProject", { token: mary, data: { project: { displayName: "Uploads" } } })).body.data.project.id;
    const subprojectId = (await s.call("project.createSubproject", { token: mary, data: { projectId, subproject: { displayName: "S", currency: "EUR" } } })).body.data.subproject
      .id;
    const workflowitemId = (await s.call("subproject.createWorkflowitem", { token: mary, data: { projectId, subprojectId, displayName: "W", amountType: "N/A" } })).body.data
      .workflowitem.id;
    ids = { projectId, subprojectId, workflowitemId };
    // olga may see the item but not update it; jane knows nothing of it.
    const { projectId: p, subprojectId: sp } = ids;
    for (const [level, at, intent] of [
      ["project", { projectId: p }, "project.viewDetails"],
      ["subproject", { projectId: p, subprojectId: sp }, "subproject.viewDetails"],
      ["workflowitem", ids, "workflowitem.list"],
    ] as const) {
      const answer = await s.call(`${level}.intent.grantPermission`, { token: mary, data: { ...at, identity: "olga", intent } });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    }
  });
  afterAll(async () => s?.close());

  it("a file from a caller who may not add documents is refused before it is read: the answer comes while the client is still sending", async () => {
    for (const [token, status] of [
      [olga, 403],
      [jane, 404],
    ] as const) {
      const up = openUpload(s.base, token, "v2/workflowitem.update", { apiVersion: "2.0", ...ids, description: "mine" });
      up.startFile("big.bin", Buffer.alloc(256 * 1024, 7));
      const answer = await up.answer; // the request is not ended: the server answered without the rest
      up.destroy();
      expect(answer.status, JSON.stringify(answer.body)).toBe(status);
    }
    expect(await docs()).toEqual([]);
  });

  it("a permitted file larger than the server's body limit is streamed into the file store whole", async () => {
    const bytes = Buffer.alloc(MAX_DOCUMENT, 0).map((_, i) => (i * 31) & 0xff);
    const form = new FormData();
    form.append("apiVersion", "2.0");
    for (const [k, v] of Object.entries(ids)) form.append(k, v);
    form.append("documents", new Blob([bytes]), "plans.bin");
    const res = await fetch(`${s.base}${TB}/v2/workflowitem.update`, { method: "POST", headers: { authorization: `Bearer ${mary}` }, body: form });
    expect(res.status, await res.clone().text()).toBe(200);
    const [doc] = await docs();
    expect(doc).toMatchObject({ fileName: "plans.bin" });
    const dl = await fetch(`${s.base}${TB}/workflowitem.downloadDocument?${new URLSearchParams({ ...ids, documentId: doc.id })}`, { headers: { authorization: `Bearer ${mary}` } });
    const back = Buffer.from(await dl.arrayBuffer());
    expect(back.length).toBe(MAX_DOCUMENT);
    expect(createHash("sha256").update(back).digest("hex")).toBe(createHash("sha256").update(bytes).digest("hex"));
  });

  it("a file over the document limit is 413 and leaves nothing; so is a form whose fields exceed the body limit", async () => {
    const before = await docs();
    const up = openUpload(s.base, mary, "v2/workflowitem.update", { apiVersion: "2.0", ...ids });
    up.startFile("huge.bin", Buffer.alloc(MAX_DOCUMENT + 1024, 1));
    up.end();
    expectError(await up.answer, 413);
    const fields = openUpload(s.base, mary, "v2/workflowitem.update", { apiVersion: "2.0", ...ids, description: "x".repeat(BODY_LIMIT + 1) });
    fields.end();
    expectError(await fields.answer, 413);
    expect(await docs()).toEqual(before);
  });

  it("the form names the item before its files, once", async () => {
    const late = openUpload(s.base, mary, "v2/workflowitem.update", { apiVersion: "2.0", projectId: ids.projectId });
    late.startFile("early.bin", Buffer.from("early"));
    late.end();
    expectError(await late.answer, 400, "subprojectId");
    const twice = openUpload(s.base, mary, "v2/workflowitem.update", { apiVersion: "2.0", ...ids });
    twice.startFile("a.bin", Buffer.from("a"));
    twice.write(Buffer.from(`\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="workflowitemId"\r\n\r\nother\r\n`));
    twice.end();
    expectError(await twice.answer, 400, "workflowitemId");
    expect((await docs()).map((d: { fileName: string }) => d.fileName)).not.toContain("a.bin");
  });

  it("a JSON body over one document's base64 beside the body limit is refused by its length, before it is read", async () => {
    const url = new URL(`${s.base}${TB}/workflowitem.update`);
    const answer = await new Promise<number>((resolve) => {
      const req = httpRequest({
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        headers: { authorization: `Bearer ${mary}`, "content-type": "application/json", "content-length": String(2 * 1024 ** 3) },
      });
      req.on("error", () => undefined);
      req.on("response", (res) => {
        res.resume();
        resolve(res.statusCode!);
        req.destroy();
      });
      req.write("{");
    });
    expect(answer).toBe(413);
  });

  it("bodies over the server's limit take a slot while they are read: one per user, a few per server", async () => {
    expect(LARGE_BODIES).toEqual({ perUser: 1, perServer: 2 });
    const first = openUpload(s.base, mary, "v2/workflowitem.update", { apiVersion: "2.0", ...ids });
    first.startFile("slow.bin", Buffer.alloc(16 * 1024, 3));
    // mary's second large body while her first is being read
    const second = openUpload(s.base, mary, "v2/workflowitem.update", { apiVersion: "2.0", ...ids });
    const refused = await second.answer;
    second.destroy();
    expectError(refused, 429);
    // another user takes the server's second slot; a third user finds none
    const other = openUpload(s.base, olga, "v2/workflowitem.update", { apiVersion: "2.0", ...ids });
    other.write(Buffer.alloc(1));
    const third = openUpload(s.base, jane, "v2/workflowitem.update", { apiVersion: "2.0", ...ids });
    const full = await third.answer;
    third.destroy();
    expectError(full, 503);
    // Once answered, the slots are free again: mary's upload is taken.
    first.end();
    expect((await first.answer).status).toBe(200);
    other.destroy();
    const again = openUpload(s.base, mary, "v2/workflowitem.update", { apiVersion: "2.0", ...ids });
    again.startFile("again.bin", Buffer.from("again"));
    again.end();
    expect((await again.answer).status).toBe(200);
  });
});
