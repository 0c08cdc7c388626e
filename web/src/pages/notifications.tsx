/**
 * The notification inbox: newest first, a page at a time; each links to its resource and is marked
 * read when opened; mark one or all read. A notification pushed on the change feed reloads the pages
 * shown (a refetch, so a push seen twice changes nothing).
 */
import { useEffect, useRef } from "preact/hooks";
import type { Notification } from "../../../src/client/index.js";
import { onNotification, refreshUnread } from "../feed.js";
import { href } from "../router.js";
import { client } from "../session.js";
import { ErrorBox, fmtDate, useForm, useLoad } from "../ui.js";

const PAGE = 50;
const enc = encodeURIComponent;

/** The explorer's address of a resource path: project, subproject or workflowitem. */
export function resourceHref(path: readonly { type: string; id: string }[]): string {
  const [p, s, w] = path.map((x) => enc(x.id));
  if (w !== undefined) return href(`/projects/${p}/subprojects/${s}/workflowitems/${w}`);
  if (s !== undefined) return href(`/projects/${p}/subprojects/${s}`);
  return href(`/projects/${p}`);
}

const verbOf = (eventType: string) => eventType.slice(eventType.indexOf(".") + 1).replace(/_/g, " ");

export function NotificationsPage() {
  // How many pages the reader has asked for: a reload refetches all of them, under one generation.
  const wanted = useRef(1);
  const list = useLoad(async () => {
    const items: Notification[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: { items: Notification[]; nextCursor: string | null } = await client.notifications.list({ limit: PAGE, cursor });
      items.push(...page.items);
      cursor = page.nextCursor;
    } while (cursor && ++pages < wanted.current);
    return { items, cursor };
  }, []);
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const off = onNotification(() => {
      clearTimeout(timer);
      timer = setTimeout(() => void list.reload(), 150);
    });
    return () => {
      off();
      clearTimeout(timer);
    };
  }, [list.reload]);
  const form = useForm();
  const mark = (run: () => Promise<unknown>) =>
    form.submit(async () => {
      await run();
      await Promise.all([list.reload(), refreshUnread()]);
    });
  const items = list.data?.items ?? [];
  const unreadShown = items.some((n) => !n.read);
  return (
    <main>
      <div class="head">
        <h1>Notifications</h1>
        {unreadShown ? (
          <button type="button" class="secondary" disabled={form.busy} onClick={() => void mark(() => client.notifications.markAllRead())}>
            Mark all read
          </button>
        ) : null}
      </div>
      <ErrorBox error={list.error ?? form.error} />
      <table class="list notifications">
        <tbody>
          {items.map((n) => (
            <tr data-id={n.id} class={n.read ? "read" : "unread"}>
              <td>
                <a href={resourceHref(n.path)} onClick={() => (n.read ? undefined : void mark(() => client.notifications.markRead([n.id])))}>
                  {n.displayName}
                </a>{" "}
                <span class="muted small">{n.path.at(-1)?.type}</span>
              </td>
              <td class="what">
                {verbOf(n.eventType)} by <strong>{n.actor}</strong>
              </td>
              <td>
                <time>{fmtDate(n.createdAt)}</time>
              </td>
              <td>
                {n.read ? (
                  <span class="muted small">read</span>
                ) : (
                  <button
                    type="button"
                    class="link"
                    aria-label={`Mark read: ${n.displayName}`}
                    disabled={form.busy}
                    onClick={() => void mark(() => client.notifications.markRead([n.id]))}
                  >
                    Mark read
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {list.data && items.length === 0 ? <p class="muted">No notifications.</p> : null}
      {list.data?.cursor ? (
        <button
          type="button"
          onClick={() => {
            wanted.current++;
            void list.reload();
          }}
        >
          Older notifications
        </button>
      ) : null}
    </main>
  );
}
