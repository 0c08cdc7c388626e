/**
 * The public shapes of the archive as TypeBox schemas: a snapshot (its summary, document and files), a
 * new snapshot (JSON, or the multipart form it may come as), the list query and page, and the
 * parameters naming a snapshot, a file of it or a stored file by its hash. Each named one carries an
 * `$id`, so a server registers it once as a named component; the HTTP routes and the client take their
 * types from these same declarations.
 *
 * Rule: a shape declared here is the only declaration of it; the page limits are snapshots.ts's.
 */
import { Type } from "@sinclair/typebox";
import { PageOf, pageQueryOf } from "../wire.js";
import { DEFAULT_PAGE, MAX_PAGE } from "./snapshots.js";

/** A snapshot id, `<uniqueId>-<epochMillis>`, described for where it stands. */
const snapshotId = (description: string) => Type.String({ minLength: 1, maxLength: 300, description });
export const SnapshotId = snapshotId("<uniqueId>-<epochMillis>");
export const UniqueId = Type.String({ minLength: 1, maxLength: 256 });
export const Document = Type.Record(Type.String(), Type.Array(Type.Unknown()), {
  $id: "SnapshotDocument",
  description: "an item collection: item names to lists of JSON values",
});
export const Summary = Type.Object(
  { id: Type.String(), uniqueId: Type.String(), modified: Type.String({ format: "date-time" }), size: Type.Integer() },
  { $id: "SnapshotSummary", title: "SnapshotSummary" },
);
export const ArchivedFile = Type.Object(
  { name: Type.String(), size: Type.Integer(), sha256: Type.String(), md5: Type.Optional(Type.String({ description: "absent on files archived before the MD5 was kept" })) },
  { $id: "ArchivedFile", title: "ArchivedFile" },
);
export const Snapshot = Type.Object({ ...Summary.properties, document: Document, files: Type.Array(ArchivedFile) }, { $id: "Snapshot", title: "Snapshot" });
export const SnapshotPage = PageOf(Summary, "SnapshotPage");
const Millis = Type.Integer({ minimum: 0, maximum: 8_640_000_000_000_000, description: "the snapshot time, epoch milliseconds (an import keeps its ids)" });
export const NewSnapshot = Type.Object(
  {
    uniqueId: UniqueId,
    document: Document,
    modified: Type.Optional(Millis),
    id: Type.Optional(snapshotId("the full id <uniqueId>-<epochMillis> of an imported snapshot")),
  },
  { additionalProperties: false, $id: "NewSnapshot", title: "NewSnapshot" },
);
/** Documentation only: a multipart body is read as a stream by the HTTP handler, not validated up front. */
export const MultipartSnapshot = Type.Unsafe<unknown>({
  description: "fields uniqueId and document (JSON text) first, then any number of file parts (their filename names them)",
  properties: {
    uniqueId: { type: "string" },
    document: { type: "string", description: "the document as JSON text" },
    modified: { type: "string", description: "optional: the snapshot time, epoch milliseconds" },
    id: { type: "string", description: "optional: the full id <uniqueId>-<epochMillis>" },
    files: { type: "array", items: { type: "string", format: "binary" } },
  },
});
export const ListQuery = Type.Object(
  {
    uniqueId: Type.Optional(UniqueId),
    date: Type.Optional(Type.String({ pattern: "^\\d{4}-\\d{2}-\\d{2}$", description: "YYYY-MM-DD (UTC)" })),
    order: Type.Optional(Type.Union([Type.Literal("asc"), Type.Literal("desc")], { description: "with uniqueId: asc (default) oldest first, desc newest first" })),
    ...pageQueryOf({ default: DEFAULT_PAGE, max: MAX_PAGE }).properties,
  },
  { additionalProperties: false },
);
export const IdParams = Type.Object({ id: SnapshotId });
export const FileParams = Type.Object({ id: SnapshotId, name: Type.String({ minLength: 1, maxLength: 1024 }) });
export const HashParams = Type.Object({ hash: Type.String({ pattern: "^([0-9a-f]{32}|[0-9a-f]{64})$", description: "sha-256 (64 hex digits) or MD5 (32)" }) });
