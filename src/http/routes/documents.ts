/**
 * Documents of workflowitems over HTTP (workflow/documents.ts):
 *
 *   POST   …/workflowitems/{w}/documents              multipart/form-data: optional fields `comment` and
 *                                                     `fileName` first, then the part `file` (streamed into
 *                                                     the archive's file store, never buffered whole); or
 *                                                     JSON {fileName, link, comment?} for an external link
 *                                                     → 201 the document
 *   GET    …/workflowitems/{w}/documents              → {items: documents}
 *   GET    …/workflowitems/{w}/documents/{d}          → the content, streamed (ETag: its sha-256)
 *   DELETE …/workflowitems/{w}/documents/{d}          → 204 (recorded in the item's history)
 *   POST   …/workflowitems/{w}/documents/{d}/validate multipart `file` → {valid}
 *
 * A document over the configured limit answers 413 naming it; a cut-off upload stores nothing.
 */
import multipart, { type Multipart } from "@fastify/multipart";
import { Type, type Static } from "@sinclair/typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { OpenedFile } from "../../archive/index.js";
import { FlowstoreError, TooLargeError, ValidationError } from "../../errors.js";
import { ResourceId } from "../../resources/model/wire.js";
import { Document, DocumentComment, DocumentFileName, DocumentLink } from "../../workflow/schema.js";
import type { RoutePlugin } from "../context.js";
import { problems } from "../problem.js";
import { servedLevel } from "./workflow.js";

export { Document };

const ItemParams = Type.Object({ projectId: ResourceId, subprojectId: ResourceId, workflowitemId: ResourceId });
const DocParams = Type.Object({
  projectId: ResourceId,
  subprojectId: ResourceId,
  workflowitemId: ResourceId,
  documentId: Type.String({ minLength: 1, maxLength: 64, pattern: "^[A-Za-z0-9-]+$" }),
});
export const DocumentLinkBody = Type.Object(
  { fileName: DocumentFileName, link: DocumentLink, comment: Type.Optional(DocumentComment) },
  { additionalProperties: false, $id: "DocumentLinkBody" },
);
export const DocumentList = Type.Object({ items: Type.Array(Document) }, { $id: "DocumentList" });
export const DocumentValidation = Type.Object({ valid: Type.Boolean() }, { $id: "DocumentValidation" });
/** Documentation only: a multipart body is read as a stream by the handler. */
const MultipartDocument = Type.Unsafe<unknown>({
  description: "optional fields comment and fileName (default: the file part's filename) first, then the part file",
  properties: { comment: { type: "string" }, fileName: { type: "string" }, file: { type: "string", format: "binary" } },
});
const MultipartFile = Type.Unsafe<unknown>({ description: "the part file", properties: { file: { type: "string", format: "binary" } } });

const FIELDS = new Set(["comment", "fileName"]);

/** Streams a document's file, its sha-256 the ETag: 304 with no body (the stream closed unread) to a matching If-None-Match. */
function sendDocument(reply: FastifyReply, { document, file }: { document: { fileName: string }; file: OpenedFile }): FastifyReply {
  const etag = `"${file.sha256}"`;
  reply.header("etag", etag);
  if (reply.request.headers["if-none-match"] === etag) {
    file.stream.destroy();
    return reply.code(304).send();
  }
  return reply
    .type("application/octet-stream")
    .header("content-length", file.size)
    .header("content-disposition", `attachment; filename*=UTF-8''${encodeURIComponent(document.fileName)}`)
    .send(file.stream);
}

export const documentRoutes: RoutePlugin = async (app) => {
  const { documents } = app.flowstore;
  const fieldLimit = 16 * 1024;
  await app.register(multipart, { limits: { fileSize: documents.maxBytes + 1, fieldSize: fieldLimit, fields: 4, files: 1, parts: 5 } });
  const tags = ["workflowitem", "documents"];
  const base = `${servedLevel("workflowitem").item}/documents`;

  /** Reads the leading fields and the `file` part; fields after the file are refused. */
  async function filePart(request: FastifyRequest): Promise<{ fields: Record<string, string>; file: Multipart & { type: "file" } }> {
    const fields: Record<string, string> = {};
    try {
      for await (const part of request.parts()) {
        if (part.type === "file") {
          if (part.fieldname !== "file") throw new ValidationError(`the file part is named "file", not ${JSON.stringify(part.fieldname)}`, `body.${part.fieldname}`);
          return { fields, file: part };
        }
        const field = `body.${part.fieldname}`;
        if (!FIELDS.has(part.fieldname)) throw new ValidationError(`${field} is not a known field (comment and fileName come before the file)`, field);
        if (part.valueTruncated) throw new TooLargeError(`${field} exceeds ${fieldLimit} bytes`, fieldLimit);
        fields[part.fieldname] = String(part.value);
      }
    } catch (e) {
      if (e instanceof FlowstoreError) throw e;
      const status = (e as { statusCode?: number }).statusCode;
      if (typeof status === "number" && status >= 400 && status < 500) throw e;
      throw new ValidationError(`the multipart body is malformed: ${(e as Error)?.message ?? e}`, "body");
    }
    throw new ValidationError("the part file is required", "body.file");
  }

  app.post(
    base,
    {
      schema: {
        tags,
        summary: "Add a document to a workflowitem: a file (multipart, streamed) or an external link (JSON); workflowitem.update, the item open",
        params: ItemParams,
        body: { content: { "multipart/form-data": { schema: MultipartDocument }, "application/json": { schema: DocumentLinkBody } } },
        response: { 201: Document, ...problems(400, 403, 404, 409, 413, 415) },
      },
    },
    async (request, reply) => {
      const { projectId: p, subprojectId: s, workflowitemId: w } = request.params;
      if (!request.isMultipart()) {
        // A JSON body was validated against DocumentLinkBody (the body's content schemas are beyond the type provider).
        const body = request.body as Static<typeof DocumentLinkBody> | null | undefined;
        if (body === undefined || body === null || typeof body !== "object") {
          throw new ValidationError("send multipart/form-data with a part file, or application/json {fileName, link}", "body");
        }
        return reply.code(201).send(await documents.addLink(request.actor, p, s, w, body));
      }
      // Refused half-way, the rest of the body is read away by the server's lingering close (linger.ts).
      const { fields, file } = await filePart(request);
      const fileName = fields.fileName ?? file.filename;
      if (!fileName) throw new ValidationError("the file part needs a filename (or give the field fileName)", "body.fileName");
      return reply.code(201).send(await documents.upload(request.actor, p, s, w, { fileName, comment: fields.comment }, file.file));
    },
  );

  app.get(
    base,
    { schema: { tags, summary: "The documents of a workflowitem (workflowitem.viewDetails)", params: ItemParams, response: { 200: DocumentList, ...problems(400, 403, 404) } } },
    async (request) => {
      const { projectId: p, subprojectId: s, workflowitemId: w } = request.params;
      return { items: await documents.list(request.actor, p, s, w) };
    },
  );

  app.get(
    `${base}/:documentId`,
    {
      schema: {
        tags,
        summary: "Download a document (streamed; ETag is its sha-256; workflowitem.viewDetails)",
        params: DocParams,
        response: {
          200: { description: "the document's bytes", content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } } },
          ...problems(400, 403, 404),
        },
      },
    },
    async (request, reply) => {
      const { projectId: p, subprojectId: s, workflowitemId: w, documentId: d } = request.params;
      return sendDocument(reply, await documents.open(request.actor, p, s, w, d));
    },
  );

  app.delete(
    `${base}/:documentId`,
    {
      schema: {
        tags,
        summary: "Delete a document (workflowitem.update, the item open; recorded in its history)",
        params: DocParams,
        response: { 204: Type.Null(), ...problems(400, 403, 404, 409) },
      },
    },
    async (request, reply) => {
      const { projectId: p, subprojectId: s, workflowitemId: w, documentId: d } = request.params;
      await documents.delete(request.actor, p, s, w, d);
      return reply.code(204).send();
    },
  );

  app.post(
    `${base}/:documentId/validate`,
    {
      schema: {
        tags,
        summary: "Whether a file is this document's content (its sha-256 matches); nothing is stored",
        params: DocParams,
        body: { content: { "multipart/form-data": { schema: MultipartFile } } },
        response: { 200: DocumentValidation, ...problems(400, 403, 404, 413, 415) },
      },
    },
    async (request) => {
      const { projectId: p, subprojectId: s, workflowitemId: w, documentId: d } = request.params;
      if (!request.isMultipart()) throw new ValidationError("send multipart/form-data with a part file", "body");
      const { file } = await filePart(request);
      return documents.validate(request.actor, p, s, w, d, file.file);
    },
  );
};
