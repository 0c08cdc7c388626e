/**
 * Runs a child script with `node --import tsx`, collecting its complete stdout lines as JSON, and kills it
 * with SIGKILL when `killWhen` says so. A line cut by the kill is dropped: it was never acknowledged.
 */
import { spawn } from "node:child_process";

export interface ChildRun {
  /** Every complete line the child printed, parsed, in order. */
  readonly lines: Record<string, any>[];
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stderr: string;
  /** True when the parent killed it. */
  readonly killed: boolean;
}

export function runChild(
  script: string,
  args: readonly string[],
  killWhen: (line: Record<string, any>, lines: readonly Record<string, any>[]) => boolean = () => false,
): Promise<ChildRun> {
  const child = spawn(process.execPath, ["--import", "tsx", script, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  const lines: Record<string, any>[] = [];
  let partial = "";
  let stderr = "";
  let killed = false;
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    partial += chunk;
    let nl: number;
    while ((nl = partial.indexOf("\n")) >= 0) {
      const text = partial.slice(0, nl);
      partial = partial.slice(nl + 1);
      let line: Record<string, any>;
      try {
        line = JSON.parse(text) as Record<string, any>;
      } catch {
        line = { a: "garbage", text };
      }
      lines.push(line);
      if (!killed && killWhen(line, lines)) {
        killed = true;
        child.kill("SIGKILL");
      }
    }
  });
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (d: string) => (stderr += d));
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    // "close": the process exited AND its stdout was read to the end (every line it wrote is in `lines`)
    child.on("close", (code, signal) => resolve({ lines, code, signal, stderr, killed }));
  });
}
