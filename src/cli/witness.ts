/**
 * `flowstore witness`: a witness of a flowstore log (src/tlog/witness.ts), run by another organization:
 *
 *   flowstore witness --log URL --log-key VKEY --key FILE --state DIR [--name NAME] [--interval SECONDS] [--once] [--metrics-file FILE]
 *
 * `--key` is the witness's Ed25519 key (PKCS#8 PEM; created, 0600, when the file is absent), `--state`
 * its own LMDB directory, `--log-key` the log's verifier key as its operator published it (GET
 * /api/v1/log shows it; check it out of band). It prints its verifier key (type 0x04, what the log's
 * operator configures with --log-witness) and then one JSON line per step. On an inconsistent log it
 * keeps both checkpoints as evidence, prints the reason and exits with code 4 (EXIT.witnessRefused).
 * `--once` runs one step (cron); otherwise it polls every `--interval` seconds until stopped.
 * `--metrics-file` writes its metrics after each step in Prometheus' text format (for node_exporter's
 * textfile collector: the file outlives the process, so a refusal stays visible after the exit):
 * `flowstore_witness_refused` (1 once it refused an inconsistent log: the alert), the size it last
 * cosigned, its steps by outcome and the time of the last step.
 */
import { generateKeyPairSync } from "node:crypto";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { Option, type Command } from "commander";
import { Counter, Gauge, Registry } from "prom-client";
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
  metricsFile?: string;
}

/** The witness's metrics, written to a file after each step (`--metrics-file`). */
function witnessMetrics(file: string | undefined): (step: { outcome: string; size?: number; cosignedSize?: number }) => Promise<void> {
  if (!file) return async () => undefined;
  const registry = new Registry();
  const refused = new Gauge({
    name: "flowstore_witness_refused",
    help: "1 once this witness refused an inconsistent checkpoint of the log (its evidence is in its state)",
    registers: [registry],
  });
  const size = new Gauge({ name: "flowstore_witness_cosigned_size", help: "The size of the log checkpoint this witness last cosigned", registers: [registry] });
  const steps = new Counter({ name: "flowstore_witness_steps_total", help: "Polls of the log, by outcome", labelNames: ["outcome"], registers: [registry] });
  const last = new Gauge({ name: "flowstore_witness_last_step_timestamp_seconds", help: "When the last poll ended (POSIX seconds)", registers: [registry] });
  refused.set(0);
  return async (step) => {
    steps.inc({ outcome: step.outcome });
    if (step.outcome === "inconsistent") refused.set(1);
    if ((step.outcome === "cosigned" || step.outcome === "unchanged") && step.size !== undefined) size.set(step.size);
    last.set(Date.now() / 1000);
    // Written whole and renamed, so a collector never reads half a file.
    await writeFile(`${file}.tmp`, await registry.metrics());
    await rename(`${file}.tmp`, file);
  };
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
    .addOption(new Option("--metrics-file <file>", "write the witness's metrics there after each poll (Prometheus text format, for a textfile collector)"))
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
      const record = witnessMetrics(options.metricsFile);
      let stop = false;
      // The pause between polls keeps the process alive (nothing else does) and ends at once on a signal.
      let wake = (): void => {};
      const onSignal = (): void => {
        stop = true;
        wake();
      };
      process.once("SIGINT", onSignal).once("SIGTERM", onSignal);
      try {
        for (;;) {
          const step = await witness.step().catch((e: unknown) => ({ outcome: "error" as const, error: e instanceof Error ? e.message : String(e) }));
          print(step.outcome === "inconsistent" ? { outcome: step.outcome, reason: step.reason, cosignedSize: step.cosigned.size } : step);
          await record(step);
          if (step.outcome === "inconsistent") {
            process.exitCode = EXIT.witnessRefused;
            return;
          }
          if (options.once || stop) {
            if (step.outcome === "error") process.exitCode = EXIT.configuration;
            return;
          }
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, interval * 1000);
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          if (stop) return;
        }
      } finally {
        process.off("SIGINT", onSignal).off("SIGTERM", onSignal);
        await state.close();
      }
    });
}
