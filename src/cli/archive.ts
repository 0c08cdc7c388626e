/**
 * `flowstore archive project <id> [--drop]` and `flowstore archive restore <snapshotId>`: operator
 * commands working directly on the store as the system actor (stop the server first for an embedded
 * store). They print the result as one JSON line.
 */
import { Option, type Command } from "commander";
import { SYSTEM } from "../access/actor.js";
import { storeOptions, type StoreOptions } from "./options.js";
import { EXIT } from "./exit.js";
import { print, withStore } from "./store.js";

export function archiveCommands(program: Command): void {
  const archive = program.command("archive").description("archive closed projects and restore them (as the system actor)");
  storeOptions(archive.command("project <id>").description("store a closed project (its whole tree and history) as one snapshot project:<id>; prints the snapshot"))
    .addOption(new Option("--drop", "then delete the live project and drop its partition"))
    .action(async (id: string, options: StoreOptions & { drop?: boolean }) =>
      print(await withStore(options, (store) => store.archiveProject(SYSTEM, id, { drop: options.drop === true }))),
    );
  storeOptions(archive.command("restore <snapshotId>").description("restore an archived project where it does not exist; prints the restored project and its chain check")).action(
    async (snapshotId: string, options: StoreOptions) => {
      const restored = await withStore(options, (store) => store.restoreProject(SYSTEM, snapshotId));
      print(restored);
      if (!restored.verify.ok) process.exitCode = EXIT.verificationFailed;
    },
  );
}
