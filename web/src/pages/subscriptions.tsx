/**
 * The caller's durable subscriptions (docs/subscriptions.md): each with what it selects in words, where
 * it delivers, how far behind the change feed it is and, for a webhook, its dead letters, each of which
 * can be replayed; a form to create one (a webhook's secret is shown once, after creating it); delete.
 */
import { useState } from "preact/hooks";
import type { NewSubscription, Subscription } from "../../../src/client/index.js";
import { client } from "../session.js";
import { ErrorBox, Field, FormError, fmtDate, useForm, useLoad } from "../ui.js";

/** What a filter selects, in words. */
export function filterInWords(f: Subscription["filter"]): string {
  const types = f.types ? f.types.map((t) => (t.endsWith(".*") ? `every ${t.slice(0, -2)} event` : t)).join(", ") : "every event";
  const under = f.path?.length ? ` under ${f.path.map((p) => `${p.type} ${p.id}`).join(" / ")}` : "";
  const intent = f.intent ? `, where you hold ${f.intent}` : "";
  return `${types}${under}${intent}`;
}

const NAMES = ["name", "project", "subproject", "filter.types", "filter.intent", "webhook.url"];

function NewSubscriptionForm({ onCreated }: { onCreated: (secret: string | undefined) => void }) {
  const form = useForm();
  const empty = { name: "", project: "", subproject: "", types: "", intent: "", url: "", digest: false };
  const [v, setV] = useState(empty);
  const set = (k: keyof typeof empty) => (x: string) => setV({ ...v, [k]: x });
  return (
    <form
      class="card stack"
      aria-label="New subscription"
      onSubmit={async (e) => {
        e.preventDefault();
        const path = [
          ...(v.project.trim() ? [{ type: "project", id: v.project.trim() }] : []),
          ...(v.project.trim() && v.subproject.trim() ? [{ type: "subproject", id: v.subproject.trim() }] : []),
        ];
        const types = v.types
          .split(/[,\s]+/)
          .map((t) => t.trim())
          .filter(Boolean);
        const body: NewSubscription = {
          name: v.name.trim(),
          filter: { ...(path.length ? { path } : {}), ...(types.length ? { types } : {}), ...(v.intent.trim() ? { intent: v.intent.trim() } : {}) },
          ...(v.url.trim() ? { webhook: { url: v.url.trim(), ...(v.digest ? { digest: true } : {}) } } : {}),
        };
        let secret: string | undefined;
        if (
          await form.submit(async () => {
            secret = (await client.subscriptions.create(body)).secret;
          })
        ) {
          setV(empty);
          onCreated(secret);
        }
      }}
    >
      <h2>New subscription</h2>
      <Field form={form} name="name" label="Name" value={v.name} onInput={set("name")} />
      <Field form={form} name="project" label="Only under the project (its id, optional)" value={v.project} onInput={set("project")} />
      <Field form={form} name="subproject" label="and its subproject (its id, optional)" value={v.subproject} onInput={set("subproject")} />
      <Field
        form={form}
        name="filter.types"
        label="Only these kinds of event (optional)"
        value={v.types}
        onInput={set("types")}
        hint="comma-separated, e.g. workflowitem.assigned, or workflowitem.* for every workflowitem event"
      />
      <Field form={form} name="filter.intent" label="Only where I hold the intent (optional)" value={v.intent} onInput={set("intent")} hint="e.g. workflowitem.close" />
      <Field
        form={form}
        name="webhook.url"
        label="Deliver to this webhook URL (optional)"
        value={v.url}
        onInput={set("url")}
        hint="left empty, a program reads the events itself (pull)"
      />
      <label class="check">
        <input type="checkbox" checked={v.digest} onChange={(e) => setV({ ...v, digest: (e.currentTarget as HTMLInputElement).checked })} /> Also send my daily digest of open
        assignments to the webhook
      </label>
      <FormError form={form} fields={NAMES} />
      <button type="submit" disabled={form.busy}>
        Create subscription
      </button>
    </form>
  );
}

function DeadLetters({ sub, onChange }: { sub: Subscription; onChange: () => void }) {
  const letters = useLoad(() => client.subscriptions.deadLetters(sub.id), [sub.id]);
  const replay = useForm();
  const [notice, setNotice] = useState<string | null>(null);
  const items = letters.data ?? [];
  return (
    <div class="dead-letters" data-subscription={sub.id}>
      <h3>Dead letters</h3>
      <ErrorBox error={letters.error ?? replay.error} />
      {notice ? (
        <p class="notice" role="status">
          {notice}
        </p>
      ) : null}
      {letters.data && items.length === 0 ? <p class="muted small">None: every delivery was answered.</p> : null}
      <ul>
        {items.map((d) => (
          <li data-n={d.n}>
            <span>
              #{d.n}, {fmtDate(d.at)}, after {d.attempts} attempts: {d.error}
            </span>{" "}
            <button
              type="button"
              class="secondary"
              aria-label={`Replay dead letter ${d.n} of ${sub.name}`}
              disabled={replay.busy}
              onClick={() =>
                void replay.submit(async () => {
                  const r = await client.subscriptions.replay(sub.id, d.n);
                  setNotice(r.delivered ? `Dead letter ${d.n} was delivered and removed.` : `Dead letter ${d.n} was not delivered (${r.error ?? r.status}); it is kept.`);
                  await letters.reload();
                  onChange();
                })
              }
            >
              Replay
            </button>
          </li>
        ))}
      </ul>
    </div>
  );
}

export function SubscriptionsPage() {
  const list = useLoad(() => client.subscriptions.list(), []);
  const remove = useForm();
  const [secret, setSecret] = useState<string | null>(null);
  // Oldest first, as they were made (the server lists them in its own order).
  const items = [...(list.data ?? [])].sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.name.localeCompare(b.name));
  return (
    <main>
      <div class="head">
        <h1>Subscriptions</h1>
      </div>
      <ErrorBox error={list.error ?? remove.error} />
      {secret ? (
        <p class="notice secret" role="status">
          The webhook's signing secret, shown this once: <code>{secret}</code>
        </p>
      ) : null}
      {list.data && items.length === 0 ? <p class="muted">No subscriptions yet.</p> : null}
      <ul class="subscriptions">
        {items.map((s) => (
          <li class="card" data-id={s.id}>
            <div class="head">
              <h2>{s.name}</h2>
              <button
                type="button"
                class="secondary"
                aria-label={`Delete subscription ${s.name}`}
                disabled={remove.busy}
                onClick={() =>
                  void remove.submit(async () => {
                    if (!confirm(`Delete the subscription ${s.name}, its position and its dead letters?`)) return;
                    await client.subscriptions.delete(s.id);
                    await list.reload();
                  })
                }
              >
                Delete
              </button>
            </div>
            <dl>
              <dt>Selects</dt>
              <dd class="filter">{filterInWords(s.filter)}</dd>
              <dt>Delivers</dt>
              <dd class="target">{s.webhook ? `to ${s.webhook.url}${s.webhook.digest ? ", with the daily digest" : ""}` : "to a program that pulls them"}</dd>
              <dt>Position</dt>
              <dd>
                <span class="position">{s.position}</span> · <span class={`lag${s.behind === 0 ? " caught-up" : ""}`}>{s.behind === 0 ? "caught up" : `${s.behind} behind`}</span>
              </dd>
              <dt>Created</dt>
              <dd>{fmtDate(s.createdAt)}</dd>
            </dl>
            {s.webhook ? <DeadLetters sub={s} onChange={() => void list.reload()} /> : null}
          </li>
        ))}
      </ul>
      <NewSubscriptionForm
        onCreated={(created) => {
          setSecret(created ?? null);
          void list.reload();
        }}
      />
    </main>
  );
}
