/**
 * Fuzz test of the HTTP server (issue 9, item 5; DESIGN.md "Reliability"): thousands of generated
 * requests, built from the server's own route table (its OpenAPI document), against a real server on
 * 127.0.0.1 over LMDB. Every non-GET request carries at least one defect that must get it rejected
 * (a missing, forged or expired token; an id that is awkward, too long or absent; a malformed, mistyped,
 * oversized or wrongly typed body; a bad If-Match), with random query strings and headers on top.
 *
 * On top, issue 16's rules: ids holding `.`, `..`, control, bidi-override (U+202E …) or zero-width
 * (U+200B …) characters, in every id position (every path parameter, process-data key parts, and the id
 * fields of bodies), and bodies nested deeper than the 64-level limit (to ~3,000 levels, arrays and
 * objects, inside fields that take free-form JSON), must all be refused with a 4xx.
 *
 * Asserted: no 5xx and no dropped connection; every 4xx is application/problem+json with its status in
 * the body; no non-GET request is accepted; the server still serves afterwards; and the store's raw
 * bytes (every key, value and version in the LMDB environment) are exactly what they were before.
 *
 * Seeded and reproducible: FLOWSTORE_FUZZ_SEED=<seed> (printed), FLOWSTORE_FUZZ_RUNS=<count>.
 */
import { Agent, request } from "node:http";
import { connect } from "node:net";
import fc from "fast-check";
import { SignJWT } from "jose";
import { afterAll, beforeAll, expect, it } from "vitest";
import { GUARD_PARTITION } from "../../src/identity/records.js";
import { LmdbKv } from "../../src/kv/lmdb.js";
import { encode } from "../../src/kv/tuple.js";
import { raw, SECRET, startServer, type Running } from "../http/harness.js";
import { makeTempDirSync, removeTempDirSync } from "../support/temp-dir.js";

const SEED = Number(process.env.FLOWSTORE_FUZZ_SEED ?? 20260303);
/** `npm test` runs 3,000 (10,000 take minutes on a small machine); `npm run soak` runs 10,000. */
const RUNS = Number(process.env.FLOWSTORE_FUZZ_RUNS ?? 3000);
const CONCURRENCY = 8;
const BODY_LIMIT = 1024 * 1024;

// ------------------------------------------------------------------------------------------ fixture

/** Ids that exist, per path parameter: a path defect must never name one of them. */
const EXISTING: Record<string, string[]> = {
  projectId: ["p1", "p2"],
  subprojectId: ["s1"],
  workflowitemId: ["w1", "w2"],
  userId: ["root", "alice", "bob"],
  groupId: ["grp"],
  organization: ["Ministry"],
  currencyCode: ["EUR"],
  keyspace: ["form-submissions", "form-schemas"],
  pid: ["pi-1"],
  def: ["order"],
  id: ["snapshot-1"],
  name: ["a.txt"],
};

/**
 * The path parameters whose awkward values must be refused: resource and identity ids. Process-data
 * key parts and archive names are free text by design (any character but "/"), so a strange value
 * there is not a defect.
 */
const ID_PARAMS = new Set(["projectId", "subprojectId", "workflowitemId", "userId", "groupId", "organization", "currencyCode"]);
const idParams = (route: { params: readonly string[] }): string[] => route.params.filter((p) => ID_PARAMS.has(p));
/** Body fields that name an id (or hold ids): issue 16's id rule applies to them. */
const BODY_ID_FIELDS = new Set(["id", "identity", "assignee", "userId", "members", "ordering", "organization"]);

/** Existing values of a path parameter; a parameter of a route added later gets a plain id. */
const existing = (param: string): string[] => EXISTING[param] ?? ["x1"];

let dir: string;
let kv: LmdbKv;
let s: Running;
let tokens: { root: string; alice: string; bad: string[] };
let before: string[] = [];
let p1: Awaited<ReturnType<typeof raw>>;

async function jwt(claims: { sub?: string; iss?: string; exp?: number }, secret: Uint8Array = SECRET, alg = "HS256"): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  let b = new SignJWT({})
    .setProtectedHeader({ alg, typ: "JWT" })
    .setIssuedAt(now - 10)
    .setIssuer(claims.iss ?? "flowstore");
  if (claims.sub !== undefined) b = b.setSubject(claims.sub);
  b = b.setExpirationTime(claims.exp ?? now + 3600);
  return b.sign(secret);
}

const b64url = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");

async function call(method: string, path: string, body?: unknown, token = tokens?.root ?? s.root.token!): Promise<any> {
  const r = await raw(s.base, method, path, {
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (r.status >= 300) throw new Error(`setup ${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

async function login(username: string, password: string): Promise<string> {
  const r = await raw(s.base, "POST", "/api/v1/auth/token", { headers: { "content-type": "application/json" }, body: JSON.stringify({ username, password }) });
  return r.body.token as string;
}

/** The encoded name of the login guard's partition kind: a key holding it is the guard's (identity/records.ts). */
const GUARD = encode([GUARD_PARTITION[0]!]);

/**
 * Every key, value and version of the LMDB environment, as hex: the data set, byte for byte; the login
 * guard's counters aside (a failed log-in is counted in the store by design: identity/login-guard.ts).
 */
function snapshot(): string[] {
  const out: string[] = [];
  for (const { key, value, version } of kv.raw.getRange({ versions: true })) {
    if (key.includes(GUARD)) continue;
    out.push(`${key.toString("hex")} ${value.toString("hex")} ${version}`);
  }
  return out;
}

beforeAll(async () => {
  dir = makeTempDirSync("fuzz");
  kv = LmdbKv.open(dir);
  s = await startServer(kv, { bodyLimit: BODY_LIMIT });
  const root = s.root.token!;
  tokens = { root, alice: "", bad: [] };
  await call("POST", "/api/v1/users", { id: "alice", displayName: "Alice", password: "alice password" });
  await call("POST", "/api/v1/users", { id: "bob", displayName: "Bob", password: "bob password" });
  await call("POST", "/api/v1/groups", { id: "grp", displayName: "Group", members: ["alice"] });
  await call("POST", "/api/v1/projects", { id: "p1", displayName: "P1", projectedBudgets: [{ organization: "Ministry", value: "1000.00", currencyCode: "EUR" }] });
  await call("POST", "/api/v1/projects", { id: "p2", displayName: "P2" });
  await call("POST", "/api/v1/projects/p1/subprojects", { id: "s1", displayName: "S1", currency: "EUR", workflowMode: "ordered" });
  await call("POST", "/api/v1/projects/p1/subprojects/s1/workflowitems", { id: "w1", displayName: "W1", amountType: "N/A" });
  await call("POST", "/api/v1/projects/p1/subprojects/s1/workflowitems", { id: "w2", displayName: "W2", amountType: "allocated", amount: "10.00", currency: "EUR" });
  await call("POST", "/api/v1/projects/p1/permissions/grant", { intent: "project.viewDetails", identity: "alice" });
  tokens.alice = await login("alice", "alice password");
  const bob = await login("bob", "bob password");
  await call("POST", "/api/v1/users/bob/disable");

  const now = Math.floor(Date.now() / 1000);
  const [head, payload] = root.split(".");
  const claims = JSON.parse(Buffer.from(payload!, "base64url").toString()) as Record<string, unknown>;
  tokens.bad = [
    `Bearer ${await jwt({ sub: "root" }, new TextEncoder().encode("another secret that is long enough 0123456789"))}`, // forged
    `Bearer ${await jwt({ sub: "root", exp: now - 60 })}`, // expired
    `Bearer ${await jwt({ sub: "ghost" })}`, // unknown user
    `Bearer ${await jwt({ sub: "system" })}`, // the system actor's name
    `Bearer ${await jwt({ sub: "root", iss: "elsewhere" })}`, // wrong issuer
    `Bearer ${await jwt({})}`, // no subject
    `Bearer ${await jwt({ sub: "root" }, SECRET, "HS512")}`, // an algorithm the server does not accept
    `Bearer ${b64url({ alg: "none", typ: "JWT" })}.${b64url({ ...claims })}.`, // alg none
    `Bearer ${head}.${b64url({ ...claims, sub: "alice" })}.${root.split(".")[2]}`, // payload swapped under root's signature
    `Bearer ${root.slice(0, -2)}${root.endsWith("AA") ? "BB" : "AA"}`, // signature tampered
    `Bearer ${bob}`, // a disabled user's token
    `Bearer ${root} ${root}`,
    `Bearer ${"A".repeat(5000)}`,
    "Bearer",
    "Bearer ",
    `Basic ${Buffer.from("root:root password 123").toString("base64")}`,
    `Token ${root}`,
    root,
    "",
  ];
  // The data set every fuzzed request must leave untouched.
  before = snapshot();
  p1 = await raw(s.base, "GET", "/api/v1/projects/p1", { headers: { authorization: `Bearer ${root}` } });
});

afterAll(async () => {
  await s?.close();
  await kv?.close();
  removeTempDirSync(dir);
});

// ------------------------------------------------------------------------------------- route table

interface Route {
  readonly method: string;
  readonly template: string;
  readonly params: readonly string[];
  readonly body?: { readonly props: Record<string, any>; readonly required: readonly string[]; readonly minProperties: number };
  readonly authenticated: boolean;
  /** The route reads If-Match. */
  readonly ifMatch: boolean;
}

function routeTable(doc: any): Route[] {
  const routes: Route[] = [];
  for (const [template, ops] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(ops)) {
      // a body registered as a component is a $ref to it (src/http/components.ts)
      const given = op.requestBody?.content?.["application/json"]?.schema;
      const schema = typeof given?.$ref === "string" ? doc.components?.schemas?.[given.$ref.split("/").pop()] : given;
      const m = method.toUpperCase();
      routes.push({
        method: m,
        template,
        params: [...template.matchAll(/\{(\w+)\}/g)].map((x) => x[1]!),
        body: schema ? { props: schema.properties ?? {}, required: schema.required ?? [], minProperties: schema.minProperties ?? 0 } : undefined,
        authenticated: template.startsWith("/api/v1/") && template !== "/api/v1/auth/token",
        ifMatch:
          m === "PATCH" ||
          (m === "DELETE" && /\{(?:project|subproject|workflowitem)Id\}$/.test(template)) ||
          template.endsWith("/assign") ||
          (m === "PUT" && template.endsWith("/workflowitem-ordering")),
      });
    }
  }
  return routes;
}

// -------------------------------------------------------------------------------------- generators

interface Req {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body?: string | Buffer;
  /** What makes it wrong (for the report). */
  readonly defect: string;
}

const UNRESERVED = /[A-Za-z0-9\-._~!$&'()*+,;=:@]/;
/** Percent-encodes every byte of the UTF-8 encoding except unreserved characters (raw) or all of them. */
function pct(s: string, keep: RegExp | null = UNRESERVED): string {
  let out = "";
  for (const ch of s) {
    if (keep && ch.length === 1 && keep.test(ch)) out += ch;
    else for (const b of Buffer.from(ch, "utf8")) out += `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

function safeDecode(seg: string): string | null {
  try {
    return decodeURIComponent(seg);
  } catch {
    return null;
  }
}

const AWKWARD = [
  "",
  " ",
  "  ",
  "a b",
  " p1",
  "p1 ",
  "P1",
  "p1\u0000",
  ".",
  "..",
  "...",
  "a/b",
  "a\\b",
  "a:b",
  "a?b",
  "a#b",
  "%",
  "%25",
  "100%",
  "\u0000",
  "\n",
  "\t",
  "\r\n",
  "\u007f",
  "\u200b",
  "\ufeff",
  "é",
  "😀",
  "𝕏",
  "\ud800",
  "\udfff",
  "_workflows",
  "s1_workflows",
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "hasOwnProperty",
  "null",
  "undefined",
  "NaN",
  "0",
  "-1",
  "1e999",
  "<script>alert(1)</script>",
  "' OR 1=1 --",
  "${7*7}",
  "{{7*7}}",
  "../../etc/passwd",
  "system",
  "*",
  "x".repeat(128),
  "x".repeat(129),
  "é".repeat(100),
  "😀".repeat(64),
  "x".repeat(513),
  "y".repeat(4000),
];

const badIdArb: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...AWKWARD), weight: 4 },
  { arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 24 }), weight: 2 },
  { arbitrary: fc.string({ unit: "grapheme", minLength: 1, maxLength: 24 }), weight: 1 },
  { arbitrary: fc.string({ minLength: 100, maxLength: 700 }), weight: 1 },
);

/** A path segment for a bad id, in one of several encodings, never decoding to an existing id. */
function badSegmentArb(param: string): fc.Arbitrary<string> {
  return fc
    .tuple(badIdArb, fc.constantFrom("encoded", "raw", "double", "broken"), fc.constantFrom("%", "%G1", "%E0%A4%A", "%zz", "%%", "%0", "%C0%AF", "%ED%A0%80"))
    .map(([id, how, broken]) => {
      let seg = how === "encoded" ? pct(id, null) : how === "raw" ? pct(id) : how === "double" ? pct(pct(id, null), null) : pct(id) + broken;
      if (how === "raw" && (seg === "." || seg === "..")) seg = pct(seg, null); // dot segments are the client's to resolve
      const decoded = safeDecode(seg);
      if (existing(param).includes(seg) || (decoded !== null && existing(param).includes(decoded))) seg += "-x";
      return seg;
    });
}

/** Ids issue 16 refuses everywhere: dot segments, control, bidi-override and zero-width characters. */
const ID_RULE = [
  ".",
  "..",
  "\u0000",
  "a\u0000b",
  "\u0007",
  "x\ny",
  "\u001b[31m",
  "\u007f",
  "\u0085",
  "\u009b",
  "\u202e",
  "a\u202eb",
  "\u202d",
  "\u202a",
  "\u2066x\u2069",
  "\u061c",
  "\u200e",
  "\u200f",
  "\u200b",
  "p\u200b1",
  "w1\u200b",
  "\u200c",
  "\u200d",
  "\u2060",
  "x\ufeff",
];
const idRuleArb = fc.constantFrom(...ID_RULE);

/** JSON text nested `depth` levels inside the value of a field: objects and arrays, mixed by `mix`. */
function nested(depth: number, mix: number, top: "object" | "array"): string {
  let open = top === "object" ? '{"k":' : "[";
  let close = top === "object" ? "}" : "]";
  for (let i = 1; i < depth; i++) {
    const obj = i > 1 && ((mix >> (i % 30)) & 1) === 1;
    open += obj ? '{"k":' : "[";
    close = (obj ? "}" : "]") + close;
  }
  return `${open}1${close}`;
}
const depthArb = fc.oneof(fc.constantFrom(65, 66, 100, 1000, 2400, 3000), fc.integer({ min: 65, max: 3000 }));

const queryArb: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constant(""), weight: 4 },
  {
    arbitrary: fc.constantFrom(
      "?limit=0",
      "?limit=1001",
      "?limit=-1",
      "?limit=abc",
      "?limit=1.5",
      "?limit=1e3",
      "?limit=5",
      "?limit=1&limit=2",
      "?limit=",
      "?cursor=!!",
      "?cursor=",
      `?cursor=${"A".repeat(3000)}`,
      "?cursor=AAAA",
      "?cursor=%00",
      "?cursor=MTA",
      "?cursor=LTE",
      "?cursor=OTk5OTk5OTk5OTk5OTk5OTk5OQ",
      "?order=sideways",
      "?order=desc",
      "?x=1",
      "?%zz",
      "?a[b]=c",
      "?__proto__[x]=1",
      "?constructor=1",
      "?limit[]=1",
      "?&&&",
      "?=",
      "?limit=5#frag",
    ),
    weight: 3,
  },
  { arbitrary: fc.string({ unit: "binary", maxLength: 40 }).map((q) => `?${pct(q)}`), weight: 1 },
  {
    arbitrary: fc
      .dictionary(fc.constantFrom("limit", "cursor", "order", "q", "x"), fc.string({ maxLength: 20 }), { maxKeys: 3 })
      .map((d) => `?${new URLSearchParams(d).toString()}`),
    weight: 1,
  },
);

const extraHeadersArb: fc.Arbitrary<Record<string, string>> = fc.record(
  {
    accept: fc.constantFrom("application/json", "application/xml", "*/*", "text/event-stream", "text/html;q=0.1", ""),
    "x-request-id": fc.oneof(
      fc.constantFrom("../..", "é", "x".repeat(10_000), "", "a b", "id-1"),
      fc.string({ maxLength: 30 }).map((x) => x.replace(/[^\x20-\x7e]/g, "?")),
    ),
    "accept-encoding": fc.constantFrom("gzip", "br", "identity", "*", "nonsense"),
    "x-forwarded-for": fc.constantFrom("1.2.3.4", "::1", "garbage, , ,"),
    "content-encoding": fc.constantFrom("gzip", "identity", "nonsense"),
  },
  { requiredKeys: [] },
);

/** A plausible value per field name (the base body; its defect is added on top). */
const PLAUSIBLE: Record<string, unknown> = {
  id: "fuzz-new",
  displayName: "Fuzz",
  password: "fuzz password",
  username: "root",
  members: ["alice"],
  userId: "alice",
  intent: "project.viewDetails",
  identity: "alice",
  assignee: "alice",
  currency: "EUR",
  currencyCode: "EUR",
  organization: "Ministry",
  value: "12.50",
  amountType: "N/A",
  amount: "1.00",
  exchangeRate: "1.5",
  billingDate: "2026-01-01",
  dueDate: "2026-02-01",
  ordering: ["w2", "w1"],
  tags: ["t"],
  projectedBudgets: [],
  documents: [],
  additionalData: { k: "v" },
  workflowitemType: "general",
  workflowMode: "unordered",
  rejectReason: "no",
};

function baseBody(route: Route, pick: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  Object.keys(route.body!.props).forEach((k, i) => {
    if (route.body!.required.includes(k) || ((pick >> i) & 1) === 1) out[k] = PLAUSIBLE[k] ?? "x";
  });
  return out;
}

/** Values of a type the property's schema does not allow. */
function wrongValues(schema: any): unknown[] {
  const t = schema?.type;
  if (t === "string") return [42, true, null, {}, ["x"], 1.5];
  if (t === "integer" || t === "number") return ["1", true, null, {}, []];
  if (t === "boolean") return ["true", 1, null];
  if (t === "array") return ["x", 1, {}, null, true];
  if (t === "object") return ["x", 1, [], null, true];
  return [42, null, {}, [1]]; // unions of string literals
}

const MALFORMED = [
  "{",
  "{bad",
  '{"a":1,}',
  '{"a":1',
  "[1,2",
  "nul",
  "NaN",
  "{'a':1}",
  "\u0000",
  '{"a":"\\u12"}',
  '{"a":01}',
  "{}}",
  '{"a":1}{"b":2}',
  "undefined",
  "}",
  '{"a": Infinity}',
  '{"a":-}',
];
const isJson = (x: string) => {
  try {
    JSON.parse(x);
    return true;
  } catch {
    return false;
  }
};

/** A base body whose own id (if it has one) is new, so that the defect, not a 409 for a taken id, decides the answer. */
function fresh(route: Route, pick: number): Record<string, unknown> {
  const b = baseBody(route, pick);
  return "id" in route.body!.props ? { ...b, id: `fz${pick}` } : b;
}

function bodyDefectArb(route: Route): fc.Arbitrary<{ body?: string | Buffer; contentType?: string; defect: string }> {
  const props = route.body!.props;
  const names = Object.keys(props);
  const json = (v: unknown) => JSON.stringify(v);
  const options: fc.Arbitrary<{ body?: string | Buffer; contentType?: string; defect: string }>[] = [
    fc
      .oneof(
        fc.constantFrom(...MALFORMED),
        fc.string({ maxLength: 60 }).filter((x) => !isJson(x)),
      )
      .map((b) => ({ body: b, contentType: "application/json", defect: "malformed JSON" })),
    fc.constantFrom("null", "[]", "1", '"x"', "true", "[{}]", "-0", "1e999").map((b) => ({ body: b, contentType: "application/json", defect: "JSON that is not an object" })),
    fc
      .tuple(
        fc.nat(),
        fc.oneof(fc.constantFrom("admin", "status", "version", "meta", "type", "constructor", "__proto__", "Id", "id ", ""), fc.string({ maxLength: 12 })),
        fc.jsonValue({ maxDepth: 2 }),
      )
      .filter(([, k]) => !names.includes(k))
      .map(([pick, k, v]) => {
        const text = json(baseBody(route, pick));
        return {
          body: `${text.slice(0, -1)}${text.length > 2 ? "," : ""}${json(k)}:${json(v ?? null)}}`,
          contentType: "application/json",
          defect: `unknown field ${JSON.stringify(k)}`,
        };
      }),
    fc.constant({ body: "", contentType: "application/json", defect: "empty body" }),
    fc
      .tuple(
        fc.nat(),
        fc.constantFrom(
          "text/plain",
          "application/xml",
          "application/x-www-form-urlencoded",
          "multipart/form-data; boundary=x",
          "application/octet-stream",
          "text/html",
          "application/jsonx",
          "json",
          "%%%",
          "image/png",
        ),
      )
      .map(([pick, ct]) => ({ body: json(baseBody(route, pick)), contentType: ct, defect: `content type ${ct}` })),
    fc.nat().map((pick) => ({ body: json(baseBody(route, pick)), defect: "no content type" })),
    fc
      .integer({ min: BODY_LIMIT + 1, max: 3 * BODY_LIMIT })
      .map((n) => ({ body: json({ displayName: "x".repeat(n) }), contentType: "application/json", defect: `body of ${n} bytes` })),
    fc.integer({ min: 1000, max: 60_000 }).map((n) => ({ body: `{"zz":${"[".repeat(n)}${"]".repeat(n)}}`, contentType: "application/json", defect: `nested ${n} deep` })),
  ];
  if (names.length > 0) {
    // free-form fields first (additionalData, a snapshot's document, process data): where depth reaches the encoder
    const free = names.filter((k) => props[k]?.type === undefined || props[k]?.type === "object" || props[k]?.type === "array");
    options.push(
      fc.tuple(fc.nat(), fc.constantFrom(...(free.length > 0 ? free : names)), depthArb, fc.nat()).map(([pick, k, depth, mix]) => {
        const text = json({ ...fresh(route, pick), [k]: "\u0001" });
        const value = nested(depth, mix, props[k]?.type === "array" ? "array" : "object");
        return { body: text.replace('"\\u0001"', value), contentType: "application/json", defect: `${k} nested ${depth} deep` };
      }),
    );
    const idFields = names.filter((k) => BODY_ID_FIELDS.has(k));
    if (idFields.length > 0) {
      options.push(
        fc.tuple(fc.nat(), fc.constantFrom(...idFields), idRuleArb).map(([pick, k, id]) => ({
          body: json({ ...fresh(route, pick), [k]: props[k]?.type === "array" ? [id] : id }),
          contentType: "application/json",
          defect: `${k} ${JSON.stringify(id)}`,
        })),
      );
    }
    options.push(
      fc.tuple(fc.nat(), fc.constantFrom(...names), fc.nat()).map(([pick, k, i]) => {
        const wrong = wrongValues(props[k]);
        return { body: json({ ...baseBody(route, pick), [k]: wrong[i % wrong.length] }), contentType: "application/json", defect: `wrong type for ${k}` };
      }),
    );
  }
  if (route.body!.required.length > 0) {
    options.push(
      fc.tuple(fc.nat(), fc.constantFrom(...route.body!.required)).map(([pick, k]) => {
        const b = baseBody(route, pick);
        delete b[k];
        return { body: json(b), contentType: "application/json", defect: `missing ${k}` };
      }),
    );
  }
  if (route.body!.required.length > 0 || route.body!.minProperties > 0) options.push(fc.constant({ body: "{}", contentType: "application/json", defect: "empty object" }));
  return fc.oneof(...options);
}

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE", "PROPFIND", "SEARCH"];

function validPath(route: Route, pick: number): string {
  return route.template.replace(/\{(\w+)\}/g, (_, p: string) => {
    const ids = existing(p);
    return encodeURIComponent(ids[pick % ids.length]!);
  });
}

/**
 * Process-data keys of every pattern (src/process-data/keys.ts) with one part breaking the id rule, each
 * part encoded whole (`%2E%2E`, not a dot segment the client would resolve).
 */
const PD_KEYS: readonly ((x: string) => string)[] = [
  (x) => `form-submissions/process/${x}/task/approve`,
  (x) => `form-submissions/process/pi-1/task/${x}`,
  (x) => `form-submissions/process-definition/${x}/start-form/00000000-0000-4000-8000-000000000000`,
  (x) => `form-submissions/lowcode_${x}_pi-1_system_signature_ceph_key`,
  (x) => `form-submissions/lowcode_pi-1_${x}_system_signature_ceph_key`,
  (x) => `form-submissions/lowcode_${x}_system_signature_ceph_key_0`,
  (x) => `message-payloads/process-definition/${x}/start-message/00000000-0000-4000-8000-000000000000`,
  (x) => `form-schemas/${x}`,
  (x) => `form-scripts/${x}`,
];
const PD_CREATES: readonly ((x: string) => string)[] = [
  (x) => `form-submissions/process-definition/${x}/start-form`,
  (x) => `message-payloads/process-definition/${x}/start-message`,
];

function processDataKeyArb(): fc.Arbitrary<Req> {
  return fc.tuple(fc.nat(), idRuleArb, fc.constantFrom("PUT", "PUT", "GET", "DELETE", "POST", "instance")).map(([pick, id, method]) => {
    const part = pct(id, null);
    const body = JSON.stringify({ id: "r1", data: { ok: true }, accessToken: "a.b.c", signature: "s", formData: { components: [] } });
    const path =
      method === "instance"
        ? `/api/v1/process-data/process-instances/${part}`
        : method === "POST"
          ? `/api/v1/process-data/${PD_CREATES[pick % PD_CREATES.length]!(part)}`
          : `/api/v1/process-data/${PD_KEYS[pick % PD_KEYS.length]!(part)}`;
    const m = method === "instance" ? (pick % 2 === 0 ? "GET" : "DELETE") : method;
    const withBody = m === "PUT" || m === "POST";
    return {
      method: m,
      path,
      headers: { authorization: `Bearer ${tokens.root}`, ...(withBody ? { "content-type": "application/json" } : {}) },
      body: withBody ? body : undefined,
      defect: `process-data key part ${JSON.stringify(id)}`,
    };
  });
}

function requestArb(routes: readonly Route[]): fc.Arbitrary<Req> {
  return fc.oneof({ arbitrary: routeRequestArb(routes), weight: 15 }, { arbitrary: processDataKeyArb(), weight: 1 });
}

function routeRequestArb(routes: readonly Route[]): fc.Arbitrary<Req> {
  return fc.constantFrom(...routes).chain((route) => {
    const mutating = route.method !== "GET";
    const kinds: string[] = [];
    if (route.authenticated) kinds.push("auth", "auth");
    if (route.template === "/api/v1/events") return reqOf(route, "auth"); // a valid GET would stream forever
    if (idParams(route).length > 0) kinds.push("path", "path");
    if (route.params.length > 0) kinds.push("id-rule");
    if (route.body) kinds.push("body", "body", "body");
    if (route.ifMatch) kinds.push("if-match");
    if (route.template === "/api/v1/auth/token") kinds.push("password");
    if (!mutating) kinds.push("none");
    return fc.constantFrom(...kinds).chain((kind) => reqOf(route, kind));
  });
}

function reqOf(route: Route, kind: string): fc.Arbitrary<Req> {
  const common = fc.record({
    pick: fc.nat(),
    query: queryArb,
    extra: extraHeadersArb,
    token: fc.constantFrom("root", "root", "alice"),
    method: fc.oneof({ arbitrary: fc.constant(route.method), weight: 4 }, { arbitrary: fc.constantFrom(...METHODS), weight: 1 }),
  });
  const plausible = (pick: number) => (route.body ? JSON.stringify(baseBody(route, pick)) : undefined);
  const auth = (c: { token: string }) => `Bearer ${c.token === "alice" ? tokens.alice : tokens.root}`;
  const finish = (c: { query: string; extra: Record<string, string> }, r: Omit<Req, "path" | "headers"> & { path: string; headers: Record<string, string> }): Req => ({
    ...r,
    path: r.path + c.query,
    headers: { ...c.extra, ...r.headers },
  });
  switch (kind) {
    case "auth":
      return fc
        .tuple(
          common,
          fc.oneof(
            fc.constantFrom(...tokens.bad.map((_, i) => i), -1),
            fc.string({ maxLength: 40 }).map((x) => x.replace(/[^\x21-\x7e]/g, "")),
          ),
        )
        .map(([c, t]) => {
          const header = typeof t === "number" ? (t < 0 ? undefined : tokens.bad[t]) : `Bearer ${t}`;
          const body = plausible(c.pick);
          return finish(c, {
            // any method: every route under /api/v1 but /auth/token refuses an unauthenticated caller
            method: c.method,
            path: validPath(route, c.pick),
            headers: { ...(header === undefined ? {} : { authorization: header }), ...(body ? { "content-type": "application/json" } : {}) },
            body,
            defect: `auth: ${header === undefined ? "no Authorization" : header.slice(0, 40)}`,
          });
        });
    case "path":
      return fc.tuple(common, fc.constantFrom(...idParams(route))).chain(([c, param]) =>
        badSegmentArb(param).map((seg) => {
          let i = 0;
          const path = route.template.replace(/\{(\w+)\}/g, (_, p: string) => (p === param ? seg : encodeURIComponent(existing(p)[(c.pick + i++) % existing(p).length]!)));
          const body = plausible(c.pick);
          return finish(c, {
            method: c.method,
            path,
            headers: { authorization: auth(c), ...(body ? { "content-type": "application/json" } : {}) },
            body,
            defect: `path: ${param}=${seg.slice(0, 60)}`,
          });
        }),
      );
    case "id-rule":
      return fc.tuple(common, fc.constantFrom(...route.params), idRuleArb).map(([c, param, id]) => {
        let i = 0;
        const path = route.template.replace(/\{(\w+)\}/g, (_, p: string) => (p === param ? pct(id, null) : encodeURIComponent(existing(p)[(c.pick + i++) % existing(p).length]!)));
        const body = plausible(c.pick);
        return finish(c, {
          method: route.method,
          path,
          headers: { authorization: auth(c), ...(body ? { "content-type": "application/json" } : {}) },
          body,
          defect: `id rule: ${param}=${JSON.stringify(id)}`,
        });
      });
    case "body":
      return fc.tuple(common, bodyDefectArb(route)).map(([c, d]) =>
        finish(c, {
          method: route.method,
          path: validPath(route, c.pick),
          headers: { ...(route.authenticated ? { authorization: auth(c) } : {}), ...(d.contentType !== undefined ? { "content-type": d.contentType } : {}) },
          body: d.body,
          defect: `body: ${d.defect}`,
        }),
      );
    case "if-match":
      return fc.tuple(common, fc.constantFrom('"999999"', '"0"', "abc", '"1", "2"', 'W/"x"', "*x", "-1", '""', "1".repeat(20))).map(([c, v]) => {
        const body = plausible(c.pick);
        return finish(c, {
          method: route.method,
          path: validPath(route, c.pick),
          headers: { authorization: auth(c), "if-match": v, ...(body ? { "content-type": "application/json" } : {}) },
          body,
          defect: `if-match: ${v}`,
        });
      });
    case "password":
      return fc.tuple(common, fc.constantFrom("root", "alice", "bob", "ghost", "system"), fc.string({ maxLength: 30 })).map(([c, username, password]) =>
        finish(c, {
          method: "POST",
          path: route.template,
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ username, password: `${password}-wrong` }),
          defect: "wrong password",
        }),
      );
    default:
      return common.map((c) =>
        finish(c, { method: route.method, path: validPath(route, c.pick), headers: route.authenticated ? { authorization: auth(c) } : {}, defect: "none (a valid read)" }),
      );
  }
}

// ----------------------------------------------------------------------------------------- sending

interface Answer {
  status: number;
  type: string;
  text: string;
  error?: string;
}

const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });

function send(base: string, r: Req): Promise<Answer> {
  const url = new URL(base);
  return new Promise((resolve) => {
    let settled = false;
    const done = (a: Answer) => {
      if (!settled) {
        settled = true;
        resolve(a);
      }
    };
    let req;
    try {
      // a body is always framed (Content-Length), whatever the method: unframed bytes would be a second request
      const headers = r.body === undefined ? r.headers : { ...r.headers, "content-length": String(Buffer.byteLength(r.body)) };
      req = request({ host: url.hostname, port: url.port, method: r.method, path: r.path, headers, agent, timeout: 30_000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => done({ status: res.statusCode ?? 0, type: String(res.headers["content-type"] ?? ""), text: Buffer.concat(chunks).toString("utf8") }));
        res.on("error", (e) => done({ status: res.statusCode ?? 0, type: String(res.headers["content-type"] ?? ""), text: "", error: `response: ${e.message}` }));
      });
    } catch (e) {
      // the client refused to send it (e.g. an invalid header value): not the server's business
      done({ status: -1, type: "", text: "", error: `client: ${(e as Error).message}` });
      return;
    }
    req.on("timeout", () => {
      done({ status: 0, type: "", text: "", error: "timeout" });
      req.destroy();
    });
    req.on("error", (e) =>
      done({ status: 0, type: "", text: "", error: `request: ${(e as NodeJS.ErrnoException).code ?? e.message}${req.reusedSocket ? " on a reused socket" : ""}` }),
    );
    req.end(r.body);
  });
}

function judge(r: Req, a: Answer): string | null {
  if (a.status === -1) return null;
  if (a.error) return `no answer (${a.error})`;
  if (a.status >= 500) return `answered ${a.status}: ${a.text.slice(0, 200)}`;
  if (r.method !== "GET" && r.method !== "HEAD" && (a.status < 400 || a.status >= 500)) return `a request with a defect was accepted: ${a.status} ${a.text.slice(0, 200)}`;
  if (a.status >= 400) {
    if (!a.type.startsWith("application/problem+json")) return `a ${a.status} answered ${a.type || "no content type"}: ${a.text.slice(0, 200)}`;
    if (r.method === "HEAD") return null;
    let p: any;
    try {
      p = JSON.parse(a.text);
    } catch {
      return `a ${a.status} problem that is not JSON: ${a.text.slice(0, 200)}`;
    }
    if (p.status !== a.status || typeof p.title !== "string" || typeof p.detail !== "string" || typeof p.type !== "string") return `a malformed problem: ${a.text.slice(0, 200)}`;
  }
  return null;
}

function describeReq(r: Req): string {
  const body = r.body === undefined ? "" : ` body(${r.body.length}): ${String(r.body).slice(0, 120)}`;
  return `${r.method} ${r.path.slice(0, 200)} [${r.defect}] headers ${JSON.stringify(r.headers).slice(0, 300)}${body}`;
}

// -------------------------------------------------------------------------------------------- tests

it(
  `${RUNS} fuzzed requests: no 5xx, problems for every 4xx, nothing written (seed ${SEED})`,
  async () => {
    console.log(`fuzz seed: ${SEED}, ${RUNS} requests (FLOWSTORE_FUZZ_SEED=${SEED} FLOWSTORE_FUZZ_RUNS=${RUNS} to reproduce)`);
    const routes = routeTable(s.app.swagger());
    expect(routes.length).toBeGreaterThan(40);
    const requests = fc.sample(requestArb(routes), { seed: SEED, numRuns: RUNS });

    const failures: string[] = [];
    const statuses = new Map<number, number>();
    let clientRefused = 0;
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < requests.length) {
          const r = requests[next++]!;
          const a = await send(s.base, r);
          if (a.status === -1) clientRefused++;
          statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
          const bad = judge(r, a);
          if (bad) failures.push(`${bad}\n    for ${describeReq(r)}`);
        }
      }),
    );
    agent.destroy();
    console.log(`statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort((x, y) => x[0] - y[0])))}; refused by the client: ${clientRefused}`);
    expect(failures.slice(0, 10), `${failures.length} failures (seed ${SEED})`).toEqual([]);
    expect(clientRefused).toBeLessThan(RUNS / 20);
  },
  Math.max(180_000, RUNS * 100),
); // 10,000 requests (`npm run soak`) take minutes on a loaded machine

/** Writes raw bytes on a fresh connection; answers what came back before the server closed it. */
function exchange(bytes: Buffer): Promise<{ text: string; error?: string }> {
  const { port } = new URL(s.base);
  return new Promise((resolve) => {
    const socket = connect(Number(port), "127.0.0.1");
    let text = "";
    let error: string | undefined;
    socket.setEncoding("latin1");
    socket.setTimeout(30_000, () => {
      error = "timeout";
      socket.destroy();
    });
    socket.on("data", (d: string) => (text += d));
    socket.on("error", (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
    socket.on("close", () => resolve({ text, error }));
    socket.end(bytes);
  });
}

/** Checks every response in a raw exchange: no 5xx, every 4xx a problem. */
function judgeRaw(text: string): string | null {
  let rest = text;
  while (rest.length > 0) {
    const m = /^HTTP\/1\.1 (\d{3}) [^\r]*\r\n/.exec(rest);
    if (!m) return `not an HTTP response: ${JSON.stringify(rest.slice(0, 80))}`;
    const end = rest.indexOf("\r\n\r\n");
    if (end < 0) return "a truncated response";
    const head = rest.slice(0, end).toLowerCase();
    const status = Number(m[1]);
    const length = Number(/\r\ncontent-length: *(\d+)/.exec(head)?.[1] ?? "0");
    if (status >= 500) return `answered ${status}`;
    if (status >= 400 && !/\r\ncontent-type: *application\/problem\+json/.test(head)) return `a ${status} that is not a problem: ${head.slice(0, 200)}`;
    if (/\r\ntransfer-encoding: *chunked/.test(head)) return null; // a streamed success; nothing more to check
    rest = rest.slice(end + 4 + length);
  }
  return null;
}

it(
  "raw bytes: mutated and truncated requests never get a 5xx or a non-problem error",
  async () => {
    const forged = tokens.bad[0]!;
    const bases = [
      `POST /api/v1/projects HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${forged}\r\nContent-Type: application/json\r\nContent-Length: 24\r\n\r\n{"displayName":"forged"}`,
      `DELETE /api/v1/projects/p1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${forged}\r\n\r\n`,
      `PATCH /api/v1/projects/p1/subprojects/s1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${forged}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n11\r\n{"displayName":1}\r\n0\r\n\r\n`,
      `POST /api/v1/auth/token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n{"username":"root","password":"wrong!!"}`,
      `GET /api/v1/projects/p1/subprojects/s1/workflowitems?limit=2 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${tokens.alice}\r\n\r\n`,
    ].map((b) => Buffer.from(b, "latin1"));
    const mutation = fc.record({
      base: fc.nat({ max: bases.length - 1 }),
      edits: fc.array(
        fc.record({
          at: fc.nat(),
          kind: fc.constantFrom("flip", "insert", "delete", "truncate", "repeat", "crlf"),
          byte: fc.nat({ max: 255 }),
          n: fc.integer({ min: 1, max: 64 }),
        }),
        { minLength: 1, maxLength: 4 },
      ),
      pipelined: fc.boolean(),
    });
    const cases = fc.sample(mutation, { seed: SEED + 1, numRuns: Math.max(100, Math.floor(RUNS / 10)) });
    const failures: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < cases.length) {
          const c = cases[next++]!;
          let bytes = Buffer.from(bases[c.base]!);
          for (const e of c.edits) {
            const at = e.at % (bytes.length + 1);
            if (e.kind === "flip") bytes[Math.min(at, bytes.length - 1)] = e.byte;
            else if (e.kind === "insert") bytes = Buffer.concat([bytes.subarray(0, at), Buffer.alloc(e.n, e.byte), bytes.subarray(at)]);
            else if (e.kind === "delete") bytes = Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + e.n)]);
            else if (e.kind === "truncate") bytes = bytes.subarray(0, at);
            else if (e.kind === "repeat") bytes = Buffer.concat([bytes.subarray(0, at), bytes.subarray(at, at + e.n), bytes.subarray(at)]);
            else bytes = Buffer.concat([bytes.subarray(0, at), Buffer.from("\r\n"), bytes.subarray(at)]);
          }
          if (c.pipelined) bytes = Buffer.concat([bytes, bases[1]!]);
          const { text, error } = await exchange(bytes);
          if (error === "timeout") failures.push(`no answer within 30 s to ${JSON.stringify(bytes.toString("latin1").slice(0, 200))}`);
          const bad = judgeRaw(text);
          if (bad) failures.push(`${bad}\n    for ${JSON.stringify(bytes.toString("latin1").slice(0, 300))}`);
        }
      }),
    );
    console.log(`raw fuzz: ${cases.length} mutated requests (seed ${SEED + 1})`);
    expect(failures.slice(0, 10), `${failures.length} failures (seed ${SEED})`).toEqual([]);
  },
  Math.max(120_000, RUNS * 40),
);

it("afterwards: nothing was written, and the server still serves", async () => {
  // Nothing was written: the raw environment is byte for byte what it was.
  const after = snapshot();
  expect(before.length).toBeGreaterThan(20);
  expect(after.length).toBe(before.length);
  expect(after.filter((e, i) => e !== before[i]).slice(0, 5)).toEqual([]);

  // The server still serves, reads and writes.
  expect((await raw(s.base, "GET", "/health")).status).toBe(200);
  const again = await raw(s.base, "GET", "/api/v1/projects/p1", { headers: { authorization: `Bearer ${tokens.root}` } });
  expect(again.status).toBe(200);
  expect(again.body).toEqual(p1.body);
  const created = await raw(s.base, "POST", "/api/v1/projects/p1/subprojects/s1/workflowitems", {
    headers: { authorization: `Bearer ${tokens.root}`, "content-type": "application/json" },
    body: JSON.stringify({ id: "after-fuzz", displayName: "after", amountType: "N/A" }),
  });
  expect(created.status).toBe(201);
  expect((await raw(s.base, "GET", "/api/v1/projects/p1/verify", { headers: { authorization: `Bearer ${tokens.root}` } })).body).toMatchObject({ ok: true });
});
