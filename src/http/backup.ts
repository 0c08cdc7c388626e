/**
 * Backup and restore over HTTP, one implementation for both APIs (`GET /api/v1/store/backup`,
 * `POST /api/v1/store/restore`, and TruBudget's `system.createBackup` / `system.restoreBackup`): the
 * store's own operations (compose/backup.ts), called with the request's actor, which check its intent
 * (`global.createBackup`, `global.restoreBackup`) before a byte is read or sent.
 *
 * - A backup is the store's export (NDJSON) gzipped, streamed as it is read: for an HTTP caller it holds
 *   no password hash and no session (identity/credentials.ts).
 * - A restore takes such a backup as `application/gzip` (415 otherwise, after the intent's 403), bounded
 *   as sent and unpacked (body-limits.ts). The store shuts its fence before it reads the upload, checks
 *   the backup in a scratch store (a bad or forged one is a 400 and the store is untouched), then
 *   replaces the content as a new epoch while the server's gate answers every other request 503; a
 *   failure after the content began to be replaced is a 503 naming how to resume, and the gate stays
 *   shut.
 */
import { PassThrough, pipeline as pipe, Transform, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip, createGzip } from "node:zlib";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { pendingRestore, UNFINISHED_IMPORT, unfinishedImport, type TransferCounts } from "../compose/transfer.js";
import { FlowstoreError, TooLargeError, ValidationError } from "../errors.js";
import { MAX_BACKUP_BYTES, MAX_BACKUP_UNPACKED_BYTES } from "./body-limits.js";

/** The media type of a backup, both ways. */
export const BACKUP_MEDIA_TYPE = "application/gzip";

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

/** Sends the store's backup (gzip) to the request's actor; a 403 before any byte when it may not take one. */
export async function sendBackup(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const backup = await app.flowstore.exportStore(request.actor);
  const body = new PassThrough();
  // Streamed: the export writes as the client reads. A failure after the first byte can only cut the
  // stream, which the importer refuses (an export ends with its counts).
  void pipeline(backup.stream, createGzip(), body).catch(() => {});
  backup.done.catch((err: unknown) => request.log.error({ err }, "backup failed"));
  return reply.type(BACKUP_MEDIA_TYPE).header("content-disposition", 'attachment; filename="backup.gz"').send(body);
}

/** What a restore answers: the backup's SHA-256 (as its epoch names it) and what it held. */
export interface RestoreDone {
  readonly sha256: string;
  readonly counts: TransferCounts;
}

/**
 * Restores the store from the request's body (raw, any media type reaches here: the route's scope takes
 * it as a stream) as the request's actor. The body is opened once the store found that the actor may
 * restore (403 before 415).
 */
export async function restoreBackup(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply): Promise<RestoreDone> {
  const ndjson = (): Readable => {
    const type = request.headers["content-type"]?.split(";")[0]!.trim().toLowerCase();
    if (type !== BACKUP_MEDIA_TYPE) {
      throw new FlowstoreError("validation", 415, `unsupported media type ${type ?? "(none)"}: send the backup as ${BACKUP_MEDIA_TYPE}`, "headers.content-type");
    }
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
      async () =>
        (await unfinishedImport(app.flowstore.kv)) || (await pendingRestore(app.flowstore.kv)) !== null
          ? `the restore failed midway; refusing to serve: ${UNFINISHED_IMPORT}`
          : null,
    );
    request.log.info({ counts }, "backup restored");
    return { sha256: staged.sha256, counts };
  } catch (e) {
    // A restore that began applying settles itself (the store as it was, or resumable from the file it keeps).
    if (!applying) await staged.discard();
    throw e;
  }
}

/** Registers a restore route in a scope of its own, where any media type reaches the handler as the raw stream. */
export async function registerRestoreRoute(
  app: FastifyInstance,
  url: string,
  schema: Record<string, unknown>,
  answer: (done: RestoreDone, reply: FastifyReply) => unknown,
): Promise<void> {
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", (_request, payload, done) => done(null, payload));
    scope.post(url, { schema }, async (request, reply) => answer(await restoreBackup(app, request, reply), reply));
  });
}
