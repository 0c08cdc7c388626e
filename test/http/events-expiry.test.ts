/** The change feed ends when the caller's token expires: a stream does not outlive its credential. */
import { afterEach, beforeEach, expect, it } from "vitest";
import { MemoryKv } from "../../src/kv/memory.js";
import { startServer, type Running } from "./harness.js";

let s: Running;
beforeEach(async () => {
  s = await startServer(new MemoryKv(), { tokenTtlSeconds: 2 });
});
afterEach(async () => s.close());

it("ends an open event stream once its token expires", async () => {
  const res = await fetch(`${s.base}/api/v1/events`, { headers: { authorization: `Bearer ${s.root.token}` } });
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  let outlived = false;
  const guard = setTimeout(() => {
    outlived = true;
    void reader.cancel();
  }, 30_000);
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  clearTimeout(guard);
  // The stream was open, and the server (not the guard) ended it: nothing more reaches an expired token.
  expect(text).toContain(": connected");
  expect(outlived).toBe(false);
});
