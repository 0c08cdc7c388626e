/**
 * A workflowitem's documents: the list (name, size, sha-256, comment, who and when), download, validate
 * a local file against a document's hash, delete, upload with a progress bar, and external links (kept
 * without content or hash). Adding and deleting are
 * offered with workflowitem.update on an open item (a closed item's documents are read-only); the
 * server decides in any case.
 *
 * The upload is the one request not sent through the client's fetch: fetch reports no upload
 * progress, XMLHttpRequest does. It carries the same Authorization header, and a refused token is
 * refreshed through the client (its `me()`) and the upload sent once more.
 */
import { useRef, useState } from "preact/hooks";
import { ProblemError, type WorkflowitemDocument } from "../../../src/client/index.js";
import type { Resource } from "../resource.js";
import { asProblem, client } from "../session.js";
import { ErrorBox, Field, fmtDate, fmtSize, FormError, saveAs, useForm, useLive, useLoad } from "../ui.js";

function documentsOf(ids: readonly string[]) {
  const [p, s, w] = ids as [string, string, string];
  return client.project(p).subproject(s).workflowitem(w).documents;
}

/** POSTs a multipart form with XMLHttpRequest, reporting the bytes sent; a problem answer is thrown as the client throws it. */
function post<T>(path: string, form: FormData, onProgress: (sent: number, total: number) => void, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", client.baseUrl + path);
    xhr.setRequestHeader("accept", "application/json");
    if (client.token) xhr.setRequestHeader("authorization", `Bearer ${client.token}`);
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable) onProgress(e.loaded, e.total);
    };
    xhr.onload = () => {
      let body: any;
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        body = undefined;
      }
      if (xhr.status >= 200 && xhr.status < 300) return resolve(body as T);
      reject(
        new ProblemError(typeof body?.status === "number" ? body : { type: "about:blank", title: xhr.statusText, status: xhr.status, detail: xhr.responseText.slice(0, 500) }),
      );
    };
    xhr.onerror = () => reject(new TypeError("the upload failed: the server cannot be reached"));
    xhr.onabort = () => reject(new ProblemError({ type: "about:blank", title: "Cancelled", status: 0, detail: "the upload was cancelled" }));
    if (signal.aborted) return xhr.abort();
    signal.addEventListener("abort", () => xhr.abort(), { once: true });
    xhr.send(form);
  });
}

async function upload(ids: readonly string[], file: File, comment: string, onProgress: (sent: number, total: number) => void, signal: AbortSignal): Promise<WorkflowitemDocument> {
  const form = () => {
    // The fields come before the file: the server reads the part `file` as a stream.
    const f = new FormData();
    if (comment) f.append("comment", comment);
    f.append("fileName", file.name);
    f.append("file", file, file.name);
    return f;
  };
  const path = documentsOf(ids).path;
  try {
    return await post<WorkflowitemDocument>(path, form(), onProgress, signal);
  } catch (e) {
    if (!(e instanceof ProblemError && e.status === 401)) throw e;
    await client.me(); // refreshes the token, or ends the session (and throws)
    return post<WorkflowitemDocument>(path, form(), onProgress, signal);
  }
}

export function DocumentsPanel({ ids, resource, can }: { ids: readonly string[]; resource: Resource; can: (verb: string) => boolean }) {
  const path = ids.join("/");
  const list = useLoad(() => documentsOf(ids).list(), [path]);
  // An upload or delete by anyone (this tab included) is an event of the item: refetch the list.
  useLive(
    (e) => e.path.length === ids.length && e.path.every((p, i) => p.id === ids[i]),
    () => void list.reload(),
    [path],
  );
  const writable = can("update") && resource.data.status !== "closed";
  const [valid, setValid] = useState<Record<string, boolean | string>>({});
  const [error, setError] = useState<ProblemError | null>(null);
  const docs = list.data ?? [];
  return (
    <div class="documents">
      <ErrorBox error={list.error ?? error} />
      {writable ? (
        <>
          <UploadForm ids={ids} onDone={() => void list.reload()} />
          <LinkForm ids={ids} onDone={() => void list.reload()} />
        </>
      ) : resource.data.status === "closed" ? (
        <p class="muted small">The workflowitem is closed: its documents are read-only.</p>
      ) : null}
      <table class="list">
        <thead>
          <tr>
            <th>Document</th>
            <th>Size</th>
            <th>Added</th>
            <th>Validate</th>
            {writable ? (
              <th>
                <span class="visually-hidden">Delete</span>
              </th>
            ) : null}
          </tr>
        </thead>
        <tbody>
          {docs.map((d) => (
            <tr data-id={d.id}>
              <td>
                {d.link ? (
                  <a href={d.link} target="_blank" rel="noopener noreferrer">
                    {d.fileName}
                  </a>
                ) : (
                  <button
                    type="button"
                    class="link"
                    aria-label={`Download ${d.fileName}`}
                    onClick={async () => {
                      setError(null);
                      try {
                        await saveAs(await documentsOf(ids).download(d.id), d.fileName);
                      } catch (e) {
                        setError(asProblem(e));
                      }
                    }}
                  >
                    {d.fileName}
                  </button>
                )}
                {d.comment ? <div class="muted small comment">{d.comment}</div> : null}
                {d.hash ? (
                  <div class="muted small hash" title="sha-256">
                    {d.hash}
                  </div>
                ) : null}
              </td>
              <td class="num">{d.size === undefined ? "" : fmtSize(d.size)}</td>
              <td>
                {fmtDate(d.createdAt)} by {d.createdBy}
              </td>
              <td>
                {d.hash ? (
                  <label class="validate">
                    <input
                      type="file"
                      aria-label={`Validate ${d.fileName}`}
                      onChange={async (e) => {
                        const file = e.currentTarget.files?.[0];
                        e.currentTarget.value = "";
                        if (!file) return;
                        setValid((v) => ({ ...v, [d.id]: "checking…" }));
                        try {
                          const { valid: ok } = await documentsOf(ids).validate(d.id, file);
                          setValid((v) => ({ ...v, [d.id]: ok }));
                        } catch (err) {
                          setValid((v) => ({ ...v, [d.id]: asProblem(err).detail }));
                        }
                      }}
                    />
                    {d.id in valid ? (
                      <span class={`validity ${valid[d.id] === true ? "ok" : valid[d.id] === false ? "bad" : ""}`} role="status">
                        {valid[d.id] === true ? "✓ the file matches" : valid[d.id] === false ? "✗ the file does not match" : valid[d.id]}
                      </span>
                    ) : null}
                  </label>
                ) : (
                  <span class="muted small">a link</span>
                )}
              </td>
              {writable ? (
                <td>
                  <button
                    type="button"
                    class="link danger"
                    aria-label={`Delete ${d.fileName}`}
                    onClick={async () => {
                      setError(null);
                      try {
                        await documentsOf(ids).delete(d.id);
                        await list.reload();
                      } catch (e) {
                        setError(asProblem(e));
                      }
                    }}
                  >
                    Delete
                  </button>
                </td>
              ) : null}
            </tr>
          ))}
        </tbody>
      </table>
      {list.data && docs.length === 0 ? <p class="muted">No documents.</p> : null}
    </div>
  );
}

function UploadForm({ ids, onDone }: { ids: readonly string[]; onDone: () => void }) {
  const [file, setFile] = useState<File | null>(null);
  const [comment, setComment] = useState("");
  const [progress, setProgress] = useState<{ sent: number; total: number } | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const abort = useRef<AbortController | null>(null);
  const input = useRef<HTMLInputElement>(null);
  const form = useForm();
  return (
    <form
      class="card stack"
      aria-label="Upload a document"
      onSubmit={async (e) => {
        e.preventDefault();
        if (!file) return;
        setNotice(null);
        setProgress({ sent: 0, total: file.size });
        const controller = (abort.current = new AbortController());
        let sent = 0;
        const ok = await form.submit(async () => {
          const doc = await upload(ids, file, comment.trim(), (s, total) => setProgress({ sent: (sent = s), total }), controller.signal);
          setNotice(`Uploaded ${doc.fileName} (${fmtSize(doc.size ?? 0)}; ${fmtSize(sent)} sent).`);
        });
        abort.current = null;
        setProgress(null);
        if (ok) {
          setFile(null);
          setComment("");
          if (input.current) input.current.value = "";
          onDone();
        }
      }}
    >
      <div class="row">
        <div class="field">
          <label for="doc-file">File</label>
          <input id="doc-file" ref={input} name="file" type="file" onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)} />
        </div>
        <Field form={form} name="comment" label="Comment (optional)" value={comment} onInput={setComment} />
        <button type="submit" disabled={!file || form.busy}>
          Upload
        </button>
        {progress ? (
          <button type="button" class="secondary" onClick={() => abort.current?.abort()}>
            Cancel upload
          </button>
        ) : null}
      </div>
      {progress ? (
        <progress aria-label="Upload progress" max={progress.total || 1} value={progress.sent}>
          {Math.round((100 * progress.sent) / (progress.total || 1))}%
        </progress>
      ) : null}
      {notice ? (
        <p class="notice ok" role="status">
          {notice}
        </p>
      ) : null}
      <FormError form={form} fields={["comment"]} />
    </form>
  );
}

/** An external link recorded as a document (no content, no hash). */
function LinkForm({ ids, onDone }: { ids: readonly string[]; onDone: () => void }) {
  const [v, setV] = useState({ fileName: "", link: "", comment: "" });
  const form = useForm("POST /api/v1/projects/{}/subprojects/{}/workflowitems/{}/documents");
  const set = (k: keyof typeof v) => (x: string) => setV((st) => ({ ...st, [k]: x }));
  return (
    <form
      class="inline"
      aria-label="Add a link"
      onSubmit={async (e) => {
        e.preventDefault();
        const comment = v.comment.trim();
        const link = { fileName: v.fileName.trim(), link: v.link.trim(), ...(comment ? { comment } : {}) };
        if (await form.submit(() => documentsOf(ids).addLink(link), link)) {
          setV({ fileName: "", link: "", comment: "" });
          onDone();
        }
      }}
    >
      <Field form={form} name="fileName" label="Link name" value={v.fileName} onInput={set("fileName")} />
      <Field form={form} name="link" label="Link" value={v.link} onInput={set("link")} placeholder="https://…" />
      <Field form={form} name="comment" label="Link comment (optional)" value={v.comment} onInput={set("comment")} />
      <button type="submit" disabled={form.busy}>
        Add link
      </button>
      <FormError form={form} fields={["fileName", "link", "comment"]} />
    </form>
  );
}
