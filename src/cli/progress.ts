/**
 * Progress of the long commands (export, import, verify, demo) on stderr: on a terminal a bar with its
 * total, rate and ETA (cli-progress); otherwise one plain line at most every FLOWSTORE_PROGRESS_SECONDS
 * seconds (default 5; 0 writes every update), with the total and ETA when known, and a last line when done.
 */
import { CONFIG, readEnv } from "../config.js";
import { Presets, SingleBar } from "cli-progress";

export interface ProgressBar {
  /** Sets the total (when it is known, possibly only after starting). */
  total(total: number): void;
  /** The work done so far, and a short detail (e.g. the entries behind the partitions). */
  update(done: number, detail?: string): void;
  /** Ends the bar with a summary line. */
  done(summary: string): void;
}

function intervalMs(): number {
  return Number(readEnv("FLOWSTORE_PROGRESS_SECONDS") ?? CONFIG.FLOWSTORE_PROGRESS_SECONDS.default) * 1000;
}

function eta(started: number, done: number, total: number | undefined): string {
  if (total === undefined || done === 0 || done >= total) return "";
  const seconds = Math.round((((Date.now() - started) / done) * (total - done)) / 1000);
  return `, ETA ${seconds}s`;
}

/** A progress display of `label` (a verb: "exported") counted in `unit` (e.g. "partitions"). */
export function progressBar(stream: NodeJS.WriteStream, label: string, unit: string, total?: number): ProgressBar {
  let known = total;
  if (stream.isTTY) {
    const bar = new SingleBar(
      {
        stream,
        format: `${label} [{bar}] {percentage}% | {value}/{total} ${unit} | {detail} | ETA {eta_formatted}`,
        hideCursor: true,
        etaBuffer: 50,
        fps: 5,
      },
      Presets.shades_classic,
    );
    bar.start(known ?? 0, 0, { detail: "" });
    return {
      total: (t) => bar.setTotal((known = t)),
      update: (done, detail = "") => {
        if (known === undefined || done > known) bar.setTotal(done);
        bar.update(done, { detail });
      },
      done: (summary) => {
        bar.stop();
        stream.write(`${label} ${summary}: done\n`);
      },
    };
  }
  const every = intervalMs();
  const started = Date.now();
  let last = started;
  return {
    total: (t) => void (known = t),
    update: (done, detail) => {
      const now = Date.now();
      if (now - last < every) return;
      last = now;
      const of = known === undefined ? "" : `/${known}`;
      const pct = known ? ` (${Math.min(100, Math.floor((done / known) * 100))}%)` : "";
      stream.write(`${label} ${done}${of} ${unit}${pct}${detail ? `, ${detail}` : ""}${eta(started, done, known)}\n`);
    },
    done: (summary) => stream.write(`${label} ${summary}: done\n`),
  };
}
