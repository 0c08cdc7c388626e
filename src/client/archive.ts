/**
 * The archive (snapshots after Imixs-Archive): write a snapshot (JSON, or multipart when it carries
 * files), find snapshots by unique id or by day, read one, download a file as a stream, delete, and
 * restore an archived project. Archiving a project is `client.project(p).archive()`.
 */
import { API, seg, type HttpCore, type Page, type PageParams } from "./core.js";
import type { RestoredProject, Snapshot, SnapshotDocument as ArchiveDocument, SnapshotSummary } from "./openapi.js";
import type { Query } from "./types.js";

export type { SnapshotSummary, Snapshot, SnapshotDocument as ArchiveDocument, RestoredProject } from "./openapi.js";
/** Exactly one of `uniqueId` and `date` (YYYY-MM-DD, UTC), with the page's cursor and limit. */
export type SnapshotQuery = Omit<Query<"getArchiveSnapshots">, keyof PageParams> & PageParams;
/** A file of a new snapshot: its name in the snapshot (it may hold a path) and its bytes. */
export interface ArchiveFileInput {
  readonly name: string;
  readonly content: Blob;
}

const base = `${API}/archive`;
const snapshotPath = (id: string): string => `${base}/snapshots/${seg(id)}`;

export class ArchiveApi {
  constructor(private readonly core: HttpCore) {}

  /** Stores a snapshot: as JSON without files, as multipart (fields first, then the files) with them. */
  write(uniqueId: string, document: ArchiveDocument, files: readonly ArchiveFileInput[] = []): Promise<SnapshotSummary> {
    if (files.length === 0) return this.core.request("POST", `${base}/snapshots`, { body: { uniqueId, document } });
    const form = new FormData();
    form.append("uniqueId", uniqueId);
    form.append("document", JSON.stringify(document));
    for (const f of files) form.append("file", f.content, f.name);
    return this.core.request("POST", `${base}/snapshots`, { body: form });
  }
  /** A page of the snapshots of a unique id (time order) or of a day. */
  list(query: SnapshotQuery): Promise<Page<SnapshotSummary>> {
    return this.core.request("GET", `${base}/snapshots`, { query: { ...query } });
  }
  /** A snapshot: its summary, document and the list of its files. */
  get(id: string): Promise<Snapshot> {
    return this.core.request("GET", snapshotPath(id));
  }
  /** A file of a snapshot as the server's answer, its body not yet read (stream it, or take `.blob()`). */
  file(id: string, name: string): Promise<Response> {
    return this.core.open("GET", `${snapshotPath(id)}/files/${seg(name)}`, { headers: { accept: "*/*" } });
  }
  /** Deletes a snapshot; files no other snapshot holds go with it. */
  delete(id: string): Promise<void> {
    return this.core.request("DELETE", snapshotPath(id));
  }
  /** Restores an archived project where it does not exist; the answer carries its verified chain. */
  restore(snapshotId: string): Promise<RestoredProject> {
    return this.core.request("POST", `${base}/restore`, { body: { snapshotId } });
  }
}
