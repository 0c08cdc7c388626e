#!/usr/bin/env node
/**
 * The flowstore command: runs the program, turning errors into a message and an exit code (exit.ts).
 * `flowstore --version` answers before anything else is loaded: the command tree imports the server, the
 * backends and every domain, a second of CPU that the version does not need.
 */
import { VERSION } from "./version.js";

// A reader that stops early (`flowstore serve --help | head -1`) closes the pipe: what the command still
// writes has nowhere to go, which is no failure of the command. It ends quietly, as a shell tool killed by
// SIGPIPE does (Node ignores the signal, so the write would otherwise throw an EPIPE stack trace).
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (e: NodeJS.ErrnoException) => {
    if (e.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw e;
  });
}

const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === "--version" || args[0] === "-V")) {
  process.stdout.write(`${VERSION}\n`);
} else {
  const [{ CommanderError }, { FlowstoreError }, { exitCodeOf }, { buildProgram }] = await Promise.all([
    import("commander"),
    import("../errors.js"),
    import("./exit.js"),
    import("./program.js"),
  ]);
  try {
    await buildProgram().parseAsync(process.argv);
  } catch (e) {
    if (!(e instanceof CommanderError)) {
      const field = e instanceof FlowstoreError && e.field ? ` (${e.field})` : "";
      process.stderr.write(`flowstore: ${e instanceof Error ? e.message : String(e)}${field}\n`);
    }
    process.exitCode = exitCodeOf(e);
  }
}
