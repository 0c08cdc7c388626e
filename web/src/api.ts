/**
 * The API client of the explorer: fetch with the bearer token, problem+json errors as ApiError (with
 * the offending field), ETags for If-Match. The token lives in sessionStorage (this tab only) and in
 * the Authorization header, never in a URL.
 */
import { Observable } from "./observable.js";

export interface Session {
  readonly token: string;
  readonly user: string;
  readonly groups: readonly string[];
  /** The global intents the user holds (GET /me). */
  readonly intents: readonly string[];
}

interface Me {
  id: string;
  groups: string[];
  intents: string[];
}

const KEY = "flowstore.session";

function loadSession(): Session | null {
  try {
    const raw = sessionStorage.getItem(KEY);
    return raw ? (JSON.parse(raw) as Session) : null;
  } catch {
    return null;
  }
}

export const session = new Observable<Session | null>(loadSession());

export function setSession(s: Session | null): void {
  if (s) sessionStorage.setItem(KEY, JSON.stringify(s));
  else sessionStorage.removeItem(KEY);
  session.value = s;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    /** The offending input as the server names it, without its `body.` part (e.g. `amount`). */
    readonly field?: string,
  ) {
    super(detail);
  }
}

export interface Answer<T> {
  readonly data: T;
  /** The resource's version from the ETag, when there is one. */
  readonly version: number | null;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export const BASE = "/api/v1";

export async function call<T>(method: string, path: string, options: { body?: unknown; ifMatch?: number | null; token?: string } = {}): Promise<Answer<T>> {
  const headers: Record<string, string> = { accept: "application/json" };
  const token = options.token ?? session.value?.token;
  if (token) headers.authorization = `Bearer ${token}`;
  if (options.body !== undefined) headers["content-type"] = "application/json";
  if (options.ifMatch != null) headers["if-match"] = `"${options.ifMatch}"`;
  let res: Response;
  try {
    res = await fetch(BASE + path, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  } catch {
    throw new ApiError(0, "the server cannot be reached");
  }
  const text = await res.text();
  let json: any = null;
  if (text) {
    try {
      json = JSON.parse(text);
    } catch {
      json = null;
    }
  }
  if (!res.ok) {
    if (res.status === 401 && path !== "/auth/token") setSession(null);
    const field = typeof json?.field === "string" ? json.field.replace(/^body\.?/, "").replace(/\[(\d+)\]/g, ".$1") : undefined;
    throw new ApiError(res.status, json?.detail ?? `${res.status} ${res.statusText}`, field || undefined);
  }
  const etag = res.headers.get("etag");
  const m = etag ? /"(\d+)"/.exec(etag) : null;
  return { data: json as T, version: m ? Number(m[1]) : null };
}

export const get = <T>(path: string) => call<T>("GET", path).then((a) => a.data);

/** Every page of a list, in order (limit 1000 per request). */
export async function getAll<T>(path: string): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | null = null;
  do {
    const sep = path.includes("?") ? "&" : "?";
    const page: Page<T> = await get<Page<T>>(`${path}${sep}limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    out.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return out;
}

export const enc = encodeURIComponent;

export async function login(username: string, password: string): Promise<void> {
  const { data } = await call<{ token: string }>("POST", "/auth/token", { body: { username, password } });
  const me = await call<Me>("GET", "/me", { token: data.token }).then((a) => a.data);
  setSession({ token: data.token, user: me.id, groups: me.groups, intents: me.intents });
}

/** Reads the user's groups and global intents again (they may have changed since the login). */
export async function refreshMe(): Promise<void> {
  const s = session.value;
  if (!s) return;
  const me = await call<Me>("GET", "/me").then((a) => a.data);
  if (session.value?.token === s.token) setSession({ ...s, groups: me.groups, intents: me.intents });
}

export function logout(): void {
  setSession(null);
}

/** Path of a resource from its ids: [p], [p, s] or [p, s, w]. */
export function resourcePath(ids: readonly string[]): string {
  const segs = ["projects", "subprojects", "workflowitems"];
  return ids.map((id, i) => `/${segs[i]}/${enc(id)}`).join("");
}

export type Permissions = Record<string, string[]>;

/** The intents the session's user holds in a permission map (directly or through a group). */
export function heldIntents(perms: Permissions | null): Set<string> {
  const s = session.value;
  const held = new Set<string>();
  if (!perms || !s) return held;
  const me = new Set([s.user, ...s.groups]);
  for (const [intent, who] of Object.entries(perms)) if (who.some((w) => me.has(w))) held.add(intent);
  return held;
}
