/**
 * Waiting for a condition instead of sleeping: `eventually` retries a check until it holds, always within a
 * bound, and when the bound passes fails naming what it waited for and the last answer it got. Tests await
 * conditions (a line in a log, a record in the store, a server answering), never a fixed time.
 */

/** Thrown by a check to stop waiting at once: the condition can no longer come true (the process exited). */
export class GiveUp extends Error {}

export interface EventuallyOptions {
  /** What is awaited, for the failure message ("the server to answer /health"). */
  readonly what?: string;
  /** The bound: give up after this long. Default 15 s. */
  readonly timeoutMs?: number;
  /** The pause between two checks. Default 20 ms. */
  readonly intervalMs?: number;
}

/**
 * Retries `check` until it returns something other than `false` (or resolves to it) without throwing, and
 * answers that value. Throws after `timeoutMs` naming `what` and the last error or answer; a GiveUp thrown by
 * `check` is thrown at once.
 */
export async function eventually<T>(check: () => T | Promise<T>, options: EventuallyOptions = {}): Promise<Exclude<T, false>> {
  const { timeoutMs = 15_000, intervalMs = 20 } = options;
  const what = options.what ?? `${check}`.replace(/\s+/g, " ").slice(0, 200);
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    let last: string;
    try {
      const value = await check();
      if (value !== false) return value as Exclude<T, false>;
      last = "it answered false";
    } catch (err) {
      if (err instanceof GiveUp) throw err;
      last = `it threw ${err instanceof Error ? err.message : String(err)}`;
    }
    if (Date.now() >= deadline) throw new Error(`gave up waiting for ${what} after ${timeoutMs} ms (${attempt} checks; last, ${last})`);
    await pause(Math.min(intervalMs, Math.max(0, deadline - Date.now())));
  }
}

/** Resolves after `ms`: for pacing a loop that produces load, never for waiting on an outcome (use eventually). */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Resolves once the clock has left the current millisecond: what a test awaits between two writes whose
 * order it asserts through their timestamps (close times, created times), which have millisecond resolution.
 */
export async function nextMillisecond(): Promise<void> {
  const now = Date.now();
  while (Date.now() <= now) await pause(1);
}
