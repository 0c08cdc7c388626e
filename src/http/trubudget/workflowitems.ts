/**
 * TruBudget's workflowitem routes (its workflowitem_*.ts, workflowitem_create*.ts):
 *
 *   POST   /subproject.createWorkflowitem      {projectId, subprojectId, displayName, amountType, …, documents?}
 *                                              → {project: {id}, subproject: {id}, workflowitem: {id}}
 *   POST   /v2/subproject.createWorkflowitem   the same as multipart/form-data: fields as parts, files as
 *                                              file parts, `link_<n>` parts {link, fileName, comment},
 *                                              `comment_<n>` the comment of the n-th document
 *   GET    /workflowitem.list?projectId&subprojectId → {workflowitems} in TruBudget's order: closed ones
 *                                              first by close time, then the ordering
 *   GET    /workflowitem.viewDetails?…&workflowitemId → {workflowitem}
 *   POST   /workflowitem.update                {…ids, …fields, documents?} → {}; /v2/ as multipart
 *   POST   /workflowitem.validateDocument      {…ids, id, base64String, hash} → {isIdentical}
 *   GET    /workflowitem.downloadDocument?…&documentId → the bytes
 *   DELETE /workflowitem.deleteDocument?…&documentId   → 204
 *
 * Documents are the native ones (workflow/documents.ts): a file goes to the archive's file store, a link
 * is recorded as a link. Everything a request carries is checked before the first write (fields, file
 * names, sizes), so bad input changes nothing; the item is written first, then each document in a
 * commit of its own, as the native routes do.
 */
import { createHash } from "node:crypto";
import multipart from "@fastify/multipart";
import { Type, type Static, type TSchema } from "@sinclair/typebox";
import type { FastifyRequest } from "fastify";
import { TooLargeError, ValidationError } from "../../errors.js";
import type { Actor } from "../../access/actor.js";
import { PAGE_LIMIT } from "../../resources/model/wire.js";
import { DocumentComment, DocumentFileName, DocumentLink, MAX_DOCUMENTS, WorkflowitemFields } from "../../workflow/schema.js";
import { subprojectRef } from "../../workflow/commands.js";
import type { RoutePlugin } from "../context.js";
import { dropsUnknown, trubudgetValidatorCompiler } from "./validation.js";
import { Envelope, ok } from "./envelope.js";
import { exposeWorkflowitem, type Served } from "./expose.js";
import { tbIntents } from "./intents.js";
import { fieldsAt, idsWith, notRoot, optional, parsed, readAll, type Ids } from "./workflow-common.js";

const W = WorkflowitemFields.properties;
/** TruBudget accepts an empty due date for none. */
const DueDate = Type.Union([W.dueDate, Type.Literal("")]);

/** A document in a JSON request (TruBudget's uploadedDocumentSchema): a file as base64, or a link. */
const NewDocument = Type.Union([
  Type.Object(
    { id: Type.Optional(Type.String()), base64: Type.String({ minLength: 1 }), fileName: DocumentFileName, comment: Type.Optional(DocumentComment) },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      id: Type.Optional(Type.String()),
      link: DocumentLink,
      fileName: Type.Optional(DocumentFileName),
      comment: Type.Optional(DocumentComment),
      linkedFileHash: Type.Optional(Type.String()),
    },
    { additionalProperties: false },
  ),
]);
const Documents = Type.Array(NewDocument, { maxItems: MAX_DOCUMENTS });

/** TruBudget's new workflowitem (workflowitem_create.ts), its fields typed as flowstore declares them. */
const newItemFields = {
  displayName: W.displayName,
  amountType: W.amountType,
  status: Type.Optional(Type.Literal("open")),
  dueDate: Type.Optional(DueDate),
  documents: Type.Optional(Documents),
  ...optional({
    description: W.description,
    assignee: W.assignee,
    currency: W.currency,
    amount: W.amount,
    billingDate: W.billingDate,
    exchangeRate: W.exchangeRate,
    additionalData: W.additionalData,
    workflowitemType: W.workflowitemType,
    tags: W.tags,
    fundingOrganization: W.fundingOrganization,
  }),
};
/** TruBudget's route schema closes the new item: unknown fields (the frontend's display names) are dropped. */
const NewItem = dropsUnknown(idsWith("subproject", newItemFields));

/** TruBudget's workflowitem update (workflowitem_updated.ts's modification, plus new documents). */
const updateFields = {
  dueDate: Type.Optional(DueDate),
  documents: Type.Optional(Documents),
  ...optional({
    displayName: W.displayName,
    description: W.description,
    exchangeRate: W.exchangeRate,
    billingDate: W.billingDate,
    amount: W.amount,
    currency: W.currency,
    amountType: W.amountType,
    additionalData: W.additionalData,
    tags: W.tags,
    fundingOrganization: W.fundingOrganization,
    markdown: W.markdown,
  }),
};
const ItemUpdate = idsWith("workflowitem", updateFields);

/** `bytes` as a stream of one chunk (what the documents' check reads). */
async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

type NewDoc = Static<typeof NewDocument>;
/** A document to attach: a file's bytes or a link. */
type Pending = { fileName?: string; comment?: string; content?: Uint8Array; link?: string };
type ItemIds = Required<Ids>;
type NewItem = Static<typeof NewItem>;
type ItemUpdate = Static<typeof ItemUpdate>;
/** A check of a body against its schema (the JSON routes' validator): it passes, typed, or throws a 400. */
type Check<T> = (value: unknown) => asserts value is T;

const DocumentQuery = idsWith("workflowitem", { documentId: Type.String({ minLength: 1, maxLength: 64 }) });
const Validate = dropsUnknown(idsWith("workflowitem", { id: Type.String({ minLength: 1, maxLength: 64 }), base64String: Type.String(), hash: Type.String() }));

export const workflowitemRoutes: RoutePlugin = async (app) => {
  const { workflow, documents } = app.flowstore;
  const intents = tbIntents(workflow.store);
  const base64Limit = Math.ceil((documents.maxBytes * 4) / 3) * MAX_DOCUMENTS;
  const jsonLimit = Math.max(app.initialConfig.bodyLimit ?? 0, Math.min(base64Limit, 2 ** 31 - 1));
  await app.register(multipart, { limits: { fileSize: documents.maxBytes + 1, files: MAX_DOCUMENTS, fields: 200, fieldSize: 1024 * 1024 } });

  /** The documents of a JSON request, decoded and checked before anything is written. */
  function pendingOf(docs: NewDoc[] | undefined): Pending[] {
    return (docs ?? []).map((d, i) => {
      if ("link" in d) return { link: d.link, fileName: d.fileName ?? d.link, comment: d.comment || undefined };
      const content = Buffer.from(d.base64, "base64");
      if (content.length > documents.maxBytes) throw new TooLargeError(`data.documents[${i}] exceeds the limit of ${documents.maxBytes} bytes`, documents.maxBytes);
      return { content, fileName: d.fileName, comment: d.comment || undefined };
    });
  }

  /** Adds the documents to an item, each as the native document routes do; an error names the document. */
  async function attach(actor: Actor, ids: ItemIds, pending: Pending[]): Promise<void> {
    const { projectId: p, subprojectId: s, workflowitemId: w } = ids;
    for (const [i, d] of pending.entries()) {
      await fieldsAt(
        (f) => `data.documents[${i}].${f}`,
        () =>
          d.link !== undefined
            ? documents.addLink(actor, p, s, w, { fileName: d.fileName!, link: d.link, comment: d.comment })
            : documents.upload(actor, p, s, w, { fileName: d.fileName!, comment: d.comment }, d.content!),
      );
    }
  }

  /** The fields of a create as the workflow takes them: an empty due date is none. */
  function newFields(data: NewItem) {
    const { projectId: _p, subprojectId: _s, documents: _d, status: _open, ...fields } = data;
    if (fields.dueDate === "") delete fields.dueDate;
    return fields;
  }

  /** The fields of an update as the workflow takes them: an empty due date clears it. */
  function changedFields(data: ItemUpdate): Record<string, unknown> {
    const { projectId: _p, subprojectId: _s, workflowitemId: _w, documents: _d, ...fields } = data;
    return fields.dueDate === "" ? { ...fields, dueDate: null } : fields;
  }

  async function create(actor: Actor, data: NewItem, pending: Pending[]) {
    notRoot(actor, "workflowitem");
    if (pending.length > MAX_DOCUMENTS) throw new ValidationError(`a workflowitem holds at most ${MAX_DOCUMENTS} documents`, "data.documents");
    if (pending.length > 0 && data.assignee !== undefined && data.assignee !== actor.id) {
      // A restricted item assigned to another leaves its creator only workflowitem.list (TruBudget's rule), so
      // its documents could not be added after it: refused before anything is written, never half-made.
      const sp = await workflow.store.reads.get(actor, { ...subprojectRef(data.projectId, data.subprojectId), type: "subproject" });
      if ((sp.data.workflowitemType ?? data.workflowitemType) === "restricted") {
        throw new ValidationError("documents of a restricted workflowitem assigned to another user are added by its assignee, after the create", "data.documents");
      }
    }
    const item = await workflow.createWorkflowitem(actor, data.projectId, data.subprojectId, newFields(data));
    await attach(actor, { projectId: data.projectId, subprojectId: data.subprojectId, workflowitemId: item.id }, pending);
    return { project: { id: data.projectId }, subproject: { id: data.subprojectId }, workflowitem: { id: item.id } };
  }

  async function update(actor: Actor, data: ItemUpdate, pending: Pending[]) {
    const fields = changedFields(data);
    // TruBudget's update to amountType N/A drops what only an amount has, sent or not (the native command refuses them).
    if (fields.amountType === "N/A") for (const f of ["amount", "currency", "exchangeRate", "billingDate"]) delete fields[f];
    const { projectId, subprojectId, workflowitemId } = data;
    // Room for every new document, checked before the first write (the list needs the item's view, as the update does).
    if (pending.length > 0 && (await documents.list(actor, projectId, subprojectId, workflowitemId)).length + pending.length > MAX_DOCUMENTS) {
      throw new ValidationError(`a workflowitem holds at most ${MAX_DOCUMENTS} documents`, "data.documents");
    }
    if (Object.keys(fields).length > 0) await workflow.update(actor, { type: "workflowitem", ids: [projectId, subprojectId, workflowitemId] }, fields);
    await attach(actor, { projectId, subprojectId, workflowitemId }, pending);
  }

  /** A compiled body check of `schema` (the same validator as the JSON routes'); its failure is a 400 naming the field. */
  const compile = <T extends TSchema>(schema: T): Check<Static<T>> => {
    const check = trubudgetValidatorCompiler()({ schema, method: "POST", url: "", httpPart: "body" }) as ((v: unknown) => boolean) & { errors?: unknown[] };
    return (value) => {
      if (check(value)) return;
      throw Object.assign(new Error("invalid multipart body"), { statusCode: 400, validation: check.errors, validationContext: "body" });
    };
  };
  const checkNewItem: Check<Envelope<typeof NewItem>> = compile(Envelope(NewItem));
  const checkItemUpdate: Check<Envelope<typeof ItemUpdate>> = compile(Envelope(ItemUpdate));
  const checkDocument: Check<NewDoc> = compile(NewDocument);

  /**
   * TruBudget's multipart form (its parseMultiPartRequest): each field a part, `tags` comma-separated,
   * "null"/"undefined" for none, JSON objects as text; each file part a document, `link_<n>` a link
   * document as JSON and `comment_<n>` the comment of document n. Files are read whole, as TruBudget does.
   */
  async function multipartData(request: FastifyRequest): Promise<{ data: Record<string, unknown>; pending: Pending[] }> {
    if (!request.isMultipart()) throw new ValidationError("send multipart/form-data", "body");
    const data: Record<string, unknown> = {};
    const pending: Pending[] = [];
    for await (const part of request.parts()) {
      if (part.type === "file") {
        const content = await part.toBuffer();
        if (part.file.truncated || content.length > documents.maxBytes)
          throw new TooLargeError(`the file ${part.filename} exceeds the limit of ${documents.maxBytes} bytes`, documents.maxBytes);
        pending.push({ content, fileName: part.filename });
        continue;
      }
      const name = part.fieldname;
      const value = String(part.value);
      if (name === "apiVersion") continue;
      if (name.includes("link")) {
        let link: Record<string, unknown>;
        try {
          link = JSON.parse(value) as Record<string, unknown>;
        } catch {
          throw new ValidationError(`${name} must be JSON {link, fileName, comment}`, `body.${name}`);
        }
        checkDocument(link);
        const url = "link" in link ? link.link : undefined;
        pending.push({ link: url, fileName: link.fileName ?? url, comment: link.comment || undefined });
      } else if (/^comment_\d+$/.test(name)) {
        const i = Number(name.slice("comment_".length));
        if (!pending[i]) throw new ValidationError(`${name} names no document before it`, `body.${name}`);
        if (value !== "" && value !== "undefined" && value !== "null") pending[i]!.comment = value;
      } else if (name === "tags") {
        data.tags = value === "" ? [] : value.split(",");
      } else if (value === "null" || value === "undefined") {
      } else if (name === "additionalData") {
        try {
          data.additionalData = JSON.parse(value);
        } catch {
          throw new ValidationError("additionalData must be a JSON object", "body.data.additionalData");
        }
      } else {
        data[name] = value;
      }
    }
    for (const [i, d] of pending.entries()) {
      if (d.comment !== undefined && d.comment.length > (DocumentComment.maxLength ?? Infinity))
        throw new ValidationError(`the comment of document ${i} is too long`, `body.comment_${i}`);
    }
    return { data, pending };
  }

  app.post("/subproject.createWorkflowitem", { bodyLimit: jsonLimit, schema: { body: Envelope(NewItem) } }, async (request) => {
    const { data } = request.body;
    return ok(await create(request.actor, data, pendingOf(data.documents)));
  });

  app.post("/v2/subproject.createWorkflowitem", async (request) => {
    const { data, pending } = await multipartData(request);
    const body = { apiVersion: "1.0", data };
    checkNewItem(body);
    return { apiVersion: "2.0", data: await create(request.actor, body.data, pending) };
  });

  /**
   * The answers of workflowitem.list, by the rendered page they translate: the store's page cache hands
   * out the same page (one Buffer) while the partition and the caller are unchanged, so an unchanged
   * list is translated once, as the native list is rendered once. Entries go with their pages.
   */
  const translated = new WeakMap<Buffer, Buffer>();
  const ListQuery = idsWith("subproject");
  app.get("/workflowitem.list", { schema: { querystring: ListQuery } }, async (request, reply) => {
    const { projectId, subprojectId } = request.query;
    const options = { allowedIntents: true, sequence: "closedFirst" } as const;
    const first = (await workflow.listWorkflowitemsPage(request.actor, projectId, subprojectId, { ...options, limit: PAGE_LIMIT.max })).json;
    let body = translated.get(first);
    if (body === undefined) {
      const page = JSON.parse(first.toString("utf8")) as { items: Served[]; nextCursor: string | null };
      const rest =
        page.nextCursor === null
          ? []
          : parsed<Served>(
              await readAll((cursor, limit) => workflow.listWorkflowitemsJson(request.actor, projectId, subprojectId, { ...options, cursor: cursor ?? page.nextCursor, limit })),
            );
      body = Buffer.from(JSON.stringify(ok({ workflowitems: [...page.items, ...rest].map((r) => exposeWorkflowitem(r, intents)) })));
      if (page.nextCursor === null) translated.set(first, body);
    }
    return reply.type("application/json; charset=utf-8").send(body);
  });

  app.get("/workflowitem.viewDetails", { schema: { querystring: idsWith("workflowitem") } }, async (request) => {
    const { projectId, subprojectId, workflowitemId } = request.query;
    const { json } = await workflow.store.reads.getJson(request.actor, { type: "workflowitem", ids: [projectId, subprojectId, workflowitemId] }, { allowedIntents: true });
    return ok({ workflowitem: exposeWorkflowitem(JSON.parse(json.toString("utf8")) as Served, intents) });
  });

  app.post("/workflowitem.update", { bodyLimit: jsonLimit, schema: { body: Envelope(ItemUpdate) } }, async (request) => {
    const { data } = request.body;
    await update(request.actor, data, pendingOf(data.documents));
    return ok({});
  });

  app.post("/v2/workflowitem.update", async (request) => {
    const { data, pending } = await multipartData(request);
    const body = { apiVersion: "1.0", data };
    checkItemUpdate(body);
    await update(request.actor, body.data, pending);
    return { apiVersion: "2.0", data: {} };
  });

  app.post("/workflowitem.validateDocument", { bodyLimit: jsonLimit, schema: { body: Envelope(Validate) } }, async (request) => {
    const { projectId, subprojectId, workflowitemId, id, base64String, hash } = request.body.data;
    const content = Buffer.from(base64String, "base64");
    const { valid } = await fieldsAt(
      (f) => (f === "file" ? "data.base64String" : f),
      () => documents.validate(request.actor, projectId, subprojectId, workflowitemId, id, once(content)),
    );
    // TruBudget compares the content with the hash the caller names, which is the document's own.
    const named = createHash("sha256").update(content).digest("hex") === hash.toLowerCase();
    return ok({ isIdentical: valid && named });
  });

  app.get("/workflowitem.downloadDocument", { schema: { querystring: DocumentQuery } }, async (request, reply) => {
    const { projectId, subprojectId, workflowitemId, documentId } = request.query;
    const { document, file } = await documents.open(request.actor, projectId, subprojectId, workflowitemId, documentId);
    return reply
      .type("application/octet-stream")
      .header("content-length", file.size)
      .header("content-disposition", `attachment; filename*=UTF-8''${encodeURIComponent(document.fileName)}`)
      .send(file.stream);
  });

  app.delete("/workflowitem.deleteDocument", { schema: { querystring: DocumentQuery } }, async (request, reply) => {
    const { projectId, subprojectId, workflowitemId, documentId } = request.query;
    await documents.delete(request.actor, projectId, subprojectId, workflowitemId, documentId);
    return reply.code(204).send();
  });
};
