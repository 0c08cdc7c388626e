/**
 * The document a real server serves, judged by tools nobody here wrote: Redocly CLI (its recommended
 * rules) and Spectral (`spectral:oas`) find no error in it. Both are configured to make an error of an
 * operation without an operationId, summary, description or tag, so a route added without them (a
 * summary is the one thing the rules in src/http/openapi.ts cannot derive) fails here. The conventions
 * every operation gets from those rules are checked operation by operation as well.
 */
import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryKv } from "../../src/kv/memory.js";
import { raw, startServer, type Running } from "./harness.js";
import { answerOf } from "./openapi-spec.js";
import { makeTempDirSync, removeTempDirSync } from "../support/temp-dir.js";

const run = promisify(execFile);
/** The linters are test/package.json's dependencies (scripts/extras.mjs installs them before the suite). */
const TOOLS = join(import.meta.dirname, "..", "node_modules", ".bin");
type Json = Record<string, any>;

const REDOCLY_CONFIG = `extends:
  - recommended
rules:
  operation-summary: error
  operation-operationId: error
  operation-description: error
  operation-4xx-response: error
  operation-2xx-response: error
  security-defined: error
`;
const SPECTRAL_RULESET = `extends: ["spectral:oas"]
rules:
  operation-operationId: error
  operation-operationId-unique: error
  operation-description: error
  operation-tags: error
  operation-tag-defined: error
  operation-success-response: error
`;

interface Findings {
  errors: string[];
  warnings: number;
}

/** Errors by file (each tool runs once over every file: starting them is most of their time). */
type Report = Map<string, Findings>;
const findings = (report: Report, file: string): Findings => report.get(file) ?? { errors: [], warnings: 0 };

async function redocly(dir: string, specs: string[]): Promise<Report> {
  const out = join(dir, "redocly.json");
  // Exits 1 when it finds an error: the report is what counts.
  await run(join(TOOLS, "redocly"), ["lint", ...specs, "--config", join(dir, "redocly.yaml"), "--format=json", "--max-problems=10000"], { maxBuffer: 64 << 20 })
    .then((r) => writeFileSync(out, r.stdout))
    .catch((e: { stdout?: string }) => writeFileSync(out, e.stdout ?? "{}"));
  // One JSON report per file, in the order given, written one after the other.
  const reports = readFileSync(out, "utf8")
    .split(/(?<=\})\s*(?=\{\s*"totals")/)
    .map((r) => JSON.parse(r) as { problems: { severity: string; ruleId: string; message: string; location: { pointer: string }[] }[] });
  expect(reports).toHaveLength(specs.length);
  const byFile: Report = new Map();
  specs.forEach((file, i) => {
    const problems = reports[i]!.problems;
    byFile.set(file, {
      errors: problems.filter((p) => p.severity === "error").map((p) => `${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`),
      warnings: problems.filter((p) => p.severity === "warn").length,
    });
  });
  return byFile;
}

async function spectral(dir: string, specs: string[]): Promise<Report> {
  const out = join(dir, "spectral.json");
  await run(join(TOOLS, "spectral"), ["lint", ...specs, "--ruleset", join(dir, "spectral.yaml"), "--format=json", "--output", out, "--quiet"]).catch(() => undefined);
  const results = JSON.parse(readFileSync(out, "utf8")) as { code: string; severity: number; message: string; path: string[]; source: string }[];
  const byFile: Report = new Map(specs.map((f) => [f, { errors: [], warnings: 0 }]));
  for (const r of results) {
    const file = specs.find((s) => r.source.endsWith(basename(s))) ?? "?";
    const f = findings(byFile, file);
    if (r.severity === 0) f.errors.push(`${r.code} ${r.path.join(".")}: ${r.message}`);
    else if (r.severity === 1) f.warnings++;
    byFile.set(file, f);
  }
  return byFile;
}

describe("the OpenAPI document, linted", () => {
  let s: Running;
  let doc: Json;
  let dir: string;

  beforeAll(async () => {
    s = await startServer(new MemoryKv());
    doc = (await raw(s.base, "GET", "/openapi.json")).body;
    dir = makeTempDirSync("lint");
    writeFileSync(join(dir, "openapi.json"), JSON.stringify(doc));
    writeFileSync(join(dir, "redocly.yaml"), REDOCLY_CONFIG);
    writeFileSync(join(dir, "spectral.yaml"), SPECTRAL_RULESET);
  });
  afterAll(async () => {
    await s?.close();
    if (dir) removeTempDirSync(dir);
  });

  it("has no error for Redocly (recommended) nor Spectral (spectral:oas); an operation without summary, id, description or tag fails both", async () => {
    const spec = join(dir, "openapi.json");
    // The same document with one operation stripped of what the rules cannot derive, or derive.
    const broken = structuredClone(doc);
    const op = broken.paths["/api/v1/projects"].get;
    for (const k of ["summary", "operationId", "description", "tags"]) delete op[k];
    const bad = join(dir, "broken.json");
    writeFileSync(bad, JSON.stringify(broken));
    const [r, sp] = await Promise.all([redocly(dir, [spec, bad]), spectral(dir, [spec, bad])]);
    const [rOk, sOk] = [findings(r, spec), findings(sp, spec)];
    console.log(`redocly: ${rOk.errors.length} errors, ${rOk.warnings} warnings; spectral: ${sOk.errors.length} errors, ${sOk.warnings} warnings`);
    expect(rOk.errors).toEqual([]);
    expect(sOk.errors).toEqual([]);
    const rules = (f: Findings) => f.errors.map((e) => e.split(" ")[0]);
    expect(rules(findings(r, bad))).toEqual(expect.arrayContaining(["operation-summary", "operation-operationId", "operation-description"]));
    expect(rules(findings(sp, bad))).toEqual(expect.arrayContaining(["operation-operationId", "operation-description", "operation-tags"]));
  });

  it("gives every operation its id, tag, description, security and the statuses of its kind", () => {
    const ids = new Set<string>();
    let operations = 0;
    for (const [path, methods] of Object.entries<Json>(doc.paths)) {
      for (const [method, op] of Object.entries<Json>(methods)) {
        const where = `${method.toUpperCase()} ${path}`;
        operations++;
        expect(op.operationId, where).toMatch(/^[a-z][A-Za-z0-9]+$/);
        expect(ids.has(op.operationId), `${where}: ${op.operationId} twice`).toBe(false);
        ids.add(op.operationId);
        expect(op.summary, where).toBeTruthy();
        expect(op.description, where).toBeTruthy();
        expect(op.tags?.length, where).toBeGreaterThan(0);
        expect(Array.isArray(op.security), where).toBe(true);
        const statuses = Object.keys(op.responses);
        expect(statuses, where).toEqual(expect.arrayContaining(["400", "503"]));
        expect(answerOf(doc, op.responses["503"])!.headers?.["Retry-After"], where).toBeDefined();
        if (op.security.length > 0) expect(statuses, where).toContain("401");
        if (["post", "put", "patch"].includes(method)) expect(statuses, where).toEqual(expect.arrayContaining(["413", "415"]));
        if (Object.keys(op.responses).some((st) => answerOf(doc, op.responses[st])!.description === "Default Response")) throw new Error(`${where}: an undescribed answer`);
        const headers = (op.parameters ?? []).filter((p: Json) => p.in === "header").map((p: Json) => p.name);
        if (op.responses["412"]) expect(headers, where).toContain("If-Match");
        if (op.responses["304"]) expect(headers, where).toContain("If-None-Match");
      }
    }
    expect(operations).toBeGreaterThan(100);
    expect(doc.security).toEqual([{ bearer: [] }]);
    for (const [path, method] of [
      ["/health", "get"],
      ["/ready", "get"],
      ["/api/v1/auth/token", "post"],
      ["/api/v1/auth/refresh", "post"],
    ] as const) {
      expect(doc.paths[path][method].security, path).toEqual([]);
    }
    // /metrics takes a bearer credential: the metrics token or root's access token (issue 29, finding 14).
    expect(doc.paths["/metrics"].get.security).toEqual([{ bearer: [] }]);
  });

  it("declares the conditional-request headers and the created resource's Location", () => {
    const get = doc.paths["/api/v1/projects/{projectId}"].get;
    expect(answerOf(doc, get.responses["200"])!.headers.ETag).toBeDefined();
    expect(get.responses["304"]).toBeDefined();
    const patch = doc.paths["/api/v1/projects/{projectId}"].patch;
    expect(patch.parameters.map((p: Json) => p.name)).toContain("If-Match");
    expect(answerOf(doc, patch.responses["412"])!.content["application/problem+json"].schema).toEqual({ $ref: "#/components/schemas/Problem" });
    expect(answerOf(doc, doc.paths["/api/v1/projects"].post.responses["201"])!.headers.Location).toBeDefined();
    expect(doc.paths["/api/v1/events"].get.parameters.map((p: Json) => p.name.toLowerCase())).toContain("last-event-id");
    // Closing and archiving need no body.
    expect(doc.paths["/api/v1/projects/{projectId}/subprojects/{subprojectId}/workflowitems/{workflowitemId}/close"].post.requestBody.required).toBe(false);
    expect(doc.paths["/api/v1/projects/{projectId}/archive"].post.requestBody.required).toBe(false);
    expect(doc.paths["/api/v1/projects/{projectId}/close"].post.requestBody).toBeUndefined();
  });
});
