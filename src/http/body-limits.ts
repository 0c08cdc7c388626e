/**
 * Request bodies, bounded: every limit a route applies is derived here, once (issue 29, finding 4).
 *
 * - The server's body limit (`--body-limit`, FLOWSTORE_BODY_LIMIT, 1 MiB by default) bounds every JSON body,
 *   and the text parts of a multipart body together.
 * - A route that takes documents as base64 in JSON (TruBudget's `subproject.createWorkflowitem`,
 *   `workflowitem.update`, `workflowitem.validateDocument`) takes one largest document's worth on top of that,
 *   for all its documents together: TruBudget's own body limit is one document's base64.
 * - Files of a multipart body are never buffered: each is streamed into the file store after the permission
 *   check (the workflow's `Documents.stage`), bounded by the document limit.
 * - A body larger than the server's limit (or of unknown length) takes one of a few slots while it is read:
 *   `LARGE_BODIES.perServer` for the whole server, `LARGE_BODIES.perUser` for one user. Without a free slot the
 *   request is refused before a byte of it is read (503 when the server's slots are taken, 429 when the
 *   caller's are), so no user can make the server hold more than a few large bodies at once.
 */
import type { FastifyReply, FastifyRequest, preParsingAsyncHookHandler } from "fastify";
import { TooManyRequestsError, UnavailableError } from "../errors.js";

/** The server's body limit unless configured (FLOWSTORE_BODY_LIMIT's default; test/config.test.ts holds them equal). */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

/**
 * The transparency log's cosignature intake (`POST /api/v1/log/cosignatures`, public): one signed note, a
 * checkpoint and its signature lines (C2SP signed-note verifiers accept at least 16; we refuse more than 64).
 */
export const COSIGNATURE_BODY_LIMIT = 64 * 1024;

/** The largest backup a restore takes (both APIs, http/backup.ts), as sent (gzip): 1 GiB, TruBudget's own bound. */
export const MAX_BACKUP_BYTES = 1024 * 1024 * 1024;

/** The largest a backup may grow to once gunzipped: a bound on the disk a gzip bomb sent by a restorer can fill. */
export const MAX_BACKUP_UNPACKED_BYTES = 16 * MAX_BACKUP_BYTES;

/** The largest exchange-rates CSV taken (`POST /api/v1/exchange-rates/ecb`): the ECB's whole history since 1999 is about 2 MiB. */
export const RATES_CSV_LIMIT = 16 * 1024 * 1024;

/** How many bodies over the server's limit are read at once: by the whole server, by one user. */
export const LARGE_BODIES = { perServer: 2, perUser: 1 } as const;

/** The limit of a JSON body that carries documents as base64: the server's limit plus one largest document, encoded. */
export function documentBodyLimit(bodyLimit: number, maxDocumentBytes: number): number {
  return Math.min(bodyLimit + Math.ceil(maxDocumentBytes / 3) * 4, 2 ** 31 - 1);
}

/** Seconds a refused large body is told to wait before trying again. */
const RETRY_AFTER_SECONDS = 5;

/**
 * The slots of large bodies of one server: a `preParsing` hook for the routes that accept them. A body within
 * `bodyLimit` (by its Content-Length) passes without a slot; a larger one, or one without a length, takes
 * one until its response is sent or the connection closes.
 */
export function largeBodySlots(bodyLimit: number): preParsingAsyncHookHandler {
  let inFlight = 0;
  const byUser = new Map<string, number>();
  const release = (user: string) => {
    inFlight--;
    const n = (byUser.get(user) ?? 1) - 1;
    if (n <= 0) byUser.delete(user);
    else byUser.set(user, n);
  };
  return async (request: FastifyRequest, reply: FastifyReply, payload) => {
    const length = Number(request.headers["content-length"]);
    if (Number.isFinite(length) && length <= bodyLimit) return payload;
    const user = request.actor?.id ?? `address:${request.ip}`;
    // Refused unread: the connection closes after the answer, lingering (linger.ts).
    if ((byUser.get(user) ?? 0) >= LARGE_BODIES.perUser) {
      reply.header("retry-after", String(RETRY_AFTER_SECONDS));
      throw new TooManyRequestsError(`at most ${LARGE_BODIES.perUser} upload larger than ${bodyLimit} bytes per user at a time`, RETRY_AFTER_SECONDS);
    }
    if (inFlight >= LARGE_BODIES.perServer) {
      reply.header("retry-after", String(RETRY_AFTER_SECONDS));
      throw new UnavailableError(`the server reads at most ${LARGE_BODIES.perServer} uploads larger than ${bodyLimit} bytes at a time; try again`);
    }
    inFlight++;
    byUser.set(user, (byUser.get(user) ?? 0) + 1);
    let released = false;
    const done = () => {
      if (released) return;
      released = true;
      release(user);
    };
    reply.raw.once("finish", done);
    reply.raw.once("close", done);
    return payload;
  };
}
