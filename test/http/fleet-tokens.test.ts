/**
 * Tokens across a fleet (issue 25): each server keeps the user records it decoded in a per-process cache
 * keyed by the record's version, and the signature is checked in-process; two servers over one store
 * (a second handle on the same data: LMDB's directory, memory's data) must still agree at once: a token
 * revoked, a user disabled or re-grouped through one server is refused (or re-grouped) by the other on the
 * very next request.
 */
import { afterEach, expect, it } from "vitest";
import { forEachBackend, httpBackends, type BackendFactory } from "../conformance/backends.js";
import { raw, type Running, startTwoServers } from "./harness.js";

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanup.length) await cleanup.pop()!().catch(() => {});
});

const twoServers = (backend: BackendFactory) => startTwoServers(backend, cleanup);

const me = (s: Running, token: string) => raw(s.base, "GET", "/api/v1/me", { headers: { authorization: `Bearer ${token}` } });

forEachBackend((backend) => {
  it("a logout-all, a disable or a group change through one server holds on the other at the next request", async () => {
    const { a, b } = await twoServers(backend);
    await a.root.users.create({ id: "dora", displayName: "Dora", password: "dora password 1" });
    const first = a.client();
    await first.login("dora", "dora password 1");
    const second = a.client();
    await second.login("dora", "dora password 1");
    // B decodes and caches Dora's record on these requests
    expect((await me(b, first.token!)).status).toBe(200);
    expect((await me(b, second.token!)).status).toBe(200);

    // a group joined through A: B's next answer names it
    await a.root.groups.create({ id: "crew", displayName: "Crew", members: ["dora"] });
    expect((await me(b, first.token!)).body.groups).toEqual(["crew"]);

    // logout-all through A: B refuses both tokens at once
    await first.logoutAll();
    expect((await me(b, first.token!)).status).toBe(401);
    expect((await me(b, second.token!)).status).toBe(401);

    // a new session, accepted by B, then Dora disabled through A: B refuses it at once
    const third = a.client();
    await third.login("dora", "dora password 1");
    expect((await me(b, third.token!)).status).toBe(200);
    await a.root.users.disable("dora");
    expect((await me(b, third.token!)).status).toBe(401);
    expect((await me(a, third.token!)).status).toBe(401);
  });
}, httpBackends);
