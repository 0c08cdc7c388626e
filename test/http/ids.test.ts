/**
 * Issue 16 finding 5: ids `.` and `..`, control, bidirectional-formatting and zero-width characters are
 * refused with a 400 naming the field, in every id of every type; `…/workflowitems/../assign` sent raw
 * (no URL normalization) can no longer act on the subproject.
 */
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ValidationError } from "../../src/errors.js";
import { parseSnapshotId, validateUniqueId } from "../../src/archive/ids.js";
import { checkId, checkOrganization } from "../../src/identity/ids.js";
import { validatePart } from "../../src/process-data/keys.js";
import { assertId } from "../../src/resources/model/schema.js";
import { MemoryKv } from "../../src/kv/memory.js";
import { raw, startServer, type Running } from "./harness.js";

const API = "/api/v1";
const BAD = [".", "..", "a\u0007b", "a\u202Eb", "a\u2066b", "a\u200Fb", "a\u061Cb", "a\u200Bb", "a\u200Db", "a\u2060b", "\uFEFFa"];

/** A request sent as written: Node's http client does not remove dot segments, as curl and fetch do. */
function rawPath(base: string, method: string, path: string, token: string, body: unknown): Promise<{ status: number; body: any }> {
  const url = new URL(base);
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "content-length": Buffer.byteLength(payload) },
      },
      (res) => {
        let text = "";
        res
          .setEncoding("utf8")
          .on("data", (c: string) => (text += c))
          .on("end", () => resolve({ status: res.statusCode!, body: text === "" ? "" : JSON.parse(text) }));
      },
    );
    req.on("error", reject).end(payload);
  });
}

describe("every id of every type refuses unsafe characters, naming the field", () => {
  const refuses = (check: (v: string) => unknown, field: string) => {
    for (const v of BAD) {
      if (field === "userId" && v.length > 2) continue; // identity ids are ASCII only, so only the dot segments are new there
      let caught: unknown;
      try {
        check(v);
      } catch (e) {
        caught = e;
      }
      expect(caught, JSON.stringify(v)).toBeInstanceOf(ValidationError);
      expect((caught as ValidationError).field).toBe(field);
    }
  };
  it("resource ids", () => refuses((v) => assertId(v, "workflowitemId"), "workflowitemId"));
  it("identity ids", () => refuses((v) => checkId(v, "userId"), "userId"));
  it("archive unique ids and snapshot ids", () => {
    refuses((v) => validateUniqueId(v, "uniqueId"), "uniqueId");
    refuses((v) => parseSnapshotId(`${v}-1`, "snapshotId"), "snapshotId");
  });
  it("process-data key parts", () => refuses((v) => validatePart("formKey", v), "formKey"));
  // Found by the 10,000-request fuzz run: a user's organization (it names projected budgets) took a bidi override.
  it("a user's organization", () => refuses((v) => checkOrganization(v), "organization"));
  it("keeps ordinary ids, dots inside included", () => {
    for (const v of ["a.b", "...", "ünï", "😀", "a b"]) expect(() => assertId(v)).not.toThrow();
    expect(checkId("a.b", "userId")).toBe("a.b");
  });
});

describe("over HTTP", () => {
  let s: Running;
  let root: string;
  const call = (method: string, path: string, body?: unknown) =>
    raw(s.base, method, API + path, {
      headers: { authorization: `Bearer ${root}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  // One server for the block: neither test changes what the other reads.
  beforeAll(async () => {
    s = await startServer(new MemoryKv());
    root = s.root.token!;
    expect((await call("POST", "/projects", { id: "p", displayName: "P" })).status).toBe(201);
    expect((await call("POST", "/projects/p/subprojects", { id: "s", displayName: "S", currency: "EUR" })).status).toBe(201);
    expect((await s.root.users.create({ id: "mallory", displayName: "M", password: "mallory password" })).id).toBe("mallory");
  });
  afterAll(() => s.close());

  it("a workflowitem id `..` cannot be created, nor a project with a bidi override", async () => {
    const dots = await call("POST", "/projects/p/subprojects/s/workflowitems", { id: "..", displayName: "W", amountType: "N/A" });
    expect(dots.status).toBe(400);
    expect(dots.body.field).toBe("body.id");
    const bidi = await call("POST", "/projects", { id: "abc\u202Egpj.exe", displayName: "X" });
    expect(bidi.status).toBe(400);
    expect(bidi.body.field).toBe("body.id");
    expect((await call("POST", "/users", { id: "..", displayName: "D", password: "dot dot password" })).body.field).toBe("body.id");
  });

  it("`…/workflowitems/../assign` sent raw answers 400 and leaves the subproject's assignee alone", async () => {
    const before = (await call("GET", "/projects/p/subprojects/s")).body.data.assignee;
    const r = await rawPath(s.base, "POST", `${API}/projects/p/subprojects/s/workflowitems/../assign`, root, { assignee: "mallory" });
    expect(r.status).toBe(400);
    expect(r.body.field).toMatch(/^params\./);
    expect((await call("GET", "/projects/p/subprojects/s")).body.data.assignee).toBe(before);
  });
});
