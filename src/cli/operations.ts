/**
 * Operator commands over a whole store: `export`, `import`, `verify` and `demo`. They work on the store
 * directly (stop the server first for an embedded store), opened with openFlowstore.
 */
import { CONFIG, readEnv } from "../config.js";
import { createReadStream, createWriteStream } from "node:fs";
import { once } from "node:events";
import { chmod, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { Transform } from "node:stream";
import { finished, pipeline } from "node:stream/promises";
import { Option, type Command } from "commander";
import { SYSTEM } from "../access/actor.js";
import { CHAINED_KINDS, CONTENT_KINDS } from "../compose/kinds.js";
import { finishRestore } from "../compose/backup.js";
import type { VerifiedHead } from "../compose/open.js";
import { PRIVATE_FILE_MODE, writePrivateFile } from "../private-files.js";
import { sealingKeyOf } from "../process-data/sealing-key.js";
import { CHECKPOINT_KEY_FILE, fingerprintOf, loadCheckpointKey } from "../resources/audit/checkpoint.js";
import { ensureDemoIdentities, generateDemo } from "../workflow/demo.js";
import { parseVkey } from "../tlog/note.js";
import { type CosignedVerification, verifyCosigned } from "../tlog/verify.js";
import { type CosignedOptions, vkeyArg, witnessQuorum } from "./cosigned.js";
import { EXIT, UsageError } from "./exit.js";
import { keysNeeded } from "./keys.js";
import { configOption, storeOptions, type StoreOptions } from "./options.js";
import { print, withStore } from "./store.js";
import { progressBar } from "./progress.js";
import { countPartitions, importStore, pendingRestore, UNFINISHED_IMPORT, unfinishedImport } from "./transfer.js";

interface LogVerifyOptions extends CosignedOptions {
  logCheckpoint?: string;
  logOrigin?: string;
}

/** `verify --log-checkpoint`: the store's log against a cosigned checkpoint (tlog/verify.ts). */
async function verifyLogCheckpoint(options: StoreOptions & LogVerifyOptions): Promise<CosignedVerification> {
  const note = await readFile(options.logCheckpoint!, "utf8");
  const { witnesses, quorum } = await witnessQuorum(options);
  const checkpointKey = { pem: readEnv("FLOWSTORE_CHECKPOINT_KEY"), dataDir: options.data };
  return withStore(
    options,
    async (store) => {
      const logKey = options.logKey ? await vkeyArg(options.logKey, "--log-key") : parseVkey(store.log.checkpoints.vkey);
      return verifyCosigned(store.log.tree, note, { logKey, witnesses, quorum });
    },
    { open: { checkpointKey, log: { origin: options.logOrigin } } },
  );
}

export function operationCommands(program: Command): void {
  storeOptions(program.command("export").description("write every partition with its log as NDJSON (to --out or stdout)"))
    .addOption(new Option("--out <file>", "output file (default: stdout)"))
    .action(async (options: StoreOptions & { out?: string }) => {
      await withStore(options, async (store) => {
        const { kv } = store;
        // An export holds password hashes and every record: the owner's alone (0600), an existing file too.
        const out = options.out ? createWriteStream(options.out, { mode: PRIVATE_FILE_MODE }) : process.stdout;
        if (options.out) {
          await once(out, "open");
          await chmod(options.out, PRIVATE_FILE_MODE);
        }
        const progress = progressBar(process.stderr, "exported", "partitions", await countPartitions(kv, CONTENT_KINDS));
        // The store's own export, run as the operator (the system actor: the CLI works on the store directly).
        const backup = await store.exportStore(SYSTEM, (c) => progress.update(c.visited ?? c.partitions, `${c.entries} entries`));
        const [counts] = await Promise.all([backup.done, pipeline(backup.stream, out, { end: false })]);
        if (options.out) {
          out.end();
          await finished(out);
        }
        progress.done(`${counts.partitions} partitions (${counts.chained} ${CHAINED}), ${counts.entries} entries`);
        process.stderr.write(await keysNeeded(options, await sealingKeyOf(kv)));
      });
    });

  storeOptions(program.command("import").description("read an export (from --in or stdin) into an empty store"))
    .addOption(new Option("--in <file>", "input file (default: stdin)"))
    .addOption(new Option("--resume", "finish an import that was cut off, from the same export"))
    .action(async (options: StoreOptions & { in?: string; resume?: boolean }) => {
      await withStore(
        options,
        async (store) => {
          // Around the store's restore fence: a resume finishes a restore that shut it (and then opens it).
          const kv = store.fence.kv;
          if (options.resume && !(await unfinishedImport(kv))) {
            const epoch = await pendingRestore(kv);
            if (epoch !== null) {
              // A restore died after its import was done, before its credentials were kept or the fence opened.
              await finishRestore(kv, store.fence, epoch);
              process.stderr.write(`the restore had replaced the store's content; it is finished now (epoch ${epoch}), the fence is open again\n`);
              return;
            }
            if ((await store.fence.read()).shut?.phase === "replacing") {
              // A restore died after it shut the fence for good but before it marked the store: nothing of the content changed.
              await store.fence.open();
              process.stderr.write("the restore stopped before it changed the store's content: the store is as it was, the fence is open again\n");
              return;
            }
          }
          // The total is the export's size: progress counts the bytes read (stdin has no total).
          const size = options.in ? (await stat(options.in)).size : undefined;
          const progress = progressBar(process.stderr, "imported", size === undefined ? "partitions" : "KiB", size === undefined ? undefined : kib(size));
          let read = 0;
          // Counted as the importer reads, never by a "data" listener of its own: that would start the file
          // flowing before the importer's reader exists (it first asks the store whether it is empty), and
          // the chunks read meanwhile would be lost ("line 1 of the export: not JSON").
          const input = options.in
            ? createReadStream(options.in).pipe(
                new Transform({
                  transform(chunk: Buffer, _encoding, callback) {
                    read += chunk.length;
                    callback(null, chunk);
                  },
                }),
              )
            : process.stdin;
          const counts = await importStore(kv, input, (c) => progress.update(size === undefined ? c.partitions : kib(read), `${c.partitions} partitions, ${c.entries} entries`), {
            resume: options.resume === true,
          });
          // A restore cut off while it replaced the store: done now, its epoch begins (fence.ts, epochs.ts).
          const epoch = await pendingRestore(kv);
          if (epoch !== null) await finishRestore(kv, store.fence, epoch);
          progress.done(`${counts.partitions} partitions, ${counts.entries} entries`);
        },
        { create: true },
      );
    });

  storeOptions(
    program.command("verify").description("verify every partition (hash chain, ledger anchor, every stored key against the replay of the log); exit 1 on the first divergence"),
  )
    .addOption(new Option("--checkpoint <file>", "prove that the history of the checkpoint's partition extends this signed checkpoint (GET …/checkpoint)"))
    .addOption(new Option("--since-checkpoint <file>", "like --checkpoint, but check only the chain after the checkpoint (incremental)").conflicts("checkpoint"))
    .addOption(
      new Option(
        "--trust <fingerprint>",
        "the signing key's SHA-256 fingerprint (default: FLOWSTORE_CHECKPOINT_KEY's or the key in --data; with neither, a checkpoint is refused)",
      ),
    )
    .addOption(new Option("--log-checkpoint <file>", "check the store's transparency log against a cosigned checkpoint note (GET /api/v1/log/checkpoint/cosigned)"))
    .addOption(new Option("--witness <vkey...>", "a witness's verifier key (or a file holding one); with --log-checkpoint"))
    .addOption(new Option("--quorum <k>", "valid cosignatures by distinct --witness keys required (default: every --witness)"))
    .addOption(new Option("--log-key <vkey>", "the log's verifier key (default: the store's own checkpoint key, with --log-origin's name)"))
    .addOption(configOption("FLOWSTORE_LOG_ORIGIN"))
    .addOption(
      new Option(
        "--incremental <file>",
        "verify each partition from the head the last run recorded in <file> (the chain after it, not the stored keys); partitions new to it in full; then record the verified heads there (0600)",
      ).conflicts(["checkpoint", "sinceCheckpoint"]),
    )
    .action(async (options: StoreOptions & { checkpoint?: string; sinceCheckpoint?: string; trust?: string; incremental?: string } & LogVerifyOptions) => {
      if (options.logCheckpoint !== undefined) {
        const r = await verifyLogCheckpoint(options);
        print(r);
        if (!r.ok) process.exitCode = EXIT.verificationFailed;
        return;
      }
      const file = options.checkpoint ?? options.sinceCheckpoint;
      if (file !== undefined) {
        const checkpoint: unknown = JSON.parse(await readFile(file, "utf8"));
        const trustedFingerprint = options.trust ?? (await localFingerprint(options.data));
        const r = await withStore(options, (store) => store.verifyCheckpoint(checkpoint, { trustedFingerprint, incremental: options.sinceCheckpoint !== undefined }));
        print({ partition: (checkpoint as { partition?: unknown }).partition, ...r });
        if (!r.ok) process.exitCode = EXIT.verificationFailed;
        return;
      }
      const total = await withStore(options, async (store) => {
        const unfinished = (await unfinishedImport(store.kv)) !== null || (await pendingRestore(store.kv)) !== null;
        if (unfinished) process.stderr.write(`flowstore: ${UNFINISHED_IMPORT}\n`);
        const progress = progressBar(process.stderr, "verified", `${CHAINED} partitions`, await countPartitions(store.kv, CHAINED_KINDS));
        let seen = 0;
        let events = 0;
        const heads = options.incremental === undefined ? null : await readVerifiedHeads(options.incremental);
        const chains = await store.verifyAll(
          (p, r) => {
            events += r.checked;
            // The record chains (identity, grants) report here too; the progress counts the resources' chained partitions.
            if (CHAINED_KINDS.includes(String(p[0]))) progress.update(++seen, `${events} events`);
            if (!r.ok) process.stdout.write(`${JSON.stringify({ partition: p, ...r, head: undefined })}\n`);
            else if (heads && r.head) heads.set(JSON.stringify(p), r.head);
          },
          heads ? { since: (p) => heads.get(JSON.stringify(p)) } : {},
        );
        // A failed partition keeps the head it last verified at: the next run checks it from there again.
        if (heads && options.incremental !== undefined)
          await writePrivateFile(options.incremental, `${JSON.stringify({ format: VERIFIED_HEADS_FORMAT, heads: Object.fromEntries(heads) }, null, 1)}\n`);
        progress.done(`${chains.partitions} ${CHAINED} partitions, ${chains.events} events`);
        // Named as export names the same count: the partitions holding a hash chain are the chained ones.
        const { partitions: chained, ...rest } = chains;
        const named = { ...rest, chained };
        return unfinished ? { ...named, ok: false, unfinishedImport: true } : named;
      });
      print(total);
      if (!total.ok) process.exitCode = EXIT.verificationFailed;
    });

  storeOptions(program.command("demo").description("load the demo data set: users, groups, projects, subprojects, workflowitems"))
    .addOption(new Option("--projects <n>", "projects").default("3"))
    .addOption(new Option("--subprojects <n>", "subprojects per project").default("3"))
    .addOption(new Option("--workflowitems <n>", "workflowitems per subproject").default("40"))
    .addHelpText("after", "\nThe demo users (mary, jane, tom, val, ana) get the password in FLOWSTORE_DEMO_PASSWORD (default: demo-password).")
    .action(async (options: StoreOptions & { projects: string; subprojects: string; workflowitems: string }) => {
      const n = (v: string, name: string): number => {
        const x = Number(v);
        if (!Number.isInteger(x) || x < 1 || x > 100_000) throw new UsageError(`--${name} must be an integer from 1 to 100000`);
        return x;
      };
      const sizes = {
        projects: n(options.projects, "projects"),
        subprojectsPerProject: n(options.subprojects, "subprojects"),
        workflowitemsPerSubproject: n(options.workflowitems, "workflowitems"),
      };
      const password = readEnv("FLOWSTORE_DEMO_PASSWORD") ?? CONFIG.FLOWSTORE_DEMO_PASSWORD.default;
      await withStore(
        options,
        async ({ identity, workflow }) => {
          await ensureDemoIdentities(identity, password);
          const progress = progressBar(process.stderr, "created", "workflowitems", sizes.projects * sizes.subprojectsPerProject * sizes.workflowitemsPerSubproject);
          const summary = await generateDemo(workflow, { ...sizes, onItem: (done) => progress.update(done) });
          progress.done(`${summary.workflowitems} workflowitems`);
          print(summary);
        },
        { create: true },
      );
    });
}

/**
 * What `export` and `verify` call the partitions that hold a hash chain (a project with its tree, a
 * tenancy space…): export counts them among the partitions it wrote, verify checks them, and both name
 * them so, so that the same store answers the same number under the same name.
 */
const CHAINED = "chained";

const VERIFIED_HEADS_FORMAT = "flowstore-verified-heads-v1";

/**
 * The heads a previous `verify --incremental` recorded: {format, heads: {<partition as JSON>: {seq, hash}}}.
 * No file yet: none (every partition is verified in full). A file of another shape is a usage error.
 */
async function readVerifiedHeads(file: string): Promise<Map<string, VerifiedHead>> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return new Map();
    throw e;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UsageError(`--incremental ${file} is not JSON`);
  }
  const heads = (parsed as { format?: unknown; heads?: unknown } | null)?.heads;
  if ((parsed as { format?: unknown }).format !== VERIFIED_HEADS_FORMAT || typeof heads !== "object" || heads === null) {
    throw new UsageError(`--incremental ${file} is not a file of verified heads (${VERIFIED_HEADS_FORMAT})`);
  }
  const out = new Map<string, VerifiedHead>();
  for (const [partition, h] of Object.entries(heads)) {
    const { seq, hash } = (h ?? {}) as { seq?: unknown; hash?: unknown };
    if (!Number.isSafeInteger(seq) || (seq as number) < 0 || !(hash === null || (typeof hash === "string" && /^[0-9a-f]{64}$/.test(hash)))) {
      throw new UsageError(`--incremental ${file}: the head of ${partition} is not {seq, hash}`);
    }
    out.set(partition, { seq: seq as number, hash: hash as string | null });
  }
  return out;
}

/** The fingerprint of the checkpoint key in the data directory, when there is one. */
/** The fingerprint of the operator's own checkpoint key: FLOWSTORE_CHECKPOINT_KEY, else the one in the data directory; undefined when neither. */
async function localFingerprint(dataDir: string): Promise<string | undefined> {
  const env = process.env.FLOWSTORE_CHECKPOINT_KEY;
  const pem = env !== undefined && env !== "" ? env : await readFile(join(dataDir, CHECKPOINT_KEY_FILE), "utf8").catch(() => undefined);
  if (pem === undefined) return undefined;
  return fingerprintOf(await loadCheckpointKey({ env: pem }));
}

/** Bytes in KiB, rounded up (the import's progress unit). */
function kib(bytes: number): number {
  return Math.ceil(bytes / 1024);
}
