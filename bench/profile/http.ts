/**
 * A profiling driver (not a benchmark): one process holds a flowstore server on a fresh LMDB directory and
 * sends it bounded loads over loopback, so `node --cpu-prof` sees the server's frames for one operation at a
 * time. Print the profile's top self-time frames with bench/profile/top.ts.
 *   npx tsx bench/profile/http.ts <get|create|list|listcold|history|update|reorder> [count] [out.cpuprofile]
 * listcold: the list of 1,000 with the page cache off (what every list costs after a write to the subproject).
 * The profile (node:inspector) covers the load only, not the building of the data.
 */
import { Agent, request } from "node:http";
import { Session } from "node:inspector/promises";
import { writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openFlowstore } from "../../src/compose/index.js";
import { buildServer } from "../../src/http/server.js";
import { SYSTEM } from "../../src/access/actor.js";
import { loadFlowstore } from "../peers/flowstore.js";
import { itemId, subproject } from "../tree.js";
import { CREATE_BODY, createPath, itemPath, listPath, orderingPath, P, ROOT_PASSWORD, SECRET } from "../http/shared.js";

const op = process.argv[2] ?? "get";
const count = Number(process.argv[3] ?? 5000);
const dir = mkdtempSync(join(tmpdir(), "fs-prof-"));
const flowstore = await openFlowstore(`lmdb:${dir}`, { pageCache: op !== "listcold" });
const app = await buildServer(flowstore, { tokenSecret: SECRET, logger: false, closeStore: true });
await app.flowstore.identity.ensureRoot(ROOT_PASSWORD);
await app.flowstore.identity.createUser(SYSTEM, { id: "mary", displayName: "Mary", password: ROOT_PASSWORD });
for (const id of ["tom", "jane"]) await app.flowstore.identity.createUser(SYSTEM, { id, displayName: id, password: ROOT_PASSWORD });
await app.flowstore.identity.createGroup(SYSTEM, { id: "managers", displayName: "Managers", members: ["mary"] });
const s10k = subproject("s10k", 10_000, "EUR", 1_000);
const big = op === "reorder" ? [s10k] : [];
await loadFlowstore(app.flowstore.workflow, { projects: [{ id: P, subprojects: [subproject("s1k", 1000, "EUR", 100), subproject("snew", 0), ...big] }], updates: [] });
/** The bench's reorders of s10k: its 1,000 ordered ids, rotated (each moves every one of them). */
const reorders = Array.from({ length: 10 }, (_, k) => JSON.stringify({ ordering: [...s10k.ordering.slice(k * 97), ...s10k.ordering.slice(0, k * 97)] }));
await app.listen({ host: "127.0.0.1", port: 0 });
const port = (app.server.address() as AddressInfo).port;
const agent = new Agent({ keepAlive: true, maxSockets: 20 });
const login = await fetch(`http://127.0.0.1:${port}/api/v1/auth/token`, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ username: "mary", password: ROOT_PASSWORD }),
});
const { token } = (await login.json()) as { token: string };
const send = (method: string, path: string, body?: string) =>
  new Promise<number>((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (body) headers["content-type"] = "application/json";
    const req = request({ host: "127.0.0.1", port, method, path, agent, headers }, (res) => {
      res.resume();
      res.on("end", () => (res.statusCode! < 300 ? resolve(res.statusCode!) : reject(new Error(`${method} ${path}: ${res.statusCode}`))));
    });
    req.on("error", reject);
    req.end(body);
  });
if (op === "history") for (let i = 0; i < 1000; i++) await send("PATCH", itemPath("s1k", itemId(0)), JSON.stringify({ description: `changed ${i}` }));
const next = (i: number): [string, string, string?] => {
  switch (op) {
    case "get":
      return ["GET", itemPath("s1k", itemId(i % 1000))];
    case "create":
      return ["POST", createPath("snew"), CREATE_BODY];
    case "update":
      return ["PATCH", itemPath("s1k", itemId(i % 1000)), JSON.stringify({ description: `load ${i}` })];
    case "reorder":
      return ["PUT", orderingPath("s10k"), reorders[i % 10]];
    case "list":
    case "listcold":
      return ["GET", listPath("s1k")];
    case "history":
      return ["GET", `${itemPath("s1k", itemId(0))}/history?limit=1000`];
    default:
      throw new Error(`unknown op ${op}`);
  }
};
const session = new Session();
session.connect();
await session.post("Profiler.enable");
await session.post("Profiler.start");
let i = 0;
const t0 = performance.now();
await Promise.all(
  Array.from({ length: 20 }, async () => {
    while (i < count) {
      const [m, p, b] = next(i++);
      await send(m, p, b);
    }
  }),
);
const sec = (performance.now() - t0) / 1000;
const { profile } = await session.post("Profiler.stop");
writeFileSync(process.argv[4] ?? `/tmp/${op}.cpuprofile`, JSON.stringify(profile));
process.stdout.write(`${op}: ${count} in ${sec.toFixed(2)} s = ${(count / sec).toFixed(0)}/s\n`);
agent.destroy();
await app.close();
rmSync(dir, { recursive: true, force: true });
