/**
 * What every resource level shares: its permissions (which decide the actions offered), the history
 * timeline, the permissions panel, and the update / assign / close forms.
 */
import { useState } from "preact/hooks";
import { call, get, heldIntents, resourcePath, type Page, type Permissions } from "./api.js";
import { ErrorBox, Field, FormError, fmtDate, useForm, useLive, useLoad } from "./ui.js";

export type Level = "project" | "subproject" | "workflowitem";

export interface Resource {
  id: string;
  type: Level;
  redacted?: boolean;
  data: Record<string, any>;
  meta: { createdAt: string; createdBy?: string; updatedAt?: string; version?: number };
}

export const levelOf = (ids: readonly string[]): Level => (["project", "subproject", "workflowitem"] as const)[ids.length - 1]!;

/**
 * The intents the user holds on a resource, from its permission list. A user who may not list the
 * permissions is offered no actions (the server decides in any case).
 */
export function useIntents(ids: readonly string[]) {
  const path = resourcePath(ids);
  const perms = useLoad(() => get<Permissions>(`${path}/permissions`), [path]);
  useLive((e) => e.path.length === ids.length && e.path.every((p, i) => p.id === ids[i]) && e.type.includes("permission"), () => void perms.reload(), [path]);
  const held = heldIntents(perms.data);
  const level = levelOf(ids);
  return { perms, can: (verb: string) => held.has(`${level}.${verb}`) };
}

const INTENTS: Record<Level, string[]> = {
  project: ["list", "viewDetails", "viewHistory", "update", "assign", "close", "createSubproject", "budget.updateProjected", "budget.deleteProjected"],
  subproject: ["list", "viewDetails", "viewHistory", "update", "assign", "close", "createWorkflowitem", "reorderWorkflowitems", "budget.updateProjected", "budget.deleteProjected"],
  workflowitem: ["list", "viewDetails", "viewHistory", "update", "assign", "close"],
};

export function intentsOf(level: Level, perms: Permissions | null): string[] {
  const all = new Set([...INTENTS[level], "intent.listPermissions", "intent.grantPermission", "intent.revokePermission"].map((v) => `${level}.${v}`));
  for (const k of Object.keys(perms ?? {})) all.add(k);
  return [...all].sort();
}

interface HistoryEvent {
  seq: number;
  at: string;
  actor: string;
  type: string;
  path: { type: string; id: string }[];
  payload: Record<string, any>;
}

function describe(e: HistoryEvent): string {
  const p = e.payload;
  const verb = e.type.slice(e.type.indexOf(".") + 1).replace(/_/g, " ");
  if (p.intent) return `${verb}: ${p.intent} → ${p.identity}`;
  if (p.ordering) return `${verb}: ${(p.ordering as string[]).length} items`;
  if (p.data && typeof p.data === "object") {
    const fields = Object.entries(p.data as Record<string, unknown>)
      .slice(0, 6)
      .map(([k, v]) => `${k} = ${v === null ? "(removed)" : typeof v === "object" ? JSON.stringify(v).slice(0, 60) : String(v).slice(0, 60)}`);
    return `${verb}${fields.length ? `: ${fields.join(", ")}` : ""}`;
  }
  return verb;
}

export function HistoryPanel({ ids }: { ids: readonly string[] }) {
  const path = resourcePath(ids);
  const [more, setMore] = useState<HistoryEvent[]>([]);
  const first = useLoad(async () => {
    setMore([]);
    return get<Page<HistoryEvent>>(`${path}/history?order=desc&limit=50`);
  }, [path]);
  useLive((e) => e.path.length >= ids.length && ids.every((id, i) => e.path[i]?.id === id), () => void first.reload(), [path]);
  const [cursor, setCursor] = useState<string | null | undefined>(undefined);
  const next = cursor === undefined ? first.data?.nextCursor : cursor;
  const events = [...(first.data?.items ?? []), ...more];
  return (
    <div class="history">
      <ErrorBox error={first.error} />
      <ol class="timeline">
        {events.map((e) => (
          <li>
            <time>{fmtDate(e.at)}</time> <strong>{e.actor}</strong> <span class="what">{describe(e)}</span>
            {e.path.length > ids.length ? <span class="muted"> ({e.path.slice(ids.length).map((p) => `${p.type} ${p.id}`).join(" / ")})</span> : null}
          </li>
        ))}
      </ol>
      {first.data && events.length === 0 ? <p class="muted">No events.</p> : null}
      {next ? (
        <button
          onClick={async () => {
            const page = await get<Page<HistoryEvent>>(`${path}/history?order=desc&limit=50&cursor=${encodeURIComponent(next)}`);
            setMore((m) => [...m, ...page.items]);
            setCursor(page.nextCursor);
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
  const level = levelOf(ids);
  const path = resourcePath(ids);
  const intents = intentsOf(level, perms.data);
  const [intent, setIntent] = useState(`${level}.viewDetails`);
  const [identity, setIdentity] = useState("");
  const form = useForm();
  if (perms.error) return <ErrorBox error={perms.error} />;
  if (!perms.data) return <p class="muted">Loading…</p>;
  const change = (action: "grant" | "revoke", i: string, who: string) =>
    form.submit(async () => {
      await call("POST", `${path}/permissions/${action}`, { body: { intent: i, identity: who } });
      await perms.reload();
    });
  return (
    <div class="permissions">
      <table>
        <thead>
          <tr>
            <th>Intent</th>
            <th>Users and groups</th>
          </tr>
        </thead>
        <tbody>
          {intents
            .filter((i) => (perms.data![i] ?? []).length > 0)
            .map((i) => (
              <tr>
                <td>{i}</td>
                <td>
                  {perms.data![i]!.map((who) => (
                    <span class="chip">
                      {who}
                      {can("intent.revokePermission") ? (
                        <button class="link" aria-label={`Revoke ${i} from ${who}`} onClick={() => change("revoke", i, who)}>
                          ×
                        </button>
                      ) : null}
                    </span>
                  ))}
                </td>
              </tr>
            ))}
        </tbody>
      </table>
      {can("intent.grantPermission") ? (
        <form
          class="inline"
          onSubmit={async (e) => {
            e.preventDefault();
            if (await change("grant", intent, identity.trim())) setIdentity("");
          }}
        >
          <Field form={form} name="intent" label="Intent" value={intent} onInput={setIntent} options={intents} />
          <Field form={form} name="identity" label="User or group" value={identity} onInput={setIdentity} placeholder="user or group id" />
          <button type="submit" disabled={form.busy}>
            Grant
          </button>
        </form>
      ) : null}
      <FormError form={form} fields={["intent", "identity"]} />
    </div>
  );
}

/** Assign and close (with a reject reason for workflowitems), each offered only with its intent. */
export function Actions({ ids, resource, version, can, onChange }: { ids: readonly string[]; resource: Resource; version: number | null; can: (v: string) => boolean; onChange: () => void }) {
  const path = resourcePath(ids);
  const level = levelOf(ids);
  const [assignee, setAssignee] = useState("");
  const [reason, setReason] = useState("");
  const assign = useForm();
  const close = useForm();
  const open = resource.data.status !== "closed";
  return (
    <div class="actions">
      {can("assign") && open ? (
        <form
          class="inline"
          onSubmit={async (e) => {
            e.preventDefault();
            if (await assign.submit(() => call("POST", `${path}/assign`, { body: { assignee: assignee.trim() }, ifMatch: version }))) {
              setAssignee("");
              onChange();
            }
          }}
        >
          <Field form={assign} name="assignee" label="Assign to" value={assignee} onInput={setAssignee} placeholder="user or group id" />
          <button type="submit" disabled={assign.busy}>
            Assign
          </button>
          <FormError form={assign} fields={["assignee"]} />
        </form>
      ) : null}
      {can("close") && open ? (
        <form
          class="inline"
          onSubmit={async (e) => {
            e.preventDefault();
            const body = level === "workflowitem" && reason.trim() ? { rejectReason: reason.trim() } : level === "workflowitem" ? {} : undefined;
            if (await close.submit(() => call("POST", `${path}/close`, { body }))) {
              setReason("");
              onChange();
            }
          }}
        >
          {level === "workflowitem" ? <Field form={close} name="rejectReason" label="Reject reason (optional)" value={reason} onInput={setReason} /> : null}
          <button type="submit" disabled={close.busy} class="danger">
            {level === "workflowitem" && reason.trim() ? "Reject" : "Close"}
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
  const form = useForm();
  return (
    <form
      class="stack"
      aria-label={`Update ${level}`}
      onSubmit={async (e) => {
        e.preventDefault();
        const patch: Record<string, unknown> = {};
        for (const n of names) {
          const before = resource.data[n] == null ? "" : String(resource.data[n]);
          if (values[n] !== before) patch[n] = values[n];
        }
        if (Object.keys(patch).length === 0) return onDone();
        if (await form.submit(() => call("PATCH", resourcePath(ids), { body: patch, ifMatch: version }))) onDone();
      }}
    >
      {names.map((n) => (
        <Field
          form={form}
          name={n}
          label={n}
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
