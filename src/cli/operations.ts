/**
 * Operator commands over a whole store: `export`, `import`, `verify` and `demo`. They work on the store
 * directly (stop the server first for an embedded store).
 */
import { createReadStream, createWriteStream } from "node:fs";
import { finished } from "node:stream/promises";
import { Option, type Command } from "commander";
import { Identity } from "../identity/index.js";
import { allPartitions, type KvStore } from "../kv/contract.js";
import { SYSTEM } from "../resources/actor.js";
import { ResourceStore } from "../resources/store.js";
import { Workflow } from "../workflow/commands.js";
import { DEMO_GROUPS, DEMO_USERS, generateDemo } from "../workflow/demo.js";
import { workflowSchema } from "../workflow/schema.js";
import { storeOptions, type StoreOptions } from "./options.js";
import { print, withStore } from "./store.js";
import { ALL_KINDS, exportStore, importStore, progressReporter } from "./transfer.js";
import type { VerifyResult } from "../resources/events.js";

/** Verifies the hash chain of every partition that has one. */
export async function verifyAll(kv: KvStore, onResult?: (partition: readonly unknown[], r: VerifyResult) => void): Promise<{ ok: boolean; partitions: number; events: number; bad: number }> {
  const store = new ResourceStore(kv, workflowSchema);
  const total = { ok: true, partitions: 0, events: 0, bad: 0 };
  for (const kind of ALL_KINDS) {
    for await (const partition of allPartitions(kv, kind)) {
      if (!(await kv.get(partition, ["m", "head"]))) continue;
      const r = await store.verify(partition);
      total.partitions++;
      total.events += r.checked;
      if (!r.ok) {
        total.ok = false;
        total.bad++;
      }
      onResult?.(partition, r);
    }
  }
  return total;
}

export function operationCommands(program: Command): void {
  storeOptions(program.command("export").description("write every partition with its log as NDJSON (to --out or stdout)"))
    .addOption(new Option("--out <file>", "output file (default: stdout)"))
    .action(async (options: StoreOptions & { out?: string }) => {
      await withStore(options, async (kv) => {
        const out = options.out ? createWriteStream(options.out) : process.stdout;
        const progress = progressReporter(process.stderr, "exported");
        const counts = await exportStore(kv, out, progress.update);
        if (options.out) {
          out.end();
          await finished(out);
        }
        progress.done(counts);
      });
    });

  storeOptions(program.command("import").description("read an export (from --in or stdin) into an empty store"))
    .addOption(new Option("--in <file>", "input file (default: stdin)"))
    .action(async (options: StoreOptions & { in?: string }) => {
      await withStore(options, async (kv) => {
        const progress = progressReporter(process.stderr, "imported");
        const counts = await importStore(kv, options.in ? createReadStream(options.in) : process.stdin, progress.update);
        progress.done(counts);
      });
    });

  storeOptions(program.command("verify").description("recompute every partition's hash chain; exit 1 when one is broken")).action(
    async (options: StoreOptions) => {
      const total = await withStore(options, (kv) =>
        verifyAll(kv, (p, r) => {
          if (!r.ok) process.stdout.write(`${JSON.stringify({ partition: p, ...r })}\n`);
        }),
      );
      print(total);
      if (!total.ok) process.exitCode = 1;
    },
  );

  storeOptions(program.command("demo").description("load the demo data set: users, groups, projects, subprojects, workflowitems"))
    .addOption(new Option("--projects <n>", "projects").default("3"))
    .addOption(new Option("--subprojects <n>", "subprojects per project").default("3"))
    .addOption(new Option("--workflowitems <n>", "workflowitems per subproject").default("40"))
    .addHelpText("after", "\nThe demo users (mary, jane, tom, val, ana) get the password in FLOWSTORE_DEMO_PASSWORD (default: demo-password).")
    .action(async (options: StoreOptions & { projects: string; subprojects: string; workflowitems: string }) => {
      const n = (v: string, name: string): number => {
        const x = Number(v);
        if (!Number.isInteger(x) || x < 1 || x > 100_000) throw new Error(`--${name} must be an integer from 1 to 100000`);
        return x;
      };
      const sizes = { projects: n(options.projects, "projects"), subprojectsPerProject: n(options.subprojects, "subprojects"), workflowitemsPerSubproject: n(options.workflowitems, "workflowitems") };
      const password = process.env.FLOWSTORE_DEMO_PASSWORD || "demo-password";
      await withStore(options, async (kv) => {
        const identity = new Identity(kv);
        for (const [id, u] of Object.entries(DEMO_USERS)) {
          if (!(await identity.exists(id))) await identity.createUser(SYSTEM, { id, displayName: u.displayName, password });
        }
        for (const [id, members] of Object.entries(DEMO_GROUPS)) {
          if (!(await identity.exists(id))) await identity.createGroup(SYSTEM, { id, displayName: id, members });
        }
        const summary = await generateDemo(new Workflow(new ResourceStore(kv, workflowSchema)), sizes);
        print(summary);
      });
    });
}
