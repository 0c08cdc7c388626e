/**
 * The example webhook receiver (examples/webhook-receiver/receiver.mjs) as a real child process: what it
 * printed (one JSON line a request), what it stored (its --out file, one verified delivery a line), and a
 * stop. The tests check signatures through it: a delivery it stores is one whose signature it verified.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { eventually } from "./eventually.js";

const RECEIVER = resolve(import.meta.dirname, "../../examples/webhook-receiver/receiver.mjs");

export interface DeliveredEvent {
  readonly position: string;
  readonly event: { readonly seq: number; readonly type: string; readonly path: readonly { type: string; id: string }[]; readonly payload: Record<string, unknown> };
}

export interface Receiver {
  readonly url: string;
  /** The lines it printed so far. */
  readonly lines: Record<string, unknown>[];
  /** Every event of every delivery it verified and stored, in arrival order (repeats included). */
  events(): DeliveredEvent[];
  /** The digests it verified and stored. */
  digests(): { text: string; open: number }[];
  stop(): Promise<void>;
}

export async function startReceiver(options: { secret: string; port: number; dir: string; fail?: number; name?: string }): Promise<Receiver> {
  const out = join(options.dir, `${options.name ?? "receiver"}.ndjson`);
  const child = spawn(process.execPath, [RECEIVER, `--secret=${options.secret}`, "--port", String(options.port), "--out", out, "--fail", String(options.fail ?? 0)], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: Record<string, unknown>[] = [];
  let partial = "";
  let err = "";
  child.stderr.on("data", (d) => (err += d));
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    partial += chunk;
    for (let nl = partial.indexOf("\n"); nl >= 0; nl = partial.indexOf("\n")) {
      lines.push(JSON.parse(partial.slice(0, nl)) as Record<string, unknown>);
      partial = partial.slice(nl + 1);
    }
  });
  const exited = new Promise<void>((r) => child.on("exit", () => r()));
  await eventually(
    () => {
      if (child.exitCode !== null) throw new Error(`the receiver exited: ${err}`);
      return lines.some((l) => l.listening !== undefined);
    },
    { what: "the receiver to listen", timeoutMs: 30_000, intervalMs: 20 },
  );
  const stored = (): Record<string, unknown>[] => {
    let text = "";
    try {
      text = readFileSync(out, "utf8");
    } catch {
      return [];
    }
    return text
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  };
  return {
    url: `http://127.0.0.1:${options.port}/hook`,
    lines,
    events: () => stored().flatMap((d) => (d.events as DeliveredEvent[] | undefined) ?? []),
    digests: () => stored().flatMap((d) => (d.digest ? [d.digest as { text: string; open: number }] : [])),
    async stop() {
      if (child.exitCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}
