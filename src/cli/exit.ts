/**
 * The flowstore command's exit codes, declared once (README, "Exit codes"; `flowstore --help` shows them):
 *   0  ok
 *   1  verification failed (a broken chain, a divergent key, a refused checkpoint, a restored archive
 *      that does not verify, an unfinished import found by verify)
 *   2  usage: a bad option or argument, or an input the command refuses (an export that is not one, a
 *      store that is not empty for import, a user that does not exist)
 *   3  configuration or I/O: a missing data directory, a wrong key, a port in use, a store that does not
 *      answer, a store holding an unfinished import, a file that cannot be read or written
 *   4  a witness refused to cosign: the log's new checkpoint is not consistent with the one it cosigned
 *      (a truncated, forked or rewritten log; both checkpoints are kept in its state as evidence)
 */
import { CommanderError } from "commander";
import { ConfigurationError, FlowstoreError, UnavailableError } from "../errors.js";

export const EXIT = { ok: 0, verificationFailed: 1, usage: 2, configuration: 3, witnessRefused: 4 } as const;

export const EXIT_CODES_HELP =
  "\nExit codes: 0 ok, 1 verification failed, 2 usage (bad option or refused input), 3 configuration or I/O\n" +
  "(missing data directory, wrong key, port in use, store unreachable), 4 a witness refused an inconsistent log.";

/** A bad option value or argument, found by a command itself (commander finds the others). */
export class UsageError extends Error {}

/** A store that does not verify, found by a command that refuses to go on with it (serve). */
export class VerificationFailed extends Error {}

/** The exit code of an error that ended a command. */
export function exitCodeOf(e: unknown): number {
  if (e instanceof CommanderError) return e.exitCode === 0 ? EXIT.ok : EXIT.usage;
  if (e instanceof UsageError) return EXIT.usage;
  if (e instanceof VerificationFailed) return EXIT.verificationFailed;
  if (e instanceof ConfigurationError || e instanceof UnavailableError) return EXIT.configuration;
  if (e instanceof FlowstoreError && e.status >= 400 && e.status < 500) return EXIT.usage;
  return EXIT.configuration;
}
