/** What the http workload's processes share: the data set, the credentials, the routes and the servers' front door. */
import type { FastifyInstance } from "fastify";
import { jwtVerify } from "jose";
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import type { AddressInfo } from "node:net";
import { subproject, type Tree } from "../tree.js";

export const ROOT_PASSWORD = "bench password 0123456789";
export const SECRET = new TextEncoder().encode("bench token secret that is long enough 0123456789");
export const P = "p1";
export const S1K = "s1k";
export const S10K = "s10k";
/** Empty at start: the create row adds workflowitems to it. */
export const SNEW = "snew";

/**
 * A subproject of 1,000 workflowitems (the list under load), one of 10,000 (the large data set for memory)
 * and an empty one (the creates).
 */
export function httpTree(): Tree {
  return {
    projects: [{ id: P, subprojects: [subproject(S1K, 1_000, "EUR", 100), subproject(S10K, 10_000, "EUR", 1_000), subproject(SNEW, 0)] }],
    updates: [],
  };
}

export const listPath = (s: string, limit = 1000) => `/api/v1/projects/${P}/subprojects/${s}/workflowitems?limit=${limit}`;
export const createPath = (s: string) => `/api/v1/projects/${P}/subprojects/${s}/workflowitems`;
/** A create's body: no id, so each server gives every new workflowitem a fresh one. */
export const CREATE_BODY = JSON.stringify({ displayName: "Load test step", amountType: "N/A" });
export const orderingPath = (s: string) => `/api/v1/projects/${P}/subprojects/${s}/workflowitem-ordering`;
export const itemPath = (s: string, w: string) => `/api/v1/projects/${P}/subprojects/${s}/workflowitems/${w}`;

/**
 * The peers' authentication (the SQLite peer, the limit prototype): every request carries a bearer JWT
 * (HS256, SECRET), verified with jose; its subject is the caller (`request.user`).
 */
export function verifyBearer(app: FastifyInstance): void {
  app.addHook("onRequest", async (request, reply) => {
    const m = /^Bearer (.+)$/.exec(request.headers.authorization ?? "");
    if (!m) return reply.code(401).send({ title: "unauthorized" });
    try {
      const { payload } = await jwtVerify(m[1]!, SECRET);
      (request as unknown as { user: string }).user = String(payload.sub);
    } catch {
      return reply.code(401).send({ title: "unauthorized" });
    }
  });
}

export const userOf = (request: object): string => (request as { user: string }).user;

/**
 * Listens on 127.0.0.1 (a free port), answers the parent's {usage} requests (RSS and the CPU time the
 * process has used, once `settle` has resolved: the server's background work on what came before) and {profile-start}/{profile-stop, file} (a CPU profile of a load, bench/profile/cpu.ts), closes (then `close`) and exits when the parent disconnects, and tells the parent
 * {ready, port, rss, ...extra}.
 */
export async function serveParent(app: FastifyInstance, close: () => unknown, extra: object = {}, settle: () => Promise<unknown> = async () => {}): Promise<void> {
  await app.listen({ host: "127.0.0.1", port: 0 });
  let session: Session | undefined;
  process.on("message", (m: { type: string; file?: string }) => {
    if (m.type === "profile-start" && !session) {
      // bench/profile/cpu.ts --profile: a CPU profile of this process over one load only (node:inspector)
      session = new Session();
      session.connect();
      void session.post("Profiler.enable").then(() => session!.post("Profiler.start").then(() => process.send!({ type: "profiling" })));
      return;
    }
    if (m.type === "profile-stop" && session) {
      const s = session;
      session = undefined;
      // The background's work on the load's requests is the load's.
      void settle()
        .then(() => s.post("Profiler.stop"))
        .then(({ profile }) => {
          writeFileSync(m.file!, JSON.stringify(profile));
          s.disconnect();
          process.send!({ type: "profiled", file: m.file });
        });
      return;
    }
    if (m.type !== "usage") return;
    void settle().then(() => {
      const cpu = process.cpuUsage();
      process.send!({ type: "usage", rss: process.memoryUsage().rss, cpuMs: (cpu.user + cpu.system) / 1000 });
    });
  });
  process.on(
    "disconnect",
    () =>
      void app
        .close()
        .then(close)
        .finally(() => process.exit(0)),
  );
  process.send!({ type: "ready", port: (app.server.address() as AddressInfo).port, rss: process.memoryUsage().rss, ...extra });
}
