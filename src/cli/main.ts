#!/usr/bin/env node
/** The flowstore command: runs the program, turning errors into a message and an exit code (exit.ts). */
import { CommanderError } from "commander";
import { FlowstoreError } from "../errors.js";
import { exitCodeOf } from "./exit.js";
import { buildProgram } from "./program.js";

try {
  await buildProgram().parseAsync(process.argv);
} catch (e) {
  if (!(e instanceof CommanderError)) {
    const field = e instanceof FlowstoreError && e.field ? ` (${e.field})` : "";
    process.stderr.write(`flowstore: ${e instanceof Error ? e.message : String(e)}${field}\n`);
  }
  process.exitCode = exitCodeOf(e);
}
