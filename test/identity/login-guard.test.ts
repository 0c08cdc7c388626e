/**
 * The login guard over the store (identity/login-guard.ts), on every backend: guards of two processes (two
 * handles on one store's data) failing at once lose no increment (a fast-check property over random
 * interleavings); a counter whose last failure is older than `forgetSeconds` counts from zero again and
 * is pruned; a usual log in writes nothing; a success does not forgive the address's count (spraying).
 */
import fc from "fast-check";
import { afterEach, expect, it } from "vitest";
import { DEFAULT_LOGIN_GUARD, LoginGuard } from "../../src/identity/login-guard.js";
import { GUARD_PARTITION } from "../../src/identity/records.js";
import { scanAll, type KvStore } from "../../src/kv/contract.js";
import { forEachBackend, type BackendHandle } from "../conformance/backends.js";

const handles: BackendHandle[] = [];
afterEach(async () => {
  while (handles.length) await handles.pop()!.destroy();
});

async function entries(kv: KvStore): Promise<number> {
  let n = 0;
  for await (const _ of scanAll(kv, GUARD_PARTITION)) n++;
  return n;
}

forEachBackend((backend) => {
  it("two guards on one store failing at once count every failure", async () => {
    const h = await backend.create();
    handles.push(h);
    const other = await h.reopen();
    let round = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ guard: fc.integer({ min: 0, max: 1 }), user: fc.constantFrom("ann", "Ann", "bob"), address: fc.constantFrom("10.0.0.1", "10.0.0.2") }), {
          minLength: 1,
          maxLength: 12,
        }),
        async (attempts) => {
          // Each run counts under users of its own, so runs do not see each other's counters.
          const tag = `r${round++}-`;
          const guards = [new LoginGuard(h.kv), new LoginGuard(other)];
          await Promise.all(attempts.map((t) => guards[t.guard]!.failed(tag + t.user, t.address)));
          // Read back through a handle of its own: an LMDB handle's reads share a read transaction that lmdb-js
          // renews in a later event turn, so one that wrote may not see the other's last commit yet.
          const reader = new LoginGuard(await h.reopen());
          for (const user of ["ann", "bob"]) {
            const expected = attempts.filter((t) => t.user.toLowerCase() === user).length;
            const counted = await reader.counter({ user: tag + user });
            expect(counted?.failures ?? 0).toBe(expected);
            for (const address of ["10.0.0.1", "10.0.0.2"]) {
              const pair = attempts.filter((t) => t.user.toLowerCase() === user && t.address === address).length;
              expect((await reader.counter({ user: tag + user, address }))?.failures ?? 0).toBe(pair);
            }
          }
        },
      ),
      { numRuns: 20 },
    );
  });

  it("forgets a counter a day after its last failure, prunes it, and writes nothing on a usual log in", async () => {
    const h = await backend.create();
    handles.push(h);
    let now = Date.parse("2030-01-01T00:00:00Z");
    const guard = new LoginGuard(h.kv, DEFAULT_LOGIN_GUARD, () => now);
    for (let i = 0; i < 6; i++) await guard.failed("cat", "10.0.0.3");
    await expect(guard.check("cat", "10.0.0.3")).rejects.toMatchObject({ status: 429 });
    expect(await entries(h.kv)).toBe(3); // pair, address, user
    now += 86_400_000;
    await guard.check("cat", "10.0.0.3");
    expect(await guard.counter({ user: "cat", address: "10.0.0.3" })).toBeUndefined();
    expect(await guard.prune(100)).toBe(3);
    expect(await entries(h.kv)).toBe(0);

    await guard.succeeded("cat", "10.0.0.4"); // a new address: remembered
    const [known] = (await h.kv.scan(GUARD_PARTITION)).entries;
    expect(known).toBeDefined();
    await guard.succeeded("cat", "10.0.0.4"); // the same again, nothing to forgive: no write
    const [after] = (await h.kv.scan(GUARD_PARTITION)).entries;
    expect(after!.version).toBe(known!.version);
    expect((await h.kv.scan(GUARD_PARTITION)).entries).toHaveLength(1);
  });

  it("a success forgives its user's failures at the address, not the address's: spraying from one address is held at the per-address limit", async () => {
    const h = await backend.create();
    handles.push(h);
    const now = Date.parse("2030-01-01T00:00:00Z");
    const guard = new LoginGuard(h.kv, DEFAULT_LOGIN_GUARD, () => now);
    const from = "10.0.0.9";
    // Four guesses at each victim (under the per-pair limit), the sprayer's own log in after every ten.
    let allowed = 0;
    for (let i = 0; i < 200; i++) {
      const refused = await guard.check(`victim${Math.floor(i / 4)}`, from).then(
        () => false,
        () => true,
      );
      if (refused) break;
      allowed++;
      await guard.failed(`victim${Math.floor(i / 4)}`, from);
      if (i % 10 === 9) await guard.succeeded("sprayer", from);
    }
    expect(allowed).toBe(DEFAULT_LOGIN_GUARD.perAddress + 1);
    expect(await guard.counter({ address: from })).toMatchObject({ failures: DEFAULT_LOGIN_GUARD.perAddress + 1 });
  });
});
