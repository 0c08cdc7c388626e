/**
 * The content-addressed file store. A file is identified by the sha-256 of its content and stored once,
 * in 1 MiB chunks, however many snapshots hold it.
 *
 * Partitions:
 *   ["archive-file", sha256]                ["meta"] {size, chunks, store: [uploadId, fileIndex], refs}
 *                                           ["ref", uploadId, fileIndex] {}  one per (snapshot, file slot)
 *   ["archive-chunks", uploadId, fileIndex] [i] chunk bytes, i = 0..chunks-1
 *                                           ["done"] {sha256, size, chunks, md5}  written with the last chunk
 *   ["archive-md5", md5]                    [sha256] empty: the MD5 alias of a stored content (Imixs
 *                                           clients ask by MD5), put once a snapshot holding it is
 *                                           committed, removed when the content is freed
 *
 * The hash is only known once a stream has ended, so chunks are written first into a chunk partition
 * named by the upload (staging, recorded in the journal), then promoted: the first upload of a content
 * becomes its store; a later upload of the same content adds a reference and drops its own chunks.
 * `refs` counts the ref keys; every ref change rewrites `meta`, so its version guards against races,
 * and the last reference's removal deletes the file and its chunks.
 */
import { createHash, randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import { ConflictError, FlowstoreError, NotFoundError, ValidationError } from "../errors.js";
import { scanAll, type KvStore, type Partition, type ScanPage } from "../kv/contract.js";
import { layout } from "./layout.js";
import { fromJson, journalDelete, journalPut, toJson } from "./journal.js";
import { MiB, type SizeBudget } from "./limits.js";

export const CHUNK_SIZE = MiB;
const MAX_RETRIES = 100;

export type StoreId = readonly [upload: string, fileIndex: number];

export interface FileMeta {
  readonly size: number;
  readonly chunks: number;
  readonly store: StoreId;
  readonly refs: number;
  /** The content's MD5 (its alias goes when the file is freed); absent on files stored before it was kept. */
  readonly md5?: string;
}

export const filePartition = layout.filePartition;
export const chunkPartition = (store: StoreId): Partition => layout.chunkPartition(store);
const META = layout.meta;
/** In a chunk partition: {sha256, size, chunks}; a string key sorts before the integer chunk keys. */
const DONE = layout.done;
const refKey = layout.refKey;

export interface StagedFile {
  readonly sha256: string;
  readonly size: number;
  readonly chunks: number;
  /** Absent on files staged before the MD5 was kept. */
  readonly md5?: string;
}

export const md5Partition = layout.md5Partition;

/** Records the MD5 alias of a stored content (idempotent). */
export async function putMd5Alias(kv: KvStore, md5: string, sha256: string): Promise<void> {
  await kv.commit(md5Partition(md5), [{ type: "put", key: layout.md5Alias(sha256), value: Buffer.alloc(0) }]);
}

/** Removes the MD5 alias of a freed content, unless the content is stored again (idempotent). */
export async function dropMd5Alias(kv: KvStore, md5: string, sha256: string): Promise<void> {
  if (await getFileMeta(kv, sha256)) return;
  await kv.commit(md5Partition(md5), [{ type: "delete", key: layout.md5Alias(sha256) }]);
}

/** The sha-256 of a stored content by its MD5: the first alias whose file is still stored. */
export async function sha256OfMd5(kv: KvStore, md5: string): Promise<string | undefined> {
  for (let after: string | null = null; ; ) {
    const page: ScanPage = await kv.scan(md5Partition(md5), { limit: 16, after });
    for (const e of page.entries) {
      const sha256 = layout.sha256OfAlias(e.key);
      if (await getFileMeta(kv, sha256)) return sha256;
    }
    if (page.cursor === null) return undefined;
    after = page.cursor;
  }
}

/** What a caller may hand in as a file's content. */
export type FileContent = Uint8Array | Readable | AsyncIterable<Uint8Array | string> | Iterable<Uint8Array>;

function asAsyncIterable(content: FileContent, field: string): AsyncIterable<Uint8Array | string> {
  if (content instanceof Uint8Array)
    return (async function* () {
      yield content;
    })();
  if (content && typeof (content as AsyncIterable<Uint8Array>)[Symbol.asyncIterator] === "function") {
    return content as AsyncIterable<Uint8Array | string>;
  }
  if (content && typeof (content as Iterable<Uint8Array>)[Symbol.iterator] === "function" && typeof content !== "string") {
    const it = content as Iterable<Uint8Array>;
    return (async function* () {
      yield* it;
    })();
  }
  throw new ValidationError("file content is bytes, a Readable stream or an (async) iterable of bytes", field);
}

/**
 * Streams `content` into the chunk partition of `store`, hashing as it goes; counts every byte against
 * `budget`. At most two chunks are in memory: the one being filled and the one being committed.
 * On any failure the caller removes the partition (see rollback in write.ts).
 */
export async function stageFile(kv: KvStore, store: StoreId, content: FileContent, budget: SizeBudget, field: string): Promise<StagedFile> {
  const partition = chunkPartition(store);
  const hash = createHash("sha256");
  const md5 = createHash("md5");
  const iterator = asAsyncIterable(content, field)[Symbol.asyncIterator]();
  let chunk = Buffer.allocUnsafe(CHUNK_SIZE);
  let fill = 0;
  let index = 0;
  let size = 0;
  let pending: Promise<unknown> | null = null;

  const flush = async (): Promise<void> => {
    if (fill === 0) return;
    const value = fill === CHUNK_SIZE ? chunk : chunk.subarray(0, fill);
    if (pending) await pending;
    pending = kv.commit(partition, [{ type: "put", key: layout.chunk(index++), value }]);
    // Keep the commit from being an unhandled rejection while the next chunk fills; awaited below.
    pending.catch(() => {});
    chunk = Buffer.allocUnsafe(CHUNK_SIZE);
    fill = 0;
  };

  let done = false;
  try {
    for (;;) {
      let next: IteratorResult<Uint8Array | string>;
      try {
        next = await iterator.next();
      } catch (e) {
        if (e instanceof FlowstoreError) throw e;
        throw new ValidationError(`the file stream failed before its end: ${(e as Error)?.message ?? e}`, field);
      }
      if (next.done) break;
      let piece: Uint8Array | string = next.value;
      if (typeof piece === "string") piece = Buffer.from(piece, "utf8");
      if (!(piece instanceof Uint8Array)) throw new ValidationError("file streams yield bytes", field);
      budget.add(piece.byteLength);
      size += piece.byteLength;
      hash.update(piece);
      md5.update(piece);
      let offset = 0;
      while (offset < piece.byteLength) {
        const n = Math.min(CHUNK_SIZE - fill, piece.byteLength - offset);
        chunk.set(piece.subarray(offset, offset + n), fill);
        fill += n;
        offset += n;
        if (fill === CHUNK_SIZE) await flush();
      }
    }
    done = true;
    // The last commit carries the "done" marker with the content's identity, so a staging partition
    // always tells whether it was hashed (and an empty file still leaves its partition).
    const sha256 = hash.digest("hex");
    const marker: StagedFile = { sha256, size, chunks: index + (fill > 0 ? 1 : 0), md5: md5.digest("hex") };
    if (pending) await pending;
    pending = null;
    await kv.commit(partition, [
      ...(fill > 0 ? [{ type: "put" as const, key: layout.chunk(index++), value: chunk.subarray(0, fill) }] : []),
      { type: "put", key: DONE, value: toJson(marker) },
    ]);
    return marker;
  } finally {
    if (!done) {
      // Stop the source (destroys a Readable) and let an in-flight commit settle before rollback.
      await Promise.allSettled([iterator.return?.(), pending]);
    }
  }
}

/** The identity recorded when staging (upload, index) finished; undefined while it was cut short. */
export async function stagedFile(kv: KvStore, store: StoreId): Promise<StagedFile | undefined> {
  const e = await kv.get(chunkPartition(store), DONE);
  return e && fromJson<StagedFile>(e.value);
}

/** Whether the staging partition (upload, index) holds anything. */
export async function stagingExists(kv: KvStore, store: StoreId): Promise<boolean> {
  return (await kv.scan(chunkPartition(store), { limit: 1 })).entries.length > 0;
}

async function readMeta(kv: KvStore, sha256: string, store: StoreId) {
  const [meta, ref] = await kv.getMany(filePartition(sha256), [META, refKey(store)]);
  return { meta: meta && { value: fromJson<FileMeta>(meta.value), version: meta.version }, hasRef: ref !== undefined };
}

/**
 * What a reference names of its holder: the unique id of the snapshot whose upload it is (so a read by
 * content hash finds the snapshots holding a content, archive.ts), nothing for a held file (a domain's
 * record, held.ts) or a reference written before it was kept.
 */
export interface RefHolder {
  readonly uniqueId?: string;
}

/** The references of a stored content: each slot and what it names of its holder. */
export async function* refsOf(kv: KvStore, sha256: string): AsyncGenerator<{ store: StoreId; holder: RefHolder }> {
  for await (const e of scanAll(kv, filePartition(sha256), { prefix: layout.refs, limit: 500 })) {
    const [upload, index] = layout.refOf(e.key);
    yield { store: [upload, index], holder: fromJson<RefHolder>(e.value) };
  }
}

/**
 * Adds the reference `ref` (a snapshot's file slot) to the file `staged`, whose chunks sit in the
 * staging partition of `ref`. Returns whether the content was already stored (then the staged chunks
 * are no longer needed and the caller drops them). Idempotent.
 */
export async function addRef(kv: KvStore, staged: StagedFile, ref: StoreId, holder: RefHolder = {}): Promise<{ deduplicated: boolean }> {
  const partition = filePartition(staged.sha256);
  for (let attempt = 0; attempt < MAX_RETRIES; attempt++) {
    const { meta, hasRef } = await readMeta(kv, staged.sha256, ref);
    if (hasRef && meta) return { deduplicated: !sameStore(meta.value.store, ref) };
    try {
      if (!meta) {
        const value: FileMeta = { size: staged.size, chunks: staged.chunks, store: ref, refs: 1, ...(staged.md5 ? { md5: staged.md5 } : {}) };
        await kv.commit(partition, [
          { type: "check", key: META, version: null },
          { type: "put", key: META, value: toJson(value) },
          { type: "put", key: refKey(ref), value: toJson(holder) },
        ]);
        return { deduplicated: false };
      }
      const value: FileMeta = { ...meta.value, refs: meta.value.refs + 1 };
      await kv.commit(partition, [
        { type: "check", key: META, version: meta.version },
        { type: "put", key: META, value: toJson(value) },
        { type: "put", key: refKey(ref), value: toJson(holder) },
      ]);
      return { deduplicated: true };
    } catch (e) {
      if (!(e instanceof ConflictError)) throw e;
    }
  }
  throw new ConflictError(`too much contention on file ${staged.sha256}`);
}

export function sameStore(a: StoreId, b: StoreId): boolean {
  return a[0] === b[0] && a[1] === b[1];
}

/**
 * Removes the reference `ref` from the file; the last reference's removal deletes the file and its
 * chunks (journaled, so a crash in between is finished by recovery). Idempotent.
 */
export async function removeRef(kv: KvStore, sha256: string, ref: StoreId, active: Set<string>): Promise<{ freed: boolean }> {
  const partition = filePartition(sha256);
  for (let attempt = 0; attempt < MAX_RETRIES; attempt++) {
    const { meta, hasRef } = await readMeta(kv, sha256, ref);
    if (!hasRef || !meta) return { freed: false };
    if (meta.value.refs > 1) {
      try {
        await kv.commit(partition, [
          { type: "check", key: META, version: meta.version },
          { type: "put", key: META, value: toJson({ ...meta.value, refs: meta.value.refs - 1 }) },
          { type: "delete", key: refKey(ref) },
        ]);
        return { freed: false };
      } catch (e) {
        if (!(e instanceof ConflictError)) throw e;
        continue;
      }
    }
    const token = randomUUID();
    const journalKey = layout.journalFree(sha256, token);
    active.add(token);
    try {
      await journalPut(kv, journalKey, { store: meta.value.store, ...(meta.value.md5 ? { md5: meta.value.md5 } : {}), startedAt: Date.now() });
      try {
        await kv.commit(partition, [
          { type: "check", key: META, version: meta.version },
          { type: "deletePrefix", prefix: layout.refs },
          { type: "delete", key: META },
        ]);
      } catch (e) {
        if (!(e instanceof ConflictError)) throw e;
        await journalDelete(kv, journalKey);
        continue;
      }
      await kv.dropPartition(chunkPartition(meta.value.store));
      if (meta.value.md5) await dropMd5Alias(kv, meta.value.md5, sha256);
      await journalDelete(kv, journalKey);
      return { freed: true };
    } finally {
      active.delete(token);
    }
  }
  throw new ConflictError(`too much contention on file ${sha256}`);
}

export async function getFileMeta(kv: KvStore, sha256: string): Promise<FileMeta | undefined> {
  const e = await kv.get(filePartition(sha256), META);
  return e && fromJson<FileMeta>(e.value);
}

export interface OpenedFile {
  readonly size: number;
  readonly sha256: string;
  readonly stream: Readable;
}

/**
 * A stream of a stored file's bytes, read a chunk at a time (at most ~2 MiB buffered). The stream
 * checks the size and the sha-256 at its end and errors if the content does not match (or was deleted
 * while being read).
 */
export async function openStoredFile(kv: KvStore, sha256: string): Promise<OpenedFile> {
  const meta = await getFileMeta(kv, sha256);
  if (!meta) throw new NotFoundError(`file ${sha256} is not stored`);
  const partition = chunkPartition(meta.store);
  async function* chunks(): AsyncGenerator<Buffer> {
    const hash = createHash("sha256");
    let size = 0;
    let expected = 0;
    let after: string | null = null;
    do {
      const page: ScanPage = await kv.scan(partition, { start: layout.chunk(0), limit: 2, after });
      for (const e of page.entries) {
        if (layout.indexOfChunk(e.key) !== expected++) break;
        hash.update(e.value);
        size += e.value.length;
        yield e.value;
      }
      after = page.cursor;
    } while (after !== null);
    if (size !== meta!.size || hash.digest("hex") !== sha256) {
      throw new NotFoundError(`file ${sha256} changed or was deleted while it was read`);
    }
  }
  return { size: meta.size, sha256, stream: Readable.from(chunks(), { objectMode: false, highWaterMark: CHUNK_SIZE }) };
}
