/**
 * A request refused before its body was read (a 413 past a limit) is answered with `Connection: close` and
 * the server closes the connection after the answer (RFC 9110 15.5.14), so nothing waits on the rest of a
 * body nobody reads: not the client, and not the server's close, which waits for every busy connection. A
 * clean-clone CI run once hung 60 s in test/http/archive.test.ts's over-limit upload on such a connection.
 */
import { connect } from "node:net";
import { afterEach, beforeEach, expect, it } from "vitest";
import { MemoryKv } from "../../src/kv/memory.js";
import { startServer, type Running } from "./harness.js";

let s: Running;
beforeEach(async () => {
  s = await startServer(new MemoryKv(), { archive: { maxSnapshotBytes: 64 * 1024 } });
});
afterEach(async () => {
  await s.close();
});

/** Sends `head` and `sent` bytes of a body announced as `length`, then sends nothing more; resolves with what came back once the server closed. */
function sendPart(head: string, sent: Buffer): Promise<string> {
  const url = new URL(s.base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    const got: Buffer[] = [];
    socket.on("data", (d) => got.push(d));
    socket.on("error", reject);
    socket.on("close", () => resolve(Buffer.concat(got).toString("latin1")));
    socket.write(head);
    socket.write(sent);
  });
}

it("closes the connection after refusing a body it did not read: an upload past the archive's limit", async () => {
  const boundary = "b0undary";
  const start = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="uniqueId"\r\n\r\nbig\r\n--${boundary}\r\nContent-Disposition: form-data; name="document"\r\n\r\n{}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="f.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const part = Buffer.concat([start, Buffer.alloc(200 * 1024, 7)]);
  const head =
    `POST /api/v1/archive/snapshots HTTP/1.1\r\nHost: ${new URL(s.base).host}\r\nAuthorization: Bearer ${s.root.token}\r\n` +
    `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${2 * 1024 * 1024}\r\n\r\n`;
  const answer = await sendPart(head, part);
  expect(answer).toMatch(/^HTTP\/1\.1 413 /);
  expect(answer.toLowerCase()).toContain("connection: close");
  expect(answer).toContain('"limit":65536');
});

it("closes the connection after refusing a body it did not read: a body past the server's body limit", async () => {
  const head =
    `POST /api/v1/archive/snapshots HTTP/1.1\r\nHost: ${new URL(s.base).host}\r\nAuthorization: Bearer ${s.root.token}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${2 * 1024 * 1024}\r\n\r\n`;
  const answer = await sendPart(head, Buffer.from('{"uniqueId":"big","document":{"blob":"'));
  expect(answer).toMatch(/^HTTP\/1\.1 413 /);
  expect(answer.toLowerCase()).toContain("connection: close");
});
