/**
 * The archive (Imixs-Archive's snapshot model) over HTTP:
 *
 *   POST   /archive/snapshots                    JSON {uniqueId, document, modified? | id?}, or multipart/form-data:
 *                                               fields `uniqueId`, `document` (JSON text), `modified`/`id` first,
 *                                               then file parts (streamed into the archive, never buffered whole)
 *                                               → 201 summary {id, uniqueId, modified, size}; with an explicit
 *                                               time or id (an import), the same snapshot again → 200, other content → 409
 *   GET    /archive/snapshots?uniqueId=…[&order=desc] | ?date=YYYY-MM-DD   → {items: summaries, nextCursor}
 *   GET    /archive/files/{sha256 | md5}         → a stored file by its content hash, streamed
 *   GET    /archive/snapshots/{id}               → the snapshot: summary, document, files
 *   GET    /archive/snapshots/{id}/files/{name}  → the file, streamed (Content-Length, ETag = sha-256)
 *   DELETE /archive/snapshots/{id}               → 204
 *   POST   /projects/{p}/archive                 {drop?} → 201 the archived project (a closed project)
 *   POST   /archive/restore                      {snapshotId} → 201 the restored project, its chain verified
 *
 * The archive checks its intents itself (reading needs global.readArchive, writing global.writeArchive);
 * archiving a project also needs the project's `project.close`, restoring one also global.createProject. A JSON document is bounded by the
 * server's body limit and then by the archive's snapshot limit; larger snapshots come as multipart.
 * The shapes are the archive's (archive/wire.ts) and, for a project's archive, the workflow's (workflow/wire.ts).
 */
import multipart, { type Multipart, type MultipartFile } from "@fastify/multipart";
import { Type, type Static, type TSchema } from "@sinclair/typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import { parseSnapshotId, type FileInput, type OpenedFile } from "../../archive/index.js";
import { FileParams, HashParams, IdParams, ListQuery, MultipartSnapshot, NewSnapshot, Snapshot, SnapshotPage, Summary } from "../../archive/wire.js";
import { FlowstoreError, TooLargeError, ValidationError } from "../../errors.js";
import { ResourceId } from "../../resources/model/wire.js";
import { ArchiveBody, ArchivedProject, RestoreBody, RestoredProject } from "../../workflow/wire.js";
import type { RoutePlugin } from "../context.js";
import { problems } from "../problem.js";
import { servedLevel } from "./workflow.js";

/** The time of an explicit snapshot: `modified` or the millis of `id` (which must name `uniqueId`); both must agree. */
function explicitTime(uniqueId: string, modified: number | undefined, id: string | undefined, where: string): number | undefined {
  if (id === undefined) return modified;
  const parsed = parseSnapshotId(id, `${where}.id`);
  if (parsed.uniqueId !== uniqueId) throw new ValidationError(`${where}.id names the unique id ${parsed.uniqueId}, not ${uniqueId}`, `${where}.id`);
  if (modified !== undefined && modified !== parsed.millis) throw new ValidationError(`${where}.modified and ${where}.id name two times`, `${where}.modified`);
  return parsed.millis;
}
/** Streams a stored file, its sha-256 the ETag (If-None-Match: 304). */
function sendFile(reply: FastifyReply, file: OpenedFile) {
  // A matching If-None-Match answers 304 (conventions.ts), the stream then closed unread.
  reply.header("etag", `"${file.sha256}"`);
  return reply.type("application/octet-stream").header("content-length", file.size).send(file.stream);
}

/** Most fields and files one multipart snapshot may hold. */
const MAX_FILES = 1000;

export const archiveRoutes: RoutePlugin = async (app) => {
  const { archive } = app.flowstore;
  const fieldLimit = app.initialConfig.bodyLimit ?? 1024 * 1024;
  // Scoped to this plugin: only the archive's routes accept multipart bodies. A file may reach the
  // archive's limit (the archive itself answers 413 naming it); the document field the body limit.
  await app.register(multipart, {
    preservePath: true, // a file name may hold a path ("scans/page 1.pdf"): it names the file in the snapshot
    limits: { fileSize: archive.maxSnapshotBytes + 1, fieldSize: fieldLimit, fields: 10, files: MAX_FILES, parts: MAX_FILES + 10 },
  });
  const tags = ["archive"];

  app.post(
    "/archive/snapshots",
    {
      schema: {
        tags,
        summary: "Store a snapshot (JSON, or multipart with files)",
        body: {
          content: {
            "application/json": { schema: NewSnapshot },
            "multipart/form-data": { schema: MultipartSnapshot },
          },
        },
        response: { 201: Summary, 200: Summary, ...problems(400, 403, 409, 413, 415) },
      },
    },
    async (request, reply) => {
      if (!request.isMultipart()) {
        // A JSON body was validated against NewSnapshot (the body's content schemas are beyond the type
        // provider); without a content type no schema applies: say what is expected rather than fail later.
        const body = request.body as Static<typeof NewSnapshot> | null | undefined;
        if (body === undefined || body === null || typeof body !== "object") {
          throw new ValidationError("send application/json {uniqueId, document} or multipart/form-data", "body");
        }
        const modified = explicitTime(body.uniqueId, body.modified, body.id, "body");
        const written = await archive.write(request.actor, body.uniqueId, body.document, undefined, { modified });
        return reply.code(written.created ? 201 : 200).send(written);
      }
      // Refused half-way, the rest of the body is read away by the server's lingering close (linger.ts).
      const written = await writeMultipart(request);
      return reply.code(written.created ? 201 : 200).send(written);
    },
  );

  async function writeMultipart(request: FastifyRequest) {
    const parts = request.parts()[Symbol.asyncIterator]();
    const next = async (): Promise<Multipart | undefined> => {
      try {
        const r = await parts.next();
        return r.done ? undefined : r.value;
      } catch (e) {
        if (e instanceof FlowstoreError) throw e;
        const status = (e as { statusCode?: number }).statusCode;
        if (typeof status === "number" && status >= 400 && status < 500) throw e;
        throw new ValidationError(`the multipart body is malformed: ${(e as Error)?.message ?? e}`, "body");
      }
    };
    let uniqueId: unknown;
    let document: unknown;
    let modified: number | undefined;
    let id: string | undefined;
    let part = await next();
    for (; part && part.type === "field"; part = await next()) {
      const field = `body.${part.fieldname}`;
      if (!["uniqueId", "document", "modified", "id"].includes(part.fieldname)) throw new ValidationError(`${field} is not a known field`, field);
      if (part.valueTruncated) throw new TooLargeError(`${field} exceeds the limit of ${fieldLimit} bytes (send large content as files)`, fieldLimit);
      if (part.fieldname === "uniqueId") uniqueId = part.value;
      else if (part.fieldname === "modified") {
        const text = String(part.value);
        if (!/^(0|[1-9][0-9]{0,15})$/.test(text)) throw new ValidationError("body.modified is epoch milliseconds", field);
        modified = Number(text);
      } else if (part.fieldname === "id") id = String(part.value);
      else if (typeof part.value === "string") {
        try {
          document = JSON.parse(part.value);
        } catch {
          throw new ValidationError("body.document is not valid JSON", "body.document");
        }
      } else document = part.value; // sent with a JSON content type: parsed already
    }
    if (typeof uniqueId !== "string") throw new ValidationError("body.uniqueId is required, before the files", "body.uniqueId");
    if (document === undefined) throw new ValidationError("body.document is required, before the files", "body.document");
    let first = part as MultipartFile | undefined;
    async function* files(): AsyncGenerator<FileInput> {
      for (let file = first; file; ) {
        first = undefined;
        yield { name: file.filename, content: file.file };
        const after = await next();
        if (after && after.type === "field") throw new ValidationError("fields come before the files", `body.${after.fieldname}`);
        file = after;
      }
    }
    return archive.write(request.actor, uniqueId, document, files(), { modified: explicitTime(uniqueId, modified, id, "body") });
  }

  app.get(
    "/archive/snapshots",
    {
      schema: {
        tags,
        summary: "Snapshots of a unique id (time order) or of a day (?uniqueId= or ?date=)",
        querystring: ListQuery,
        response: { 200: SnapshotPage, ...problems(400, 403) },
      },
    },
    async (request) => {
      const { uniqueId, date, cursor, limit, order } = request.query;
      if ((uniqueId === undefined) === (date === undefined)) {
        throw new ValidationError("give exactly one of uniqueId and date", uniqueId === undefined ? "query.uniqueId" : "query.date");
      }
      if (order !== undefined && uniqueId === undefined) throw new ValidationError("order applies to a unique id's snapshots", "query.order");
      return uniqueId !== undefined
        ? archive.findSnapshotsByUniqueId(request.actor, uniqueId, { cursor, limit, order })
        : archive.findSnapshotsByDate(request.actor, date!, { cursor, limit });
    },
  );

  app.get(
    "/archive/snapshots/:id",
    { schema: { tags, summary: "Read a snapshot: its document and the list of its files", params: IdParams, response: { 200: Snapshot, ...problems(400, 403, 404) } } },
    async (request) => {
      return archive.read(request.actor, request.params.id);
    },
  );

  /** A download route's options: streamed bytes with their sha-256 as the ETag. */
  const download = <P extends TSchema>(summary: string, params: P) => ({
    config: { etag: true },
    schema: {
      tags,
      summary: `${summary} (streamed; ETag is its sha-256)`,
      params,
      response: { 200: { description: "the file's bytes", content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } } }, ...problems(400, 403, 404) },
    },
  });

  app.get("/archive/snapshots/:id/files/:name", download("Download a file of a snapshot", FileParams), async (request, reply) =>
    sendFile(reply, await archive.openFile(request.actor, request.params.id, request.params.name)),
  );

  app.get("/archive/files/:hash", download("Download a stored file by its content hash: sha-256, or MD5 as Imixs clients ask", HashParams), async (request, reply) =>
    sendFile(reply, await archive.openFileByHash(request.actor, request.params.hash)),
  );

  app.delete(
    "/archive/snapshots/:id",
    { schema: { tags, summary: "Delete a snapshot (files no other snapshot holds go with it)", params: IdParams, response: { 204: Type.Null(), ...problems(400, 403, 404) } } },
    async (request, reply) => {
      await archive.delete(request.actor, request.params.id);
      return reply.code(204).send();
    },
  );

  app.post(
    `${servedLevel("project").item}/archive`,
    {
      schema: {
        tags: [...tags, "project"],
        summary: "Archive a closed project as one snapshot `project:<id>`; with drop, remove the live project (global.writeArchive and project.close)",
        params: Type.Object({ projectId: ResourceId }),
        body: Type.Optional(ArchiveBody),
        response: { 201: ArchivedProject, ...problems(400, 403, 404, 409, 413, 415) },
      },
    },
    async (request, reply) => {
      const archived = await app.flowstore.archiveProject(request.actor, request.params.projectId, { drop: request.body?.drop === true });
      return reply.code(201).send(archived);
    },
  );

  app.post(
    "/archive/restore",
    {
      schema: {
        tags: [...tags, "project"],
        summary: "Restore an archived project where it does not exist (global.writeArchive and global.createProject)",
        body: RestoreBody,
        response: { 201: RestoredProject, ...problems(400, 403, 404, 409, 415) },
      },
    },
    async (request, reply) => {
      return reply.code(201).send(await app.flowstore.restoreProject(request.actor, request.body.snapshotId));
    },
  );
};
