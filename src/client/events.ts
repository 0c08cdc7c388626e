/**
 * The change feed as an async iterator: GET /api/v1/events read as a fetch stream (so the bearer token
 * goes in the Authorization header, which EventSource cannot send), parsed as Server-Sent Events.
 * Leaving the loop (break, return, throw) or aborting the signal closes the connection. To reconnect
 * without loss or duplicates, pass the last message's id as `lastEventId` (sent as `Last-Event-ID`).
 */
import { API, type HttpCore } from "./core.js";
import type { HistoryEvent, Notification } from "./workflow.js";

/**
 * One message of the feed: its SSE id (`<position>-<index>`, its place in the store-wide feed; absent
 * on an event replayed after a writer's crash), event type and the event.
 */
export interface FeedMessage {
  readonly id: string | undefined;
  readonly event: string;
  readonly data: HistoryEvent;
}

export interface FeedOptions {
  readonly signal?: AbortSignal;
  /** Called once the server has accepted the subscription: every event committed after this is delivered. */
  readonly onOpen?: () => void;
  /** Resume right after this message id (from an earlier connection); a 400 ProblemError when the server does not know it. */
  readonly lastEventId?: string;
  /** Called with each notification pushed to the caller (`event: notification`); they are not yielded as messages. */
  readonly onNotification?: (notification: Notification) => void;
}

/** Parses one SSE block (the lines between blank lines); undefined for comments and keep-alives. */
function parseBlock(block: string): FeedMessage | undefined {
  let id: string | undefined;
  let event = "message";
  const data: string[] = [];
  for (const line of block.split(/\r?\n/)) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "id") id = value;
    else if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  if (data.length === 0) return undefined;
  return { id, event, data: JSON.parse(data.join("\n")) as HistoryEvent };
}

export async function* changeFeed(core: HttpCore, options: FeedOptions = {}): AsyncGenerator<FeedMessage, void, undefined> {
  const abort = new AbortController();
  const onAbort = (): void => abort.abort(options.signal?.reason);
  if (options.signal?.aborted) return;
  options.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    const res = await core.open("GET", `${API}/events`, {
      headers: { accept: "text/event-stream", ...(options.lastEventId === undefined ? {} : { "last-event-id": options.lastEventId }) },
      signal: abort.signal,
    });
    options.onOpen?.();
    if (!res.body) return;
    const decoder = new TextDecoder();
    let buffer = "";
    const reader = res.body.getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += decoder.decode(value, { stream: true });
        let end: RegExpExecArray | null;
        while ((end = /\r?\n\r?\n/.exec(buffer)) !== null) {
          const block = buffer.slice(0, end.index);
          buffer = buffer.slice(end.index + end[0].length);
          const message = parseBlock(block);
          if (message?.event === "notification") options.onNotification?.(message.data as unknown as Notification);
          else if (message) yield message;
        }
      }
    } finally {
      reader.releaseLock();
    }
  } catch (e) {
    // The caller's abort ends the feed quietly; anything else is an error.
    if (options.signal?.aborted) return;
    throw e;
  } finally {
    options.signal?.removeEventListener("abort", onAbort);
    abort.abort();
  }
}
