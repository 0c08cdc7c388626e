/** A read-only browser of the BPM process data: keyspaces, their records, one record. Access tokens are never shown. */
import { useState } from "preact/hooks";
import type { ProcessRecord } from "../../../src/client/index.js";
import { href } from "../router.js";
import { client } from "../session.js";
import { ErrorBox, fmtDate, useLoad } from "../ui.js";

export const KEYSPACES = ["bpm-form-submissions", "bpm-message-payloads", "bpm-form-schemas", "bpm-form-scripts"];
const enc = encodeURIComponent;

/** Removes credentials from what is shown, whatever the server sent. */
function visible(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) out[k] = /token/i.test(k) ? "(hidden)" : v;
  return out;
}

export function ProcessDataPage({ keyspace, recordKey }: { keyspace?: string; recordKey?: string }) {
  return (
    <main>
      <h1>Process data</h1>
      <nav class="keyspaces" aria-label="Keyspaces">
        {KEYSPACES.map((k) => (
          <a class={k === keyspace ? "active" : ""} href={href(`/process-data/${k}`)}>
            {k}
          </a>
        ))}
      </nav>
      {keyspace ? <Keyspace keyspace={keyspace} selected={recordKey} /> : <p class="muted">Choose a keyspace.</p>}
    </main>
  );
}

function Keyspace({ keyspace, selected }: { keyspace: string; selected?: string }) {
  const [more, setMore] = useState<ProcessRecord[]>([]);
  const [cursor, setCursor] = useState<string | null | undefined>(undefined);
  const first = useLoad(async () => {
    setMore([]);
    setCursor(undefined);
    return client.processData.list(keyspace, { limit: 50 });
  }, [keyspace]);
  const next = cursor === undefined ? first.data?.nextCursor : cursor;
  const records = [...(first.data?.items ?? []), ...more];
  return (
    <div class={selected ? "split" : ""}>
      <div>
        <ErrorBox error={first.error} />
        <table class="list">
          <thead>
            <tr>
              <th>Key</th>
              <th>Updated</th>
              <th>Expires</th>
            </tr>
          </thead>
          <tbody>
            {records.map((r) => (
              <tr class={r.key === selected ? "selected" : ""}>
                <td>
                  <a href={href(`/process-data/${enc(keyspace)}/${enc(r.key)}`)}>{r.key}</a>
                </td>
                <td>{fmtDate(new Date(r.updatedAt).toISOString())}</td>
                <td>{r.expiresAt ? fmtDate(new Date(r.expiresAt).toISOString()) : "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {first.data && records.length === 0 ? <p class="muted">No records.</p> : null}
        {next ? (
          <button
            type="button"
            onClick={async () => {
              const page = await client.processData.list(keyspace, { limit: 50, cursor: next });
              setMore((m) => [...m, ...page.items]);
              setCursor(page.nextCursor);
            }}
          >
            More records
          </button>
        ) : null}
      </div>
      {selected ? <RecordView keyspace={keyspace} recordKey={selected} /> : null}
    </div>
  );
}

function RecordView({ keyspace, recordKey }: { keyspace: string; recordKey: string }) {
  // The list already holds every field but the access token: no need to fetch the one answer that has it.
  const r = useLoad(async () => {
    let cursor: string | null = null;
    do {
      const page = await client.processData.list(keyspace, { limit: 1000, cursor });
      const hit = page.items.find((i) => i.key === recordKey);
      if (hit) return hit;
      cursor = page.nextCursor;
    } while (cursor);
    return null;
  }, [keyspace, recordKey]);
  return (
    <aside class="panel" aria-label="Record">
      <h2>{recordKey}</h2>
      <ErrorBox error={r.error} />
      {r.data ? <pre class="json">{JSON.stringify(visible(r.data.fields), null, 2)}</pre> : r.loading ? <p class="muted">Loading…</p> : <p class="muted">No such record.</p>}
    </aside>
  );
}
