/**
 * TruBudget's system routes (api/src/httpd/router.ts, provisioning_get.ts, system/*.ts; v2.18):
 *
 * - public: `readiness` (200 "Ready" while the store answers, else 504 as TruBudget's) and `liveness`
 *   (the process's uptime);
 * - authenticated: `version` (TruBudget's shape: `api` is flowstore's release, `blockchain` the store
 *   with the time a read of it took, `multichain` the backend with the time a raw read of it took),
 *   `provisioned` (a flowstore store is provisioned once root exists, which a server ensures at start),
 *   and `system.createBackup` (root only, as TruBudget: flowstore's own export format, gzip).
 */
import { readFileSync } from "node:fs";
import { PassThrough } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";
import { Type } from "@sinclair/typebox";
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { ForbiddenError } from "../../errors.js";
import { exportStore } from "../../flowstore/transfer.js";
import { ok, Reply } from "./envelope.js";

/** flowstore's release, from its package.json (two levels above src/http/trubudget and dist/http/trubudget). */
export const RELEASE = (JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string }).version;

/** TruBudget's backups are root's alone (its system/createBackup.ts and restoreBackup.ts). */
export function assertRoot(request: FastifyRequest, what: string): void {
  if (request.actor.id !== "root") throw new ForbiddenError(`only root may ${what}`);
}

const elapsed = async (work: () => Promise<unknown>): Promise<number> => {
  const start = performance.now();
  await work();
  return performance.now() - start;
};

const Release = Type.Object({ release: Type.String(), commit: Type.Optional(Type.String()), buildTimeStamp: Type.Optional(Type.String()), ping: Type.Optional(Type.Number()) });

export const publicSystemRoutes: FastifyPluginAsync = async (app) => {
  app.get("/readiness", async (_request, reply) => {
    try {
      await app.flowstore.ready();
    } catch (e) {
      app.log.warn({ err: e }, "readiness check failed");
      return reply.code(504).type("text/plain; charset=utf-8").send("Not ready. Waiting for the store.");
    }
    return reply.type("text/plain; charset=utf-8").send("Ready");
  });

  app.get("/liveness", { schema: { response: { 200: Type.Object({ uptime: Type.Number() }) } } }, async () => ({ uptime: process.uptime() }));
};

export const systemRoutes: FastifyPluginAsync = async (app) => {
  const { kv, identity } = app.flowstore;

  app.get("/version", { schema: { response: { 200: Reply(Type.Object({ api: Release, blockchain: Release, multichain: Release })) } } }, async () => {
    const store = await elapsed(() => app.flowstore.ready());
    const backend = await elapsed(() => kv.listPartitions("identity", { limit: 1 }));
    return ok({ api: { release: RELEASE }, blockchain: { release: RELEASE, ping: store }, multichain: { release: kv.backend, ping: backend } });
  });

  app.get("/provisioned", { schema: { response: { 200: Reply(Type.Object({ isProvisioned: Type.Boolean(), message: Type.String() })) } } }, async () => {
    const root = await identity.getUser("root").catch(() => undefined);
    return ok(
      root
        ? { isProvisioned: true, message: "the store is provisioned: root exists" }
        : { isProvisioned: false, message: "the store is not provisioned: root does not exist yet" },
    );
  });

  app.get("/system.createBackup", async (request, reply) => {
    assertRoot(request, "create a backup");
    const body = new PassThrough();
    const gzip = createGzip();
    // Streamed: the export writes as the client reads. A failure after the first byte can only cut the
    // stream, which the importer refuses (an export ends with its counts).
    void pipeline(gzip, body).catch(() => {});
    void exportStore(kv, gzip)
      .then(() => gzip.end())
      .catch((err: unknown) => {
        request.log.error({ err }, "backup failed");
        gzip.destroy(err as Error);
      });
    return reply.type("application/gzip").header("content-disposition", 'attachment; filename="backup.gz"').send(body);
  });
};
