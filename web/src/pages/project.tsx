/** A project: its head, its subprojects (create where allowed), budget analytics, history and permissions. */
import { useState } from "preact/hooks";
import type { NewSubproject } from "../../../src/client/index.js";
import { HistoryPanel, PermissionsPanel, useIntents, type Resource } from "../resource.js";
import { go, href } from "../router.js";
import { client, every } from "../session.js";
import { ErrorBox, Field, FormError, Status, Tabs, useForm, useLive, useLoad } from "../ui.js";
import { IdentityPicker } from "../picker.js";
import { AnalyticsPanel } from "./analytics.js";
import { ResourceHead, useResource } from "./detail.js";

export function ProjectPage({ p }: { p: string }) {
  const ids = [p];
  const loaded = useResource(ids);
  const { can } = useIntents(ids);
  const subs = useLoad(() => every<Resource>((page) => client.project(p).subprojects.list(page)), [p]);
  useLive(
    (e) => e.path[0]?.id === p && e.path.length === 2,
    () => void subs.reload(),
    [p],
  );
  const [creating, setCreating] = useState(false);
  return (
    <main>
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href={href("/projects")}>Projects</a> / {p}
      </nav>
      <ResourceHead ids={ids} loaded={loaded} />
      <Tabs
        tabs={[
          {
            key: "subprojects",
            label: "Subprojects",
            render: () => (
              <div>
                {can("createSubproject") && loaded.data?.resource.data.status !== "closed" ? (
                  <button type="button" onClick={() => setCreating((c) => !c)}>
                    {creating ? "Cancel" : "New subproject"}
                  </button>
                ) : null}
                {creating ? <CreateSubproject p={p} onCreated={(s) => go(`/projects/${encodeURIComponent(p)}/subprojects/${encodeURIComponent(s)}`)} /> : null}
                <ErrorBox error={subs.error} />
                <table class="list">
                  <thead>
                    <tr>
                      <th>Subproject</th>
                      <th>Status</th>
                      <th>Assignee</th>
                      <th>Currency</th>
                      <th>Mode</th>
                    </tr>
                  </thead>
                  <tbody>
                    {(subs.data ?? []).map((s) => (
                      <tr data-id={s.id}>
                        <td>
                          {s.redacted ? (
                            <span class="muted">{s.id}</span>
                          ) : (
                            <a href={href(`/projects/${encodeURIComponent(p)}/subprojects/${encodeURIComponent(s.id)}`)}>{s.data.displayName}</a>
                          )}
                        </td>
                        <td>
                          <Status status={s.data.status} redacted={s.redacted} />
                        </td>
                        <td>{s.data.assignee ?? ""}</td>
                        <td>{s.data.currency ?? ""}</td>
                        <td>{s.data.workflowMode ?? ""}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
                {subs.data && subs.data.length === 0 ? <p class="muted">No subprojects.</p> : null}
              </div>
            ),
          },
          { key: "analytics", label: "Analytics", render: () => <AnalyticsPanel p={p} /> },
          { key: "history", label: "History", render: () => <HistoryPanel ids={ids} /> },
          { key: "permissions", label: "Permissions", render: () => <PermissionsPanel ids={ids} /> },
        ]}
      />
    </main>
  );
}

function CreateSubproject({ p, onCreated }: { p: string; onCreated: (id: string) => void }) {
  const [v, setV] = useState({ id: "", displayName: "", currency: "EUR", workflowMode: "ordered", validator: "" });
  const form = useForm("POST /api/v1/projects/{}/subprojects");
  const set = (k: keyof typeof v) => (x: string) => setV((s) => ({ ...s, [k]: x }));
  return (
    <form
      class="card stack"
      aria-label="New subproject"
      onSubmit={async (e) => {
        e.preventDefault();
        const body: NewSubproject = {
          displayName: v.displayName,
          currency: v.currency,
          workflowMode: v.workflowMode as NewSubproject["workflowMode"],
          ...(v.id.trim() ? { id: v.id.trim() } : {}),
          ...(v.validator.trim() ? { validator: v.validator.trim() } : {}),
        };
        let id = "";
        if (await form.submit(async () => (id = (await client.project(p).subprojects.create(body)).id), body)) onCreated(id);
      }}
    >
      <Field form={form} name="id" label="Id (optional)" value={v.id} onInput={set("id")} />
      <Field form={form} name="displayName" label="Name" value={v.displayName} onInput={set("displayName")} />
      <Field form={form} name="currency" label="Currency" value={v.currency} onInput={set("currency")} />
      <Field form={form} name="workflowMode" label="Mode" value={v.workflowMode} onInput={set("workflowMode")} options={["ordered", "unordered"]} />
      <IdentityPicker form={form} name="validator" label="Validator (optional)" value={v.validator} onInput={set("validator")} />
      <FormError form={form} fields={["id", "displayName", "currency", "workflowMode", "validator"]} />
      <button type="submit" disabled={form.busy}>
        Create subproject
      </button>
    </form>
  );
}
