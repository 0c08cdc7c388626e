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
 *
 * Bodies are bounded (http/body-limits.ts): a JSON body carries at most one largest document's worth of
 * base64 beside the server's limit; a multipart file is never buffered: when its part arrives, the fields
 * before it (TruBudget's frontend sends them first) name the item, the caller's permission to add documents
 * there is checked, and only then is the file streamed into the file store under a hold (`Documents.stage`),
 * committed with the item or undone.
 */
import { createHash } from "node:crypto";
import multipart from "@fastify/multipart";
import { Type, type Static, type TSchema } from "@sinclair/typebox";
import type { FastifyRequest } from "fastify";
import type { Readable } from "node:stream";
import { TooLargeError, ValidationError } from "../../errors.js";
import type { Actor } from "../../access/actor.js";
import { PAGE_LIMIT } from "../../resources/model/wire.js";
import { DocumentComment, DocumentFileName, DocumentLink, MAX_DOCUMENTS, WorkflowitemFields } from "../../workflow/schema.js";
import { subprojectRef } from "../../workflow/commands.js";
import type { StagedDocument } from "../../workflow/documents.js";
import { documentBodyLimit, largeBodySlots } from "../body-limits.js";
import type { RoutePlugin } from "../context.js";
import { dropsUnknown, trubudgetValidatorCompiler } from "./validation.js";
import { Envelope, ok } from "./envelope.js";
import { exposeWorkflowitem, type Served } from "./expose.js";
import { tbIntents } from "./intents.js";
import { fieldsAt, idsWith, keptWhenRedacted, notRoot, optional, ownIntents, parsed, readAll, readerOf, type Ids } from "./workflow-common.js";

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
/** A document to attach: a file's bytes (JSON), a file already streamed into the file store (multipart), or a link. */
type Pending = { fileName?: string; comment?: string; content?: Uint8Array; staged?: StagedDocument; link?: string };
/** Streams one multipart file into the file store, given the fields that came before it. */
type Stage = (fields: Record<string, unknown>, file: Readable) => Promise<StagedDocument>;
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
  const bodyLimit = app.initialConfig.bodyLimit!;
  const jsonLimit = documentBodyLimit(bodyLimit, documents.maxBytes);
  const preParsing = largeBodySlots(bodyLimit);
  // Each file streamed (fileSize one byte over the limit, so the hold sees it is too large); the text parts
  // together bounded by the server's body limit (below).
  await app.register(multipart, { limits: { fileSize: documents.maxBytes + 1, files: MAX_DOCUMENTS, fields: 2 * MAX_DOCUMENTS + 50, fieldSize: bodyLimit } });

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
      const input = { fileName: d.fileName!, comment: d.comment };
      const staged = d.staged;
      d.staged = undefined; // committed or undone by commitStaged, whatever happens
      await fieldsAt(
        (f) => `data.documents[${i}].${f}`,
        () =>
          d.link !== undefined
            ? documents.addLink(actor, p, s, w, { ...input, link: d.link })
            : staged !== undefined
              ? documents.commitStaged(actor, p, s, w, input, staged)
              : documents.upload(actor, p, s, w, input, d.content!),
      );
    }
  }

  /** Undoes the staged files a failed request did not commit. */
  async function discard(pending: Pending[]): Promise<void> {
    await Promise.all(pending.map((d) => (d.staged ? documents.discardStaged(d.staged).catch(() => undefined) : undefined)));
  }

  /** `run`, undoing the request's staged files when it fails. */
  async function undoingStaged<T>(pending: Pending[], run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (e) {
      await discard(pending);
      throw e;
    }
  }

  /** The ids a multipart body names before its first file (TruBudget's frontend sends its fields first). */
  function idsBefore(fields: Record<string, unknown>, names: readonly (keyof Ids)[]): string[] {
    return names.map((n) => {
      const v = fields[n];
      if (typeof v !== "string" || v === "") throw new ValidationError(`${n} must come before the files of the form`, `body.${n}`);
      return v;
    });
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

  /**
   * A restricted item assigned to another leaves its creator only workflowitem.list (TruBudget's rule), so
   * its documents could not be added after it: refused before anything is written, never half-made.
   */
  async function assertCreatorMayAddDocuments(actor: Actor, p: string, s: string, fields: { assignee?: unknown; workflowitemType?: unknown }): Promise<void> {
    if (fields.assignee === undefined || fields.assignee === actor.id) return;
    const sp = await workflow.store.reads.get(actor, { ...subprojectRef(p, s), type: "subproject" });
    if ((sp.data.workflowitemType ?? fields.workflowitemType) === "restricted") {
      throw new ValidationError("documents of a restricted workflowitem assigned to another user are added by its assignee, after the create", "data.documents");
    }
  }

  /** Creates the item (with the id its staged files are held under, if any), then attaches its documents. */
  async function create(actor: Actor, data: NewItem, pending: Pending[], id?: string) {
    notRoot(actor, "workflowitem");
    if (pending.length > MAX_DOCUMENTS) throw new ValidationError(`a workflowitem holds at most ${MAX_DOCUMENTS} documents`, "data.documents");
    if (pending.length > 0) await assertCreatorMayAddDocuments(actor, data.projectId, data.subprojectId, data);
    const item = await workflow.createWorkflowitem(actor, data.projectId, data.subprojectId, { ...newFields(data), ...(id !== undefined ? { id } : {}) });
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
   * document as JSON and `comment_<n>` the comment of document n. Each file is handed to `stage` as it
   * arrives (checked, then streamed into the file store), never read whole; the text parts together are
   * bounded by the server's body limit. On failure the files staged so far are undone.
   */
  async function multipartData(request: FastifyRequest, stage: Stage): Promise<{ data: Record<string, unknown>; pending: Pending[] }> {
    if (!request.isMultipart()) throw new ValidationError("send multipart/form-data", "body");
    const data: Record<string, unknown> = {};
    const pending: Pending[] = [];
    let text = 0;
    // Refused before the body is read to its end (no permission for a file, a part over a limit), the
    // connection closes after the answer, lingering (linger.ts).
    return undoingStaged(pending, async () => {
      for await (const part of request.parts()) {
        if (part.type === "file") {
          if (pending.length >= MAX_DOCUMENTS) throw new ValidationError(`a workflowitem holds at most ${MAX_DOCUMENTS} documents`, "data.documents");
          pending.push({ staged: await stage(data, part.file), fileName: part.filename });
          continue;
        }
        const name = part.fieldname;
        const value = String(part.value);
        text += Buffer.byteLength(name) + Buffer.byteLength(value);
        if (text > bodyLimit) throw new TooLargeError(`the fields of the form exceed the limit of ${bodyLimit} bytes`, bodyLimit);
        takeField(data, pending, name, value);
      }
      for (const [i, d] of pending.entries()) {
        if (d.comment !== undefined && d.comment.length > (DocumentComment.maxLength ?? Infinity))
          throw new ValidationError(`the comment of document ${i} is too long`, `body.comment_${i}`);
      }
      return { data, pending };
    });
  }

  /** One text part of TruBudget's multipart form, into the fields or the documents. */
  function takeField(data: Record<string, unknown>, pending: Pending[], name: string, value: string): void {
    if (name === "apiVersion") return;
    // Files are staged under the ids the form names before them: an id given twice could name another item.
    if ((name === "projectId" || name === "subprojectId" || name === "workflowitemId") && name in data) throw new ValidationError(`${name} is given twice`, `body.${name}`);
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

  app.post("/subproject.createWorkflowitem", { bodyLimit: jsonLimit, preParsing, schema: { body: Envelope(NewItem) } }, async (request) => {
    const { data } = request.body;
    return ok(await create(request.actor, data, pendingOf(data.documents)));
  });

  app.post("/v2/subproject.createWorkflowitem", { preParsing }, async (request) => {
    const actor = request.actor;
    notRoot(actor, "workflowitem");
    // The id the new item will have, so that its files can be held under it before it exists (a kill before
    // the create leaves holds that `recover` undoes: no such item holds them).
    let id: string | undefined;
    const { data, pending } = await multipartData(request, async (fields, file) => {
      const [p, s] = idsBefore(fields, ["projectId", "subprojectId"]) as [string, string];
      if (id === undefined) {
        await assertCreatorMayAddDocuments(actor, p, s, fields);
        id = workflow.store.newId();
      }
      return documents.stage(actor, p, s, id, file, { newItem: true });
    });
    return undoingStaged(pending, async () => {
      const body = { apiVersion: "1.0", data };
      checkNewItem(body);
      return { apiVersion: "2.0", data: await create(actor, body.data, pending, id) };
    });
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
    const reader = readerOf(request.actor);
    if (reader !== request.actor) {
      const all = parsed<Served>(await readAll((cursor, limit) => workflow.listWorkflowitemsJson(reader, projectId, subprojectId, { ...options, cursor, limit })));
      return ok({ workflowitems: (await ownIntents(workflow.store, request.actor, "workflowitem", [projectId, subprojectId], all)).map((r) => exposeWorkflowitem(r, intents)) });
    }
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
      const all = await keptWhenRedacted(workflow.store, [projectId, subprojectId], [...page.items, ...rest]);
      body = Buffer.from(JSON.stringify(ok({ workflowitems: all.map((r) => exposeWorkflowitem(r, intents)) })));
      if (page.nextCursor === null) translated.set(first, body);
    }
    return reply.type("application/json; charset=utf-8").send(body);
  });

  app.get("/workflowitem.viewDetails", { schema: { querystring: idsWith("workflowitem") } }, async (request) => {
    const { projectId, subprojectId, workflowitemId } = request.query;
    const ref = { type: "workflowitem", ids: [projectId, subprojectId, workflowitemId] };
    const { json } = await workflow.store.reads.getJson(readerOf(request.actor), ref, { allowedIntents: true });
    const [item] = await ownIntents(workflow.store, request.actor, "workflowitem", [projectId, subprojectId], [JSON.parse(json.toString("utf8")) as Served]);
    return ok({ workflowitem: exposeWorkflowitem(item!, intents) });
  });

  app.post("/workflowitem.update", { bodyLimit: jsonLimit, preParsing, schema: { body: Envelope(ItemUpdate) } }, async (request) => {
    const { data } = request.body;
    await update(request.actor, data, pendingOf(data.documents));
    return ok({});
  });

  app.post("/v2/workflowitem.update", { preParsing }, async (request) => {
    const actor = request.actor;
    const { data, pending } = await multipartData(request, (fields, file) => {
      const [p, s, w] = idsBefore(fields, ["projectId", "subprojectId", "workflowitemId"]) as [string, string, string];
      return documents.stage(actor, p, s, w, file);
    });
    return undoingStaged(pending, async () => {
      const body = { apiVersion: "1.0", data };
      checkItemUpdate(body);
      await update(actor, body.data, pending);
      return { apiVersion: "2.0", data: {} };
    });
  });

  app.post("/workflowitem.validateDocument", { bodyLimit: jsonLimit, preParsing, schema: { body: Envelope(Validate) } }, async (request) => {
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
