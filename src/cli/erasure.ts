/**
 * `flowstore erase-subject <id>`: erases a data subject (compose/erasure.ts) directly on the store as the
 * system actor (stop the server first for an embedded store): its key is destroyed, its personal fields
 * read as erased, and an erasure event is appended to each resource that held them. Prints the receipt
 * as one JSON line; a subject erased before prints its receipt again.
 */
import type { Command } from "commander";
import { SYSTEM } from "../access/actor.js";
import { storeOptions, type StoreOptions } from "./options.js";
import { print, withStore } from "./store.js";

export function erasureCommand(program: Command): void {
  storeOptions(
    program
      .command("erase-subject <id>")
      .description("erase a data subject: destroy its key so its personal fields read as erased everywhere (every chain still verifies); prints the receipt"),
  ).action(async (id: string, options: StoreOptions) => print(await withStore(options, (store) => store.eraseSubject(SYSTEM, id))));
}
