/**
 * Requests Node's HTTP parser refuses before Fastify routes them (oversized headers, bytes that are not
 * HTTP, a body sent without framing) still answer application/problem+json, with `Connection: close` so
 * a keep-alive client does not reuse the dead socket. Found by the fuzz test (test/reliability).
 */
import { connect } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MemoryKv } from "../../src/kv/memory.js";
import { startServer, type Running } from "./harness.js";

let s: Running;
beforeAll(async () => {
  s = await startServer(new MemoryKv());
});
afterAll(async () => {
  await s.close();
});

/** Writes raw bytes on a fresh connection and reads until the server closes it. */
function exchange(bytes: string | Buffer): Promise<string> {
  const { port } = new URL(s.base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), "127.0.0.1");
    let out = "";
    socket.setEncoding("latin1");
    socket.on("data", (d: string) => (out += d));
    socket.on("error", reject);
    socket.on("close", () => resolve(out));
    socket.end(bytes);
  });
}

/** The responses in a raw exchange: status, headers (lower-case) and body, in order. */
function responses(text: string): { status: number; headers: Record<string, string>; body: string }[] {
  const out: { status: number; headers: Record<string, string>; body: string }[] = [];
  let rest = text;
  while (rest.startsWith("HTTP/1.1 ")) {
    const end = rest.indexOf("\r\n\r\n");
    const [line, ...fields] = rest.slice(0, end).split("\r\n");
    const headers = Object.fromEntries(fields.map((f) => [f.slice(0, f.indexOf(":")).toLowerCase(), f.slice(f.indexOf(":") + 1).trim()]));
    const length = Number(headers["content-length"] ?? 0);
    out.push({ status: Number(line!.split(" ")[1]), headers, body: rest.slice(end + 4, end + 4 + length) });
    rest = rest.slice(end + 4 + length);
  }
  return out;
}

it("oversized headers answer 431 as a problem and close the connection", async () => {
  const [r] = responses(await exchange(`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${"x".repeat(20_000)}\r\n\r\n`));
  expect(r!.status).toBe(431);
  expect(r!.headers["content-type"]).toBe("application/problem+json");
  expect(r!.headers.connection).toBe("close");
  expect(JSON.parse(r!.body)).toMatchObject({ status: 431, type: "urn:flowstore:problem:headers_too_large", title: "Request Header Fields Too Large" });
});

it.each([
  ["a request line that is not HTTP", "HELLO\r\n\r\n"],
  ["an unknown method", "FROB /health HTTP/1.1\r\nHost: x\r\n\r\n"],
  ["a broken header line", "GET /health HTTP/1.1\r\nHost x\r\n\r\n"],
  ["a bad Content-Length", "POST /api/v1/auth/token HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n\r\n"],
  ["two Content-Lengths", "POST /api/v1/auth/token HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}"],
  ["a bad chunk", "POST /api/v1/auth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"],
  ["binary garbage", Buffer.from([0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03])],
])("%s answers 400 as a problem", async (_name, bytes) => {
  const all = responses(await exchange(bytes));
  const r = all.at(-1)!;
  expect(r.status).toBe(400);
  expect(r.headers["content-type"]).toBe("application/problem+json");
  expect(r.headers.connection).toBe("close");
  expect(JSON.parse(r.body)).toMatchObject({ status: 400, type: "urn:flowstore:problem:validation", detail: "the request is not valid HTTP/1.1" });
});

it("a body sent without framing after a GET: the stray bytes get a problem", async () => {
  // The GET may or may not be answered first (the parser can fail before its reply is written).
  const all = responses(await exchange('GET /health HTTP/1.1\r\nHost: x\r\n\r\n{"a":1}'));
  expect(all.at(-1)).toMatchObject({ status: 400, headers: { "content-type": "application/problem+json", connection: "close" } });
  expect(all.slice(0, -1).map((r) => r.status)).toEqual(all.length === 2 ? [200] : []);
});

it("an HTTP/1.1 request without Host answers a 400 problem naming the header", async () => {
  const [r] = responses(await exchange("GET /health HTTP/1.1\r\nConnection: close\r\n\r\n"));
  expect(r!.status).toBe(400);
  expect(r!.headers["content-type"]).toMatch(/^application\/problem\+json/);
  expect(JSON.parse(r!.body)).toMatchObject({ status: 400, field: "headers.host" });
  // HTTP/1.0 has no Host requirement
  const [ok] = responses(await exchange("GET /health HTTP/1.0\r\n\r\n").then((t) => t.replace("HTTP/1.0", "HTTP/1.1")));
  expect(ok!.status).toBe(200);
});

it("the server keeps serving after refused requests", async () => {
  await exchange("HELLO\r\n\r\n");
  expect((await s.root.health()).status).toBe("ok");
});
