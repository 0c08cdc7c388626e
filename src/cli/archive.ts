/**
 * `flowstore archive project <id> [--drop]` and `flowstore archive restore <snapshotId>`: operator
 * commands working directly on the store as the system actor (stop the server first for an embedded
 * store). They print the result as one JSON line.
 */
import { Option, type Command } from "commander";
import { Archive, archiveProject, restoreProject, type ProjectArchiveDeps } from "../archive/index.js";
import { SYSTEM } from "../resources/actor.js";
import { ResourceStore } from "../resources/store.js";
import { workflowSchema } from "../workflow/schema.js";
import { storeOptions, type StoreOptions } from "./options.js";
import { print, withStore } from "./store.js";

function withArchive<T>(options: StoreOptions, run: (deps: ProjectArchiveDeps) => Promise<T>): Promise<T> {
  return withStore(options, (kv) => run({ archive: new Archive(kv), store: new ResourceStore(kv, workflowSchema) }));
}

export function archiveCommands(program: Command): void {
  const archive = program.command("archive").description("archive closed projects and restore them (as the system actor)");
  storeOptions(
    archive
      .command("project <id>")
      .description("store a closed project (its whole tree and history) as one snapshot project:<id>; prints the snapshot"),
  )
    .addOption(new Option("--drop", "then delete the live project and drop its partition"))
    .action(async (id: string, options: StoreOptions & { drop?: boolean }) =>
      print(await withArchive(options, (deps) => archiveProject(deps, SYSTEM, id, { drop: options.drop === true }))),
    );
  storeOptions(
    archive
      .command("restore <snapshotId>")
      .description("restore an archived project where it does not exist; prints the restored project and its chain check"),
  ).action(async (snapshotId: string, options: StoreOptions) => {
    const restored = await withArchive(options, (deps) => restoreProject(deps, SYSTEM, snapshotId));
    print(restored);
    if (!restored.verify.ok) process.exitCode = 3;
  });
}
