/** GET /me: the caller's id, groups and held global intents; a token is needed, no intent. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryKv } from "../../src/kv/memory.js";
import { raw, startServer, type Running } from "./harness.js";

describe("GET /api/v1/me", () => {
  let s: Running;
  beforeAll(async () => {
    s = await startServer(new MemoryKv(), { webRoot: false });
  });
  afterAll(async () => s?.close());

  it("tells a user about itself, with the global intents it holds through its groups", async () => {
    const ann = await s.userClient("ann", "ann password 123");
    await s.root.groups.create({ id: "makers", displayName: "Makers", members: ["ann"] });
    await s.root.request("POST", "/api/v1/global/permissions/grant", { body: { intent: "global.createProject", identity: "makers" } });
    const me = await ann.request<{ id: string; groups: string[]; intents: string[] }>("GET", "/api/v1/me");
    expect(me).toEqual({ id: "ann", groups: ["makers"], intents: ["global.createProject"] });
    const root = await s.root.request<{ intents: string[] }>("GET", "/api/v1/me");
    expect(root.intents).toContain("global.createUser");
    // root holds the whole registry, every domain's intents, and /me reports exactly those
    expect([...root.intents].sort()).toEqual([...s.app.flowstore.identity.global.intents.list()].sort());
    expect(root.intents).toEqual(expect.arrayContaining(["global.grantPermission", "global.createProject", "global.writeArchive", "global.readProcessData"]));
  });

  it("needs a token", async () => {
    expect((await raw(s.base, "GET", "/api/v1/me")).status).toBe(401);
  });
});
