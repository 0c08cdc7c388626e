/** Projects: a paginated list searched and sorted on the server (TruBudget's search syntax), and the create form. */
import { useRef, useState } from "preact/hooks";
import type { NewProject } from "../../../src/client/index.js";
import { useValue } from "../observable.js";
import type { Resource } from "../resource.js";
import { client, session } from "../session.js";
import { ErrorBox, Field, fmtAmount, FormError, Status, useForm, useLive, useLoad } from "../ui.js";
import { go, href } from "../router.js";

const PAGE = 25;

type SortField = "id" | "displayName" | "createdAt" | "status" | "assignee";

export function ProjectsPage() {
  const [query, setQuery] = useState("");
  const [sort, setSort] = useState<SortField>("id");
  const [order, setOrder] = useState<"asc" | "desc">("asc");
  const q = query.trim();
  // How many pages the reader has asked for. A live reload refetches all of them (under one
  // generation, so a late reload never replaces a longer list with its first page); a new search or
  // sort starts again from one page.
  const wanted = useRef(1);
  const first = useLoad(async () => {
    const pages: Resource[][] = [];
    let cursor: string | null = null;
    do {
      const paging: { limit: number; cursor?: string } = { limit: PAGE, ...(cursor ? { cursor } : {}) };
      const page: { items: Resource[]; nextCursor: string | null } = await client.projects.search({ ...paging, ...(q ? { search: q } : {}), sort, order });
      pages.push(page.items);
      cursor = page.nextCursor;
    } while (cursor && pages.length < wanted.current);
    return { pages, cursor };
  }, [q, sort, order]);
  const pages = first.data?.pages ?? [];
  const cursor = first.data?.cursor ?? null;
  useLive(
    (e) => e.path.length === 1,
    () => void first.reload(),
    [first.reload],
  );
  const [creating, setCreating] = useState(false);
  const mayCreate = useValue(session)?.intents?.includes("global.createProject") ?? false;
  const shown = pages.flat();
  return (
    <main>
      <div class="head">
        <h1>Projects</h1>
        {mayCreate ? (
          <button type="button" onClick={() => setCreating((c) => !c)}>
            {creating ? "Cancel" : "New project"}
          </button>
        ) : null}
      </div>
      {creating ? <CreateProject onCreated={(id) => go(`/projects/${encodeURIComponent(id)}`)} /> : null}
      <div class="row">
        <input
          class="search"
          type="search"
          placeholder="Search: words, or name:, tag:, status:"
          aria-label="Search projects"
          value={query}
          onInput={(e) => {
            wanted.current = 1;
            setQuery(e.currentTarget.value);
          }}
        />
        <select
          aria-label="Sort projects"
          value={sort}
          onChange={(e) => {
            wanted.current = 1;
            setSort(e.currentTarget.value as SortField);
          }}
        >
          <option value="id">By id</option>
          <option value="displayName">By name</option>
          <option value="createdAt">By creation</option>
          <option value="status">By status</option>
          <option value="assignee">By assignee</option>
        </select>
        <select
          aria-label="Sort order"
          value={order}
          onChange={(e) => {
            wanted.current = 1;
            setOrder(e.currentTarget.value as "asc" | "desc");
          }}
        >
          <option value="asc">Ascending</option>
          <option value="desc">Descending</option>
        </select>
      </div>
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
              <td>{(p.data.projectedBudgets ?? []).map((b: any) => fmtAmount(b.value, b.currencyCode)).join(", ")}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {first.data && shown.length === 0 ? <p class="muted">{q ? "No project matches." : "No projects yet."}</p> : null}
      {cursor ? (
        <button
          type="button"
          onClick={() => {
            wanted.current = pages.length + 1;
            void first.reload();
          }}
        >
          Load more projects
        </button>
      ) : null}
      <p class="muted small">
        {shown.length} loaded{cursor ? ", more on the server" : ""}. Search and sort run on the server, over every project you may see.
      </p>
    </main>
  );
}

function CreateProject({ onCreated }: { onCreated: (id: string) => void }) {
  const [v, setV] = useState({ id: "", displayName: "", description: "", organization: "", value: "", currencyCode: "" });
  const form = useForm("POST /api/v1/projects");
  const set = (k: keyof typeof v) => (x: string) => setV((s) => ({ ...s, [k]: x }));
  return (
    <form
      class="card stack"
      aria-label="New project"
      onSubmit={async (e) => {
        e.preventDefault();
        const budget = v.organization || v.value || v.currencyCode ? { organization: v.organization, value: v.value, currencyCode: v.currencyCode } : null;
        const body: NewProject = {
          displayName: v.displayName,
          description: v.description,
          ...(v.id.trim() ? { id: v.id.trim() } : {}),
          ...(budget ? { projectedBudgets: [budget] } : {}),
        };
        let id = "";
        if (await form.submit(async () => (id = (await client.projects.create(body)).id), body)) onCreated(id);
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
