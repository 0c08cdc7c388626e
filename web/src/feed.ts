/**
 * The live change feed of the tab: the client's `events()` (fetch with the Authorization header,
 * parsed as Server-Sent Events in src/client), one connection that follows the session, reconnects
 * with backoff, resuming after the last message it got (Last-Event-ID), and stops on logout. Pages subscribe with `onEvent` (see ui.tsx's useLive).
 */
import { ProblemError, type HistoryEvent } from "../../src/client/index.js";
import { Observable } from "./observable.js";
import { client, session } from "./session.js";

type Listener = (e: HistoryEvent) => void;
const listeners = new Set<Listener>();
export const feedState = new Observable<"off" | "connecting" | "live">("off");
let controller: AbortController | null = null;

export function onEvent(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

async function run(signal: AbortSignal): Promise<void> {
  let delay = 500;
  const opened = () => {
    feedState.value = "live";
    delay = 500;
  };
  let lastEventId: string | undefined;
  while (!signal.aborted) {
    feedState.value = "connecting";
    try {
      for await (const message of client.events({ signal, onOpen: opened, lastEventId })) {
        lastEventId = message.id ?? lastEventId;
        for (const l of [...listeners]) l(message.data);
      }
    } catch (e) {
      // A refused token ends the session (the client's onUnauthorized), which stops this feed.
      if (signal.aborted || (e instanceof ProblemError && e.status === 401)) break;
      // A position the server does not know (another store): start from now.
      if (e instanceof ProblemError && e.status === 400) lastEventId = undefined;
    }
    if (signal.aborted) break;
    feedState.value = "connecting";
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 15_000);
  }
  if (controller?.signal === signal) feedState.value = "off";
}

/** Follows the session: connects when logged in, disconnects on logout. */
export function startFeed(): void {
  let current: string | null = null;
  const follow = () => {
    const token = session.value?.token ?? null;
    if (token === current) return;
    controller?.abort();
    controller = null;
    current = token;
    feedState.value = "off";
    if (token) {
      controller = new AbortController();
      void run(controller.signal);
    }
  };
  session.subscribe(follow);
  follow();
}
