/**
 * Documents of workflowitems (TruBudget's workflowitem documents). The list of documents is a field of
 * the workflowitem's record (`documents`, owned by these commands), so adding or deleting one is one
 * commit of the project's partition with its event (`workflowitem.document_uploaded`,
 * `workflowitem.document_deleted`) in the item's history. The content is in the archive's
 * content-addressed file store (sha-256, 1 MiB chunks, stored once, refcounted), held by a reference
 * named by the document's id (archive/held.ts):
 *
 *   1. hold the file (journaled; a cut-off stream or a size over the limit undoes it before failing);
 *   2. commit the document into the workflowitem (the commit point; refused when the item is closed);
 *   3. settle the hold: kept when 2 committed, undone otherwise (no orphan chunks, no half record).
 * A process killed between 1 and 3 leaves the hold in the journal; `recover` settles it by whether the
 * item holds the document. Deleting a document commits its removal, then releases the reference.
 *
 * Permissions (as TruBudget): adding and deleting need `workflowitem.update` (documents are part of the
 * item's update there), listing, downloading and validating `workflowitem.viewDetails`. A closed item's
 * documents are read-only.
 */
import { randomUUID } from "node:crypto";
import { SYSTEM, type Actor } from "../access/actor.js";
import type { Archive, FileContent, OpenedFile } from "../archive/index.js";
import { ConflictError, NotFoundError, ValidationError } from "../errors.js";
import type { Envelope } from "../resources/model/record.js";
import type { Ref } from "../resources/model/ref.js";
import { PAGE_LIMIT } from "../resources/model/wire.js";
import type { Page, ResourceStore } from "../resources/store.js";
import { assertOpen } from "./rules.js";
import { DOCUMENT_COMMENT_MAX, MAX_DOCUMENTS, subprojectRef, workflowitemRef, type Document, type WorkflowSchema } from "./schema.js";

/** The default size limit of one document. */
export const DEFAULT_MAX_DOCUMENT_BYTES = 100 * 1024 * 1024;
/** How often a delete is tried again when a write came between reading its documents and deleting. */
const DELETE_ATTEMPTS = 10;
/** Whose holds these are in the archive's journal. */
const OWNER = "workflowitem-document";
const MAX_FILE_NAME = 255;

export interface DocumentsOptions {
  /** The largest document in bytes (default 100 MiB). */
  readonly maxBytes?: number;
  /** The clock of the store (epoch ms) for createdAt. */
  readonly clock?: () => number;
}

interface HoldInfo {
  readonly p: string;
  readonly s: string;
  readonly w: string;
}

/** A document's content held in the file store ahead of its commit (Documents.stage). */
export interface StagedDocument {
  readonly token: string;
  readonly sha256: string;
  readonly size: number;
}

export interface NewDocument {
  readonly fileName: string;
  readonly comment?: string;
}

function checkFileName(name: unknown, field: string): asserts name is string {
  if (typeof name !== "string" || name.length === 0 || name.length > MAX_FILE_NAME) {
    throw new ValidationError(`a file name is a text of 1 to ${MAX_FILE_NAME} characters`, field);
  }
  if (/[\u0000-\u001f\u007f-\u009f]/.test(name) || !name.isWellFormed()) throw new ValidationError("a file name holds no control characters", field);
}

function checkComment(comment: unknown, field: string): void {
  if (comment !== undefined && (typeof comment !== "string" || comment.length > DOCUMENT_COMMENT_MAX)) {
    throw new ValidationError(`a comment is a text of at most ${DOCUMENT_COMMENT_MAX} characters`, field);
  }
}

const documentsOf = (item: Envelope): Document[] => (item.data.documents as Document[] | undefined) ?? [];

export class Documents {
  readonly maxBytes: number;
  readonly #clock: () => number;

  constructor(
    private readonly store: ResourceStore<WorkflowSchema>,
    private readonly archive: Archive,
    options: DocumentsOptions = {},
  ) {
    const max = options.maxBytes ?? DEFAULT_MAX_DOCUMENT_BYTES;
    if (!Number.isSafeInteger(max) || max < 1) throw new ValidationError("the document size limit is a positive integer of bytes", "maxBytes");
    this.maxBytes = max;
    this.#clock = options.clock ?? Date.now;
  }

  /** The documents of a workflowitem (workflowitem.viewDetails). */
  async list(actor: Actor, p: string, s: string, w: string): Promise<Document[]> {
    return documentsOf(await this.store.reads.get(actor, { ...workflowitemRef(p, s, w), type: "workflowitem" }));
  }

  async #find(actor: Actor, p: string, s: string, w: string, d: string): Promise<Document> {
    const doc = (await this.list(actor, p, s, w)).find((x) => x.id === d);
    if (!doc) throw new NotFoundError(`workflowitem ${w} has no document ${d}`);
    return doc;
  }

  /**
   * Stores `content` as a new document of the workflowitem (workflowitem.update; the item open).
   * TooLargeError over the limit, ValidationError (field named) for a bad name or a cut-off stream;
   * on any failure nothing stays: no record, no chunks.
   */
  async upload(actor: Actor, p: string, s: string, w: string, input: NewDocument, content: FileContent): Promise<Document> {
    checkFileName(input.fileName, "fileName");
    checkComment(input.comment, "comment");
    return this.commitStaged(actor, p, s, w, input, await this.stage(actor, p, s, w, content));
  }

  /**
   * Step 1 alone: checks what the commit would refuse (no permission, closed, full) before reading a
   * byte of `content`, then streams it into the file store under a journaled hold. `newItem`: the
   * workflowitem `w` is about to be created (its creator needs `subproject.createWorkflowitem` on an open
   * subproject); until the item exists, `recover` would undo the hold. Commit it (`commitStaged`) or
   * discard it (`discardStaged`); an upload streamed as it arrives (multipart) is never buffered whole.
   */
  async stage(actor: Actor, p: string, s: string, w: string, content: FileContent, options: { newItem?: boolean } = {}): Promise<StagedDocument> {
    if (options.newItem) await this.#precheckNew(actor, p, s);
    else await this.#precheck(actor, p, s, w);
    const held = await this.archive.holdFile(OWNER, { p, s, w } satisfies HoldInfo, content, { maxBytes: this.maxBytes, what: "a document", field: "file" });
    return { token: held.token, sha256: held.sha256, size: held.size };
  }

  /** Steps 2 and 3: commits a staged document into the workflowitem and settles its hold (kept, or undone on failure). */
  async commitStaged(actor: Actor, p: string, s: string, w: string, input: NewDocument, staged: StagedDocument): Promise<Document> {
    let committed: boolean | undefined = false;
    try {
      checkFileName(input.fileName, "fileName");
      checkComment(input.comment, "comment");
      const doc: Document = {
        id: staged.token,
        fileName: input.fileName,
        hash: staged.sha256,
        size: staged.size,
        ...(input.comment ? { comment: input.comment } : {}),
        createdAt: "",
        createdBy: actor.id,
      };
      const saved = await this.#add(actor, p, s, w, doc);
      committed = true;
      return saved;
    } catch (e) {
      // A commit may have applied although its caller saw an error: ask the item before undoing.
      committed = await this.#holds(p, s, w, staged.token).catch(() => undefined);
      throw e;
    } finally {
      // Unknown (the store did not answer): the journal keeps the hold for `recover`.
      if (committed !== undefined) await this.archive.settleHold(staged.token, committed).catch(() => undefined);
    }
  }

  /** Undoes a staged document that will not be committed (its content freed when nothing else holds it). */
  discardStaged(staged: StagedDocument): Promise<void> {
    return this.archive.settleHold(staged.token, false);
  }

  /** Records an external link as a document (no content, no hash). */
  async addLink(actor: Actor, p: string, s: string, w: string, input: NewDocument & { link: string }): Promise<Document> {
    checkFileName(input.fileName, "fileName");
    checkComment(input.comment, "comment");
    if (typeof input.link !== "string" || !/^https?:\/\//.test(input.link) || input.link.length > 2_000) {
      throw new ValidationError("link is an http(s) URL of at most 2000 characters", "link");
    }
    return this.#add(actor, p, s, w, {
      id: randomUUID(),
      fileName: input.fileName,
      link: input.link,
      ...(input.comment ? { comment: input.comment } : {}),
      createdAt: "",
      createdBy: actor.id,
    });
  }

  async #precheckNew(actor: Actor, p: string, s: string): Promise<void> {
    const subproject = subprojectRef(p, s);
    await this.store.reads.assertIntent(actor, subproject, "subproject.createWorkflowitem");
    assertOpen(await this.store.reads.get(SYSTEM, { ...subproject, type: "subproject" }));
  }

  async #precheck(actor: Actor, p: string, s: string, w: string): Promise<void> {
    await this.store.reads.assertIntent(actor, workflowitemRef(p, s, w), "workflowitem.update");
    const item = await this.store.reads.get(SYSTEM, { ...workflowitemRef(p, s, w), type: "workflowitem" });
    assertOpen(item);
    if (documentsOf(item).length >= MAX_DOCUMENTS) throw new ConflictError(`a workflowitem holds at most ${MAX_DOCUMENTS} documents`, "documents");
  }

  #add(actor: Actor, p: string, s: string, w: string, doc: Document): Promise<Document> {
    let saved = doc;
    return this.store.writes
      .mutate(actor, workflowitemRef(p, s, w), {
        intent: "workflowitem.update",
        verb: "document_uploaded",
        change: (item) => {
          assertOpen(item);
          const docs = documentsOf(item);
          if (docs.length >= MAX_DOCUMENTS) throw new ConflictError(`a workflowitem holds at most ${MAX_DOCUMENTS} documents`, "documents");
          saved = { ...doc, createdAt: new Date(this.#clock()).toISOString() };
          return { patch: { documents: [...docs, saved] }, record: { document: saved } };
        },
      })
      .then((item) => documentsOf(item).find((x) => x.id === doc.id) ?? saved);
  }

  /** Whether the workflowitem's record holds document `id` (false when the item is gone). */
  async #holds(p: string, s: string, w: string, id: string): Promise<boolean> {
    try {
      return (await this.list(SYSTEM, p, s, w)).some((x) => x.id === id);
    } catch (e) {
      if (e instanceof NotFoundError) return false;
      throw e;
    }
  }

  /** The content of a document, streamed (size and sha-256 for Content-Length and ETag). */
  async open(actor: Actor, p: string, s: string, w: string, d: string): Promise<{ document: Document; file: OpenedFile }> {
    const document = await this.#find(actor, p, s, w, d);
    if (document.hash === undefined) throw new NotFoundError(`document ${d} is a link (${document.link}); it has no content here`);
    return { document, file: await this.archive.openContent(document.hash) };
  }

  /** Whether `content` is the document's content (its sha-256 matches). */
  async validate(actor: Actor, p: string, s: string, w: string, d: string, content: AsyncIterable<Uint8Array | string>): Promise<{ valid: boolean }> {
    const document = await this.#find(actor, p, s, w, d);
    const { sha256 } = await this.archive.hashContent(content, { maxBytes: this.maxBytes, what: "a document", field: "file" });
    return { valid: document.hash !== undefined && document.hash === sha256 };
  }

  /** Deletes a document (workflowitem.update; the item open), recorded in the item's history. */
  async delete(actor: Actor, p: string, s: string, w: string, d: string): Promise<void> {
    let removed: Document | undefined;
    await this.store.writes.mutate(actor, workflowitemRef(p, s, w), {
      intent: "workflowitem.update",
      verb: "document_deleted",
      change: (item) => {
        assertOpen(item);
        const docs = documentsOf(item);
        removed = docs.find((x) => x.id === d);
        if (!removed) throw new NotFoundError(`workflowitem ${w} has no document ${d}`);
        const rest = docs.filter((x) => x.id !== d);
        return { patch: { documents: rest.length > 0 ? rest : null }, record: { documentId: d, fileName: removed.fileName } };
      },
    });
    if (removed?.hash) await this.archive.releaseFile(removed.hash, removed.id);
  }

  /**
   * Deletes a workflowitem, subproject or project (`remove`, given the partition's seq its delete must
   * find unchanged) and then releases the references its documents and its descendants' hold in the
   * file store, so that content no longer referenced is freed. The documents are read before the delete,
   * at a seq the delete then requires (`ifChainAt`): a document added meanwhile moves the log on, and the
   * delete is tried again on fresh state. A kill between the delete and the releases leaves references
   * to content no record names: kept, not lost (as a document's own delete).
   */
  async deleteReleasing(ref: Ref, remove: (ifChainAt: number) => Promise<void>): Promise<void> {
    const partition = this.store.partitionOf(ref);
    for (let attempt = 1; ; attempt++) {
      const { seq } = await this.store.writer.readHead(partition);
      const held = await this.#heldUnder(ref);
      try {
        await remove(seq);
      } catch (e) {
        if (e instanceof ConflictError && e.field === "chain" && attempt < DELETE_ATTEMPTS) continue;
        throw e;
      }
      for (const d of held) await this.archive.releaseFile(d.hash!, d.id);
      return;
    }
  }

  /** The documents with content of a resource and everything under it (none when it does not exist). */
  async #heldUnder(ref: Ref): Promise<Document[]> {
    const out: Document[] = [];
    const visit = async (r: Ref): Promise<void> => {
      const t = this.store.schema.type(r.type);
      if (t.name === "workflowitem") {
        const item = await this.store.reads.get(SYSTEM, r as Ref & { type: "workflowitem" }).catch((e: unknown) => (e instanceof NotFoundError ? null : Promise.reject(e)));
        if (item) out.push(...documentsOf(item).filter((d) => d.hash !== undefined));
        return;
      }
      const child = t.decl.orderedChildren ?? t.children[0];
      if (!child) return;
      let cursor: string | null = null;
      do {
        const page: Page<Envelope> | null = await this.store.reads
          .listChildren(SYSTEM, r, child as never, { cursor, limit: PAGE_LIMIT.max })
          .catch((e: unknown) => (e instanceof NotFoundError ? null : Promise.reject(e)));
        if (!page) return;
        for (const c of page.items) await visit({ type: child, ids: [...r.ids, c.id] });
        cursor = page.nextCursor;
      } while (cursor !== null);
    };
    await visit(ref);
    return out;
  }

  /** Settles the holds a killed process left (older than `olderThanMs`): kept where the item holds the document. */
  async recover(olderThanMs: number): Promise<{ kept: number; undone: number }> {
    const report = { kept: 0, undone: 0 };
    for (const hold of await this.archive.pendingHolds(OWNER, olderThanMs)) {
      const { p, s, w } = hold.info as HoldInfo;
      const keep = await this.#holds(p, s, w, hold.token);
      await this.archive.settleHold(hold.token, keep);
      report[keep ? "kept" : "undone"]++;
    }
    return report;
  }
}
