/**
 * What every resource level shares: its permissions (which decide the actions offered), the history
 * timeline, the permissions panel, and the update / assign / close forms.
 */
import { useState } from "preact/hooks";
import type { HistoryEvent, PermissionMap, WorkflowitemUpdate } from "../../src/client/index.js";
import { LogCoverage } from "./log-coverage.js";
import { labelOf, type Operation } from "./checks.js";
import { describeIntent, intentsAt } from "./intents.js";
import { IdentityPicker, identityName, useDirectory } from "./picker.js";
import { client, handleOf, session } from "./session.js";
import { ErrorBox, Field, FormError, fmtAmount, fmtDate, useForm, useLive, useLoad } from "./ui.js";

export type Level = "project" | "subproject" | "workflowitem";

/**
 * A resource as the pages show it, whatever its level: the client's Project, Subproject and
 * Workflowitem, and the redacted children of a list (kept in their place), all fit it.
 */
export interface Resource {
  id: string;
  type: string;
  redacted?: boolean;
  data: Record<string, any>;
  meta: { createdAt: string; createdBy?: string; updatedAt?: string; version?: number };
  /** The intents the user holds on it, as the server answers with every read and list item. */
  allowedIntents?: string[];
}

/** What a reader calls a resource: its display name, or its type and id when it is redacted. */
export const nameOf = (r: Resource): string => (r.redacted || !r.data.displayName ? `${r.type} ${r.id}` : String(r.data.displayName));

export const levelOf = (ids: readonly string[]): Level => (["project", "subproject", "workflowitem"] as const)[ids.length - 1]!;

/**
 * The intents the user holds on a resource: the `allowedIntents` the server answers with the resource
 * (the buttons follow them, as TruBudget's UI does), and its permission list for the permissions panel
 * when the user may list it. The server decides in any case.
 */
export function useIntents(ids: readonly string[]) {
  const path = ids.join("/");
  const level = levelOf(ids);
  const allowed = useLoad(async () => new Set(((await handleOf(ids).get()) as Resource).allowedIntents ?? []), [path]);
  const perms = useLoad(() => handleOf(ids).permissions(), [path]);
  useLive(
    (e) => e.path.length === ids.length && e.path.every((p, i) => p.id === ids[i]),
    () => (void allowed.reload(), void perms.reload()),
    [path],
  );
  return { perms, can: (verb: string) => allowed.data?.has(`${level}.${verb}`) ?? false };
}

/** True when the user is the resource's assignee, itself or through a group: who closes it (TruBudget's rule). */
export function isAssignee(resource: Resource): boolean {
  const s = session.value;
  const a = resource.data.assignee;
  return s !== null && typeof a === "string" && (a === s.user || s.groups.includes(a));
}

export function intentsOf(level: Level, perms: PermissionMap | null): string[] {
  const all = new Set(intentsAt(level));
  for (const k of Object.keys(perms ?? {})) all.add(k);
  return [...all];
}

/** An event in words; ids of the resources it names are shown by their names where known. */
function describe(e: HistoryEvent, names: ReadonlyMap<string, string>): string {
  const p = e.payload as Record<string, any>;
  const verb = e.type.slice(e.type.indexOf(".") + 1).replace(/_/g, " ");
  if (p.intent) return `${verb}: ${describeIntent(p.intent).name} (${p.intent}) → ${p.identity}`;
  if (Array.isArray(p.ordering)) return `${verb}: ${(p.ordering as string[]).map((id) => names.get(id) ?? id).join(", ") || "(none)"}`;
  if (p.data && typeof p.data === "object") {
    const fields = Object.entries(p.data as Record<string, unknown>)
      .slice(0, 6)
      .map(([k, v]) => `${k} = ${v === null ? "(removed)" : typeof v === "object" ? JSON.stringify(v).slice(0, 60) : String(v).slice(0, 60)}`);
    return `${verb}${fields.length ? `: ${fields.join(", ")}` : ""}`;
  }
  return verb;
}

/** One change of a diff as the server records it (`payload.changes`: a JSON Pointer, the values before and after, a keyed element's key). */
interface Change {
  path: string;
  old?: unknown;
  new?: unknown;
  key?: Record<string, unknown>;
}

/** The fields whose values are amounts: shown as the reader's locale writes numbers, with their currency. */
const AMOUNT_FIELDS = new Set(["amount", "value"]);

/**
 * A change's field for a reader: the pointer's steps joined by dots, a keyed element (a projected budget,
 * a document) named by its key instead of its place.
 */
function fieldOf(c: Change): string {
  const steps = c.path
    .split("/")
    .slice(1)
    .map((s) => s.replaceAll("~1", "/").replaceAll("~0", "~"));
  if (c.key && steps.length >= 2) steps[1] = `[${Object.values(c.key).map(String).join(", ")}]`;
  return steps.join(".").replace(".[", " [").replace("].", "] ");
}

/** A value of a change for a reader: an amount as the locale writes it, an object as short JSON. */
function valueOf(v: unknown, amount: boolean): string {
  if (v === undefined || v === null) return "(none)";
  if (amount && (typeof v === "string" || typeof v === "number")) return fmtAmount(v);
  const text = typeof v === "object" ? JSON.stringify(v) : String(v);
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}

/**
 * An update's diff, one line per change: "amount 1,000 → 1,200 EUR (alice, reason: …)". The currency of
 * an amount is the one the event set, else the keyed element's (a budget's currencyCode), else the
 * resource's own.
 */
function Changes({ e, currency }: { e: HistoryEvent; currency: string | undefined }) {
  const p = e.payload as Record<string, any>;
  const changes = p.changes as Change[];
  const verb = e.type.slice(e.type.indexOf(".") + 1).replace(/_/g, " ");
  const setCurrency = changes.find((c) => c.path === "/currency")?.new;
  const who = `(${e.actor}${typeof p.reason === "string" && p.reason !== "" ? `, reason: ${p.reason}` : ""})`;
  return (
    <>
      {verb}:
      <ul class="changes">
        {changes.map((c) => {
          const last = c.path.slice(c.path.lastIndexOf("/") + 1);
          const amount = AMOUNT_FIELDS.has(last);
          const unit = amount ? (typeof c.key?.currencyCode === "string" ? c.key.currencyCode : typeof setCurrency === "string" ? setCurrency : currency) : undefined;
          return (
            <li class="change">
              <span class="change-field">{fieldOf(c)}</span> {c.old === undefined ? "(none)" : valueOf(c.old, amount)} →{" "}
              {c.new === undefined ? "(removed)" : valueOf(c.new, amount)}
              {unit ? ` ${unit}` : ""} <span class="muted">{who}</span>
            </li>
          );
        })}
      </ul>
    </>
  );
}

/** The most children whose events a history shows beside its own (the most recently changed first). */
const CHILD_HISTORIES = 50;
const EVENTS_PER_PAGE = 50;

/** Runs `f` over `items`, at most `width` at a time. */
async function mapLimit<T, R>(items: readonly T[], width: number, f: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await f(items[i]!);
      }
    }),
  );
  return out;
}

const newestFirst = (a: HistoryEvent, b: HistoryEvent) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0);

/**
 * A resource's history, newest first; with `children` (a subproject's workflowitems, a project's
 * subprojects), their latest events too, each named by its child, and an ordering by the names it set.
 */
export function HistoryPanel({ ids, children, currency }: { ids: readonly string[]; children?: readonly Resource[]; currency?: string }) {
  const path = ids.join("/");
  const [more, setMore] = useState<HistoryEvent[]>([]);
  // diff: every change of the data with its field-level diff (payload.changes), rendered by Changes
  const page = (cursor?: string) => handleOf(ids).history({ order: "desc", limit: EVENTS_PER_PAGE, cursor, diff: true });
  const shownChildren = [...(children ?? [])]
    .filter((c) => !c.redacted)
    .sort((a, b) => ((a.meta.updatedAt ?? a.meta.createdAt) < (b.meta.updatedAt ?? b.meta.createdAt) ? 1 : -1))
    .slice(0, CHILD_HISTORIES);
  const childKey = shownChildren.map((c) => `${c.id}@${c.meta.version ?? ""}`).join(",");
  const first = useLoad(async () => {
    setMore([]);
    const [own, ...theirs] = await Promise.all([
      page(),
      mapLimit(shownChildren, 4, (c) =>
        handleOf([...ids, c.id])
          .history({ order: "desc", limit: EVENTS_PER_PAGE, diff: true })
          .then((p) => p.items)
          .catch(() => [] as HistoryEvent[]),
      ),
    ]);
    return { ...own, children: (theirs[0] ?? []).flat() };
  }, [path, childKey]);
  useLive(
    (e) => e.path.length >= ids.length && ids.every((id, i) => e.path[i]?.id === id),
    () => void first.reload(),
    [path],
  );
  const [cursor, setCursor] = useState<string | null | undefined>(undefined);
  const next = cursor === undefined ? first.data?.nextCursor : cursor;
  const events = [...(first.data?.items ?? []), ...more, ...(first.data?.children ?? [])].sort(newestFirst);
  const names = new Map((children ?? []).filter((c) => !c.redacted).map((c) => [c.id, String(c.data.displayName ?? c.id)]));
  const currencies = new Map((children ?? []).filter((c) => !c.redacted && typeof c.data.currency === "string").map((c) => [c.id, c.data.currency as string]));
  return (
    <div class="history">
      <ErrorBox error={first.error} />
      {events[0] ? <LogCoverage project={ids[0]!} seq={events[0].seq} /> : null}
      {children && children.length > 0 ? (
        <p class="muted small">
          With the latest events of{" "}
          {shownChildren.length < children.length ? `the ${shownChildren.length} most recently changed of its ${children.length}` : `its ${children.length}`}{" "}
          {levelOf([...ids, ""])}s.
        </p>
      ) : null}
      <ol class="timeline">
        {events.map((e) => (
          <li>
            <time>{fmtDate(e.at)}</time> <strong>{e.actor}</strong>{" "}
            {e.path.length > ids.length ? (
              <span class="child">
                {e.path
                  .slice(ids.length)
                  .map((p) => `${p.type} ${names.get(p.id) ?? p.id}`)
                  .join(" / ")}
                :{" "}
              </span>
            ) : null}
            <span class="what">
              {Array.isArray((e.payload as Record<string, unknown>).changes) && (e.payload as { changes: unknown[] }).changes.length > 0 ? (
                <Changes e={e} currency={e.path.length === ids.length ? currency : currencies.get(e.path.at(-1)!.id)} />
              ) : (
                describe(e, names)
              )}
            </span>
          </li>
        ))}
      </ol>
      {first.data && events.length === 0 ? <p class="muted">No events.</p> : null}
      {next ? (
        <button
          type="button"
          onClick={async () => {
            const older = await page(next);
            setMore((m) => [...m, ...older.items]);
            setCursor(older.nextCursor);
          }}
        >
          Older events
        </button>
      ) : null}
    </div>
  );
}

export function PermissionsPanel({ ids }: { ids: readonly string[] }) {
  const { perms, can } = useIntents(ids);
  const dir = useDirectory();
  const level = levelOf(ids);
  const intents = intentsOf(level, perms.data);
  const [intent, setIntent] = useState(`${level}.viewDetails`);
  const [identity, setIdentity] = useState("");
  const form = useForm(`POST /api/v1/${["projects/{}", "subprojects/{}", "workflowitems/{}"].slice(0, ids.length).join("/")}/permissions/grant` as Operation);
  if (perms.error) return <ErrorBox error={perms.error} />;
  if (!perms.data) return <p class="muted">Loading…</p>;
  const change = (action: "grant" | "revoke", i: string, who: string) =>
    form.submit(
      async () => {
        await handleOf(ids)[action](i, who);
        await perms.reload();
      },
      action === "grant" ? { intent: i, identity: who } : undefined,
    );
  return (
    <div class="permissions">
      <table>
        <caption>Who may do what on this {level}</caption>
        <thead>
          <tr>
            <th scope="col">Permission</th>
            <th scope="col">Users and groups</th>
          </tr>
        </thead>
        <tbody>
          {intents
            .filter((i) => (perms.data![i] ?? []).length > 0)
            .map((i) => {
              const d = describeIntent(i);
              return (
                <tr data-intent={i}>
                  <th scope="row">
                    <span class="intent-name">{d.name}</span>
                    {d.explain ? <span class="muted small intent-explain">{d.explain}</span> : null}
                  </th>
                  <td>
                    {perms.data![i]!.map((who) => (
                      <span class="chip" data-identity={who}>
                        {identityName(dir.data, who)}
                        {can("intent.revokePermission") ? (
                          <button type="button" class="link" aria-label={`Revoke ${d.name} from ${identityName(dir.data, who)}`} onClick={() => change("revoke", i, who)}>
                            ×
                          </button>
                        ) : null}
                      </span>
                    ))}
                  </td>
                </tr>
              );
            })}
        </tbody>
      </table>
      {can("intent.grantPermission") ? (
        <form
          class="inline"
          aria-label="Grant a permission"
          onSubmit={async (e) => {
            e.preventDefault();
            if (await change("grant", intent, identity)) setIdentity("");
          }}
        >
          <Field
            form={form}
            name="intent"
            label="Permission"
            value={intent}
            onInput={setIntent}
            choices={intents.map((i) => {
              const d = describeIntent(i);
              return { value: i, label: d.explain ? `${d.name}: ${d.explain}` : d.name };
            })}
          />
          <IdentityPicker form={form} name="identity" label="User or group" value={identity} onInput={setIdentity} />
          <button type="submit" disabled={form.busy}>
            Grant
          </button>
        </form>
      ) : null}
      <FormError form={form} fields={["intent", "identity"]} />
    </div>
  );
}

/** Assign (offered with its intent) and close (offered to the assignee, who alone may close), with a reject reason for workflowitems. */
export function Actions({
  ids,
  resource,
  version,
  can,
  onChange,
}: {
  ids: readonly string[];
  resource: Resource;
  version: number | null;
  can: (v: string) => boolean;
  onChange: () => void;
}) {
  const level = levelOf(ids);
  const [assignee, setAssignee] = useState("");
  const [reason, setReason] = useState("");
  const assign = useForm();
  const close = useForm();
  const what = level === "workflowitem" && reason.trim() ? "Reject" : "Close";
  const open = resource.data.status !== "closed";
  return (
    <div class="actions">
      {can("assign") && open ? (
        <form
          class="inline"
          onSubmit={async (e) => {
            e.preventDefault();
            if (await assign.submit(() => handleOf(ids).assign(assignee, { ifMatch: version ?? undefined }))) {
              setAssignee("");
              onChange();
            }
          }}
        >
          <IdentityPicker form={assign} name="assignee" label="Assign to" value={assignee} onInput={setAssignee} />
          <button type="submit" disabled={assign.busy || !assignee}>
            Assign {level}
          </button>
          <FormError form={assign} fields={["assignee"]} />
        </form>
      ) : null}
      {isAssignee(resource) && open ? (
        <form
          class="inline"
          onSubmit={async (e) => {
            e.preventDefault();
            const [p, s, w] = ids as [string, string?, string?];
            const rejectReason = reason.trim() || undefined;
            const closing = () => (s !== undefined && w !== undefined ? client.project(p).subproject(s).workflowitem(w).close({ rejectReason }) : handleOf(ids).close());
            if (await close.submit(closing)) {
              setReason("");
              onChange();
            }
          }}
        >
          {level === "workflowitem" ? <Field form={close} name="rejectReason" label="Reject reason (optional)" value={reason} onInput={setReason} /> : null}
          <button type="submit" disabled={close.busy} class="danger">
            {what} {level}
          </button>
          <FormError form={close} fields={["rejectReason"]} />
        </form>
      ) : null}
    </div>
  );
}

/** The update form for the common text fields (and amounts for workflowitems). */
export function UpdateForm({ ids, resource, version, onDone }: { ids: readonly string[]; resource: Resource; version: number | null; onDone: () => void }) {
  const level = levelOf(ids);
  const names = level === "workflowitem" ? ["displayName", "description", "amountType", "amount", "currency", "dueDate"] : ["displayName", "description"];
  const [values, setValues] = useState<Record<string, string>>(() => Object.fromEntries(names.map((n) => [n, resource.data[n] == null ? "" : String(resource.data[n])])));
  const form = useForm(`PATCH /api/v1/${["projects/{}", "subprojects/{}", "workflowitems/{}"].slice(0, ids.length).join("/")}` as Operation);
  return (
    <form
      class="stack"
      aria-label={`Update ${level}`}
      onSubmit={async (e) => {
        e.preventDefault();
        // What the user typed, as the server will validate it (field by field, answered at the field).
        const patch: Record<string, unknown> = {};
        for (const n of names) {
          const before = resource.data[n] == null ? "" : String(resource.data[n]);
          if (values[n] !== before) patch[n] = values[n];
        }
        if (Object.keys(patch).length === 0) return onDone();
        if (await form.submit(() => handleOf(ids).update(patch as WorkflowitemUpdate, { ifMatch: version ?? undefined }), patch)) onDone();
      }}
    >
      {names.map((n) => (
        <Field
          form={form}
          name={n}
          label={labelOf(n)}
          value={values[n] ?? ""}
          multiline={n === "description"}
          options={n === "amountType" ? ["N/A", "disbursed", "allocated"] : undefined}
          onInput={(v) => setValues((s) => ({ ...s, [n]: v }))}
        />
      ))}
      <FormError form={form} fields={names} />
      <div class="row">
        <button type="submit" disabled={form.busy}>
          Save
        </button>
        <button type="button" class="secondary" onClick={onDone}>
          Cancel
        </button>
      </div>
    </form>
  );
}
