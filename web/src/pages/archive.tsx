/** The archive browser: snapshots by unique id or by day, a snapshot's document, its files to download. */
import { useState } from "preact/hooks";
import { go, href } from "../router.js";
import { asProblem, client } from "../session.js";
import { ErrorBox, fmtDate, fmtSize as size, saveAs, useLoad } from "../ui.js";

const enc = encodeURIComponent;

export function ArchivePage({ query, snapshot }: { query: URLSearchParams; snapshot?: string }) {
  const uniqueId = query.get("uniqueId") ?? "";
  const date = query.get("date") ?? "";
  const [u, setU] = useState(uniqueId);
  const [d, setD] = useState(date);
  const search = uniqueId ? `uniqueId=${enc(uniqueId)}` : date ? `date=${enc(date)}` : "";
  const list = useLoad(async () => (uniqueId ? client.archive.list({ uniqueId, limit: 100 }) : date ? client.archive.list({ date, limit: 100 }) : null), [search]);
  return (
    <main>
      <h1>Archive</h1>
      <div class="row">
        <form
          class="inline"
          onSubmit={(e) => {
            e.preventDefault();
            go(`/archive?uniqueId=${enc(u.trim())}`);
          }}
        >
          <label>
            Unique id <input name="uniqueId" value={u} onInput={(e) => setU(e.currentTarget.value)} />
          </label>
          <button type="submit">Find</button>
        </form>
        <form
          class="inline"
          onSubmit={(e) => {
            e.preventDefault();
            go(`/archive?date=${enc(d)}`);
          }}
        >
          <label>
            Modified on <input name="date" type="date" value={d} onInput={(e) => setD(e.currentTarget.value)} />
          </label>
          <button type="submit">List</button>
        </form>
      </div>
      <div class={snapshot ? "split" : ""}>
        <div>
          <ErrorBox error={list.error?.status === 404 ? "This server has no archive API." : list.error} />
          {list.data ? (
            <table class="list">
              <thead>
                <tr>
                  <th>Snapshot</th>
                  <th>Modified</th>
                  <th>Size</th>
                </tr>
              </thead>
              <tbody>
                {list.data.items.map((s) => (
                  <tr class={s.id === snapshot ? "selected" : ""}>
                    <td>
                      <a href={href(`/archive/${enc(s.id)}?${search}`)}>{s.id}</a>
                    </td>
                    <td>{fmtDate(s.modified)}</td>
                    <td class="num">{s.size === undefined ? "" : size(s.size)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : null}
          {list.data && list.data.items.length === 0 ? <p class="muted">No snapshots.</p> : null}
        </div>
        {snapshot ? <SnapshotView id={snapshot} /> : null}
      </div>
    </main>
  );
}

async function download(id: string, name: string): Promise<void> {
  await saveAs(await client.archive.file(id, name), name);
}

function SnapshotView({ id }: { id: string }) {
  const s = useLoad(() => client.archive.get(id), [id]);
  const [error, setError] = useState<string | null>(null);
  return (
    <aside class="panel" aria-label="Snapshot">
      <h2>{id}</h2>
      <ErrorBox error={s.error ?? error} />
      {s.data ? (
        <>
          <p class="muted">
            {s.data.uniqueId} · {fmtDate(s.data.modified)} · {size(s.data.size)}
          </p>
          {s.data.files?.length ? (
            <ul class="files">
              {s.data.files.map((f) => (
                <li>
                  <button type="button" class="link" onClick={() => download(id, f.name).catch((e) => setError(`download failed: ${asProblem(e).detail}`))}>
                    {f.name}
                  </button>{" "}
                  <span class="muted">{size(f.size)}</span>
                </li>
              ))}
            </ul>
          ) : null}
          <pre class="json">{JSON.stringify(s.data.document, null, 2)}</pre>
        </>
      ) : null}
    </aside>
  );
}
