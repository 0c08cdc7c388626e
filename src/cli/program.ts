/** The flowstore command tree (main.ts runs it; tests build it in-process). */
import { Command } from "commander";
import { archiveCommands } from "./archive.js";
import { auditCommand } from "./audit.js";
import { erasureCommand } from "./erasure.js";
import { EXIT_CODES_HELP } from "./exit.js";
import { identityCommands } from "./identity.js";
import { keysCommands } from "./keys.js";
import { operationCommands } from "./operations.js";
import { serveCommand } from "./serve.js";
import { VERSION } from "./version.js";
import { witnessCommand } from "./witness.js";

export function buildProgram(): Command {
  const program = new Command("flowstore")
    .description("an auditable, hierarchical data store for workflow and business-process systems")
    .version(VERSION)
    .addHelpText("after", EXIT_CODES_HELP)
    .showHelpAfterError("(add --help for the options)")
    .exitOverride();
  serveCommand(program);
  identityCommands(program);
  operationCommands(program);
  archiveCommands(program);
  erasureCommand(program);
  keysCommands(program);
  witnessCommand(program);
  auditCommand(program);
  return program;
}
