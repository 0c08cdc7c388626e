/**
 * The archive (seed 003) over HTTP:
 *
 *   POST   /archive/snapshots                    JSON {uniqueId, document}, or multipart/form-data: fields
 *                                               `uniqueId` and `document` (JSON text) first, then file
 *                                               parts (streamed into the archive, never buffered whole)
 *                                               → 201 summary {id, uniqueId, modified, size}
 *   GET    /archive/snapshots?uniqueId=… | ?date=YYYY-MM-DD   → {items: summaries, nextCursor}
 *   GET    /archive/snapshots/{id}               → the snapshot: summary, document, files
 *   GET    /archive/snapshots/{id}/files/{name}  → the file, streamed (Content-Length, ETag = sha-256)
 *   DELETE /archive/snapshots/{id}               → 204
 *   POST   /projects/{p}/archive                 {drop?} → 201 the archived project (a closed project)
 *   POST   /archive/restore                      {snapshotId} → 201 the restored project, its chain verified
 *
 * Reading needs global.readArchive; writing global.writeArchive; archiving a project also the
 * project's `project.close`; restoring one also global.createProject. A JSON document is bounded by the
 * server's body limit and then by the archive's snapshot limit; larger snapshots come as multipart.
 */
import multipart, { type Multipart, type MultipartFile } from "@fastify/multipart";
import { Type, type Static } from "@sinclair/typebox";
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { archiveProject, restoreProject, type FileInput } from "../../archive/index.js";
import { FlowstoreError, TooLargeError, ValidationError } from "../../errors.js";
import { PageOf } from "../pagination.js";
import { problems } from "../problem.js";
import { ResourceId } from "./workflow.js";

const SnapshotId = Type.String({ minLength: 1, maxLength: 300, description: "<uniqueId>-<epochMillis>" });
const UniqueId = Type.String({ minLength: 1, maxLength: 256 });
const Document = Type.Record(Type.String(), Type.Array(Type.Unknown()), {
  description: "an item collection: item names to lists of JSON values",
});
const Summary = Type.Object(
  { id: Type.String(), uniqueId: Type.String(), modified: Type.String({ format: "date-time" }), size: Type.Integer() },
  { title: "SnapshotSummary" },
);
const ArchivedFile = Type.Object({ name: Type.String(), size: Type.Integer(), sha256: Type.String() }, { title: "ArchivedFile" });
const Snapshot = Type.Object({ ...Summary.properties, document: Document, files: Type.Array(ArchivedFile) }, { title: "Snapshot" });
const NewSnapshot = Type.Object({ uniqueId: UniqueId, document: Document }, { additionalProperties: false, title: "NewSnapshot" });
/** Documentation only: a multipart body is read as a stream by the handler, not validated up front. */
const MultipartSnapshot = Type.Unsafe<unknown>({
  description: "fields uniqueId and document (JSON text) first, then any number of file parts (their filename names them)",
  properties: {
    uniqueId: { type: "string" },
    document: { type: "string", description: "the document as JSON text" },
    files: { type: "array", items: { type: "string", format: "binary" } },
  },
});
const ListQuery = Type.Object(
  {
    uniqueId: Type.Optional(UniqueId),
    date: Type.Optional(Type.String({ pattern: "^\\d{4}-\\d{2}-\\d{2}$", description: "YYYY-MM-DD (UTC)" })),
    cursor: Type.Optional(Type.String({ maxLength: 2048, description: "nextCursor of the previous page" })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
  },
  { additionalProperties: false },
);
const IdParams = Type.Object({ id: SnapshotId });
const FileParams = Type.Object({ id: SnapshotId, name: Type.String({ minLength: 1, maxLength: 1024 }) });
const ArchiveBody = Type.Object({ drop: Type.Optional(Type.Boolean({ default: false })) }, { additionalProperties: false });
const Counts = Type.Object({
  entries: Type.Integer(),
  bytes: Type.Integer(),
  resources: Type.Record(Type.String(), Type.Integer()),
  events: Type.Integer(),
});
const ChainHead = Type.Object({ seq: Type.Integer(), hash: Type.Union([Type.String(), Type.Null()]) });
const ArchivedProject = Type.Object(
  { projectId: Type.String(), snapshot: Summary, counts: Counts, chainHead: ChainHead, dropped: Type.Boolean() },
  { title: "ArchivedProject" },
);
const RestoreBody = Type.Object({ snapshotId: SnapshotId }, { additionalProperties: false });
const RestoredProject = Type.Object(
  {
    projectId: Type.String(),
    snapshotId: Type.String(),
    entries: Type.Integer(),
    verify: Type.Object({ ok: Type.Boolean(), checked: Type.Integer(), firstBad: Type.Optional(Type.Object({ seq: Type.Integer(), reason: Type.String() })) }),
  },
  { title: "RestoredProject" },
);

/** Most fields and files one multipart snapshot may hold. */
const MAX_FILES = 1000;

export const archiveRoutes: FastifyPluginAsync = async (app) => {
  const { identity, archive, workflow } = app.flowstore;
  const deps = { archive, store: workflow.store };
  const fieldLimit = app.initialConfig.bodyLimit ?? 1024 * 1024;
  // Scoped to this plugin: only the archive's routes accept multipart bodies. A file may reach the
  // archive's limit (the archive itself answers 413 naming it); the document field the body limit.
  await app.register(multipart, {
    preservePath: true, // a file name may hold a path ("scans/page 1.pdf"): it names the file in the snapshot
    limits: { fileSize: archive.maxSnapshotBytes + 1, fieldSize: fieldLimit, fields: 10, files: MAX_FILES, parts: MAX_FILES + 10 },
  });
  const can = (request: FastifyRequest, what: "read" | "write") =>
    identity.global.assert(request.actor, what === "read" ? "global.readArchive" : "global.writeArchive");
  const tags = ["archive"];

  app.post<{ Body: Static<typeof NewSnapshot> | undefined }>(
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
        response: { 201: Summary, ...problems(400, 403, 409, 413, 415) },
      },
    },
    async (request, reply) => {
      await can(request, "write");
      if (!request.isMultipart()) {
        const body = request.body;
        // Without a content type no schema applies: say what is expected rather than fail later.
        if (body === undefined || body === null || typeof body !== "object") {
          throw new ValidationError("send application/json {uniqueId, document} or multipart/form-data", "body");
        }
        return reply.code(201).send(await archive.write(body.uniqueId, body.document));
      }
      try {
        return reply.code(201).send(await writeMultipart(request));
      } catch (e) {
        // Read the rest of the body away, so the client gets this answer rather than a reset connection.
        request.raw.unpipe();
        request.raw.resume();
        throw e;
      }
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
    let part = await next();
    for (; part && part.type === "field"; part = await next()) {
      const field = `body.${part.fieldname}`;
      if (part.fieldname !== "uniqueId" && part.fieldname !== "document") throw new ValidationError(`${field} is not a known field`, field);
      if (part.valueTruncated) throw new TooLargeError(`${field} exceeds the limit of ${fieldLimit} bytes (send large content as files)`, fieldLimit);
      if (part.fieldname === "uniqueId") uniqueId = part.value;
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
    return archive.write(uniqueId, document, files());
  }

  app.get<{ Querystring: Static<typeof ListQuery> }>(
    "/archive/snapshots",
    {
      schema: {
        tags,
        summary: "Snapshots of a unique id (time order) or of a day (?uniqueId= or ?date=)",
        querystring: ListQuery,
        response: { 200: PageOf(Summary), ...problems(400, 403) },
      },
    },
    async (request) => {
      await can(request, "read");
      const { uniqueId, date, cursor, limit } = request.query;
      if ((uniqueId === undefined) === (date === undefined)) {
        throw new ValidationError("give exactly one of uniqueId and date", uniqueId === undefined ? "query.uniqueId" : "query.date");
      }
      return uniqueId !== undefined
        ? archive.findSnapshotsByUniqueId(uniqueId, { cursor, limit })
        : archive.findSnapshotsByDate(date!, { cursor, limit });
    },
  );

  app.get<{ Params: Static<typeof IdParams> }>(
    "/archive/snapshots/:id",
    { schema: { tags, summary: "Read a snapshot: its document and the list of its files", params: IdParams, response: { 200: Snapshot, ...problems(400, 403, 404) } } },
    async (request) => {
      await can(request, "read");
      return archive.read(request.params.id);
    },
  );

  app.get<{ Params: Static<typeof FileParams> }>(
    "/archive/snapshots/:id/files/:name",
    {
      schema: {
        tags,
        summary: "Download a file of a snapshot (streamed; ETag is its sha-256)",
        params: FileParams,
        response: { 200: { description: "the file's bytes", content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } } }, ...problems(400, 403, 404) },
      },
    },
    async (request, reply) => {
      await can(request, "read");
      const file = await archive.openFile(request.params.id, request.params.name);
      const etag = `"${file.sha256}"`;
      reply.header("etag", etag);
      if (request.headers["if-none-match"] === etag) {
        file.stream.destroy();
        return reply.code(304).send();
      }
      return reply.type("application/octet-stream").header("content-length", file.size).send(file.stream);
    },
  );

  app.delete<{ Params: Static<typeof IdParams> }>(
    "/archive/snapshots/:id",
    { schema: { tags, summary: "Delete a snapshot (files no other snapshot holds go with it)", params: IdParams, response: { 204: Type.Null(), ...problems(400, 403, 404) } } },
    async (request, reply) => {
      await can(request, "write");
      await archive.delete(request.params.id);
      return reply.code(204).send();
    },
  );

  app.post<{ Params: { p: string }; Body: Static<typeof ArchiveBody> | undefined }>(
    "/projects/:p/archive",
    {
      schema: {
        tags: [...tags, "project"],
        summary: "Archive a closed project as one snapshot `project:<id>`; with drop, remove the live project (global.writeArchive and project.close)",
        params: Type.Object({ p: ResourceId }),
        body: Type.Optional(ArchiveBody),
        response: { 201: ArchivedProject, ...problems(400, 403, 404, 409, 413, 415) },
      },
    },
    async (request, reply) => {
      const archived = await archiveProject(deps, request.actor, request.params.p, { drop: request.body?.drop === true });
      return reply.code(201).send(archived);
    },
  );

  app.post<{ Body: Static<typeof RestoreBody> }>(
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
      return reply.code(201).send(await restoreProject(deps, request.actor, request.body.snapshotId));
    },
  );
};
