/**
 * The login guard's counters are the store's (issue 29, finding 10; identity/login-guard.ts): through real
 * servers on 127.0.0.1, two servers over one LMDB directory (two handles, as two processes) count each other's
 * failures and back off together; failures sent at once to both are all counted (no lost increment); a
 * server started again on the store keeps the backoff; a restore of a backup taken before the failures
 * does not roll them back. Each server runs on a still clock, so no backoff runs out during a test.
 */
import { afterEach, expect, it } from "vitest";
import { gunzipSync } from "node:zlib";
import { LOGIN_GUARD } from "../../src/identity/records.js";
import { decode } from "../../src/kv/tuple.js";
import { backends, forEachBackend } from "../conformance/backends.js";
import { makeTempDir, removeTempDir } from "../support/temp-dir.js";
import { loginFrom, raw, type Running, startServer, startTwoServers } from "./harness.js";

const now = Date.parse("2030-01-01T00:00:00Z");
const clock = () => now;

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanup.length) await cleanup.pop()!().catch(() => {});
});

const guardOf = (s: Running) => s.app.flowstore.tokens.guard!;
const lmdb = backends.find((b) => b.name === "lmdb")!;

forEachBackend(
  (backend) => {
    it("two servers on one store count each other's failures and back off together", async () => {
      const { a, b } = await startTwoServers(backend, cleanup, { webRoot: false, clock });
      await a.root.users.create({ id: "eve", displayName: "eve", password: "eve password 1" });
      // Five free failures per user and address, split over the two servers; the sixth starts the backoff.
      for (const s of [a, b, a, b, a, b]) expect((await loginFrom(s.base, "127.0.2.1", "eve", "wrong")).status).toBe(401);
      expect(await guardOf(a).counter({ user: "eve", address: "127.0.2.1" })).toMatchObject({ failures: 6 });
      for (const s of [a, b]) {
        const refused = await loginFrom(s.base, "127.0.2.1", "eve", "eve password 1");
        expect(refused.status).toBe(429);
        expect(Number(refused.retryAfter)).toBeGreaterThan(0);
      }
      // Another address is not held by this pair's backoff, on either server.
      expect((await loginFrom(b.base, "127.0.2.2", "eve", "eve password 1")).status).toBe(200);
    });

    it("counts failures sent at once to both servers, every one (no lost increment)", async () => {
      const { a, b } = await startTwoServers(backend, cleanup, { webRoot: false, clock });
      await a.root.users.create({ id: "fay", displayName: "fay", password: "fay password 1" });
      // Sixteen addresses, one failure each, all at once, half to each server: no counter passes its free failures.
      const statuses = await Promise.all(Array.from({ length: 16 }, (_, i) => loginFrom((i % 2 ? a : b).base, `127.0.3.${i + 1}`, "fay", `wrong ${i}`)));
      expect(statuses.map((r) => r.status)).toEqual(Array(16).fill(401));
      expect(await guardOf(b).counter({ user: "fay" })).toMatchObject({ failures: 16 });
      // Five more from new addresses: the 21st passes the user's 20 free failures, and every new address waits.
      for (let i = 17; i <= 21; i++) expect((await loginFrom(a.base, `127.0.3.${i}`, "fay", "wrong")).status).toBe(401);
      for (const s of [a, b]) expect((await loginFrom(s.base, "127.0.3.99", "fay", "fay password 1")).status).toBe(429);
    });

    it("a server started again on the store keeps the backoff", async () => {
      const handle = await backend.create();
      cleanup.push(() => handle.destroy());
      const first = await startServer(handle.kv, { webRoot: false, clock });
      await first.root.users.create({ id: "gus", displayName: "gus", password: "gus password 1" });
      expect((await loginFrom(first.base, "127.0.4.9", "gus", "gus password 1")).status).toBe(200); // gus's usual address
      for (let i = 0; i < 6; i++) expect((await loginFrom(first.base, "127.0.4.1", "gus", "wrong")).status).toBe(401);
      expect((await loginFrom(first.base, "127.0.4.1", "gus", "gus password 1")).status).toBe(429);
      await first.close();

      const again = await startServer(await handle.reopen(), { webRoot: false, clock });
      cleanup.push(() => again.close());
      expect((await loginFrom(again.base, "127.0.4.1", "gus", "gus password 1")).status).toBe(429);
      // The user's backoff over many addresses, and the addresses it is known at, survive the restart too.
      for (let a = 2; a <= 6; a++) for (let i = 0; i < 3; i++) expect((await loginFrom(again.base, `127.0.4.${a}`, "gus", "wrong")).status).toBe(401);
      expect((await loginFrom(again.base, "127.0.4.7", "gus", "gus password 1")).status).toBe(429); // 21 failures: a new address waits
      expect((await loginFrom(again.base, "127.0.4.9", "gus", "gus password 1")).status).toBe(200); // its known one does not
    });
  },
  [lmdb],
);

it("a restore of a backup taken before the failures does not roll them back", async () => {
  const dir = await makeTempDir("guard-restore");
  cleanup.push(() => removeTempDir(dir));
  const handle = await lmdb.create();
  cleanup.push(() => handle.destroy());
  const s = await startServer(handle.kv, { webRoot: false, clock, restoreDir: dir });
  cleanup.push(() => s.close());
  await s.root.users.create({ id: "hal", displayName: "hal", password: "hal password 1" });
  const auth = { authorization: `Bearer ${s.root.token}` };
  const backup = await fetch(`${s.base}/api/v1/store/backup`, { headers: auth });
  expect(backup.status).toBe(200);
  const gz = Buffer.from(await backup.arrayBuffer());
  // The counters are not content: no partition of the backup is the guard's.
  const kinds = gunzipSync(gz)
    .toString("utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { partition?: string })
    .filter((o) => o.partition !== undefined)
    .map((o) => decode(Buffer.from(o.partition!, "base64"))[0]);
  expect(kinds).toContain("identity");
  expect(kinds).not.toContain(LOGIN_GUARD.kind);

  for (let i = 0; i < 6; i++) expect((await loginFrom(s.base, "127.0.5.1", "hal", "wrong")).status).toBe(401);
  expect((await loginFrom(s.base, "127.0.5.1", "hal", "hal password 1")).status).toBe(429);
  const restored = await raw(s.base, "POST", "/api/v1/store/restore", { headers: { ...auth, "content-type": "application/gzip" }, body: gz });
  expect(restored.status, JSON.stringify(restored.body)).toBe(200);
  expect((await loginFrom(s.base, "127.0.5.1", "hal", "hal password 1")).status).toBe(429);
  expect(await guardOf(s).counter({ user: "hal", address: "127.0.5.1" })).toMatchObject({ failures: 6 });
});
