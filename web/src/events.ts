/**
 * The live change feed. EventSource cannot send an Authorization header, and a token must never be in
 * a URL, so the feed is read with fetch() and a stream reader, parsed as Server-Sent Events here.
 * One connection per tab; it reconnects with backoff and stops on logout.
 */
import { BASE, session } from "./api.js";
import { Observable } from "./observable.js";

export interface FeedEvent {
  seq: number;
  at: string;
  actor: string;
  type: string;
  path: { type: string; id: string }[];
  payload: Record<string, unknown>;
}

type Listener = (e: FeedEvent) => void;
const listeners = new Set<Listener>();
export const feedState = new Observable<"off" | "connecting" | "live">("off");
let controller: AbortController | null = null;

export function onEvent(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

function dispatch(block: string): void {
  let data = "";
  for (const line of block.split("\n")) {
    if (line.startsWith("data:")) data += line.slice(5).trimStart();
  }
  if (!data) return;
  let event: FeedEvent;
  try {
    event = JSON.parse(data) as FeedEvent;
  } catch {
    return;
  }
  for (const l of [...listeners]) l(event);
}

async function run(token: string, signal: AbortSignal): Promise<void> {
  let delay = 500;
  while (!signal.aborted) {
    feedState.value = "connecting";
    try {
      const res = await fetch(`${BASE}/events`, { headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" }, signal });
      if (res.status === 401) return;
      if (!res.ok || !res.body) throw new Error(String(res.status));
      feedState.value = "live";
      delay = 500;
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value.replace(/\r\n?/g, "\n");
        let at: number;
        while ((at = buffer.indexOf("\n\n")) >= 0) {
          dispatch(buffer.slice(0, at));
          buffer = buffer.slice(at + 2);
        }
      }
    } catch {
      if (signal.aborted) break;
    }
    feedState.value = "connecting";
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 15_000);
  }
  feedState.value = "off";
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
      void run(token, controller.signal);
    }
  };
  session.subscribe(follow);
  follow();
}
