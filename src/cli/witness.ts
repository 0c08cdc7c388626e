/**
 * `flowstore witness`: a witness of a flowstore log (src/tlog/witness.ts), run by another organization:
 *
 *   flowstore witness --log URL --log-key VKEY --key FILE --state DIR [--name NAME] [--interval SECONDS] [--once]
 *
 * `--key` is the witness's Ed25519 key (PKCS#8 PEM; created, 0600, when the file is absent), `--state`
 * its own LMDB directory, `--log-key` the log's verifier key as its operator published it (GET
 * /api/v1/log shows it; check it out of band). It prints its verifier key (type 0x04, what the log's
 * operator configures with --log-witness) and then one JSON line per step. On an inconsistent log it
 * keeps both checkpoints as evidence, prints the reason and exits with code 4 (EXIT.witnessRefused).
 * `--once` runs one step (cron); otherwise it polls every `--interval` seconds until stopped.
 */
import { generateKeyPairSync } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { Option, type Command } from "commander";
import { LmdbKv } from "../kv/lmdb.js";
import { loadOrCreatePrivateFile } from "../private-files.js";
import { parseVkey, privateKeyFromPem, SIG_COSIGNATURE_V1, SIG_ED25519, signerVkey } from "../tlog/note.js";
import { Witness } from "../tlog/witness.js";
import { EXIT, UsageError } from "./exit.js";
import { print } from "./store.js";

interface WitnessOptions {
  log: string;
  logKey: string;
  key: string;
  state: string;
  name?: string;
  interval: string;
  once?: boolean;
}

export function witnessCommand(program: Command): void {
  program
    .command("witness")
    .description("witness a flowstore log: check each new checkpoint is consistent with the last one cosigned, cosign it and send the cosignature to the log")
    .requiredOption("--log <url>", "the log's server (http://host:port)")
    .requiredOption("--log-key <vkey>", "the log's verifier key (GET /api/v1/log shows it: check it out of band)")
    .requiredOption("--key <file>", "this witness's Ed25519 key (PKCS#8 PEM; created when absent)")
    .requiredOption("--state <dir>", "this witness's own LMDB state (created when absent)")
    .addOption(new Option("--name <name>", "this witness's key name (a schema-less URL; default witness.invalid/<host>)"))
    .addOption(new Option("--interval <seconds>", "seconds between polls").default("10"))
    .addOption(new Option("--once", "one poll, then exit"))
    .action(async (options: WitnessOptions) => {
      let logKey;
      try {
        logKey = parseVkey(options.logKey);
      } catch (e) {
        throw new UsageError(`--log-key: ${e instanceof Error ? e.message : String(e)}`);
      }
      if (logKey.type !== SIG_ED25519) throw new UsageError("--log-key must be the log's Ed25519 verifier key (type 0x01)");
      const interval = Number(options.interval);
      if (!/^\d{1,6}$/.test(options.interval) || interval < 1) throw new UsageError("--interval must be a whole number of seconds, at least 1");
      const pem = await loadOrCreatePrivateFile(options.key, () => generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }) as string);
      const signer = { name: options.name ?? `witness.invalid/${new URL(options.log).host}`, privateKey: privateKeyFromPem(pem.toString("utf8"), "--key") };
      await mkdir(options.state, { recursive: true });
      const state = LmdbKv.open(options.state);
      const witness = new Witness({ log: options.log, logKey, signer, state });
      print({ witness: signer.name, vkey: signerVkey(signer, SIG_COSIGNATURE_V1) });
      let stop = false;
      const onSignal = (): void => {
        stop = true;
      };
      process.once("SIGINT", onSignal).once("SIGTERM", onSignal);
      try {
        for (;;) {
          const step = await witness.step().catch((e: unknown) => ({ outcome: "error" as const, error: e instanceof Error ? e.message : String(e) }));
          print(step.outcome === "inconsistent" ? { outcome: step.outcome, reason: step.reason, cosignedSize: step.cosigned.size } : step);
          if (step.outcome === "inconsistent") {
            process.exitCode = EXIT.witnessRefused;
            return;
          }
          if (options.once || stop) {
            if (step.outcome === "error") process.exitCode = EXIT.configuration;
            return;
          }
          await new Promise((r) => setTimeout(r, interval * 1000).unref());
          if (stop) return;
        }
      } finally {
        await state.close();
      }
    });
}
