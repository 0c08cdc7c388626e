/** The flowstore command tree (main.ts runs it; tests build it in-process). */
import { Command } from "commander";
import { archiveCommands } from "./archive.js";
import { identityCommands } from "./identity.js";
import { operationCommands } from "./operations.js";
import { serveCommand } from "./serve.js";

export function buildProgram(): Command {
  const program = new Command("flowstore")
    .description("an auditable, hierarchical data store for workflow and business-process systems")
    .version("0.1.0")
    .showHelpAfterError()
    .exitOverride();
  serveCommand(program);
  identityCommands(program);
  operationCommands(program);
  archiveCommands(program);
  return program;
}
