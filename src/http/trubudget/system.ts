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
import { PassThrough, pipeline as pipe, Transform, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip, createGzip } from "node:zlib";
import { Type } from "@sinclair/typebox";
import { FlowstoreError, TooLargeError, ValidationError } from "../../errors.js";
import { UNFINISHED_IMPORT, unfinishedImport } from "../../compose/transfer.js";
import type { RoutePlugin } from "../context.js";
import { Envelope, ok, Reply } from "./envelope.js";
import { dropsUnknown } from "./validation.js";

/** flowstore's release, from its package.json (two levels above src/http/trubudget and dist/http/trubudget). */
export const RELEASE = (JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string }).version;

/** The largest backup `system.restoreBackup` takes, as sent (gzip): 1 GiB, TruBudget's own bound. */
export const MAX_BACKUP_BYTES = 1024 * 1024 * 1024;

/** The largest a backup may grow to once gunzipped: a bound on the disk a root-sent gzip bomb can fill. */
export const MAX_BACKUP_UNPACKED_BYTES = 16 * MAX_BACKUP_BYTES;

/** The media type of a backup, both ways. */
const GZIP = "application/gzip";

/** The upload, counted: past `max` bytes (of `what`) it fails with a 413. */
function limited(max: number, what: string): Transform {
  let bytes = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      bytes += chunk.length;
      if (bytes > max) callback(new TooLargeError(`the backup is larger than ${max} bytes ${what}`, max));
      else callback(null, chunk);
    },
  });
}

/** A failure to read the upload: a gzip stream that is not one, or is cut off, is the client's (400). */
function uploadError(e: unknown): unknown {
  const code = (e as { code?: unknown }).code;
  if (!(e instanceof FlowstoreError) && typeof code === "string" && code.startsWith("Z_")) {
    return new ValidationError(`the body is not a whole gzip stream (${(e as Error).message})`, "body");
  }
  return e;
}

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

  app.get("/system.createBackup", async (request, reply) => {
    // The store checks the caller's intent before the first line (a 403 before any byte is sent).
    const backup = await app.flowstore.exportStore(request.actor);
    const body = new PassThrough();
    // Streamed: the export writes as the client reads. A failure after the first byte can only cut the
    // stream, which the importer refuses (an export ends with its counts).
    void pipeline(backup.stream, createGzip(), body).catch(() => {});
    backup.done.catch((err: unknown) => request.log.error({ err }, "backup failed"));
    return reply.type(GZIP).header("content-disposition", 'attachment; filename="backup.gz"').send(body);
  });

  // Its own scope: any media type reaches the handler as the raw stream, which refuses all but gzip.
  await app.register(async (restore) => {
    restore.removeAllContentTypeParsers();
    restore.addContentTypeParser("*", (_request, payload, done) => done(null, payload));
    restore.post("/system.restoreBackup", { schema: { response: { 200: Reply(Type.Object({})) } } }, async (request, reply) => {
      // The body is opened once the store has found that the caller may restore (403 before 415).
      const ndjson = (): Readable => {
        const type = request.headers["content-type"]?.split(";")[0]!.trim().toLowerCase();
        if (type !== GZIP) throw new FlowstoreError("validation", 415, `unsupported media type ${type ?? "(none)"}: send the backup as ${GZIP}`, "headers.content-type");
        return pipe(request.body as Readable, limited(MAX_BACKUP_BYTES, "as sent"), createGunzip(), limited(MAX_BACKUP_UNPACKED_BYTES, "unpacked"), () => {});
      };
      const staged = await app.flowstore.stageRestore(request.actor, ndjson).catch((e: unknown) => Promise.reject(uploadError(e)));
      let applying = false;
      try {
        let importing = false;
        const progress = (): void => {
          if (importing) return;
          importing = true;
          request.log.info({ file: staged.file }, "restore: the old content is dropped, importing the backup");
        };
        const counts = await app.flowstore.gate.run(
          "a restore is replacing the store",
          reply,
          () => {
            applying = true;
            return staged.apply(progress);
          },
          async () => ((await unfinishedImport(kv)) ? `the restore failed midway; refusing to serve: ${UNFINISHED_IMPORT}` : null),
        );
        request.log.info({ counts }, "backup restored");
      } catch (e) {
        // A restore that began applying settles itself (the store as it was, or resumable from the file it keeps).
        if (!applying) await staged.discard();
        throw e;
      }
      return ok({});
    });
  });
};
