/**
 * Reads a password for `user add` and `user passwd` without putting it on the command line (where
 * `ps` would show it): from FLOWSTORE_PASSWORD, else the first line of stdin when it is not a
 * terminal, else a prompt that does not echo.
 */
import { readEnv } from "../config.js";
import { UsageError } from "./exit.js";
import { createInterface } from "node:readline";
import { Writable } from "node:stream";

/** What a password-reading command says when it finds none. */
const NO_PASSWORD =
  "no password given: set FLOWSTORE_PASSWORD, or pass it as the first line of stdin (printf '%s\\n' \"$PASSWORD\" | flowstore user add <id>), or run the command in a terminal to be prompted";

export async function readPassword(prompt = "password: "): Promise<string> {
  const env = readEnv("FLOWSTORE_PASSWORD");
  if (env !== undefined) return env;
  if (!process.stdin.isTTY) {
    let text = "";
    for await (const chunk of process.stdin) {
      text += chunk;
      if (text.includes("\n")) break;
    }
    const line = text.split(/\r?\n/)[0] ?? "";
    if (line === "") throw new UsageError(NO_PASSWORD);
    return line;
  }
  process.stderr.write(prompt);
  const muted = new Writable({ write: (_chunk, _enc, done) => done() });
  const rl = createInterface({ input: process.stdin, output: muted, terminal: true });
  try {
    return await new Promise<string>((resolve) => rl.question("", resolve));
  } finally {
    rl.close();
    process.stderr.write("\n");
  }
}
