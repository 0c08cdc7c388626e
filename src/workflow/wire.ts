/**
 * The public shapes of archiving a project (archive.ts) as TypeBox schemas: the archive request and
 * what it answers, the restore request and what it answers. Named ones carry an `$id` (a component of
 * the OpenAPI document); the HTTP routes and the client take their types from these declarations.
 */
import { Type } from "@sinclair/typebox";
import { SnapshotId, Summary } from "../archive/wire.js";
import { VerifyResult } from "../resources/model/wire.js";

export const ArchiveBody = Type.Object({ drop: Type.Optional(Type.Boolean({ default: false })) }, { additionalProperties: false });
const Counts = Type.Object({
  entries: Type.Integer(),
  bytes: Type.Integer(),
  resources: Type.Record(Type.String(), Type.Integer()),
  events: Type.Integer(),
});
const ChainHead = Type.Object({ seq: Type.Integer(), hash: Type.Union([Type.String(), Type.Null()]) });
export const ArchivedProject = Type.Object(
  { projectId: Type.String(), snapshot: Summary, counts: Counts, chainHead: ChainHead, dropped: Type.Boolean() },
  { $id: "ArchivedProject", title: "ArchivedProject" },
);
export const RestoreBody = Type.Object({ snapshotId: SnapshotId }, { additionalProperties: false, $id: "RestoreRequest", title: "RestoreRequest" });
export const RestoredProject = Type.Object(
  {
    projectId: Type.String(),
    snapshotId: Type.String(),
    entries: Type.Integer(),
    verify: VerifyResult,
  },
  { $id: "RestoredProject", title: "RestoredProject" },
);
