/** Shared pieces: async loading, forms with errors at the field, tabs, status badges, formats, downloads. */
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type { HistoryEvent, ProblemError } from "../../src/client/index.js";
import { onEvent } from "./feed.js";
import { check, explain, type Operation } from "./checks.js";
import { asProblem, fieldOf } from "./session.js";

export interface Loaded<T> {
  data: T | null;
  error: ProblemError | null;
  loading: boolean;
  reload: () => Promise<void>;
  /** Puts data the page knows to be newer (its own write's answer): a load still in flight, begun before, is dropped. */
  set: (d: T) => void;
}

/** Runs `load` now and whenever `deps` change; `reload()` runs it again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<ProblemError | null>(null);
  const [loading, setLoading] = useState(true);
  const gen = useRef(0);
  const reload = useCallback(async () => {
    const mine = ++gen.current;
    setLoading(true);
    try {
      const d = await load();
      if (mine === gen.current) {
        setData(d);
        setError(null);
      }
    } catch (e) {
      if (mine === gen.current) setError(asProblem(e));
    } finally {
      if (mine === gen.current) setLoading(false);
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
  useEffect(() => {
    setData(null);
    void reload();
  }, [reload]);
  // A load begun before the page's own write may answer after it with what was there before (a reorder's
  // old ETag, say), which would make the page's next write refused as stale: it is dropped.
  const set = useCallback((d: T) => {
    gen.current++;
    setData(d);
    setError(null);
    setLoading(false);
  }, []);
  return { data, error, loading, reload, set };
}

/** Calls `refresh` (debounced) when a feed event matches. */
export function useLive(match: (e: HistoryEvent) => boolean, refresh: () => void, deps: unknown[]): void {
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const off = onEvent((e) => {
      if (!match(e)) return;
      clearTimeout(timer);
      timer = setTimeout(refresh, 150);
    });
    return () => {
      off();
      clearTimeout(timer);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
}

/** The width below which the pages take one column (style.css's narrow layout uses the same). */
export const NARROW = "(max-width: 700px)";

/** Whether a media query matches now, following it as it changes. */
export function useMedia(query: string): boolean {
  const [matches, setMatches] = useState(() => window.matchMedia(query).matches);
  useEffect(() => {
    const m = window.matchMedia(query);
    const on = () => setMatches(m.matches);
    on();
    m.addEventListener("change", on);
    return () => m.removeEventListener("change", on);
  }, [query]);
  return matches;
}

export function ErrorBox({ error }: { error: ProblemError | string | null | undefined }) {
  if (!error) return null;
  const text =
    typeof error === "string"
      ? error
      : error.status === 403
        ? `Not allowed: ${error.detail}`
        : error.status === 412
          ? `Someone else changed this first (${error.detail}): reload it and try again.`
          : error.detail;
  return (
    <p class="error" role="alert">
      {text}
    </p>
  );
}

export function Status({ status, redacted }: { status?: string; redacted?: boolean }) {
  return <span class={`badge ${redacted ? "redacted" : (status ?? "")}`}>{redacted ? `redacted${status ? ` · ${status}` : ""}` : (status ?? "")}</span>;
}

export interface FormState {
  busy: boolean;
  /** The server's refusal, when it named no field of the form (or the form shows it as a whole). */
  error: ProblemError | null;
  /** The message for a field: from the check before sending, or the server's refusal naming it. */
  fieldError: (name: string) => string | undefined;
  /**
   * Checks `body` against the operation's schema (when the form names one): a field it refuses is
   * shown at the field and nothing is sent. Otherwise runs `run`; a refusal naming a field is shown
   * at it, in words.
   */
  submit: (run: () => Promise<unknown>, body?: unknown) => Promise<boolean>;
}

/** A form's state; `op` names the operation whose request schema its body is checked against. */
export function useForm(op?: Operation): FormState {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ProblemError | null>(null);
  const [fields, setFields] = useState<Record<string, string>>({});
  return {
    busy,
    error,
    fieldError: (name) => fields[name] ?? Object.entries(fields).find(([f]) => f.startsWith(`${name}.`))?.[1],
    async submit(run, body) {
      setBusy(true);
      setError(null);
      setFields({});
      try {
        if (op && body !== undefined) {
          const refused = await check(op, body);
          if (refused.length > 0) {
            setFields(Object.fromEntries(refused.map((r) => [r.field, r.message])));
            return false;
          }
        }
        await run();
        return true;
      } catch (e) {
        const problem = asProblem(e);
        const field = fieldOf(problem);
        if (field) setFields({ [field]: await explain(op, field, problem.detail) });
        setError(problem);
        return false;
      } finally {
        setBusy(false);
      }
    },
  };
}

/** The form's error when no field of `fields` shows it. */
export function FormError({ form, fields }: { form: FormState; fields: string[] }) {
  const e = form.error;
  if (!e) return null;
  if (fields.some((f) => form.fieldError(f))) return null;
  return <ErrorBox error={e} />;
}

export interface Choice {
  readonly value: string;
  readonly label: string;
  /** The heading it is listed under (an optgroup). */
  readonly group?: string;
}

export function Field(props: {
  form: FormState;
  name: string;
  label: string;
  value: string;
  onInput: (v: string) => void;
  type?: string;
  placeholder?: string;
  options?: string[];
  /** A select of these (grouped by their `group`), with the placeholder as its empty first choice. */
  choices?: readonly Choice[];
  multiline?: boolean;
  /** A line under the input saying what is expected. */
  hint?: string;
}) {
  const error = props.form.fieldError(props.name);
  const id = useRef(`f-${props.name.replace(/[^A-Za-z0-9_-]/g, "-")}-${Math.random().toString(36).slice(2, 8)}`).current;
  const described = [error ? `${id}-err` : "", props.hint ? `${id}-hint` : ""].filter(Boolean).join(" ");
  const common = {
    id,
    name: props.name,
    value: props.value,
    "aria-invalid": error ? true : undefined,
    "aria-describedby": described || undefined,
    onInput: (e: Event) => props.onInput((e.currentTarget as HTMLInputElement).value),
  };
  const groups = props.choices ? [...new Set(props.choices.map((c) => c.group ?? ""))] : [];
  return (
    <div class={`field${error ? " invalid" : ""}`}>
      <label for={id}>{props.label}</label>
      {props.choices ? (
        <select {...common} onChange={common.onInput}>
          <option value="">{props.placeholder ?? "Choose…"}</option>
          {groups.map((g) => {
            const options = props.choices!.filter((c) => (c.group ?? "") === g).map((c) => <option value={c.value}>{c.label}</option>);
            return g ? <optgroup label={g}>{options}</optgroup> : options;
          })}
        </select>
      ) : props.options ? (
        <select {...common} onChange={common.onInput}>
          {props.options.map((o) => (
            <option value={o}>{o}</option>
          ))}
        </select>
      ) : props.multiline ? (
        <textarea {...common} rows={2} />
      ) : (
        <input {...common} type={(props.type ?? "text") as "text"} placeholder={props.placeholder} />
      )}
      {props.hint ? (
        <span class="muted small" id={`${id}-hint`}>
          {props.hint}
        </span>
      ) : null}
      {error ? (
        <span class="field-error" id={`${id}-err`} data-field={props.name}>
          {error}
        </span>
      ) : null}
    </div>
  );
}

export function Tabs(props: { tabs: { key: string; label: string; show?: boolean; render: () => ComponentChildren }[] }) {
  const visible = props.tabs.filter((t) => t.show !== false);
  const [active, setActive] = useState(visible[0]?.key ?? "");
  const tab = visible.find((t) => t.key === active) ?? visible[0];
  return (
    <section class="tabs">
      <div role="tablist">
        {visible.map((t) => (
          <button type="button" role="tab" aria-selected={t === tab} class={t === tab ? "active" : ""} onClick={() => setActive(t.key)}>
            {t.label}
          </button>
        ))}
      </div>
      <div role="tabpanel">{tab?.render()}</div>
    </section>
  );
}

export function fmtDate(iso: string | undefined): string {
  if (!iso) return "";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

/** A size in bytes for a reader: B, KiB, MiB. */
export function fmtSize(n: number): string {
  return n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

const numberFormats = new Map<string, Intl.NumberFormat>();

/**
 * An amount as the reader's locale writes it (the browser's language: `1.234,50` in German), with
 * every decimal the server stored and no rounding: the server's decimal string is formatted as it is,
 * not through a float. Anything not a plain decimal is shown as given.
 */
export function fmtAmount(value: string | number | null | undefined, currency?: string): string {
  if (value === null || value === undefined || value === "") return "";
  const text = String(value);
  const m = /^-?\d+(?:\.(\d+))?$/.exec(text);
  const digits = m?.[1]?.length ?? 0;
  let shown = text;
  if (m && digits <= 20) {
    const locale = navigator.language || "en";
    const key = `${locale}/${digits}`;
    let f = numberFormats.get(key);
    if (!f) numberFormats.set(key, (f = new Intl.NumberFormat(locale, { minimumFractionDigits: digits, maximumFractionDigits: digits })));
    shown = f.format(text as Intl.StringNumericLiteral);
  }
  return currency ? `${shown} ${currency}` : shown;
}

/** Saves a download answer as a file named `name` (the browser's own download, from a blob). */
export async function saveAs(res: Response, name: string): Promise<void> {
  saveBlob(await res.blob(), name);
}

/** Saves bytes as a file named `name` (the browser's own download). */
export function saveBlob(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
