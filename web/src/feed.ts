/**
 * The live change feed of the tab: the client's `events()` (fetch with the Authorization header,
 * parsed as Server-Sent Events in src/client), one connection that follows the session, reconnects
 * with backoff, resuming after the last message it got (Last-Event-ID), and stops on logout. Pages subscribe with `onEvent` (see ui.tsx's useLive).
 *
 * The same stream pushes the user's notifications (`event: notification`): `unread` is the inbox's
 * unread count as the server last answered it. A push or a (re)connect only asks the server again, so a
 * notification delivered twice, or missed while disconnected, never leaves a wrong count; of answers
 * that cross, the one to the latest question wins.
 */
import { ProblemError, type HistoryEvent, type Notification } from "../../src/client/index.js";
import { Observable } from "./observable.js";
import { client, session } from "./session.js";

type Listener = (e: HistoryEvent) => void;
const listeners = new Set<Listener>();
const notificationListeners = new Set<(n: Notification) => void>();
export const feedState = new Observable<"off" | "connecting" | "live">("off");
/** The unread notifications of the user (null: not known yet). */
export const unread = new Observable<number | null>(null);
let controller: AbortController | null = null;

export function onEvent(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Called with each notification pushed to the user. */
export function onNotification(listener: (n: Notification) => void): () => void {
  notificationListeners.add(listener);
  return () => notificationListeners.delete(listener);
}

let asked = 0;
/** Asks the server for the unread count; only the answer to the latest question is kept. */
export async function refreshUnread(): Promise<void> {
  const mine = ++asked;
  const user = session.value?.user;
  try {
    const { unread: n } = await client.notifications.count();
    if (mine === asked && session.value?.user === user) unread.value = n;
  } catch {
    // Shown again at the next push or reconnect.
  }
}

function notified(n: Notification): void {
  void refreshUnread();
  for (const l of [...notificationListeners]) l(n);
}

async function run(signal: AbortSignal): Promise<void> {
  let delay = 500;
  const opened = () => {
    feedState.value = "live";
    delay = 500;
    // What arrived while disconnected is not pushed again: count it from the inbox.
    void refreshUnread();
  };
  let lastEventId: string | undefined;
  while (!signal.aborted) {
    feedState.value = "connecting";
    try {
      for await (const message of client.events({ signal, onOpen: opened, lastEventId, onNotification: notified })) {
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
  let user: string | null = null;
  const follow = () => {
    const token = session.value?.token ?? null;
    if (token === current) return;
    controller?.abort();
    controller = null;
    if (session.value?.user !== user) {
      user = session.value?.user ?? null;
      asked++;
      unread.value = null;
    }
    current = token;
    feedState.value = "off";
    if (token) {
      // The badge does not wait for the feed (which a proxy may hold back): ask once now.
      void refreshUnread();
      controller = new AbortController();
      void run(controller.signal);
    }
  };
  session.subscribe(follow);
  follow();
}
