/**
 * A subproject: its workflowitems in effective order, in a virtualized list; reorder by drag and drop
 * or with the move up / move down buttons. Every reorder sends the whole ordering with If-Match (the
 * subproject's version as last read): when someone else changed it first, the server answers 412 (Precondition Failed), and
 * the page says so and shows the current order instead of overwriting it.
 */
import { useState } from "preact/hooks";
import type { NewWorkflowitem } from "../../../src/client/index.js";
import { HistoryPanel, nameOf, PermissionsPanel, useIntents, type Resource } from "../resource.js";
import { go, href } from "../router.js";
import { asProblem, client, every } from "../session.js";
import { ErrorBox, Field, fmtAmount, FormError, NARROW, Status, Tabs, useForm, useLive, useLoad, useMedia } from "../ui.js";
import { VirtualList } from "../virtual-list.js";
import { ResourceHead, useResource } from "./detail.js";
import { DocumentsPanel } from "./documents.js";

interface Items {
  items: Resource[];
  /** The subproject's version as an ETag, sent back as If-Match with a reorder. */
  etag: string;
}

export function SubprojectPage({ p, s, w }: { p: string; s: string; w?: string }) {
  const ids = [p, s];
  const base = ids.join("/");
  const sub = client.project(p).subproject(s);
  const loaded = useResource(ids);
  const { can } = useIntents(ids);
  // The version is read before the items: if a reorder lands in between, ours is stale and the
  // server refuses it, rather than the page overwriting an order it has not shown.
  const list = useLoad<Items>(async () => {
    const { etag } = await sub.getOrdering();
    const items = await every<Resource>((page) => sub.workflowitems.list(page));
    return { items, etag };
  }, [base]);
  useLive(
    (e) => e.path[0]?.id === p && e.path[1]?.id === s && (e.path.length === 3 || e.type.endsWith("ordering_set")),
    () => void list.reload(),
    [base],
  );
  const [notice, setNotice] = useState<{ kind: "conflict" | "error" | "ok"; text: string } | null>(null);
  const [dragId, setDragId] = useState<string | null>(null);
  const [focusIndex, setFocusIndex] = useState<number | null>(null);
  const [creating, setCreating] = useState(false);
  const mayReorder = can("reorderWorkflowitems");
  // Phones: a row on two lines (name, then status, amount and assignee).
  const narrow = useMedia(NARROW);

  async function reorder(from: number, to: number): Promise<void> {
    const current = list.data;
    if (!current || from === to || to < 0 || to >= current.items.length) return;
    const items = [...current.items];
    const [moved] = items.splice(from, 1);
    items.splice(to, 0, moved!);
    list.set({ items, etag: current.etag });
    setFocusIndex(to);
    try {
      const { etag } = await sub.setOrdering(
        items.map((i) => i.id),
        { ifMatch: current.etag },
      );
      list.set({ items, etag });
      setNotice({ kind: "ok", text: `Moved "${nameOf(moved!)}" to position ${to + 1}.` });
    } catch (e) {
      const problem = asProblem(e);
      if (problem.status === 412) {
        setNotice({ kind: "conflict", text: "Someone else reordered these workflowitems (or changed the subproject) first. Your move was not saved; this is the current order." });
      } else {
        setNotice({ kind: "error", text: problem.detail });
      }
      await Promise.all([list.reload(), loaded.reload()]);
    }
  }

  const items = list.data?.items ?? [];
  const itemHref = (id: string) => href(`/projects/${encodeURIComponent(p)}/subprojects/${encodeURIComponent(s)}/workflowitems/${encodeURIComponent(id)}`);
  const listView = (
    <div>
      <div class="head">
        <h2>
          Workflowitems <span class="muted small">({items.length})</span>
        </h2>
        {can("createWorkflowitem") && loaded.data?.resource.data.status !== "closed" ? (
          <button type="button" onClick={() => setCreating((c) => !c)}>
            {creating ? "Cancel" : "New workflowitem"}
          </button>
        ) : null}
      </div>
      {creating ? <CreateWorkflowitem p={p} s={s} currency={loaded.data?.resource.data.currency} onCreated={() => (setCreating(false), void list.reload())} /> : null}
      {notice ? (
        <p class={`notice ${notice.kind}`} role={notice.kind === "ok" ? "status" : "alert"} data-kind={notice.kind}>
          {notice.text}
        </p>
      ) : null}
      <ErrorBox error={list.error} />
      {mayReorder ? <p class="muted small">Drag a row to reorder, or use its ↑ ↓ buttons.</p> : null}
      <VirtualList
        items={items}
        rowHeight={narrow ? 52 : 40}
        height={480}
        label="Workflowitems in order"
        scrollTo={focusIndex}
        keyOf={(i) => i.id}
        row={(item, index) => (
          // biome-ignore lint/a11y/noStaticElementInteractions: dragging is the pointer's shortcut; the keyboard's way is the row's move buttons
          <div
            class={`wi${item.redacted ? " redacted" : ""}${dragId === item.id ? " dragging" : ""}${w === item.id ? " selected" : ""}`}
            data-id={item.id}
            draggable={mayReorder}
            onDragStart={(e) => {
              setDragId(item.id);
              e.dataTransfer?.setData("text/plain", item.id);
              if (e.dataTransfer) e.dataTransfer.effectAllowed = "move";
            }}
            onDragEnd={() => setDragId(null)}
            onDragOver={(e) => {
              if (mayReorder) e.preventDefault();
            }}
            onDrop={(e) => {
              e.preventDefault();
              const id = dragId ?? e.dataTransfer?.getData("text/plain");
              setDragId(null);
              const from = items.findIndex((i) => i.id === id);
              if (from >= 0) void reorder(from, index);
            }}
          >
            <span class="pos">{index + 1}</span>
            {item.redacted ? (
              <span class="name muted">redacted workflowitem {item.id}</span>
            ) : (
              <a class="name" href={itemHref(item.id)} draggable={false}>
                {item.data.displayName}
              </a>
            )}
            <span class="meta">
              <Status status={item.data.status} redacted={item.redacted} />
              <span class="amount">{item.redacted ? "" : fmtAmount(item.data.amount, item.data.currency)}</span>
              <span class="assignee">{item.redacted ? "" : (item.data.assignee ?? "")}</span>
            </span>
            {mayReorder ? (
              <span class="move">
                <button type="button" class="icon" aria-label={`Move ${nameOf(item)} up`} disabled={index === 0} onClick={() => void reorder(index, index - 1)}>
                  ↑
                </button>
                <button type="button" class="icon" aria-label={`Move ${nameOf(item)} down`} disabled={index === items.length - 1} onClick={() => void reorder(index, index + 1)}>
                  ↓
                </button>
              </span>
            ) : null}
          </div>
        )}
      />
      {list.data && items.length === 0 ? <p class="muted">No workflowitems.</p> : null}
    </div>
  );

  return (
    <main>
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href={href("/projects")}>Projects</a> / <a href={href(`/projects/${encodeURIComponent(p)}`)}>{p}</a> / {s}
      </nav>
      <ResourceHead ids={ids} loaded={loaded} />
      <div class={w ? "split" : ""}>
        <Tabs
          tabs={[
            { key: "items", label: "Workflowitems", render: () => listView },
            { key: "history", label: "History", render: () => <HistoryPanel ids={ids} children={items} /> },
            { key: "permissions", label: "Permissions", render: () => <PermissionsPanel ids={ids} /> },
          ]}
        />
        {w ? <WorkflowitemPanel key={w} ids={[p, s, w]} onClose={() => go(`/projects/${encodeURIComponent(p)}/subprojects/${encodeURIComponent(s)}`)} /> : null}
      </div>
    </main>
  );
}

function WorkflowitemPanel({ ids, onClose }: { ids: string[]; onClose: () => void }) {
  const loaded = useResource(ids);
  const { can } = useIntents(ids);
  return (
    <aside class="panel" aria-label="Workflowitem">
      <button type="button" class="link close-panel" aria-label="Hide the workflowitem" title="Hide the workflowitem" onClick={onClose}>
        ×
      </button>
      <ResourceHead ids={ids} loaded={loaded} />
      <Tabs
        tabs={[
          { key: "history", label: "History", render: () => <HistoryPanel ids={ids} currency={loaded.data?.resource.data.currency as string | undefined} /> },
          { key: "documents", label: "Documents", render: () => (loaded.data ? <DocumentsPanel ids={ids} resource={loaded.data.resource} can={can} /> : null) },
          { key: "permissions", label: "Permissions", render: () => <PermissionsPanel ids={ids} /> },
        ]}
      />
    </aside>
  );
}

function CreateWorkflowitem({ p, s, currency, onCreated }: { p: string; s: string; currency?: string; onCreated: () => void }) {
  const [v, setV] = useState({ id: "", displayName: "", amountType: "N/A", amount: "", currency: currency ?? "", dueDate: "", description: "" });
  const form = useForm("POST /api/v1/projects/{}/subprojects/{}/workflowitems");
  const set = (k: keyof typeof v) => (x: string) => setV((st) => ({ ...st, [k]: x }));
  const names = ["id", "displayName", "amountType", "amount", "currency", "dueDate", "description"];
  return (
    <form
      class="card stack"
      aria-label="New workflowitem"
      onSubmit={async (e) => {
        e.preventDefault();
        const given = (["id", "amount", "dueDate", "description"] as const).filter((k) => v[k].trim());
        const body: NewWorkflowitem = {
          displayName: v.displayName,
          amountType: v.amountType as NewWorkflowitem["amountType"],
          ...Object.fromEntries(given.map((k) => [k, v[k].trim()])),
          ...(v.amountType !== "N/A" && v.currency.trim() ? { currency: v.currency.trim() } : {}),
        };
        if (await form.submit(() => client.project(p).subproject(s).workflowitems.create(body), body)) onCreated();
      }}
    >
      <Field form={form} name="id" label="Id (optional)" value={v.id} onInput={set("id")} />
      <Field form={form} name="displayName" label="Name" value={v.displayName} onInput={set("displayName")} />
      <Field form={form} name="amountType" label="Amount type" value={v.amountType} onInput={set("amountType")} options={["N/A", "disbursed", "allocated"]} />
      <Field form={form} name="amount" label="Amount" value={v.amount} onInput={set("amount")} placeholder="1200.00" />
      <Field form={form} name="currency" label="Currency" value={v.currency} onInput={set("currency")} />
      <Field form={form} name="dueDate" label="Due date" value={v.dueDate} onInput={set("dueDate")} type="date" />
      <Field form={form} name="description" label="Description" value={v.description} onInput={set("description")} multiline />
      <FormError form={form} fields={names} />
      <button type="submit" disabled={form.busy}>
        Create workflowitem
      </button>
    </form>
  );
}
