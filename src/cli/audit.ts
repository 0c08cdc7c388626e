/**
 * `flowstore audit`: an auditor's check of an export against a cosigned log checkpoint, offline, with no
 * server and no store of the auditor's own (issue 27):
 *
 *   flowstore audit --in export.ndjson --checkpoint cp.note --witness VKEY… [--quorum k] [--log-key VKEY]
 *
 * The export is read into memory (the memory backend, gone when the command ends); every partition's
 * hash chain is verified; the transparency log is rebuilt from the export's change feed, exactly as the
 * server appended it (the leaves are a function of the feed and the events); then the checkpoint must
 * carry `quorum` valid cosignatures by the given witnesses (and the log's signature, when `--log-key`
 * pins it), the rebuilt tree of the checkpoint's size must have its root, and every leaf must name its
 * event's hash. An export taken after the checkpoint is fine (its tree only extends it). Exit 0 when all
 * holds, 1 naming what does not, 2 on bad options.
 *
 * Across restores: a log with several epochs holds leaves of the histories each restore replaced, which
 * an export does not carry. An export of such a store says in its header where the current epoch begins
 * (the index of its first leaf, the subtree hashes of the tree before it and its last leaf with a proof:
 * compose/transfer.ts); the audit rebuilds the current epoch's leaves on top of that tree. The root then
 * covers the earlier epochs' leaves, which witnesses cosigned as the tree grew, but their events are not
 * checked (the output counts them as `earlier`); a checkpoint whose tree ends before the current epoch
 * begins covers nothing the export holds, and is refused saying so.
 */
import { createReadStream } from "node:fs";
import { access, readFile } from "node:fs/promises";
import { Option, type Command } from "commander";
import { openFlowstore } from "../compose/index.js";
import { MemoryKv } from "../kv/memory.js";
import { ValidationError } from "../errors.js";
import type { EpochStart } from "../tlog/log.js";
import { verifyCosigned } from "../tlog/verify.js";
import { type CosignedOptions, vkeyArg, witnessQuorum } from "./cosigned.js";
import { EXIT, UsageError } from "./exit.js";
import { print } from "./store.js";
import { exportHeader, importStore } from "./transfer.js";

interface AuditOptions extends CosignedOptions {
  in: string;
  checkpoint: string;
}

export function auditCommand(program: Command): void {
  program
    .command("audit")
    .description("verify an export against a cosigned log checkpoint, offline: its chains, the log rebuilt from it, the witnesses' cosignatures")
    .requiredOption("--in <file>", "the export (flowstore export, NDJSON)")
    .requiredOption("--checkpoint <file>", "the cosigned checkpoint note (GET /api/v1/log/checkpoint/cosigned)")
    .requiredOption("--witness <vkey...>", "a witness's verifier key (cosignature/v1, type 0x04), or a file holding one")
    .addOption(new Option("--quorum <k>", "valid cosignatures by distinct --witness keys required (default: every --witness)"))
    .addOption(new Option("--log-key <vkey>", "the log's verifier key (GET /api/v1/log): its signature is checked too"))
    .action(async (options: AuditOptions) => {
      const { witnesses, quorum } = await witnessQuorum(options);
      const logKey = options.logKey ? await vkeyArg(options.logKey, "--log-key") : null;
      const note = await readFile(options.checkpoint, "utf8").catch(() => {
        throw new UsageError(`--checkpoint ${options.checkpoint}: no such file`);
      });
      await access(options.in).catch(() => {
        throw new UsageError(`--in ${options.in}: no such file`);
      });
      const header = await exportHeader(options.in);
      const kv = new MemoryKv();
      await importStore(kv, createReadStream(options.in));
      const store = await openFlowstore(kv);
      try {
        const chains = await store.verifyAll();
        // An export of a log past a restore: its current epoch's leaves go on top of the tree before it.
        const epochProblems: string[] = [];
        if (header.log !== undefined) {
          await store.log.tree.seed(header.log as EpochStart).catch((e: unknown) => {
            if (!(e instanceof ValidationError)) throw e;
            epochProblems.push(`the export's header does not describe a tree the current epoch can start from (${e.field}): ${e.message}`);
          });
        }
        const appended = await store.log.tree.appendPending();
        const { epoch, start } = await store.log.tree.head();
        const log = await verifyCosigned(store.log.tree, note, { logKey, witnesses, quorum });
        const reasons = [
          ...(chains.ok ? [] : [`${chains.bad} partition(s) of the export do not verify (flowstore verify on an import of it names them)`]),
          ...epochProblems,
          ...log.reasons,
        ];
        const ok = chains.ok && epochProblems.length === 0 && log.ok;
        print({
          ok,
          checkpoint: { size: log.size, cosigners: log.cosigners, logSignature: logKey ? "checked" : "not checked (no --log-key)" },
          export: { partitions: chains.partitions, events: chains.events, leaves: appended, epoch, epochStart: start },
          covered: log.checked ?? 0,
          earlier: log.earlier ?? 0,
          reasons,
        });
        if (!ok) process.exitCode = EXIT.verificationFailed;
      } finally {
        await store.close();
      }
    });
}
