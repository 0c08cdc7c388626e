/** Projects: a paginated list with a search over the loaded pages, and the create form. */
import { useState } from "preact/hooks";
import { call, get, session, type Page } from "../api.js";
import { useValue } from "../observable.js";
import type { Resource } from "../resource.js";
import { ErrorBox, Field, FormError, Status, useForm, useLive, useLoad } from "../ui.js";
import { go, href } from "../router.js";

const PAGE = 25;

export function ProjectsPage() {
  const [pages, setPages] = useState<Resource[][]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const first = useLoad(async () => {
    const page = await get<Page<Resource>>(`/projects?limit=${PAGE}`);
    setPages([page.items]);
    setCursor(page.nextCursor);
    return page;
  }, []);
  useLive((e) => e.path.length === 1, () => void first.reload(), []);
  const [query, setQuery] = useState("");
  const [creating, setCreating] = useState(false);
  const mayCreate = useValue(session)?.intents?.includes("global.createProject") ?? false;
  const q = query.trim().toLowerCase();
  const all = pages.flat();
  const shown = q ? all.filter((p) => p.id.toLowerCase().includes(q) || String(p.data.displayName ?? "").toLowerCase().includes(q) || (p.data.tags ?? []).some((t: string) => t.toLowerCase().includes(q))) : all;
  return (
    <main>
      <div class="head">
        <h1>Projects</h1>
        {mayCreate ? <button onClick={() => setCreating((c) => !c)}>{creating ? "Cancel" : "New project"}</button> : null}
      </div>
      {creating ? <CreateProject onCreated={(id) => go(`/projects/${encodeURIComponent(id)}`)} /> : null}
      <input class="search" type="search" placeholder="Search projects by name, id or tag" aria-label="Search projects" value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
      <ErrorBox error={first.error} />
      <table class="list">
        <thead>
          <tr>
            <th>Project</th>
            <th>Status</th>
            <th>Assignee</th>
            <th>Budgets</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((p) => (
            <tr data-id={p.id}>
              <td>{p.redacted ? <span class="muted">{p.id}</span> : <a href={href(`/projects/${encodeURIComponent(p.id)}`)}>{p.data.displayName}</a>}</td>
              <td>
                <Status status={p.data.status} redacted={p.redacted} />
              </td>
              <td>{p.data.assignee ?? ""}</td>
              <td>{(p.data.projectedBudgets ?? []).map((b: any) => `${b.value} ${b.currencyCode}`).join(", ")}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {first.data && shown.length === 0 ? <p class="muted">{q ? "No loaded project matches." : "No projects yet."}</p> : null}
      {cursor ? (
        <button
          onClick={async () => {
            const page = await get<Page<Resource>>(`/projects?limit=${PAGE}&cursor=${encodeURIComponent(cursor)}`);
            setPages((ps) => [...ps, page.items]);
            setCursor(page.nextCursor);
          }}
        >
          Load more projects
        </button>
      ) : null}
      <p class="muted small">{all.length} loaded{cursor ? ", more on the server" : ""}. Search looks through the loaded projects.</p>
    </main>
  );
}

function CreateProject({ onCreated }: { onCreated: (id: string) => void }) {
  const [v, setV] = useState({ id: "", displayName: "", description: "", organization: "", value: "", currencyCode: "" });
  const form = useForm();
  const set = (k: keyof typeof v) => (x: string) => setV((s) => ({ ...s, [k]: x }));
  return (
    <form
      class="card stack"
      aria-label="New project"
      onSubmit={async (e) => {
        e.preventDefault();
        const body: Record<string, unknown> = { displayName: v.displayName, description: v.description };
        if (v.id.trim()) body.id = v.id.trim();
        if (v.organization || v.value || v.currencyCode) body.projectedBudgets = [{ organization: v.organization, value: v.value, currencyCode: v.currencyCode }];
        let id = "";
        if (await form.submit(async () => (id = (await call<Resource>("POST", "/projects", { body })).data.id))) onCreated(id);
      }}
    >
      <Field form={form} name="id" label="Id (optional)" value={v.id} onInput={set("id")} />
      <Field form={form} name="displayName" label="Name" value={v.displayName} onInput={set("displayName")} />
      <Field form={form} name="description" label="Description" value={v.description} onInput={set("description")} multiline />
      <fieldset class="row">
        <legend>Projected budget (optional)</legend>
        <Field form={form} name="projectedBudgets.0.organization" label="Organization" value={v.organization} onInput={set("organization")} />
        <Field form={form} name="projectedBudgets.0.value" label="Value" value={v.value} onInput={set("value")} placeholder="10000.00" />
        <Field form={form} name="projectedBudgets.0.currencyCode" label="Currency" value={v.currencyCode} onInput={set("currencyCode")} placeholder="EUR" />
      </fieldset>
      <FormError form={form} fields={["id", "displayName", "description", "projectedBudgets.0.organization", "projectedBudgets.0.value", "projectedBudgets.0.currencyCode"]} />
      <button type="submit" disabled={form.busy}>
        Create project
      </button>
    </form>
  );
}
