/**
 * Logs carry a request id and never a password, a token or an Authorization header; a domain plugin
 * gets authentication and request.actor; an internal error is a 500 problem without internals.
 */
import type { FastifyPluginAsync } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/http/logging.js";
import { MemoryKv } from "../../src/kv/memory.js";
import { raw, ROOT_PASSWORD, startServer, type Running } from "./harness.js";

const lines: string[] = [];
const logger = createLogger({ level: "debug", destination: { write: (s: string) => void lines.push(s) } });

const probe: FastifyPluginAsync = async (app) => {
  app.get("/probe/whoami", async (request) => ({ id: request.actor.id, groups: request.actor.groups }));
  app.get("/probe/boom", async () => {
    throw new Error("secret internal detail /srv/db.sqlite");
  });
};

let s: Running;
beforeAll(async () => {
  s = await startServer(new MemoryKv(), { logger, routes: [probe] });
});
afterAll(async () => {
  await s.close();
});

describe("logging and domain plugins", () => {
  it("a domain plugin is served under /api/v1 behind authentication", async () => {
    expect((await raw(s.base, "GET", "/api/v1/probe/whoami")).status).toBe(401);
    expect(await s.root.request("GET", "/api/v1/probe/whoami")).toEqual({ id: "root", groups: [] });
    const doc = await raw(s.base, "GET", "/openapi.json");
    expect(doc.body.paths["/api/v1/probe/whoami"].get.security).toEqual([{ bearer: [] }]);
  });

  it("an internal error is a 500 problem without internals, logged with its request id", async () => {
    const r = await raw(s.base, "GET", "/api/v1/probe/boom", { headers: { authorization: `Bearer ${s.root.token}`, "x-request-id": "boom-1" } });
    expect(r.status).toBe(500);
    expect(r.type).toMatch(/^application\/problem\+json/);
    expect(r.body.detail).toBe("internal error (request boom-1)");
    expect(JSON.stringify(r.body)).not.toContain("secret internal detail");
    const logged = lines.map((l) => JSON.parse(l)).find((l) => l.reqId === "boom-1" && l.level === 50);
    expect(logged?.err?.message).toContain("secret internal detail");
  });

  it("never logs a password, a token or an Authorization header", async () => {
    const password = "very-secret-password-42";
    await s.root.users.create({ id: "logme", displayName: "L", password });
    const c = s.client();
    const { token } = await c.login("logme", password);
    await c.users.list();
    // failing requests too: bad credentials, a body with a password that fails validation, a forged token
    await raw(s.base, "POST", "/api/v1/auth/token", {
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: "logme", password: "wrong-" + password }),
    });
    await raw(s.base, "POST", "/api/v1/users", {
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "x-request-id": "req-pw" },
      body: JSON.stringify({ id: "x", displayName: 5, password }),
    });
    await raw(s.base, "GET", "/api/v1/users", { headers: { authorization: `Bearer ${token}x` } });
    const text = lines.join("");
    expect(lines.length).toBeGreaterThan(5);
    expect(text).toContain('"reqId":"req-pw"');
    expect(text).not.toContain(password);
    expect(text).not.toContain(ROOT_PASSWORD);
    expect(text).not.toContain(token);
    expect(text).not.toContain(s.root.token!);
    expect(text).not.toMatch(/Bearer [A-Za-z0-9]/);
  });

  it("redacts credentials even when code logs them explicitly", () => {
    const before = lines.length;
    logger.info({ req: { headers: { authorization: "Bearer abc.def.ghi" } }, body: { password: "pw-1" }, token: "tok-1", user: { password: "pw-2" } }, "explicit");
    const line = lines.slice(before).join("");
    expect(line).toContain("explicit");
    for (const secret of ["abc.def.ghi", "pw-1", "tok-1", "pw-2"]) expect(line).not.toContain(secret);
  });
});
