/** The head of a resource page: fields, status, assignee, budgets and the actions the user may take. */
import { useState } from "preact/hooks";
import { Actions, levelOf, UpdateForm, useIntents, type Resource } from "../resource.js";
import { identityName, useDirectory } from "../picker.js";
import { handleOf } from "../session.js";
import { ErrorBox, fmtAmount, fmtDate, Status, useLive, useLoad, type Loaded } from "../ui.js";

export interface Loadedresource {
  resource: Resource;
  /** Its version (the ETag), sent back as If-Match with a change. */
  version: number | null;
}

export function useResource(ids: readonly string[]): Loaded<Loadedresource> {
  const path = ids.join("/");
  const r = useLoad(async () => {
    const resource: Resource = await handleOf(ids).get();
    return { resource, version: resource.meta.version ?? null };
  }, [path]);
  // Another user's change to this very resource appears without a reload.
  useLive(
    (e) => e.path.length === ids.length && e.path.every((p, i) => p.id === ids[i]),
    () => void r.reload(),
    [path],
  );
  return r;
}

export function ResourceHead({ ids, loaded, children }: { ids: readonly string[]; loaded: Loaded<Loadedresource>; children?: preact.ComponentChildren }) {
  const { can } = useIntents(ids);
  const [editing, setEditing] = useState(false);
  const dir = useDirectory();
  if (loaded.error) return <ErrorBox error={loaded.error} />;
  if (!loaded.data) return <p class="muted">Loading…</p>;
  const { resource, version } = loaded.data;
  const d = resource.data;
  const level = levelOf(ids);
  const closed = d.status === "closed";
  return (
    <section class="card resource-head" data-level={level}>
      <div class="head">
        <h1>
          <span class="muted small">{level}</span> {d.displayName}
        </h1>
        <Status status={d.status} />
        {can("update") && !closed && !editing ? (
          <button type="button" class="secondary" onClick={() => setEditing(true)}>
            Edit
          </button>
        ) : null}
      </div>
      {editing ? (
        <UpdateForm
          ids={ids}
          resource={resource}
          version={version}
          onDone={() => {
            setEditing(false);
            void loaded.reload();
          }}
        />
      ) : (
        <dl class="facts">
          <dt>Id</dt>
          <dd>{resource.id}</dd>
          {d.description ? (
            <>
              <dt>Description</dt>
              <dd>{d.description}</dd>
            </>
          ) : null}
          <dt>Assignee</dt>
          <dd class="assignee">{d.assignee ? identityName(dir.data, d.assignee) : <span class="muted">nobody</span>}</dd>
          {d.currency ? (
            <>
              <dt>Currency</dt>
              <dd>{d.currency}</dd>
            </>
          ) : null}
          {d.workflowMode ? (
            <>
              <dt>Mode</dt>
              <dd>{d.workflowMode}</dd>
            </>
          ) : null}
          {d.validator ? (
            <>
              <dt>Validator</dt>
              <dd>{d.validator}</dd>
            </>
          ) : null}
          {d.amountType && d.amountType !== "N/A" ? (
            <>
              <dt>Amount</dt>
              <dd>
                <span class="amount">{d.amount == null ? "—" : fmtAmount(d.amount, d.currency)}</span> ({d.amountType})
              </dd>
            </>
          ) : null}
          {d.rejectReason ? (
            <>
              <dt>Rejected</dt>
              <dd class="reject-reason">{d.rejectReason}</dd>
            </>
          ) : null}
          <dt>Created</dt>
          <dd>
            {fmtDate(resource.meta.createdAt)} by {resource.meta.createdBy}
          </dd>
          <dt>Version</dt>
          <dd>{version}</dd>
        </dl>
      )}
      {d.projectedBudgets?.length ? (
        <table class="budgets">
          <caption>Projected budgets</caption>
          <thead>
            <tr>
              <th scope="col">Organization</th>
              <th scope="col">Value</th>
              <th scope="col">Currency</th>
            </tr>
          </thead>
          <tbody>
            {d.projectedBudgets.map((b: any) => (
              <tr>
                <td>{b.organization}</td>
                <td class="num">{fmtAmount(b.value)}</td>
                <td>{b.currencyCode}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <Actions ids={ids} resource={resource} version={version} can={can} onChange={() => void loaded.reload()} />
      {children}
    </section>
  );
}
