/**
 * The native API's backup and restore of the whole store (issue 29): `GET /store/backup` (needs
 * `global.createBackup`: the export, gzipped, without password hashes or sessions) and
 * `POST /store/restore` (needs `global.restoreBackup`: such a backup as `application/gzip`, restored as a
 * new epoch). One implementation with TruBudget's `system.createBackup` / `system.restoreBackup`
 * (http/backup.ts); the store checks the intents itself (compose/backup.ts).
 */
import { Type } from "@sinclair/typebox";
import type { FastifyPluginAsync } from "fastify";
import { BACKUP_MEDIA_TYPE, registerRestoreRoute, sendBackup } from "../backup.js";
import { problems } from "../problem.js";

const tags = ["store"];

const Restored = Type.Object(
  {
    sha256: Type.String({ description: "the SHA-256 of the backup unpacked (its NDJSON), as the restore's epoch names it" }),
    partitions: Type.Integer({ description: "partitions the backup held" }),
    entries: Type.Integer({ description: "entries the backup held" }),
  },
  { $id: "Restored" },
);

export const backupRoutes: FastifyPluginAsync = async (app) => {
  app.get(
    "/store/backup",
    {
      schema: {
        tags,
        summary: "A backup of the whole store (gzipped NDJSON export, streamed; no password hash, no session); needs global.createBackup",
        response: { 200: { description: "the backup", content: { [BACKUP_MEDIA_TYPE]: { schema: { type: "string", format: "binary" } } } }, ...problems(403) },
      },
    },
    async (request, reply) => sendBackup(app, request, reply),
  );

  await registerRestoreRoute(
    app,
    "/store/restore",
    {
      tags,
      summary: `Restore the whole store from a backup (${BACKUP_MEDIA_TYPE}) as a new epoch: the replaced history is kept and verifiable, every session ends; needs global.restoreBackup`,
      response: { 200: Restored, ...problems(400, 403, 413, 415, 503) },
    },
    (done) => ({ sha256: done.sha256, ...done.counts }),
  );
};
