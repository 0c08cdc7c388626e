/**
 * What every resource level shares: its permissions (which decide the actions offered), the history
 * timeline, the permissions panel, and the update / assign / close forms.
 */
import { useState } from "preact/hooks";
import type { HistoryEvent, PermissionMap, WorkflowitemUpdate } from "../../src/client/index.js";
import { LogCoverage } from "./log-coverage.js";
import { client, handleOf, session } from "./session.js";
import { ErrorBox, Field, FormError, fmtDate, useForm, useLive, useLoad } from "./ui.js";

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

const INTENTS: Record<Level, string[]> = {
  project: ["list", "viewDetails", "viewHistory", "update", "assign", "close", "createSubproject", "budget.updateProjected", "budget.deleteProjected"],
  subproject: ["list", "viewDetails", "viewHistory", "update", "assign", "close", "createWorkflowitem", "reorderWorkflowitems", "budget.updateProjected", "budget.deleteProjected"],
  workflowitem: ["list", "viewDetails", "viewHistory", "update", "assign", "close"],
};

export function intentsOf(level: Level, perms: PermissionMap | null): string[] {
  const all = new Set([...INTENTS[level], "intent.listPermissions", "intent.grantPermission", "intent.revokePermission"].map((v) => `${level}.${v}`));
  for (const k of Object.keys(perms ?? {})) all.add(k);
  return [...all].sort();
}

function describe(e: HistoryEvent): string {
  const p = e.payload as Record<string, any>;
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
  const path = ids.join("/");
  const [more, setMore] = useState<HistoryEvent[]>([]);
  const page = (cursor?: string) => handleOf(ids).history({ order: "desc", limit: 50, cursor });
  const first = useLoad(async () => {
    setMore([]);
    return page();
  }, [path]);
  useLive(
    (e) => e.path.length >= ids.length && ids.every((id, i) => e.path[i]?.id === id),
    () => void first.reload(),
    [path],
  );
  const [cursor, setCursor] = useState<string | null | undefined>(undefined);
  const next = cursor === undefined ? first.data?.nextCursor : cursor;
  const events = [...(first.data?.items ?? []), ...more];
  return (
    <div class="history">
      <ErrorBox error={first.error} />
      {events[0] ? <LogCoverage project={ids[0]!} seq={events[0].seq} /> : null}
      <ol class="timeline">
        {events.map((e) => (
          <li>
            <time>{fmtDate(e.at)}</time> <strong>{e.actor}</strong> <span class="what">{describe(e)}</span>
            {e.path.length > ids.length ? (
              <span class="muted">
                {" "}
                (
                {e.path
                  .slice(ids.length)
                  .map((p) => `${p.type} ${p.id}`)
                  .join(" / ")}
                )
              </span>
            ) : null}
          </li>
        ))}
      </ol>
      {first.data && events.length === 0 ? <p class="muted">No events.</p> : null}
      {next ? (
        <button
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
  const level = levelOf(ids);
  const intents = intentsOf(level, perms.data);
  const [intent, setIntent] = useState(`${level}.viewDetails`);
  const [identity, setIdentity] = useState("");
  const form = useForm();
  if (perms.error) return <ErrorBox error={perms.error} />;
  if (!perms.data) return <p class="muted">Loading…</p>;
  const change = (action: "grant" | "revoke", i: string, who: string) =>
    form.submit(async () => {
      await handleOf(ids)[action](i, who);
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
  const open = resource.data.status !== "closed";
  return (
    <div class="actions">
      {can("assign") && open ? (
        <form
          class="inline"
          onSubmit={async (e) => {
            e.preventDefault();
            if (await assign.submit(() => handleOf(ids).assign(assignee.trim(), { ifMatch: version ?? undefined }))) {
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
        // What the user typed, as the server will validate it (field by field, answered at the field).
        const patch: Record<string, unknown> = {};
        for (const n of names) {
          const before = resource.data[n] == null ? "" : String(resource.data[n]);
          if (values[n] !== before) patch[n] = values[n];
        }
        if (Object.keys(patch).length === 0) return onDone();
        if (await form.submit(() => handleOf(ids).update(patch as WorkflowitemUpdate, { ifMatch: version ?? undefined }))) onDone();
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
