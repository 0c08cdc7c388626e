/**
 * TruBudget's system routes (api/src/httpd/router.ts, provisioning_get.ts, system/*.ts; v2.18):
 *
 * - public: `readiness` (200 "Ready" while the store answers, else 504 as TruBudget's) and `liveness`
 *   (the process's uptime);
 * - authenticated: `version` (TruBudget's shape: `api` is flowstore's release, `blockchain` the store
 *   with the time a read of it took, `multichain` the backend with the time a raw read of it took, `storage` the document store, which is
 *   the store itself: TruBudget's frontend offers file uploads only when `storage.ping` is there),
 *   `provisioned` (true once root recorded `provisioning.end`; `provisioning.start|end` are root's),
 *   `system.createBackup` (root only, as TruBudget, unless `global.createBackup` is granted: flowstore's
 *   own export format, gzip) and `system.restoreBackup` (root only unless `global.restoreBackup` is
 *   granted: such a backup, application/gzip, replaces the whole store; the store checks it in a scratch
 *   store first, so a bad one is a 400 that touches nothing; the server's gate answers every other
 *   request 503 while the store is replaced; the answer is TruBudget's `{ apiVersion, data: {} }`). Both
 *   are the store's own operations (compose/backup.ts), called with the request's actor: they check the
 *   intent themselves. TruBudget answers a non-root caller 401, as it does for createBackup; flowstore
 *   answers 403 for both, so that a logged-in user is not logged out.
 */
import { readFileSync } from "node:fs";
import { Type } from "@sinclair/typebox";
import { registerRestoreRoute, sendBackup } from "../backup.js";
import type { RoutePlugin } from "../context.js";
import { Envelope, ok, Reply } from "./envelope.js";
import { dropsUnknown } from "./validation.js";

/** flowstore's release, from its package.json (two levels above src/http/trubudget and dist/http/trubudget). */
export const RELEASE = (JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string }).version;

const elapsed = async (work: () => Promise<unknown>): Promise<number> => {
  const start = performance.now();
  await work();
  return performance.now() - start;
};

const Release = Type.Object({ release: Type.String(), commit: Type.Optional(Type.String()), buildTimeStamp: Type.Optional(Type.String()), ping: Type.Optional(Type.Number()) });

export const publicSystemRoutes: RoutePlugin = async (app) => {
  app.get("/readiness", async (_request, reply) => {
    try {
      await app.flowstore.ready();
    } catch (e) {
      app.log.warn({ err: e }, "readiness check failed");
      return reply.code(504).type("text/plain; charset=utf-8").send("Not ready. Waiting for the store.");
    }
    return reply.type("text/plain; charset=utf-8").send("Ready");
  });

  app.get("/liveness", { config: { ungated: true }, schema: { response: { 200: Type.Object({ uptime: Type.Number() }) } } }, async () => ({ uptime: process.uptime() }));
};

export const systemRoutes: RoutePlugin = async (app) => {
  const { kv, identity } = app.flowstore;

  app.get("/version", { schema: { response: { 200: Reply(Type.Object({ api: Release, blockchain: Release, multichain: Release, storage: Release })) } } }, async () => {
    const store = await elapsed(() => app.flowstore.ready());
    const backend = await elapsed(() => kv.listPartitions("identity", { limit: 1 }));
    return ok({
      api: { release: RELEASE },
      blockchain: { release: RELEASE, ping: store },
      multichain: { release: kv.backend, ping: backend },
      storage: { release: RELEASE, ping: backend },
    });
  });

  // Provisioned once root recorded provisioning.end (TruBudget's system information), not merely because root exists:
  // its provisioning tool reads this to decide whether to fill the node.
  app.get("/provisioned", { schema: { response: { 200: Reply(Type.Object({ isProvisioned: Type.Boolean(), message: Type.String() })) } } }, async () => {
    const p = await identity.provisioning();
    return ok(
      p === null
        ? { isProvisioned: false, message: "provisioning has not started" }
        : p.state === "started"
          ? { isProvisioned: false, message: `provisioning started at ${p.at} and has not ended` }
          : { isProvisioned: true, message: `provisioning ended at ${p.at}` },
    );
  });

  // provisioning.start and provisioning.end: root's only (403 otherwise); `data` is empty (TruBudget's route schema closes it).
  const ProvisioningBody = Envelope(dropsUnknown(Type.Object({})));
  for (const [route, state] of [
    ["provisioning.start", "started"],
    ["provisioning.end", "ended"],
  ] as const) {
    app.post(`/${route}`, { schema: { body: ProvisioningBody, response: { 200: Reply(Type.Object({})) } } }, async (request) => {
      await identity.setProvisioning(request.actor, state);
      return ok({});
    });
  }

  // The store's own operations, shared with the native API (http/backup.ts): each checks the caller's intent first.
  app.get("/system.createBackup", async (request, reply) => sendBackup(app, request, reply));
  await registerRestoreRoute(app, "/system.restoreBackup", { response: { 200: Reply(Type.Object({})) } }, () => ok({}));
};
